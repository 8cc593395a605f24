"""Structure-aware mutations: protobuf fields, XML elements and attributes, JSON values, and raw
bytes as the fallback.

Random bytes almost never get past a parser's first check; mutating one field of a valid model
(a dim to 2**62, an offset to -1, a name to a duplicate, an attribute deleted) reaches the code
behind it. Every mutator takes the input and a ``random.Random`` and returns new bytes; they never
raise on malformed input (they fall back to byte mutations).
"""

from __future__ import annotations

import copy
import json
import random
import struct
from collections.abc import Callable
from typing import Any

from defusedxml import ElementTree as DET
from google.protobuf.message import DecodeError, Message

#: integers that sit on the edges parsers get wrong
INTERESTING_INTS = [0, 1, -1, 2, 3, 7, 8, 16, 64, 127, 128, 255, 256, 1 << 15, 65535, 65536,
                    (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 1 << 32, (1 << 62), (1 << 63) - 1,
                    -(1 << 31), -(1 << 63), 10**9, 10**12]
INTERESTING_FLOATS = [0.0, -0.0, 1.0, -1.0, float("nan"), float("inf"), float("-inf"), 1e-45, 3.4e38, 1e308]
INTERESTING_STRINGS = ["", "x", "..", "../w.bin", "/etc/passwd", "a" * 300, "\u00e9\u4e2d", "0", "-1", "nan",
                       "1e999", "18446744073709551615", "?", "-", ",", " ", "\t1"]


def mutate_bytes(data: bytes, rng: random.Random, max_size: int = 1 << 16) -> bytes:
    """One classic byte-level mutation (bit flip, interesting integer, insert, erase, copy)."""
    b = bytearray(data)
    op = rng.randrange(8)
    if not b or op == 0:
        pos = rng.randint(0, len(b))
        b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    elif op == 1:
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    elif op == 2:
        b[rng.randrange(len(b))] = rng.randrange(256)
    elif op == 3:  # overwrite with an interesting little-endian integer
        v = rng.choice(INTERESTING_INTS)
        width, fmt = rng.choice([(1, "<B"), (2, "<H"), (4, "<I"), (8, "<Q")])
        raw = struct.pack(fmt, v & ((1 << (8 * width)) - 1))
        i = rng.randrange(len(b))
        b[i:i + width] = raw
    elif op == 4:  # erase a range
        i = rng.randrange(len(b))
        del b[i:i + rng.randint(1, max(1, len(b) // 8))]
    elif op == 5:  # duplicate a range
        i = rng.randrange(len(b))
        chunk = b[i:i + rng.randint(1, 64)]
        j = rng.randint(0, len(b))
        b[j:j] = chunk
    elif op == 6:  # truncate
        del b[rng.randint(0, len(b)):]
    else:  # varint-ish: set a high bit run (protobuf length fields)
        i = rng.randrange(len(b))
        b[i:i + 5] = b"\xff\xff\xff\xff\x0f"
    return bytes(b[:max_size])


# --- protobuf --------------------------------------------------------------------------------
def _fields(msg: Message, out: list[tuple[Message, Any]], depth: int = 0) -> None:
    if depth > 12:
        return
    for fd in msg.DESCRIPTOR.fields:
        out.append((msg, fd))
        if fd.message_type is None or fd.message_type.GetOptions().map_entry:
            continue
        if _is_repeated(fd):
            for sub in getattr(msg, fd.name):
                _fields(sub, out, depth + 1)
        elif msg.HasField(fd.name):
            _fields(getattr(msg, fd.name), out, depth + 1)


def _is_repeated(fd: Any) -> bool:
    # protobuf >= 5 has fd.is_repeated; older ones only fd.label
    rep = getattr(fd, "is_repeated", None)
    return bool(rep) if rep is not None else fd.label == fd.LABEL_REPEATED


def _scalar(fd: Any, rng: random.Random, current: Any) -> Any:
    t = fd.type
    if t in (fd.TYPE_STRING,):
        return rng.choice(INTERESTING_STRINGS + ([current + current] if isinstance(current, str) else []))
    if t == fd.TYPE_BYTES:
        cur = current if isinstance(current, bytes) else b""
        choice = rng.randrange(3)
        if choice == 0:
            return cur[: rng.randint(0, len(cur))]
        if choice == 1:
            return cur + bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        return mutate_bytes(cur, rng)
    if t in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
        return rng.choice(INTERESTING_FLOATS)
    if t == fd.TYPE_BOOL:
        return not current
    if t == fd.TYPE_ENUM:
        values = [v.number for v in fd.enum_type.values]
        return rng.choice(values)
    v = rng.choice(INTERESTING_INTS) if rng.random() < 0.8 else rng.randint(-5, 40)
    unsigned = t in (fd.TYPE_UINT32, fd.TYPE_UINT64, fd.TYPE_FIXED32, fd.TYPE_FIXED64)
    bits = 32 if t in (fd.TYPE_INT32, fd.TYPE_SINT32, fd.TYPE_SFIXED32, fd.TYPE_UINT32, fd.TYPE_FIXED32) else 64
    if unsigned:
        return v & ((1 << bits) - 1)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return max(lo, min(hi, v))


def mutate_proto(data: bytes, factory: Callable[[], Message], rng: random.Random) -> bytes:
    """Parse ``data`` as the message ``factory()`` builds, change one field, serialize."""
    msg = factory()
    try:
        msg.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError):
        return mutate_bytes(data, rng)
    fields: list[tuple[Message, Any]] = []
    _fields(msg, fields)
    if not fields:
        return mutate_bytes(data, rng)
    for _ in range(rng.randint(1, 3)):
        owner, fd = rng.choice(fields)
        try:
            _mutate_field(owner, fd, rng)
        except (TypeError, ValueError, AttributeError, IndexError, KeyError):
            continue
    try:
        return bytes(msg.SerializeToString())
    except Exception:  # noqa: BLE001 - e.g. a required field now missing: mutate the bytes instead
        return mutate_bytes(data, rng)


def _mutate_field(owner: Message, fd: Any, rng: random.Random) -> None:
    name = fd.name
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        return
    if _is_repeated(fd):
        items = getattr(owner, name)
        op = rng.randrange(5)
        if len(items) and op == 0:  # delete one
            del items[rng.randrange(len(items))]
        elif len(items) and op == 1:  # duplicate one (duplicate names, producers, inputs)
            src = items[rng.randrange(len(items))]
            if fd.message_type is not None:
                items.add().CopyFrom(src)
            else:
                items.append(src)
        elif len(items) and op == 2 and fd.message_type is None:  # change one scalar
            i = rng.randrange(len(items))
            items[i] = _scalar(fd, rng, items[i])
        elif len(items) > 1 and op == 3:  # swap two (order matters for params, dims)
            i, j = rng.sample(range(len(items)), 2)
            if fd.message_type is None:
                items[i], items[j] = items[j], items[i]
            else:
                a, b = type(items[i])(), type(items[j])()
                a.CopyFrom(items[i])
                b.CopyFrom(items[j])
                items[i].CopyFrom(b)
                items[j].CopyFrom(a)
        elif fd.message_type is None:
            items.append(_scalar(fd, rng, None))
        else:
            items.add()
        return
    if fd.message_type is not None:
        if rng.random() < 0.5:
            owner.ClearField(name)
        else:
            getattr(owner, name).SetInParent()
        return
    if rng.random() < 0.15:
        owner.ClearField(name)
        return
    setattr(owner, name, _scalar(fd, rng, getattr(owner, name)))


# --- XML -------------------------------------------------------------------------------------
_XML_TRICKS = [
    b'<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>',
    b'<!DOCTYPE x SYSTEM "file:///etc/passwd">',
    b"<?xml version='1.0' encoding='utf-16'?>",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
]


def mutate_xml(data: bytes, rng: random.Random) -> bytes:
    """Change one element or attribute of an XML document (defusedxml parses it: a mutated
    input may already carry a DTD)."""
    try:
        root = DET.fromstring(data)
    except Exception:  # noqa: BLE001 - not XML any more: byte-level mutation
        return mutate_bytes(data, rng)
    elements = list(root.iter())
    values = sorted({v for el in elements for v in el.attrib.values()} | {el.text.strip() for el in elements if el.text and el.text.strip()})
    names = sorted({k for el in elements for k in el.attrib})
    for _ in range(rng.randint(1, 3)):
        el = rng.choice(elements)
        op = rng.randrange(10)
        if op <= 3 and el.attrib:  # change an attribute's value
            k = rng.choice(sorted(el.attrib))
            el.set(k, _xml_value(rng, el.attrib[k], values))
        elif op == 4 and el.attrib:
            del el.attrib[rng.choice(sorted(el.attrib))]
        elif op == 5 and names:
            el.set(rng.choice(names), _xml_value(rng, "", values))
        elif op == 6 and el.text is not None and el.text.strip():
            el.text = _xml_value(rng, el.text.strip(), values)
        elif op == 7 and len(el):  # delete a child
            el.remove(el[rng.randrange(len(el))])
        elif op == 8 and len(el):  # duplicate a child (duplicate ids, ports, edges)
            child = el[rng.randrange(len(el))]
            el.insert(rng.randint(0, len(el)), copy.deepcopy(child))
        elif len(elements) > 1:  # move a subtree somewhere else
            other = rng.choice(elements)
            # never move an element under itself (a cycle would make the tree infinite)
            if other is not root and not any(e is el for e in other.iter()):
                try:
                    parent = next(p for p in elements if other in list(p))
                    parent.remove(other)
                    el.append(other)
                except (StopIteration, ValueError):
                    pass
    out = DET.tostring(root, encoding="utf-8")
    if rng.random() < 0.02:
        out = rng.choice(_XML_TRICKS) + out
    return bytes(out)


def _xml_value(rng: random.Random, current: str, pool: list[str]) -> str:
    r = rng.random()
    if r < 0.35:
        return str(rng.choice(INTERESTING_INTS))
    if r < 0.5:
        return rng.choice(INTERESTING_STRINGS)
    if r < 0.75 and pool:
        return rng.choice(pool)
    if r < 0.85 and current:  # a list value with one element changed ("1,3,224" -> "1,-1,224")
        parts = current.split(",")
        parts[rng.randrange(len(parts))] = str(rng.choice(INTERESTING_INTS))
        return ",".join(parts)
    return current[: rng.randint(0, len(current))] if current else str(rng.randint(-3, 70))


# --- JSON ------------------------------------------------------------------------------------
def mutate_json(data: bytes, rng: random.Random) -> bytes:
    """Change one value of a JSON document (numbers to edge values, strings to other strings of
    the document, lists shortened or extended, keys deleted, types swapped)."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return mutate_bytes(data, rng)
    slots: list[tuple[Any, Any]] = []  # (container, key/index)
    strings: list[str] = []

    def walk(node: Any, depth: int) -> None:
        if depth > 60:
            return
        if isinstance(node, dict):
            for k, v in node.items():
                slots.append((node, k))
                walk(v, depth + 1)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                slots.append((node, i))
                walk(v, depth + 1)
        elif isinstance(node, str):
            strings.append(node)

    walk(doc, 0)
    if not slots:
        return mutate_bytes(data, rng)
    for _ in range(rng.randint(1, 3)):
        container, key = rng.choice(slots)
        try:
            _mutate_json_slot(container, key, rng, strings)
        except (IndexError, KeyError):
            continue
    return json.dumps(doc, separators=(",", ":")).encode()


def _mutate_json_slot(container: Any, key: Any, rng: random.Random, strings: list[str]) -> None:
    value = container[key]
    op = rng.randrange(10)
    if op == 0:
        del container[key]
        return
    if op == 1 and isinstance(container, list):
        container.insert(key, json.loads(json.dumps(value)))
        return
    if op == 2:  # swap the type
        container[key] = rng.choice([None, [], {}, "", 0, 1.5, True, [value], {"#": value}])
        return
    if isinstance(value, bool):
        container[key] = not value
    elif isinstance(value, int):
        container[key] = rng.choice(INTERESTING_INTS)
    elif isinstance(value, float):
        container[key] = rng.choice([0.0, -1.0, 1e308, -1e308, 1e-320, 3.5])
    elif isinstance(value, str):
        container[key] = rng.choice(strings + INTERESTING_STRINGS) if rng.random() < 0.7 else value + "x"
    elif isinstance(value, list) and value:
        if rng.random() < 0.5:
            del value[rng.randrange(len(value)):]
        else:
            value.append(json.loads(json.dumps(rng.choice(value))))
    elif isinstance(value, dict) and value:
        k = rng.choice(sorted(value))
        del value[k]
    else:
        container[key] = rng.choice(INTERESTING_INTS)


def splice(data: bytes, other: bytes, rng: random.Random) -> bytes:
    """The head of one input and the tail of another."""
    if not data or not other:
        return data or other
    return data[: rng.randint(0, len(data))] + other[rng.randint(0, len(other)):]
