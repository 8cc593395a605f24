"""Structural checks of an ONNX model that ``onnx.checker`` and ONNX Runtime make and the
conversion itself would not notice.

* **Single static assignment.** Each name is defined once per graph: by a graph input, an
  initializer (which may also be listed as a graph input: its default value) or one node output.
  Converting node by node, a second producer would silently win ("last writer wins"), so a model
  ONNX Runtime refuses would run with different numbers here.
* **Text.** Every string field of the file (model, graphs and subgraphs, nodes, value infos,
  tensors, attributes, local functions, types) must be UTF-8, as protobuf requires: ONNX is
  proto2, which does not validate, so protobuf hands invalid UTF-8 over as ``bytes`` and every
  later use as a name would fail in some other way (``onnx.defs``, ``str + bytes``, the IR
  writer). One walk over the message tree checks them all (:func:`check_text`), before any
  other check reads a name.
* **Opset imports.** Every version, of every domain, must lie in 1..2**31-1 (``onnx.defs`` takes
  a C ``int``; anything else is not an opset version: a corrupt file). The default domain
  (``""`` / ``ai.onnx``) and ``ai.onnx.ml`` versions must also lie in the range the installed
  ``onnx`` package defines, and a domain may be imported once. ``opset 99`` is a newer (or
  corrupt) file, not "the newest we know".
* **Size.** The number of nodes, subgraphs included, is bounded by ``MAX_NODES``
  (:mod:`opforge.limits`).

Subgraphs (``If``/``Loop``/``Scan`` bodies) are checked the same way, iteratively, so a deep
nesting cannot exhaust the Python stack.
"""

from __future__ import annotations

import functools

import onnx
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from onnx import AttributeProto, GraphProto
from opforge.errors import ModelFormatError, ModelValidationError
from opforge.limits import Limits

DEFAULT_DOMAINS = ("", "ai.onnx")
ML_DOMAIN = "ai.onnx.ml"
#: opset versions ``onnx.defs`` can take (a C ``int``); OperatorSetIdProto.version is an int64
MAX_OPSET_VERSION = 2**31 - 1


def supported_opsets() -> dict[str, int]:
    """The newest version of each standard domain the installed onnx package defines."""
    newest_ml = max((row[3] for row in onnx.helper.VERSION_TABLE if row[3] is not None), default=1)
    return {"ai.onnx": int(onnx.defs.onnx_opset_version()), ML_DOMAIN: int(newest_ml)}


def check_opset_imports(model: onnx.ModelProto, label: str) -> None:
    _check_imports(model.opset_import, label, "the model")
    for f in model.functions:
        _check_imports(f.opset_import, label, f"local function '{f.domain}::{f.name}'")


def _check_imports(imports: object, label: str, owner: str) -> None:
    newest = supported_opsets()
    seen: dict[str, int] = {}
    for imp in imports:  # type: ignore[attr-defined]
        dom = "ai.onnx" if imp.domain in DEFAULT_DOMAINS else imp.domain
        shown = f"'{imp.domain}'" if imp.domain else "'' (ai.onnx)"
        version = int(imp.version)
        if not 1 <= version <= MAX_OPSET_VERSION:
            raise ModelFormatError(
                f"{label}: {owner} imports domain {shown} at opset version {version}, which is not an "
                f"opset version (versions are 1..{MAX_OPSET_VERSION}); the file is corrupt"
            )
        if dom in seen and seen[dom] != version:
            raise ModelValidationError(
                f"{label}: {owner} imports domain {shown} twice, with versions {seen[dom]} and {version}"
            )
        seen[dom] = version
        top = newest.get(dom)
        if top is not None and version > top:
            raise ModelValidationError(
                f"{label}: {owner} imports domain {shown} at opset version {version}, outside the "
                f"supported range 1..{top} (onnx {onnx.__version__}); the file was written for a newer "
                "ONNX, or is corrupt"
            )


def check_graphs(model: onnx.ModelProto, label: str, limits: Limits) -> None:
    """SSA and node count of the main graph and every subgraph."""
    max_nodes = limits.get("MAX_NODES")
    total = 0
    stack: list[tuple[GraphProto, str]] = [(model.graph, "main graph")]
    while stack:
        graph, where = stack.pop()
        total += len(graph.node)
        if total > max_nodes:
            limits.check("MAX_NODES", total, f"{label}: node count (subgraphs included)")
        _check_ssa(graph, label, where)
        for k, n in enumerate(graph.node):
            node = n.name or f"#{k} ({n.op_type})"
            for a in n.attribute:
                if a.type == AttributeProto.GRAPH:
                    stack.append((a.g, f"subgraph '{a.name}' of node '{node}'"))
                elif a.type == AttributeProto.GRAPHS:
                    stack.extend((g, f"subgraph '{a.name}'[{i}] of node '{node}'") for i, g in enumerate(a.graphs))


def check_text(model: onnx.ModelProto, label: str) -> None:
    """Every string field of ``model`` is text, checked before any of them is used.

    Protobuf hands a string field that is not valid UTF-8 over as ``bytes`` (ONNX is proto2,
    which does not validate on parse). Rather than a check at each use (op types here, graph
    names there: the fuzzer found the gaps one by one), this walks the whole message tree once,
    by reflection, so a string field the converter starts using later is covered too. ``bytes``
    fields (raw data, ``AttributeProto.s``, string tensors) are not read, so large weights are not
    copied. Iterative: deep subgraph nesting cannot exhaust the Python stack."""
    stack: list[tuple[Message, str, str]] = [(model, "the model", "")]
    while stack:
        msg, where, path = stack.pop()
        for name, kind, repeated in _text_fields(msg.DESCRIPTOR):
            if kind == _STRING:
                if repeated:
                    for i, value in enumerate(getattr(msg, name)):
                        _utf8(value, label, f"{where}: its {path}{name}[{i}]")
                elif msg.HasField(name):
                    _utf8(getattr(msg, name), label, f"{where}: its {path}{name}")
            elif repeated:
                for i, child in enumerate(getattr(msg, name)):
                    stack.append(_context(child, where, f"{path}{name}[{i}]", i))
            elif msg.HasField(name):
                stack.append(_context(getattr(msg, name), where, f"{path}{name}", None))


_STRING, _MESSAGE = "string", "message"


@functools.cache
def _text_fields(desc: Descriptor) -> tuple[tuple[str, str, bool], ...]:
    """The string and message fields of a message type (the walk visits nothing else)."""
    out: list[tuple[str, str, bool]] = []
    for f in desc.fields:
        # protobuf >= 6 has ``is_repeated`` and dropped ``label``; older ones have only ``label``
        repeated = bool(f.is_repeated if hasattr(f, "is_repeated") else f.label == FieldDescriptor.LABEL_REPEATED)
        if f.type == FieldDescriptor.TYPE_STRING:
            out.append((f.name, _STRING, repeated))
        elif f.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
            out.append((f.name, _MESSAGE, repeated))
    return tuple(out)


def _context(child: Message, where: str, path: str, index: int | None) -> tuple[Message, str, str]:
    """Where ``child`` is, in the words of the other checks: a node, a graph or a local function
    starts a new context ("node #3 in the main graph"); anything else is a field path inside
    the nearest one (``input[0].type.tensor_type.shape.dim[1].dim_param``). Names from the file
    are not used: they may be the bytes being reported."""
    kind = child.DESCRIPTOR.name
    if kind == "GraphProto":
        return child, ("main graph" if where == "the model" else f"subgraph {path} of {where}"), ""
    if kind == "NodeProto":
        return child, f"node #{index} in the {where}", ""
    if kind == "FunctionProto":
        return child, f"local function #{index}", ""
    return child, where, f"{path}."


def _utf8(value: object, label: str, what: str) -> None:
    if not isinstance(value, str):
        raise ModelFormatError(
            f"{label}: {what} is not valid UTF-8 text ({bytes(value)[:40]!r}); ONNX string fields "  # type: ignore[call-overload]
            "must be UTF-8"
        )


def _check_ssa(graph: GraphProto, label: str, where: str) -> None:
    producer: dict[str, str] = {}
    inside = "" if where == "main graph" else f" in {where}"
    for vi in graph.input:
        if vi.name in producer:
            raise ModelValidationError(
                f"{label}: graph input '{vi.name}'{inside} is declared twice; names must be unique "
                "(onnx.checker: single static assignment)"
            )
        producer[vi.name] = "graph input"
    inits: set[str] = set()
    for kind, tensors in (("initializer", graph.initializer),
                          ("sparse initializer", [s.values for s in graph.sparse_initializer])):
        for t in tensors:
            if t.name in inits:
                raise ModelValidationError(
                    f"{label}: {kind} name '{t.name}'{inside} is not unique (another initializer has it)"
                )
            inits.add(t.name)
            # An initializer that is also a graph input is that input's default value (allowed).
            producer.setdefault(t.name, kind)
    for k, n in enumerate(graph.node):
        node = f"node '{n.name}' ({n.op_type})" if n.name else f"node #{k} ({n.op_type})"
        for out in n.output:
            if not out:
                continue  # an omitted optional output
            if out in producer:
                raise ModelValidationError(
                    f"{label}: tensor '{out}'{inside} is produced twice: by {producer[out]} and by {node}; "
                    "each tensor must have exactly one producer (onnx.checker: single static assignment)"
                )
            producer[out] = node
