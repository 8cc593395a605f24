"""Write a :class:`~opforge.graph.Model` as OpenVINO IR v11 (``.xml`` topology + ``.bin`` weights).

The output follows what ``openvino.save_model`` writes, so that ``openvino.Core().read_model``
loads it unchanged:

* ``<net name version="11">``, then ``<layers>`` in topological order (parameters first, in model
  input order; results in model output order: IR v11 readers restore both orders from the layer
  order), ``<edges>`` and the model ``<rt_info>``.
* Each ``<layer id name type version>`` holds ``<data>`` (the op attributes as IR strings),
  ``<rt_info>``, ``<input>`` and ``<output>`` ports. Port ids count the inputs first and continue
  with the outputs (``Add``: inputs 0 and 1, output 2).
* ``Const`` layers point into the ``.bin`` with ``offset``/``size`` in bytes; identical constants
  are stored once.
* ``compress_to_fp16`` stores f32 constants as f16 followed by a ``Convert`` back to f32 marked
  with the ``decompression`` runtime attribute, as OpenVINO does.
* An op with a body sub-model (Loop-5) writes ``<port_map>``, ``<back_edges>`` and a nested
  ``<body>`` net instead of ``<data>`` (:mod:`opforge.ir.subgraph`); its constants share the ``.bin``.
* Custom ops (a version that is not ``opsetN``) keep their opset name as ``version``; the model
  ``rt_info`` records which plugin distribution provides each custom opset, so that a reader
  without the plugin can tell its user what to install.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from opforge.element_type import PRECISION_NAMES, Type
from opforge.errors import ModelValidationError, ModelWriteError
from opforge.graph import WEIGHTS_RELEASED, Model, Node, Output
from opforge.ir.subgraph import body_of, write_body
from opforge.shape import PartialShape

if TYPE_CHECKING:
    from opforge.plugins.manager import PluginSystem

IR_VERSION = 11

#: OpenVINO writes these standard ops under their historical IR names (and reads both spellings).
IR_TYPE_NAMES: dict[str, str] = {"Constant": "Const", "PRelu": "PReLU", "Relu": "ReLU", "Softmax": "SoftMax"}
#: The reverse mapping, for readers.
TYPE_NAMES_FROM_IR: dict[str, str] = {v: k for k, v in IR_TYPE_NAMES.items()}

#: Where the writer keeps its own bookkeeping in the model ``rt_info``.
RT_INFO_KEY = "opforge"
#: ``rt_info[RT_INFO_KEY][CUSTOM_OPSETS_KEY][opset] = {"plugin", "distribution", "version"}``
CUSTOM_OPSETS_KEY = "custom_opsets"

_STANDARD_OPSET = re.compile(r"opset(\d+)")
# OpenVINO writes an rt_info key as an element name when it is a valid XML name, else as
# <info name="...">. Keep to the ASCII subset so every XML parser agrees.
_XML_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_XML_RESERVED = re.compile(r"xml", re.IGNORECASE)
# Characters XML 1.0 cannot carry at all, not even escaped.
_XML_INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def opset_number(version: str) -> int | None:
    """N for a standard ``"opsetN"`` version, None for a custom opset name."""
    m = _STANDARD_OPSET.fullmatch(version)
    return int(m.group(1)) if m else None


def join_names(names: Iterable[str]) -> str:
    """Tensor names as OpenVINO writes them in ``names=``: comma-separated, commas escaped."""
    return ",".join(n.replace(",", "\\,") for n in names)


def split_names(text: str) -> list[str]:
    """The inverse of :func:`join_names` (``"a\\,b,c"`` -> ``["a,b", "c"]``)."""
    out: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] == ",":
            cur.append(",")
            i += 2
            continue
        if ch == ",":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    # OpenVINO never writes empty names; an empty string here comes from names="" or "a,,b".
    return [n for n in out if n]


def precision_name(t: Type) -> str:
    # OpenVINO writes a dynamic element type's port precision as UNSPECIFIED.
    return "UNSPECIFIED" if t is Type.dynamic else PRECISION_NAMES[t]


def rt_value_to_ir(v: Any) -> str:
    """How OpenVINO prints rt_info values: booleans as YES/NO, lists space-separated."""
    if isinstance(v, bool):
        return "YES" if v else "NO"
    if isinstance(v, (list, tuple)):
        return " ".join(rt_value_to_ir(x) for x in v)
    return str(v)


# ============================================================================ public API
def save_model(
    model: Model,
    xml_path: str | os.PathLike[str],
    bin_path: str | os.PathLike[str] | None = None,
    *,
    compress_to_fp16: bool = False,
    plugins: PluginSystem | None = None,
    protect: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Write ``model`` as IR v11: ``xml_path`` and ``bin_path`` (default: the ``.bin`` beside it).

    Both files are written to temporary files in their target directories first and renamed into
    place only when both are complete (weights first), so a failed save leaves neither a
    half-written pair nor an orphan ``.bin``. They get the usual permissions (``0666`` less the
    umask). Paths that cannot be written (no such folder, a directory, no permission) and outputs
    that would replace a file in ``protect`` (the model being converted and its weights) are a
    :class:`~opforge.errors.ModelWriteError` before anything is written.
    ``plugins`` is where custom ops are looked up to record their distribution (default: the
    process-wide plugin system).
    """
    xml_p = Path(xml_path)
    bin_p = Path(bin_path) if bin_path is not None else xml_p.with_suffix(".bin")
    check_output(xml_p, bin_p, protect)
    # Weights stream straight into the temporary .bin (a model's weights can exceed free RAM);
    # the .xml, small, is built in memory.
    temps: list[Path] = []
    try:
        bin_tmp = _temp_beside(bin_p)
        temps.append(bin_tmp)
        with open(bin_tmp, "wb") as bin_f:
            xml_bytes = _Writer(model, compress_to_fp16, plugins, bin_f).run()
            bin_f.flush()
            os.fsync(bin_f.fileno())
        xml_tmp = _temp_beside(xml_p)
        temps.append(xml_tmp)
        with open(xml_tmp, "wb") as xml_f:
            xml_f.write(xml_bytes)
            xml_f.flush()
            os.fsync(xml_f.fileno())
        mode = 0o666 & ~_umask()
        for tmp in temps:
            os.chmod(tmp, mode)  # mkstemp made them 0600
        os.replace(bin_tmp, bin_p)
        os.replace(xml_tmp, xml_p)
        temps.clear()
    except OSError as err:
        raise ModelWriteError(
            f"save_model: cannot write '{xml_p}' and '{bin_p.name}': {err.strerror or err}"
        ) from None
    finally:
        for tmp in temps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def check_output(xml_path: str | os.PathLike[str], bin_path: str | os.PathLike[str] | None = None,
                 protect: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Raise :class:`~opforge.errors.ModelWriteError` now if :func:`save_model` could not write
    these paths (or would replace a file in ``protect``); for tools that read a model first."""
    xml_p = Path(xml_path)
    bin_p = Path(bin_path) if bin_path is not None else xml_p.with_suffix(".bin")
    if xml_p.resolve() == bin_p.resolve():
        raise ModelWriteError(f"save_model: the .xml and .bin paths are the same file '{xml_p}'")
    protect = list(protect)
    for out in (xml_p, bin_p):
        _check_writable(out, protect)


def _check_writable(path: Path, protect: Iterable[str | os.PathLike[str]]) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise ModelWriteError(f"save_model: cannot write '{path}': folder '{directory}' does not exist")
    if path.is_dir():
        raise ModelWriteError(f"save_model: cannot write '{path}': it is a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ModelWriteError(f"save_model: cannot write '{path}': no permission to write into folder '{directory}'")
    for src in protect:
        if _same_file(path, Path(src)):
            raise ModelWriteError(
                f"save_model: refusing to write '{path}': it is '{src}', a file of the model being converted; "
                "choose another output name"
            )


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _temp_beside(path: Path) -> Path:
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    return Path(tmp)


def _umask() -> int:
    """The process umask, without changing it (Linux reports it in /proc) where possible."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # the portable way reads it by setting it; put it back at once
    os.umask(mask)
    return mask


def serialize(
    model: Model, *, compress_to_fp16: bool = False, plugins: PluginSystem | None = None
) -> tuple[bytes, bytes]:
    """The IR v11 ``.xml`` and ``.bin`` contents of ``model``, in memory."""
    sink = io.BytesIO()
    xml = _Writer(model, compress_to_fp16, plugins, sink).run()
    return xml, sink.getvalue()


# ============================================================================ the writer
class _Writer:
    def __init__(self, model: Model, compress_to_fp16: bool, plugins: PluginSystem | None,
                 sink: BinaryIO) -> None:
        self.model = model
        self.compress = compress_to_fp16
        self.plugins = plugins
        self.sink = sink  # the .bin being written
        self.bin_size = 0
        # sha256 of a constant's bytes -> [(offset, bytes as a uint8 array)]: identical
        # constants are stored once; the byte comparison guards against hash collisions.
        self.stored: dict[bytes, list[tuple[int, np.ndarray]]] = {}
        self.next_id = 0
        # (node id, output index) -> (layer id, port id) of the port that carries that value
        self.out_ports: dict[tuple[int, int], tuple[int, int]] = {}
        self.edges: list[tuple[int, int, int, int]] = []
        #: node id -> layer id (a body's port map names its Parameter and Result layers)
        self.layer_ids: dict[int, int] = {}

    def run(self) -> bytes:
        """Write the weights to the sink; return the .xml."""
        model = self.model
        if not model.results:
            raise ModelValidationError(f"save_model: model '{model.name}' has no outputs; nothing to write")
        net = ET.Element("net", {"name": model.name, "version": str(IR_VERSION)})
        order = self.graph(net)
        rt = self._model_rt_info(order)
        if rt:
            _rt_info_to_xml(ET.SubElement(net, "rt_info"), rt)
        _check_xml_chars(net)
        ET.indent(net, space="\t")
        xml = b'<?xml version="1.0"?>\n' + ET.tostring(net, encoding="utf-8", xml_declaration=False) + b"\n"
        return xml

    def graph(self, parent: ET.Element) -> list[Node]:
        """``<layers>`` and ``<edges>`` of the model into ``parent`` (a ``<net>`` or a ``<body>``)."""
        layers = ET.SubElement(parent, "layers")
        order = self.model.get_ordered_ops()
        for node in order:
            self._layer(layers, node)
        edges = ET.SubElement(parent, "edges")
        for fl, fp, tl, tp in sorted(self.edges):
            ET.SubElement(edges, "edge", {
                "from-layer": str(fl), "from-port": str(fp), "to-layer": str(tl), "to-port": str(tp),
            })
        return order

    # --- layers ------------------------------------------------------------------------------
    def _new_id(self) -> int:
        i = self.next_id
        self.next_id += 1
        return i

    def _layer(self, parent: ET.Element, node: Node) -> None:
        if node.type_name == "Constant":
            self._constant(parent, node)
            return
        lid = self._new_id()
        attrs = {"id": str(lid), "name": node.name, "type": IR_TYPE_NAMES.get(node.type_name, node.type_name),
                 "version": node.version}
        if node.type_name == "Result":
            names = node.inputs[0].names
            if names:
                # IR v11 keeps a model output's tensor names on the Result layer as well.
                attrs["output_names"] = join_names(names)
        el = ET.SubElement(parent, "layer", attrs)
        self.layer_ids[node.id] = lid
        body = body_of(node)
        # A body-carrying op (Loop) has no <data>: its attributes are the port map and the body.
        data = node.op.attrs_to_ir(node.attrs) if body is None else {}
        if data:
            ET.SubElement(el, "data", data)
        self._node_rt_info(el, node.rt_info)
        self._ports(el, lid, node.inputs, [] if node.type_name == "Result" else node.outputs(), node)
        if body is not None:
            write_body(self, el, node, body)

    def _ports(self, el: ET.Element, lid: int, inputs: list[Output], outputs: list[Output],
               node: Node) -> None:
        if inputs:
            ins = ET.SubElement(el, "input")
            for i, src in enumerate(inputs):
                _port(ins, i, src.element_type, src.partial_shape, [])
                fl, fp = self.out_ports[(src.node.id, src.index)]
                self.edges.append((fl, fp, lid, i))
        if outputs:
            outs = ET.SubElement(el, "output")
            for j, out in enumerate(outputs):
                pid = len(inputs) + j
                _port(outs, pid, out.element_type, out.partial_shape, out.names)
                self.out_ports[(node.id, j)] = (lid, pid)

    def _constant(self, parent: ET.Element, node: Node) -> None:
        if node.rt_info.get(WEIGHTS_RELEASED):
            raise ModelValidationError(
                f"constant '{node.name}' was released by {node.rt_info[WEIGHTS_RELEASED]} after packing its own "
                "copy; save the model you compiled, not the compiled model's runtime graph"
            )
        value: np.ndarray = node.attrs.value  # type: ignore[attr-defined]
        out = node.output(0)
        compress = self.compress and value.dtype == np.float32 and _fits_f16(value)
        stored = value.astype(np.float16) if compress else value
        t = Type.from_numpy(stored.dtype)
        offset, size = self._store(stored)
        lid = self._new_id()
        el = ET.SubElement(parent, "layer", {
            "id": str(lid), "name": f"{node.name}_compressed" if compress else node.name,
            "type": "Const", "version": node.version,
        })
        ET.SubElement(el, "data", {
            "element_type": t.ir, "shape": ",".join(str(d) for d in stored.shape),
            "offset": str(offset), "size": str(size),
        })
        if not compress:
            self._node_rt_info(el, node.rt_info)
        outs = ET.SubElement(el, "output")
        shape = PartialShape(stored.shape)
        _port(outs, 0, t, shape, [] if compress else out.names)
        if not compress:
            self.out_ports[(node.id, 0)] = (lid, 0)
            return
        # Const(f16) -> Convert(f32) named like the original constant, as OpenVINO's
        # compress_to_fp16 writes it; the decompression mark tells plugins to keep it lazy.
        cid = self._new_id()
        conv = ET.SubElement(parent, "layer", {"id": str(cid), "name": node.name, "type": "Convert",
                                                "version": "opset1"})
        ET.SubElement(conv, "data", {"destination_type": Type.f32.ir})
        rt = dict(node.rt_info)
        rt["decompression"] = ""
        self._node_rt_info(conv, rt)
        ins = ET.SubElement(conv, "input")
        _port(ins, 0, Type.f16, shape, [])
        outs = ET.SubElement(conv, "output")
        _port(outs, 1, Type.f32, shape, out.names)
        self.edges.append((lid, 0, cid, 0))
        self.out_ports[(node.id, 0)] = (cid, 1)

    def _store(self, value: np.ndarray) -> tuple[int, int]:
        """Append a constant's little-endian bytes to the .bin (once per distinct content)."""
        arr = np.ascontiguousarray(value)
        if sys.byteorder != "little" and arr.dtype.itemsize > 1:
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        raw = arr.reshape(-1).view(np.uint8)
        size = int(raw.size)
        align = max(1, arr.dtype.itemsize)
        digest = hashlib.sha256(raw.data).digest()
        for offset, other in self.stored.get(digest, []):
            # Reuse only where the reader can map it aligned for this element type.
            if offset % align == 0 and other.size == size and np.array_equal(other, raw):
                return offset, size
        # Pad to the element size so readers can map the constant in place (a zero-copy,
        # aligned view); OpenVINO reads any offset, so the padding costs nothing but bytes.
        pad = (-self.bin_size) % align
        if pad:
            self.sink.write(b"\0" * pad)
        offset = self.bin_size + pad
        self.sink.write(raw.data)
        self.bin_size = offset + size
        self.stored.setdefault(digest, []).append((offset, raw))
        return offset, size

    @staticmethod
    def _node_rt_info(el: ET.Element, rt: Mapping[str, Any]) -> None:
        """Per-node runtime info as OpenVINO's ``<attribute name version value>`` elements.

        Only plain values are written: runtime objects (callbacks, device handles) have no text
        form, and OpenVINO likewise drops rt_info entries it cannot serialize.
        """
        plain = (str, int, float, bool, list, tuple)
        items = [(str(k), v) for k, v in rt.items()
                 if isinstance(v, plain) or (isinstance(v, Mapping) and all(isinstance(x, plain) for x in v.values()))]
        if not items:
            return
        rt_el = ET.SubElement(el, "rt_info")
        for k, v in items:
            a = {"name": k, "version": "0"}
            if isinstance(v, Mapping):
                # An attribute read in OpenVINO's other forms (``version="1"``, data under its
                # own XML attributes): written back as it was read.
                a.update({str(kk): rt_value_to_ir(vv) for kk, vv in v.items() if str(kk) != "name"})
            else:
                text = rt_value_to_ir(v)
                if text != "":
                    a["value"] = text
            ET.SubElement(rt_el, "attribute", a)

    # --- model rt_info -----------------------------------------------------------------------
    def _model_rt_info(self, order: list[Node]) -> dict[str, Any]:
        from opforge import __version__

        rt = dict(self.model.rt_info)
        old = rt.get(RT_INFO_KEY)
        old_custom = old.get(CUSTOM_OPSETS_KEY, {}) if isinstance(old, Mapping) else {}
        custom: dict[str, Any] = {}
        for node in order:
            if opset_number(node.version) is not None or node.version in custom:
                continue
            rec = self._plugin_record(node)
            if rec is None and isinstance(old_custom, Mapping) and isinstance(old_custom.get(node.version), Mapping):
                # Not registered here (the model came from an IR read with another plugin
                # system): keep what the file it came from said.
                rec = dict(old_custom[node.version])
            if rec is not None:
                custom[node.version] = rec
        own: dict[str, Any] = {"version": __version__}
        if custom:
            own[CUSTOM_OPSETS_KEY] = custom
        rt[RT_INFO_KEY] = {**(dict(old) if isinstance(old, Mapping) else {}), **own}
        if not custom and isinstance(rt[RT_INFO_KEY], dict):
            rt[RT_INFO_KEY].pop(CUSTOM_OPSETS_KEY, None)
        return rt

    def _plugin_record(self, node: Node) -> dict[str, str] | None:
        """Who provides this custom op: plugin name, distribution and version, as registered."""
        ps = self.plugins
        if ps is None:
            from opforge.plugins import default_plugins

            ps = default_plugins()
        try:
            reg = ps.ops.registration(node.op.key())
        except Exception:  # noqa: BLE001 - a plugin conflict must not stop a save; the record is a hint
            return None
        if reg is None:
            return None
        info = reg.plugin
        rec = {"plugin": info.name}
        if info.distribution:
            rec["distribution"] = info.distribution
        if info.version:
            rec["version"] = info.version
        return rec


def _port(parent: ET.Element, pid: int, t: Type, shape: PartialShape, names: list[str]) -> None:
    a = {"id": str(pid), "precision": precision_name(t)}
    if names:
        a["names"] = join_names(names)
    p = ET.SubElement(parent, "port", a)
    if shape.rank is not None:
        # A dynamic rank is a port without <dim> children, as OpenVINO writes it.
        for d in shape.dims:
            ET.SubElement(p, "dim").text = "-1" if d is None else str(d)


def _fits_f16(value: np.ndarray) -> bool:
    """Whether storing ``value`` as f16 keeps it finite.

    OpenVINO clamps out-of-range values to +-65504; opforge keeps such constants in f32 instead,
    because silently changing 1e6 into 65504 changes what the model computes.
    """
    if value.size == 0:
        return True
    finite = np.isfinite(value)
    return bool(np.all(np.abs(value[finite]) <= np.finfo(np.float16).max))


def _rt_info_to_xml(parent: ET.Element, rt: Mapping[Any, Any]) -> None:
    """Model rt_info as OpenVINO writes it: sorted keys, ``<key value="..."/>`` or, for keys that
    are not XML names, ``<info name="key" value="..."/>``; dictionaries nest."""
    for key in sorted(rt, key=str):
        k = str(key)
        v = rt[key]
        if _XML_NAME.fullmatch(k) and not _XML_RESERVED.match(k):
            child = ET.SubElement(parent, k)
        else:
            child = ET.SubElement(parent, "info", {"name": k})
        if isinstance(v, Mapping):
            _rt_info_to_xml(child, v)
        else:
            child.set("value", rt_value_to_ir(v))


def _check_xml_chars(net: ET.Element) -> None:
    """Refuse names and values that would make the .xml unreadable by every XML parser."""
    for layer in net.iter("layer"):
        for el in layer.iter():
            for key, value in el.attrib.items():
                m = _XML_INVALID.search(value)
                if m:
                    raise ModelValidationError(
                        f"save_model: node {layer.get('name')!r}: {el.tag} attribute {key}={value!r} contains "
                        f"the character U+{ord(m.group()):04X}, which XML cannot represent; rename it"
                    )
    for el in net.iter():
        for key, value in el.attrib.items():
            m = _XML_INVALID.search(value)
            if m:
                raise ModelValidationError(
                    f"save_model: model rt_info <{el.tag}> {key}={value!r} contains the character "
                    f"U+{ord(m.group()):04X}, which XML cannot represent"
                )
