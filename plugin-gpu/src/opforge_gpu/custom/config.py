"""OpenVINO's GPU custom-layer configuration (``CONFIG_FILE``), parsed with line numbers.

The format (OpenVINO "How to Implement Custom GPU Operations")::

    <CustomLayer name="ReLU" type="SimpleGPU" version="1">
      <Kernel entry="example_relu_kernel">
        <Source filename="custom_layer_kernel.cl"/>
        <Define name="neg_slope" type="float" param="negative_slope" default="0.0"/>
      </Kernel>
      <Buffers>
        <Tensor arg-index="0" type="input" port-index="0" format="BFYX"/>
        <Tensor arg-index="1" type="output" port-index="0" format="BFYX"/>
        <Data arg-index="2" name="weights"/>
      </Buffers>
      <CompilerOptions options="-cl-mad-enable"/>
      <WorkSizes global="X,Y,B*F" local="" dim="output"/>
    </CustomLayer>

A file may hold several ``CustomLayer`` elements, at top level (as OpenVINO's global file does) or
inside any root element. Sources are resolved relative to the XML file (or package resource).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.resources
import os
import re
import xml.parsers.expat
from collections.abc import Iterator
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from opforge.errors import KernelError


class KernelConfigError(KernelError, ValueError):
    """A custom-kernel configuration file is malformed; the message names the file and line."""


FORMATS = ("BFYX", "BYXF", "YXFB", "FYXB")
DEFINE_TYPES = ("int", "float", "int[]", "float[]")


@dataclasses.dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[Element] = dataclasses.field(default_factory=list)

    def find_all(self, tag: str) -> list[Element]:
        return [c for c in self.children if c.tag == tag]


class Location:
    """Where a configuration file and its sources live: a directory or a package resource."""

    def __init__(self, xml: str | os.PathLike[str] | Traversable | tuple[str, str]) -> None:
        self._dir: Path | None = None
        self._res: Traversable | None = None
        if isinstance(xml, tuple):
            package, resource = xml
            parts = [p for p in resource.replace("\\", "/").split("/") if p]
            trav: Traversable = importlib.resources.files(package)
            for p in parts[:-1]:
                trav = trav.joinpath(p)
            self._res = trav
            self.xml_name = parts[-1]
            self.label = f"{package}:{resource}"
        elif isinstance(xml, (str, os.PathLike)):
            xml_path = Path(xml)
            self._dir = xml_path.parent
            self.xml_name = xml_path.name
            self.label = str(xml_path)
        else:
            # A Traversable to the XML itself: sources sit beside it. Traversables expose no
            # parent, so keep the file and resolve siblings through its path when it has one.
            self.xml_name = xml.name
            as_path = Path(str(xml))
            if as_path.is_file():
                self._dir = as_path.parent
                self.label = str(as_path)
            else:
                raise KernelConfigError(
                    f"custom kernel resource {xml!r}: register it as (package, 'path/in/package.xml') "
                    "so its sources can be found beside it"
                )

    def read(self, name: str, referrer: str = "", line: int = 0) -> str:
        try:
            if self._dir is not None:
                return (self._dir / name).read_text(encoding="utf-8")
            if self._res is not None:
                trav = self._res
                for part in [p for p in name.replace("\\", "/").split("/") if p]:
                    trav = trav.joinpath(part)
                return trav.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            where = f"{referrer}:{line}: " if referrer else ""
            raise KernelConfigError(f"{where}cannot read '{name}' ({self.describe(name)}): {err}") from None
        raise KernelConfigError(f"no location to read '{name}' from")

    def describe(self, name: str) -> str:
        if self._dir is not None:
            return str(self._dir / name)
        return f"{self.label.rsplit(':', 1)[0]}:{self.resource_path(name)}"

    def resource_path(self, name: str) -> str:
        base = self.label.split(":", 1)[1] if ":" in self.label else ""
        folder = base.rsplit("/", 1)[0] if "/" in base else ""
        return f"{folder}/{name}" if folder else name

    def file_path(self, name: str) -> str | None:
        """A real file path (for quoting a failing line), when there is one."""
        if self._dir is not None:
            return str(self._dir / name)
        if self._res is not None:
            trav = self._res
            for part in [p for p in name.replace("\\", "/").split("/") if p]:
                trav = trav.joinpath(part)
            p = Path(str(trav))
            return str(p) if p.is_file() else None
        return None


def parse_xml(text: str, label: str) -> Element:
    """Parse ``text`` into elements with line numbers. DTDs and entities are refused (a config
    file never needs them, and they are the XML attack surface)."""
    # Several top-level CustomLayer elements are allowed (OpenVINO's global file has them), so
    # wrap everything in a synthetic root; the wrapper adds no line, so line numbers hold.
    body = re.sub(r"^\s*<\?xml[^>]*\?>", lambda m: " " * len(m.group(0)), text, count=1)
    dtd = re.search(r"<!(DOCTYPE|ENTITY)", body)
    if dtd:
        line = body.count("\n", 0, dtd.start()) + 1
        raise KernelConfigError(f"{label}:{line}: DOCTYPE/entity declarations are not allowed in a kernel config")
    parser = xml.parsers.expat.ParserCreate()
    root = Element("#root", {}, 1)
    stack = [root]

    def start(tag: str, attrs: dict[str, str]) -> None:
        el = Element(tag, dict(attrs), parser.CurrentLineNumber)
        stack[-1].children.append(el)
        stack.append(el)

    def end(tag: str) -> None:
        stack.pop()

    def no_dtd(*_: Any) -> None:
        raise KernelConfigError(f"{label}:{parser.CurrentLineNumber}: DOCTYPE/entity declarations are not allowed")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.StartDoctypeDeclHandler = no_dtd
    parser.EntityDeclHandler = no_dtd
    try:
        parser.Parse(f"<opforge-config>{body}</opforge-config>", True)
    except xml.parsers.expat.ExpatError as err:
        raise KernelConfigError(
            f"{label}:{err.lineno}: malformed XML: {xml.parsers.expat.ErrorString(err.code)} "
            f"(column {err.offset})"
        ) from None
    return root.children[0]


@dataclasses.dataclass
class DefineSpec:
    name: str
    param: str | None
    type: str | None
    default: str | None
    line: int


@dataclasses.dataclass
class TensorSpec:
    arg_index: int
    direction: str  # "input" | "output"
    port: int
    format: str
    line: int


@dataclasses.dataclass
class DataSpec:
    arg_index: int
    name: str
    line: int


@dataclasses.dataclass
class SourceSpec:
    filename: str
    text: str
    label: str  # the name build logs use (#line)
    path: str | None  # a real file, to quote the failing line
    line: int


@dataclasses.dataclass
class CustomLayerSpec:
    """One ``CustomLayer``: everything needed to build and launch it."""

    name: str
    entry: str
    sources: list[SourceSpec]
    defines: list[DefineSpec]
    tensors: list[TensorSpec]
    data: list[DataSpec]
    options: list[str]
    global_ws: list[str]
    local_ws: list[str]
    dim_source: str  # "output" | "input"
    dim_index: int
    file: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _attr(el: Element, name: str, label: str, required: bool = True) -> str | None:
    v = el.attrs.get(name)
    if v is None and required:
        raise KernelConfigError(f"{label}:{el.line}: <{el.tag}> needs the attribute '{name}'")
    return v


def _int_attr(el: Element, name: str, label: str) -> int:
    v = _attr(el, name, label)
    try:
        return int(str(v))
    except ValueError:
        raise KernelConfigError(f"{label}:{el.line}: <{el.tag} {name}=\"{v}\">: expected an integer") from None


def _one(parent: Element, tag: str, label: str, required: bool) -> Element | None:
    found = parent.find_all(tag)
    if len(found) > 1:
        raise KernelConfigError(f"{label}:{found[1].line}: <{parent.tag}> has more than one <{tag}>")
    if not found and required:
        raise KernelConfigError(f"{label}:{parent.line}: <{parent.tag}> needs a <{tag}> element")
    return found[0] if found else None


def _sizes(text: str | None) -> list[str]:
    if text is None or not text.strip():
        return []
    return [p.strip() for p in text.split(",")]


def parse_dim(text: str | None, label: str, line: int) -> tuple[str, int]:
    """``dim``: ``output`` (default), ``input N``; ``input,N`` / ``output,N`` are accepted too."""
    if text is None or not text.strip():
        return "output", 0
    m = re.fullmatch(r"\s*(input|output)\s*[, ]?\s*(\d*)\s*", text, re.IGNORECASE)
    if not m:
        raise KernelConfigError(f"{label}:{line}: <WorkSizes dim=\"{text}\">: expected 'output' or 'input N'")
    return m.group(1).lower(), int(m.group(2) or 0)


def parse_layers(text: str, location: Location) -> list[CustomLayerSpec]:
    """Every CustomLayer in a configuration file's text."""
    label = location.label
    root = parse_xml(text, label)
    layers: list[CustomLayerSpec] = []
    for el in _walk(root):
        if el.tag == "CustomLayer":
            layers.append(_layer(el, location, label))
    return layers


def _walk(el: Element) -> Iterator[Element]:
    for c in el.children:
        yield c
        if c.tag != "CustomLayer":
            yield from _walk(c)


def _layer(el: Element, location: Location, label: str) -> CustomLayerSpec:
    name = str(_attr(el, "name", label))
    ltype = _attr(el, "type", label)
    if ltype != "SimpleGPU":
        raise KernelConfigError(f"{label}:{el.line}: CustomLayer '{name}' has type=\"{ltype}\"; the GPU needs "
                                "type=\"SimpleGPU\"")
    version = _attr(el, "version", label)
    if version != "1":
        raise KernelConfigError(f"{label}:{el.line}: CustomLayer '{name}' has version=\"{version}\"; only "
                                "version=\"1\" exists")
    kernel = _one(el, "Kernel", label, True)
    buffers = _one(el, "Buffers", label, True)
    if kernel is None or buffers is None:
        raise KernelConfigError(f"{label}:{el.line}: CustomLayer '{name}' is incomplete")
    entry = str(_attr(kernel, "entry", label))  # type: ignore[arg-type]
    sources: list[SourceSpec] = []
    for s in kernel.find_all("Source"):  # type: ignore[union-attr]
        fn = str(_attr(s, "filename", label))
        text = location.read(fn, label, s.line)
        sources.append(SourceSpec(fn, text, location.describe(fn), location.file_path(fn), s.line))
    if not sources:
        raise KernelConfigError(f"{label}:{kernel.line}: <Kernel> of CustomLayer '{name}' needs at least one "  # type: ignore[union-attr]
                                "<Source filename=...>")
    defines = []
    for d in kernel.find_all("Define"):  # type: ignore[union-attr]
        dtype = d.attrs.get("type")
        if dtype is not None and dtype not in DEFINE_TYPES:
            raise KernelConfigError(f"{label}:{d.line}: <Define type=\"{dtype}\">: expected one of "
                                    f"{', '.join(DEFINE_TYPES)}")
        defines.append(DefineSpec(str(_attr(d, "name", label)), d.attrs.get("param"), dtype,
                                  d.attrs.get("default"), d.line))
    tensors: list[TensorSpec] = []
    data: list[DataSpec] = []
    for c in buffers.children:  # type: ignore[union-attr]
        if c.tag == "Tensor":
            direction = str(_attr(c, "type", label)).lower()
            if direction not in ("input", "output"):
                raise KernelConfigError(f"{label}:{c.line}: <Tensor type=\"{direction}\">: expected input or output")
            fmt = (c.attrs.get("format") or "BFYX").upper()
            if fmt not in FORMATS:
                raise KernelConfigError(f"{label}:{c.line}: <Tensor format=\"{c.attrs.get('format')}\">: expected "
                                        f"one of {', '.join(FORMATS)}")
            tensors.append(TensorSpec(_int_attr(c, "arg-index", label), direction, _int_attr(c, "port-index", label),
                                      fmt, c.line))
        elif c.tag == "Data":
            data.append(DataSpec(_int_attr(c, "arg-index", label), str(_attr(c, "name", label)), c.line))
        else:
            raise KernelConfigError(f"{label}:{c.line}: <Buffers> may hold <Tensor> and <Data>, not <{c.tag}>")
    if not tensors:
        raise KernelConfigError(f"{label}:{buffers.line}: <Buffers> of CustomLayer '{name}' needs a <Tensor>")  # type: ignore[union-attr]
    indices = sorted([t.arg_index for t in tensors] + [d.arg_index for d in data])
    if indices != list(range(len(indices))):
        raise KernelConfigError(f"{label}:{buffers.line}: arg-index values {indices} of CustomLayer '{name}' "  # type: ignore[union-attr]
                                f"must be 0..{len(indices) - 1}, each once")
    options = [str(_attr(o, "options", label)) for o in el.find_all("CompilerOptions")]
    ws = _one(el, "WorkSizes", label, False)
    global_ws = _sizes(ws.attrs.get("global")) if ws is not None else []
    local_ws = _sizes(ws.attrs.get("local")) if ws is not None else []
    dim_source, dim_index = parse_dim(ws.attrs.get("dim") if ws is not None else None, label,
                                      ws.line if ws is not None else el.line)
    for formula in global_ws + local_ws:
        check_formula(formula, label, ws.line if ws is not None else el.line)
    if len(global_ws) > 3 or len(local_ws) > 3:
        raise KernelConfigError(f"{label}:{ws.line if ws else el.line}: WorkSizes take at most 3 dimensions")
    if local_ws and global_ws and len(local_ws) != len(global_ws):
        raise KernelConfigError(f"{label}:{ws.line if ws else el.line}: WorkSizes local has {len(local_ws)} "
                                f"dimensions, global has {len(global_ws)}")
    return CustomLayerSpec(name, entry, sources, defines, tensors, data, options, global_ws or ["B*F*Y*X"],
                           local_ws, dim_source, dim_index, label, el.line)


# --- work-size formulas -------------------------------------------------------------------------
_NAMES = ("B", "F", "Z", "Y", "X", "W")


def check_formula(text: str, label: str, line: int) -> None:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise KernelConfigError(f"{label}:{line}: work size '{text}' is not a formula") from None
    for n in ast.walk(tree):
        ok = isinstance(n, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult, ast.Div,
                            ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd, ast.Load))
        ok = ok or (isinstance(n, ast.Constant) and isinstance(n.value, int))
        ok = ok or (isinstance(n, ast.Name) and n.id in _NAMES)
        if not ok:
            raise KernelConfigError(
                f"{label}:{line}: work size '{text}' may use integers, B, F, Y, X (Z, W for 5-D/6-D) "
                "and + - * / %"
            )


def eval_formula(text: str, dims: dict[str, int]) -> int:
    """Integer evaluation of a work-size formula (``/`` is integer division, as in C)."""
    def ev(n: ast.AST) -> int:
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.Name):
            return dims[n.id]
        if isinstance(n, ast.UnaryOp):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else v
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, ast.Mult):
                return a * b
            if b == 0:
                raise KernelConfigError(f"work size '{text}' divides by zero for dims {dims}")
            if isinstance(n.op, (ast.Div, ast.FloorDiv)):
                return int(a / b)
            return a - b * int(a / b)
        raise KernelConfigError(f"work size '{text}': unsupported expression")
    return ev(ast.parse(text, mode="eval"))


def load_config(source: Any) -> list[CustomLayerSpec]:
    """CustomLayers from a path, a (package, resource) pair, or a Traversable."""
    location = Location(source)
    try:
        if isinstance(source, (str, os.PathLike)):
            text = Path(source).read_text(encoding="utf-8")
        else:
            text = location.read(location.xml_name)
    except (OSError, UnicodeDecodeError) as err:  # a config file is UTF-8 XML; anything else is refused
        raise KernelConfigError(f"custom kernel configuration {location.label}: cannot read it: {err}") from None
    return parse_layers(text, location)
