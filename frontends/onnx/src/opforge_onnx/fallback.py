"""Framework fallback for ONNX: a node listed in a ``CustomLayersMapping.xml`` runs through ONNX Runtime.

The node is stored as a one-node ModelProto (``payload``, base64) with the model's opset
imports; its inputs are renamed ``in0..``, its outputs ``out0..``. Output types and shapes come
from ONNX shape inference (no runtime needed) and, for what that leaves open (contrib ops such as
``com.microsoft::FastGelu`` have no ONNX schema), from ONNX Runtime's session (its own shape
inference), and, with static inputs, from running the node once. At inference the node runs
in a cached ``InferenceSession`` of that one-node model. ONNX Runtime is the optional extra
``opforge-onnx[fallback]``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import onnx
from onnx import helper
from opforge.element_type import Type
from opforge.errors import KernelError, ShapeInferenceError, UnsupportedOpError
from opforge.frontend.framework_node import FallbackRuntime, FrameworkNodeAttrs
from opforge.frontend.node_context import NodeContext
from opforge.op import TensorSpec
from opforge.shape import PartialShape

from opforge_onnx.loader import TYPE_TO_ONNX, decode_type

EXTRA = "opforge-onnx[fallback]"

#: ONNX Runtime's tensor type names (NodeArg.type is "tensor(<name>)")
_ORT_TYPES = {
    "float": onnx.TensorProto.FLOAT, "float16": onnx.TensorProto.FLOAT16, "double": onnx.TensorProto.DOUBLE,
    "bfloat16": onnx.TensorProto.BFLOAT16, "int8": onnx.TensorProto.INT8, "int16": onnx.TensorProto.INT16,
    "int32": onnx.TensorProto.INT32, "int64": onnx.TensorProto.INT64, "uint8": onnx.TensorProto.UINT8,
    "uint16": onnx.TensorProto.UINT16, "uint32": onnx.TensorProto.UINT32, "uint64": onnx.TensorProto.UINT64,
    "bool": onnx.TensorProto.BOOL,
}

#: sessions kept (one per node payload and input signature); least recently used dropped past this
SESSION_CACHE_SIZE = 64


def _import_ort() -> Any:
    import onnxruntime

    return onnxruntime


class OnnxFallbackRuntime(FallbackRuntime):
    framework = "onnx"
    extra = EXTRA

    def __init__(self) -> None:
        self._sessions: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._infer_cache: dict[tuple[Any, ...], list[TensorSpec]] = {}

    # --- conversion ---------------------------------------------------------------------------
    def payload(self, ctx: NodeContext, has_param: bool) -> tuple[str, int]:
        src = ctx.extra.get("node_proto")
        if not isinstance(src, onnx.NodeProto):
            raise UnsupportedOpError(f"{ctx.label}: the ONNX frontend gave no node proto for framework fallback")
        node = onnx.NodeProto()
        node.CopyFrom(src)
        node.name = ctx.name
        if not has_param:
            del node.attribute[:]
        k = 0
        for i, x in enumerate(node.input):
            if x:
                node.input[i] = f"in{k}"
                k += 1
        # Only the inputs opforge keeps: trailing empty optional inputs are dropped.
        while node.input and not node.input[-1]:
            del node.input[-1]
        for i in range(len(node.output)):
            node.output[i] = f"out{i}" if node.output[i] else ""
        opsets = dict(getattr(getattr(ctx.extra.get("subgraph"), "_conv", None), "opsets", {}) or {})
        if ctx.domain not in opsets and ctx.opset_version is not None:
            opsets[ctx.domain] = ctx.opset_version
        opsets.setdefault("", onnx.defs.onnx_opset_version())
        graph = helper.make_graph([node], f"fallback_{ctx.op_type}", [], [])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in sorted(opsets.items())])
        return base64.b64encode(model.SerializeToString()).decode("ascii"), max(len(node.output), 1)

    # --- the one-node model ---------------------------------------------------------------------
    @staticmethod
    def _model(attrs: FrameworkNodeAttrs, specs: list[TensorSpec],
               values: list[np.ndarray | None] | None = None) -> onnx.ModelProto:
        model = _decode(attrs.payload)
        g = model.graph
        node = g.node[0]
        names = [x for x in node.input if x]
        if len(names) != len(specs):
            raise ShapeInferenceError(
                f"framework-fallback ONNX node '{node.name}' ({attrs.op_type}) reads {len(names)} inputs, "
                f"the graph gives it {len(specs)}"
            )
        for name, spec, value in zip(names, specs, values or [None] * len(specs)):
            if value is not None:
                g.initializer.append(onnx.numpy_helper.from_array(np.asarray(value), name))
            dims: list[Any] | None = None
            if spec.shape.rank is not None:
                dims = [d if d is not None else f"{name}_d{i}" for i, d in enumerate(spec.shape.dims)]
            g.input.append(helper.make_tensor_value_info(name, TYPE_TO_ONNX[spec.type], dims))
        for o in node.output:
            if o:
                g.output.append(onnx.ValueInfoProto(name=o))
        return model

    def _session(self, model: onnx.ModelProto, node_label: str) -> Any:
        try:
            ort = _import_ort()
        except ImportError as err:
            raise self.missing(err, node_label) from None
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])

    # --- shape inference ------------------------------------------------------------------------
    def infer(self, node_name: str, attrs: FrameworkNodeAttrs, specs: list[TensorSpec],
              values: list[np.ndarray | None]) -> list[TensorSpec]:
        key = (attrs.payload, tuple((s.type, s.shape) for s in specs),
               tuple(None if v is None else _digest(v) for v in values))
        hit = self._infer_cache.get(key)
        if hit is None:
            hit = self._infer(node_name, attrs, specs, values)
            if len(self._infer_cache) > 4 * SESSION_CACHE_SIZE:
                self._infer_cache.clear()
            self._infer_cache[key] = hit
        return hit

    def _infer(self, node_name: str, attrs: FrameworkNodeAttrs, specs: list[TensorSpec],
               values: list[np.ndarray | None]) -> list[TensorSpec]:
        label = f"node '{node_name}' (framework-fallback ONNX op '{_qual(attrs)}')"
        if any(s.type is Type.dynamic for s in specs):
            return [TensorSpec(Type.dynamic, PartialShape.dynamic()) for _ in range(attrs.num_outputs)]
        model = self._model(attrs, specs, values)
        outs = [o for o in model.graph.node[0].output]
        # 1. ONNX shape inference: enough for ops with a schema, and needs no runtime
        found: dict[str, TensorSpec] = {}
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
            for vi in [*inferred.graph.output, *inferred.graph.value_info]:
                spec = _spec_of(vi.type)
                if spec is not None:
                    found[vi.name] = spec
        except Exception:  # noqa: BLE001 - ONNX has no schema or refuses: ONNX Runtime decides
            found = {}
        if all(o in found and found[o].shape.is_static for o in outs if o):
            return [found[o] if o else TensorSpec(Type.dynamic, PartialShape.dynamic()) for o in outs]
        # 2. ONNX Runtime: its session knows contrib ops and infers what it can
        try:
            sess = self._session(model, label)
        except UnsupportedOpError:
            if all(o in found for o in outs if o):
                return [found[o] if o else TensorSpec(Type.dynamic, PartialShape.dynamic()) for o in outs]
            raise
        except Exception as err:  # noqa: BLE001 - ONNX Runtime raises its own (pybind) error types
            raise ShapeInferenceError(f"{label}: ONNX Runtime cannot load the node: {err}") from None
        specs_out: dict[str, TensorSpec] = {}
        for arg in sess.get_outputs():
            ty = _ORT_TYPES.get(str(arg.type).removeprefix("tensor(").removesuffix(")"))
            if ty is None:
                raise ShapeInferenceError(f"{label}: output '{arg.name}' is a {arg.type}; opforge supports tensors")
            shape = None if arg.shape is None else [d if isinstance(d, int) and d >= 0 else None for d in arg.shape]
            specs_out[arg.name] = TensorSpec(decode_type(ty), PartialShape(shape))
        # 3. static inputs: run it on zeros and on ones (constants as they are) for the exact shapes;
        # a dimension that differs between the two depends on the data (NonZero) and stays dynamic
        if not all(s.shape.is_static for s in specs_out.values()) and all(s.shape.is_static for s in specs):
            shapes: list[list[tuple[int, ...]]] = []
            for fill in (0, 1):
                feed = {f"in{i}": np.full(s.shape.to_tuple(), fill, s.type.np)
                        for i, s in enumerate(specs) if values[i] is None}
                try:
                    shapes.append([np.asarray(a).shape for a in sess.run(None, feed)])
                except Exception as err:  # noqa: BLE001 - ONNX Runtime's own error types
                    raise ShapeInferenceError(f"{label}: ONNX Runtime failed to run the node on {fill}s to "
                                              f"find its output shapes: {err}") from None
            for k, arg in enumerate(sess.get_outputs()):
                a, b = shapes[0][k], shapes[1][k]
                dims = [x if x == y else None for x, y in zip(a, b)] if len(a) == len(b) else None
                specs_out[arg.name] = TensorSpec(specs_out[arg.name].type,
                                                 specs_out[arg.name].shape.merge(PartialShape(dims)))
        return [specs_out.get(o, TensorSpec(Type.dynamic, PartialShape.dynamic())) for o in outs]

    # --- inference ------------------------------------------------------------------------------
    def run(self, attrs: FrameworkNodeAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        label = f"framework-fallback ONNX op '{_qual(attrs)}'"
        arrays = [np.asarray(x) for x in inputs]
        specs = [TensorSpec(Type.from_numpy(a.dtype), PartialShape.dynamic(a.ndim)) for a in arrays]
        key = (hashlib.sha1(attrs.payload.encode()).hexdigest(), tuple((s.type, a.ndim) for s, a in zip(specs, arrays)))
        with self._lock:
            sess = self._sessions.get(key)
            if sess is not None:
                self._sessions.move_to_end(key)
        if sess is None:
            model = self._model(attrs, specs)
            try:
                sess = self._session(model, label)
            except UnsupportedOpError:
                raise
            except Exception as err:  # noqa: BLE001 - ONNX Runtime's own error types
                raise KernelError(f"{label}: ONNX Runtime cannot load the node: {err}") from None
            with self._lock:
                self._sessions[key] = sess
                while len(self._sessions) > SESSION_CACHE_SIZE:
                    self._sessions.popitem(last=False)
        try:
            outs = sess.run(None, {f"in{i}": a for i, a in enumerate(arrays)})
        except Exception as err:  # noqa: BLE001 - ONNX Runtime's own error types
            raise KernelError(f"{label} failed in ONNX Runtime: {err}") from None
        return [np.asarray(o) for o in outs]


@functools.lru_cache(maxsize=256)
def _decode_bytes(payload: str) -> bytes:
    return base64.b64decode(payload.encode("ascii"), validate=True)


def _decode(payload: str) -> onnx.ModelProto:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(_decode_bytes(payload))
    except Exception as err:  # noqa: BLE001 - protobuf's DecodeError, binascii.Error
        raise ShapeInferenceError(f"framework-fallback ONNX node: its payload is not a serialized model: {err}") from None
    if len(model.graph.node) != 1:
        raise ShapeInferenceError(f"framework-fallback ONNX node: its payload holds {len(model.graph.node)} nodes, "
                                  "expected 1")
    return model


def _qual(attrs: FrameworkNodeAttrs) -> str:
    return f"{attrs.domain}::{attrs.op_type}" if attrs.domain else attrs.op_type


def _digest(value: np.ndarray) -> str:
    a = np.ascontiguousarray(value)
    return f"{a.dtype}{a.shape}{hashlib.sha1(a.tobytes()).hexdigest()}"


def _spec_of(tp: onnx.TypeProto) -> TensorSpec | None:
    if not tp.HasField("tensor_type") or not tp.tensor_type.elem_type:
        return None
    try:
        et = decode_type(tp.tensor_type.elem_type)
    except Exception:  # noqa: BLE001 - a type opforge lacks: leave it to ONNX Runtime
        return None
    if not tp.tensor_type.HasField("shape"):
        return TensorSpec(et, PartialShape.dynamic())
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tp.tensor_type.shape.dim]
    return TensorSpec(et, PartialShape(dims))
