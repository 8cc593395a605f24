"""OpenVINO's VPU (MYRIAD) custom-layer configuration: ``CustomLayer type="MVCL"``, parsed with line
numbers (OpenVINO 2022 "How to Implement Custom Layers for VPU")::

    <CustomLayer name="GRN" type="MVCL" version="1" max-shaves="4" stage="0">
      <Where across_spatial="0"/>
      <Kernel entry="grn_NCHW"><Source filename="grn.bin"/></Kernel>
      <Parameters>
        <Tensor arg-name="src" type="input" port-index="0" format="BFYX"/>
        <Tensor arg-name="dst" type="output" port-index="0" format="BFYX"/>
        <Tensor arg-name="sums" type="output_buffer" port-index="0" dim="input,0" size="Y*X*4"/>
        <Data arg-name="w" type="data" source="weights" format="ANY"/>
        <Data arg-name="tmp" type="local_data" dim="input,0" size="X*2"/>
        <Scalar arg-name="C" type="int" port-index="0" source="I.F"/>
        <Scalar arg-name="bias" type="float" source="bias"/>
      </Parameters>
      <WorkSizes dim="input,0" global="X,Y,1" local="X,1,1"/>
    </CustomLayer>

Entries with one ``name`` form one layer: several ``stage`` values run in order, and ``Where``
picks among alternatives by attribute values. The XML is parsed by defusedxml (no DTDs, no
entities); formulas by :mod:`opforge_vpu.mvcl.formula`.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
import re
import xml.sax
import xml.sax.handler
from pathlib import Path
from typing import Any

import defusedxml.sax
from defusedxml import DefusedXmlException
from opforge_gpu.runtime import KernelConfigError, Location
from opforge_vpu.mvcl.formula import Formula

FORMATS = ("BFYX", "BYXF", "FYX", "YXF", "ANY")
TENSOR_TYPES = ("input", "output", "input_buffer", "output_buffer", "data")
DATA_TYPES = ("data", "local_data")
SCALAR_TYPES = ("int", "float")
#: the MYRIAD X's CMX memory a work group may use for local data (OpenVINO's limit)
LOCAL_MEMORY_BUDGET = 100 * 1024
_SELECTOR = re.compile(r"^(I|O)(\d*)\.([BFYX])$")
_LITERAL = re.compile(r"^[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)$")


@dataclasses.dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[Element] = dataclasses.field(default_factory=list)


class _Builder(xml.sax.handler.ContentHandler):
    def __init__(self) -> None:
        super().__init__()
        self.root = Element("#root", {}, 1)
        self.stack = [self.root]
        self.locator: Any = None

    def setDocumentLocator(self, locator: Any) -> None:
        self.locator = locator

    def startElement(self, name: str, attrs: Any) -> None:
        line = int(self.locator.getLineNumber()) if self.locator is not None else 0
        el = Element(name, {k: attrs[k] for k in attrs.getNames()}, line)
        self.stack[-1].children.append(el)
        self.stack.append(el)

    def endElement(self, name: str) -> None:
        self.stack.pop()


def parse_xml(text: str, label: str) -> Element:
    """The elements of ``text`` with line numbers; several top-level CustomLayers are allowed."""
    body = re.sub(r"^\s*<\?xml[^>]*\?>", lambda m: " " * len(m.group(0)), text, count=1)
    dtd = re.search(r"<!(DOCTYPE|ENTITY)", body)
    if dtd:
        # (inside the wrapper root a DOCTYPE is only "malformed": say what is really refused)
        line = body.count("\n", 0, dtd.start()) + 1
        raise KernelConfigError(f"{label}:{line}: DOCTYPE/entity declarations are not allowed in a kernel configuration")
    builder = _Builder()
    try:
        # The wrapper root adds no line, so line numbers are the file's.
        defusedxml.sax.parseString(f"<mvcl-config>{body}</mvcl-config>".encode(), builder,
                                   forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except xml.sax.SAXParseException as err:
        raise KernelConfigError(f"{label}:{err.getLineNumber()}: malformed XML: {err.getMessage()} "
                                f"(column {err.getColumnNumber()})") from None
    except DefusedXmlException as err:
        line = builder.locator.getLineNumber() if builder.locator is not None else 0
        raise KernelConfigError(f"{label}:{line}: DOCTYPE/entity declarations are not allowed in a kernel "
                                f"configuration ({type(err).__name__})") from None
    return builder.root.children[0]


@dataclasses.dataclass
class Param:
    """One ``<Parameters>`` child: what the kernel argument ``arg_name`` receives."""

    kind: str  # input, output, input_buffer, output_buffer, data, local_data, scalar
    arg_name: str
    line: int
    port: int | None = None
    format: str = "BFYX"
    dim: tuple[str, int] = ("input", 0)
    size: Formula | None = None
    source: str | None = None
    scalar_type: str = "int"


@dataclasses.dataclass
class Source:
    filename: str
    line: int
    label: str  # the name build logs use
    path: str | None  # a real file (to read a .bin, to quote a failing line)
    text: str | None  # .cl text (None for a .bin)

    @property
    def is_binary(self) -> bool:
        return self.text is None


@dataclasses.dataclass
class Stage:
    """One ``CustomLayer`` entry: a kernel launch of the layer ``name``."""

    name: str
    stage: int
    max_shaves: int | None
    entry: str
    sources: list[Source]
    params: list[Param]
    global_ws: list[Formula]
    local_ws: list[Formula]
    dim: tuple[str, int]
    where: dict[str, str]
    where_line: int
    file: str
    line: int

    @property
    def at(self) -> str:
        return f"{self.file}:{self.line}"


def _attr(el: Element, name: str, label: str) -> str:
    v = el.attrs.get(name)
    if v is None:
        raise KernelConfigError(f"{label}:{el.line}: <{el.tag}> needs the attribute '{name}'")
    return v


def _int(el: Element, name: str, label: str, default: int | None = None) -> int:
    v = el.attrs.get(name)
    if v is None:
        if default is None:
            raise KernelConfigError(f"{label}:{el.line}: <{el.tag}> needs the attribute '{name}'")
        return default
    try:
        return int(v)
    except ValueError:
        raise KernelConfigError(f"{label}:{el.line}: <{el.tag} {name}=\"{v}\">: expected an integer") from None


def parse_dim(text: str | None, label: str, line: int, default: tuple[str, int]) -> tuple[str, int]:
    """``dim="input,N"`` / ``"output,N"`` (``"input N"`` and a bare ``output`` are accepted too)."""
    if text is None or not text.strip():
        return default
    m = re.fullmatch(r"\s*(input|output)\s*[, ]?\s*(\d*)\s*", text, re.IGNORECASE)
    if not m:
        raise KernelConfigError(f"{label}:{line}: dim=\"{text}\": expected 'input,N' or 'output,N'")
    return m.group(1).lower(), int(m.group(2) or 0)


def _formulas(text: str | None, default: str, label: str, line: int) -> list[Formula]:
    parts = [p for p in (text if text is not None and text.strip() else default).split(",")]
    if len(parts) > 3:
        raise KernelConfigError(f"{label}:{line}: work sizes take at most 3 dimensions, got '{text}'")
    return [Formula(p, f"{label}:{line}") for p in parts]


def _param(c: Element, label: str) -> Param:
    name = _attr(c, "arg-name", label)
    kind = _attr(c, "type", label).lower()
    if c.tag == "Tensor":
        if kind not in TENSOR_TYPES:
            raise KernelConfigError(f"{label}:{c.line}: <Tensor type=\"{kind}\">: expected one of "
                                    f"{', '.join(TENSOR_TYPES)}")
    elif c.tag == "Data":
        if kind not in DATA_TYPES:
            raise KernelConfigError(f"{label}:{c.line}: <Data type=\"{kind}\">: expected data or local_data")
    elif c.tag == "Scalar":
        if kind not in SCALAR_TYPES:
            raise KernelConfigError(f"{label}:{c.line}: <Scalar type=\"{kind}\">: expected int or float")
    else:
        raise KernelConfigError(f"{label}:{c.line}: <Parameters> may hold <Tensor>, <Data> and <Scalar>, "
                                f"not <{c.tag}>")
    fmt = (c.attrs.get("format") or ("ANY" if kind in ("data",) else "BFYX")).upper()
    if fmt not in FORMATS:
        raise KernelConfigError(f"{label}:{c.line}: format=\"{c.attrs.get('format')}\": expected one of "
                                f"{', '.join(FORMATS)}")
    p = Param(kind="scalar" if c.tag == "Scalar" else kind, arg_name=name, line=c.line, format=fmt,
              source=c.attrs.get("source"))
    if c.tag == "Scalar":
        p.scalar_type = kind
        p.port = _int(c, "port-index", label, 0)
        if p.source is None:
            raise KernelConfigError(f"{label}:{c.line}: <Scalar arg-name=\"{name}\"> needs a source (an attribute, "
                                    "a number or a dimension such as I.X)")
        return p
    if kind in ("input", "output", "input_buffer", "output_buffer"):
        p.port = _int(c, "port-index", label)
    if kind in ("input_buffer", "output_buffer", "local_data"):
        p.dim = parse_dim(c.attrs.get("dim"), label, c.line, ("input", 0))
        if kind != "input_buffer" or "size" in c.attrs:
            p.size = Formula(_attr(c, "size", label), f"{label}:{c.line}")
    if kind == "data":
        if p.source is None and "port-index" not in c.attrs:
            raise KernelConfigError(f"{label}:{c.line}: <{c.tag} type=\"data\" arg-name=\"{name}\"> needs a source "
                                    "(an attribute holding the blob) or a port-index (a constant input)")
        if "port-index" in c.attrs:
            p.port = _int(c, "port-index", label)
    return p


def _layer(el: Element, location: Location, label: str) -> Stage:
    name = _attr(el, "name", label)
    ltype = _attr(el, "type", label)
    if ltype != "MVCL":
        raise KernelConfigError(f"{label}:{el.line}: CustomLayer '{name}' has type=\"{ltype}\"; the VPU needs "
                                "type=\"MVCL\" (type=\"SimpleGPU\" layers are for the GPU device)")
    if el.attrs.get("version") != "1":
        raise KernelConfigError(f"{label}:{el.line}: CustomLayer '{name}' has version=\"{el.attrs.get('version')}\"; "
                                "only version=\"1\" exists")
    shaves = el.attrs.get("max-shaves")
    max_shaves = _int(el, "max-shaves", label) if shaves is not None else None
    if max_shaves is not None and max_shaves < 1:
        raise KernelConfigError(f"{label}:{el.line}: max-shaves=\"{shaves}\" must be at least 1")
    stage = _int(el, "stage", label, 0)
    kernels = [c for c in el.children if c.tag == "Kernel"]
    if len(kernels) != 1:
        raise KernelConfigError(f"{label}:{el.line}: CustomLayer '{name}' needs exactly one <Kernel>, has {len(kernels)}")
    kernel = kernels[0]
    entry = _attr(kernel, "entry", label)
    sources: list[Source] = []
    # OpenVINO 2020's parser also read <Parameters> and <WorkSizes> inside <Kernel> (the guide puts
    # them beside it): both are accepted, once
    nested = [c for c in kernel.children if c.tag in ("Parameters", "WorkSizes")]
    for s in kernel.children:
        if s.tag in ("Parameters", "WorkSizes"):
            continue
        if s.tag != "Source":
            raise KernelConfigError(f"{label}:{s.line}: <Kernel> holds <Source>, <Parameters> and <WorkSizes> "
                                    f"elements, not <{s.tag}>")
        fn = _attr(s, "filename", label)
        path = location.file_path(fn)
        if fn.lower().endswith(".bin"):
            if path is None or not Path(path).is_file():
                raise KernelConfigError(f"{label}:{s.line}: <Source filename=\"{fn}\">: {location.describe(fn)} "
                                        "does not exist")
            sources.append(Source(fn, s.line, location.describe(fn), path, None))
        else:
            sources.append(Source(fn, s.line, location.describe(fn), path, location.read(fn, label, s.line)))
    if not sources:
        raise KernelConfigError(f"{label}:{kernel.line}: <Kernel entry=\"{entry}\"> needs a <Source filename=...>")
    if any(s.is_binary for s in sources) and len(sources) > 1:
        raise KernelConfigError(f"{label}:{kernel.line}: a compiled .bin is a whole program: it cannot be combined "
                                "with other <Source> files")
    params: list[Param] = []
    where: dict[str, str] = {}
    where_line = 0
    ws: Element | None = None
    for c in [*el.children, *nested]:
        if c.tag == "Parameters":
            if any(p.tag == "Parameters" for p in el.children) and c in nested:
                raise KernelConfigError(f"{label}:{c.line}: CustomLayer '{name}' has <Parameters> both in and beside "
                                        "<Kernel>")
            params.extend(_param(p, label) for p in c.children)
        elif c.tag == "Where":
            where.update(c.attrs)
            where_line = c.line
        elif c.tag == "WorkSizes":
            if ws is not None:
                raise KernelConfigError(f"{label}:{c.line}: CustomLayer '{name}' has more than one <WorkSizes>")
            ws = c
        elif c.tag == "CompilerOptions":
            raise KernelConfigError(f"{label}:{c.line}: <CompilerOptions> is a GPU (SimpleGPU) element; MVCL kernels "
                                    "are compiled offline: pass options to `opforge vpu compile --options`")
        elif c.tag != "Kernel":
            raise KernelConfigError(f"{label}:{c.line}: CustomLayer '{name}' cannot hold <{c.tag}>")
    seen: dict[str, int] = {}
    for p in params:
        if p.arg_name in seen:
            raise KernelConfigError(f"{label}:{p.line}: arg-name \"{p.arg_name}\" is already bound at line "
                                    f"{seen[p.arg_name]}")
        seen[p.arg_name] = p.line
    ws_line = ws.line if ws is not None else el.line
    dim = parse_dim(ws.attrs.get("dim") if ws is not None else None, label, ws_line, ("input", 0))
    gws = _formulas(ws.attrs.get("global") if ws is not None else None, "B*F*Y*X,1,1", label, ws_line)
    lws = _formulas(ws.attrs.get("local") if ws is not None else None, ",".join(["1"] * len(gws)), label, ws_line)
    if len(lws) != len(gws):
        raise KernelConfigError(f"{label}:{ws_line}: WorkSizes local has {len(lws)} dimensions, global has {len(gws)}")
    return Stage(name, stage, max_shaves, entry, sources, params, gws, lws, dim, where, where_line, label, el.line)


def parse_layers(text: str, location: Location) -> list[Stage]:
    root = parse_xml(text, location.label)
    out: list[Stage] = []

    def walk(el: Element) -> None:
        for c in el.children:
            if c.tag == "CustomLayer":
                out.append(_layer(c, location, location.label))
            else:
                walk(c)
    walk(root)
    return out


def load_config(source: Any) -> list[Stage]:
    """The CustomLayer entries of a path or a ``(package, "path/in/package.xml")`` resource."""
    if isinstance(source, tuple):
        location = Location(source)
        try:
            text = importlib.resources.files(source[0]).joinpath(*[p for p in source[1].split("/") if p]).read_text(
                encoding="utf-8")
        except (OSError, UnicodeDecodeError, ModuleNotFoundError) as err:
            raise KernelConfigError(f"MVCL configuration {source[0]}:{source[1]}: cannot read it: {err}") from None
        return parse_layers(text, location)
    if not isinstance(source, (str, os.PathLike)):
        raise KernelConfigError(f"MVCL configuration {source!r}: expected a path or (package, 'resource.xml')")
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise KernelConfigError(f"MVCL configuration {path}: cannot read it: {err}") from None
    return parse_layers(text, Location(path))


def is_selector(source: str) -> bool:
    return _SELECTOR.match(source) is not None


def is_literal(source: str) -> bool:
    return _LITERAL.match(source.strip()) is not None


def selector(source: str) -> tuple[str, int | None, str] | None:
    """``I.X`` -> ("input", None, "X"); ``O1.F`` -> ("output", 1, "F")."""
    m = _SELECTOR.match(source)
    if m is None:
        return None
    return ("input" if m.group(1) == "I" else "output", int(m.group(2)) if m.group(2) else None, m.group(3))
