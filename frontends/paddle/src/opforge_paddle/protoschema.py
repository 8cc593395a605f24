"""Message classes for Paddle's legacy ProgramDesc, built at run time from ``framework.proto``.

Why not a ``protoc``-generated ``_pb2.py``: generated modules are tied to the protobuf runtime
they were generated for (``ValidateProtobufRuntimeVersion`` refuses or warns across major
versions), and they register their file in protobuf's *default* descriptor pool, where Paddle's
own ``framework_pb2`` (imported by every test that uses paddle) already defines the same messages.
Parsing our own schema file into a private :class:`DescriptorPool` avoids both: the schema stays a
readable ``.proto`` file, works with any protobuf >= 4.21, and never collides with Paddle's.

The parser reads the proto2 subset ``framework.proto`` uses (package, enums, nested messages,
``optional``/``repeated``/``required`` scalar, enum and message fields, ``[default = ...]``).
It is not a general ``.proto`` compiler; a schema outside the subset raises ModelFormatError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from opforge.errors import ModelFormatError

_SCALARS = {
    "double": descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
    "float": descriptor_pb2.FieldDescriptorProto.TYPE_FLOAT,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    "uint64": descriptor_pb2.FieldDescriptorProto.TYPE_UINT64,
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "uint32": descriptor_pb2.FieldDescriptorProto.TYPE_UINT32,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    "bytes": descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
}
_LABELS = {
    "optional": descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    "required": descriptor_pb2.FieldDescriptorProto.LABEL_REQUIRED,
    "repeated": descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
}
_TOKEN = re.compile(r'\s*(//[^\n]*\n?|"[^"]*"|-?[0-9]+(?:\.[0-9]+)?|[A-Za-z_][A-Za-z0-9_.]*|[{}\[\]=;])')


@dataclass
class _Field:
    proto: descriptor_pb2.FieldDescriptorProto
    type_ref: str  # the type as written; resolved after every name is known
    scope: str  # fully qualified name of the enclosing message


@dataclass
class _Parser:
    text: str
    source: str
    tokens: list[str] = field(default_factory=list)
    pos: int = 0

    def __post_init__(self) -> None:
        i = 0
        while i < len(self.text):
            m = _TOKEN.match(self.text, i)
            if m is None:
                rest = self.text[i:].strip()
                if not rest:
                    break
                raise ModelFormatError(f"{self.source}: unexpected text near {rest[:30]!r}")
            tok = m.group(1)
            if not tok.startswith("//"):
                self.tokens.append(tok)
            i = m.end()

    def peek(self) -> str:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if not tok or (expected is not None and tok != expected):
            raise ModelFormatError(
                f"{self.source}: expected {expected or 'a token'} at token {self.pos}, got {tok or 'end of file'!r}"
            )
        self.pos += 1
        return tok


def _parse_enum(p: _Parser) -> descriptor_pb2.EnumDescriptorProto:
    e = descriptor_pb2.EnumDescriptorProto(name=p.take())
    p.take("{")
    while p.peek() != "}":
        name = p.take()
        p.take("=")
        e.value.add(name=name, number=int(p.take()))
        p.take(";")
    p.take("}")
    return e


def _parse_message(p: _Parser, m: descriptor_pb2.DescriptorProto, scope: str, fields: list[_Field],
                   kinds: dict[str, str]) -> None:
    # ``m`` is already inside its parent (``add()``): appending a finished message would copy it
    # and leave the field references collected for type resolution pointing at the copy.
    m.name = p.take()
    full = f"{scope}.{m.name}"
    kinds[full] = "message"
    p.take("{")
    while p.peek() != "}":
        tok = p.take()
        if tok == "message":
            _parse_message(p, m.nested_type.add(), full, fields, kinds)
        elif tok == "enum":
            e = _parse_enum(p)
            kinds[f"{full}.{e.name}"] = "enum"
            m.enum_type.append(e)
        elif tok in _LABELS:
            type_ref, name = p.take(), p.take()
            p.take("=")
            f = m.field.add(name=name, number=int(p.take()), label=_LABELS[tok])
            if p.peek() == "[":
                p.take("[")
                p.take("default")
                p.take("=")
                f.default_value = p.take().strip('"')
                p.take("]")
            p.take(";")
            fields.append(_Field(f, type_ref, full))
        else:
            raise ModelFormatError(f"{p.source}: unsupported declaration {tok!r} in message {full}")
    p.take("}")


def _resolve(ref: str, scope: str, kinds: dict[str, str], source: str) -> str:
    """Protobuf's lookup: the innermost enclosing scope that declares the name wins."""
    parts = scope.split(".")
    while parts:
        cand = ".".join([*parts, ref])
        if cand in kinds:
            return cand
        parts.pop()
    raise ModelFormatError(f"{source}: unknown type {ref!r} used in {scope}")


def build_file(text: str, source: str) -> descriptor_pb2.FileDescriptorProto:
    p = _Parser(text, source)
    fd = descriptor_pb2.FileDescriptorProto(name=source, syntax="proto2")
    fields: list[_Field] = []
    kinds: dict[str, str] = {}
    while p.peek():
        tok = p.take()
        if tok == "syntax":
            p.take("=")
            fd.syntax = p.take().strip('"')
            p.take(";")
        elif tok == "package":
            fd.package = p.take()
            p.take(";")
        elif tok == "enum":
            e = _parse_enum(p)
            kinds[f".{fd.package}.{e.name}"] = "enum"
            fd.enum_type.append(e)
        elif tok == "message":
            _parse_message(p, fd.message_type.add(), f".{fd.package}", fields, kinds)
        else:
            raise ModelFormatError(f"{source}: unsupported top-level declaration {tok!r}")
    for f in fields:
        if f.type_ref in _SCALARS:
            f.proto.type = _SCALARS[f.type_ref]  # type: ignore[assignment]
            continue
        full = _resolve(f.type_ref, f.scope, kinds, source)
        f.proto.type_name = full
        f.proto.type = (descriptor_pb2.FieldDescriptorProto.TYPE_ENUM if kinds[full] == "enum"  # type: ignore[assignment]
                        else descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE)
    return fd


@dataclass(frozen=True)
class Schema:
    """The message classes of ``framework.proto``."""

    ProgramDesc: Any
    TensorDesc: Any
    VarTypeEnum: Any  # the VarType.Type enum descriptor, for dtype names in messages


@lru_cache(maxsize=1)
def schema() -> Schema:
    text = resources.files("opforge_paddle").joinpath("framework.proto").read_text(encoding="utf-8")
    fd = build_file(text, "opforge_paddle/framework.proto")
    pool = descriptor_pool.DescriptorPool()  # private: never clashes with paddle's framework_pb2
    pool.Add(fd)
    pkg = fd.package

    def cls(name: str) -> Any:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{pkg}.{name}"))

    return Schema(
        ProgramDesc=cls("ProgramDesc"),
        TensorDesc=cls("VarType.TensorDesc"),
        VarTypeEnum=pool.FindEnumTypeByName(f"{pkg}.VarType.Type"),
    )
