"""Framework fallback for Paddle: an op listed in a ``CustomLayersMapping.xml`` runs through paddle.

The op is stored as JSON (``payload``, base64): its type, named ports (how many variables each
binds) and, with ``hasParam="true"``, its attributes. paddle builds it into a one-op legacy
static program (``Block.append_op``), whose compile-time shape inference gives the output types
and shapes (with static inputs, a run on zeros fills dimensions it leaves open), and an
``Executor`` on CPU runs it at inference. Only ProgramDesc (``.pdmodel``) ops are supported: PIR
ops that opforge does not know have no legacy name to build them by. paddle is the optional
extra ``opforge-paddle[fallback]``; it is imported only when a fallback node is used.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.errors import KernelError, ShapeInferenceError, UnsupportedOpError
from opforge.frontend.framework_node import FallbackRuntime, FrameworkNodeAttrs
from opforge.frontend.node_context import NodeContext
from opforge.op import TensorSpec
from opforge.shape import PartialShape

EXTRA = "opforge-paddle[fallback]"

#: attributes that say where an op came from or how it trains, never what it computes
_NOT_PARAMS = frozenset({"op_callstack", "op_namescope", "op_role", "op_role_var", "op_device",
                         "with_quant_attr", "is_test"})

#: programs kept (one per op payload and input signature); least recently used dropped past this
PROGRAM_CACHE_SIZE = 64


def _import_paddle() -> Any:
    os.environ.setdefault("GLOG_minloglevel", "2")  # paddle's C++ INFO lines
    import paddle

    return paddle


def _jsonable(v: Any) -> bool:
    if isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, (list, tuple)):
        return all(isinstance(x, (bool, int, float, str)) for x in v)
    return False


class PaddleFallbackRuntime(FallbackRuntime):
    framework = "paddle"
    extra = EXTRA

    def __init__(self) -> None:
        self._programs: OrderedDict[tuple[Any, ...], tuple[Any, Any, list[Any]]] = OrderedDict()
        self._infer_cache: dict[tuple[Any, ...], list[TensorSpec]] = {}
        # paddle's static/dynamic mode is process-wide: one program build or run at a time
        self._lock = threading.RLock()

    # --- conversion ---------------------------------------------------------------------------
    def payload(self, ctx: NodeContext, has_param: bool) -> tuple[str, int]:
        op = ctx.extra.get("paddle_op")
        if ctx.extra.get("format") != "legacy" or op is None:
            raise UnsupportedOpError(
                f"{ctx.label}: framework fallback runs ProgramDesc ops (a legacy .pdmodel); this model is "
                f"in the {ctx.extra.get('format', '?')} format, whose unknown ops have no legacy name. Save the "
                "model with paddle.pir_utils.OldIrGuard() or convert the op with an extension"
            )
        attrs: dict[str, Any] = {}
        if has_param:
            dropped = []
            for k, v in op.attrs.items():
                if k in _NOT_PARAMS:
                    continue
                if _jsonable(v):
                    attrs[k] = list(v) if isinstance(v, tuple) else v
                else:
                    dropped.append(k)
            if dropped:
                raise UnsupportedOpError(
                    f"{ctx.label}: attribute(s) {', '.join(sorted(dropped))} are not plain values (blocks, "
                    "variables) and cannot be carried into a framework-fallback node"
                )
        doc = {"type": op.type, "inputs": [[k, len(v)] for k, v in op.inputs.items()],
               "outputs": [[k, len(v)] for k, v in op.outputs.items()], "attrs": attrs}
        n_out = sum(n for _, n in doc["outputs"])
        return base64.b64encode(json.dumps(doc, sort_keys=True).encode()).decode("ascii"), max(n_out, 1)

    # --- the one-op program -------------------------------------------------------------------
    def _program(self, attrs: FrameworkNodeAttrs, specs: list[TensorSpec], label: str) -> tuple[Any, Any, list[Any]]:
        """(program, executor, output variables) of the op for inputs of these types and shapes."""
        key = (attrs.payload, tuple((s.type, s.shape) for s in specs))
        with self._lock:
            hit = self._programs.get(key)
            if hit is not None:
                self._programs.move_to_end(key)
                return hit
        try:
            paddle = _import_paddle()
        except ImportError as err:
            raise self.missing(err, label) from None
        doc = _decode(attrs.payload)
        with self._lock, _StaticMode(paddle):
            prog = paddle.static.Program()
            block = prog.global_block()
            ins: dict[str, list[Any]] = {}
            k = 0
            for port, n in doc["inputs"]:
                ins[port] = []
                for _ in range(n):
                    if k >= len(specs):
                        raise ShapeInferenceError(f"{label}: the op binds more inputs than the node has ({len(specs)})")
                    s = specs[k]
                    shape = [-1 if d is None else d for d in s.shape.dims]
                    ins[port].append(block.create_var(name=f"in{k}", shape=shape, dtype=_dtype_name(s.type)))
                    k += 1
            outs: dict[str, list[Any]] = {}
            flat: list[Any] = []
            for port, n in doc["outputs"]:
                outs[port] = [block.create_var(name=f"out{len(flat) + j}") for j in range(n)]
                flat.extend(outs[port])
            try:
                block.append_op(type=doc["type"], inputs=ins, outputs=outs, attrs=doc["attrs"])
            except Exception as err:  # noqa: BLE001 - paddle raises its own error types
                raise ShapeInferenceError(f"{label}: paddle cannot build the op: {_first_line(err)}") from None
            exe = paddle.static.Executor(paddle.CPUPlace())
            entry = (prog, exe, flat)
            self._programs[key] = entry
            while len(self._programs) > PROGRAM_CACHE_SIZE:
                self._programs.popitem(last=False)
        return entry

    def _run(self, paddle: Any, entry: tuple[Any, Any, list[Any]], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        prog, exe, flat = entry
        with self._lock, _StaticMode(paddle):
            got = exe.run(prog, feed=feed, fetch_list=flat, return_numpy=True)
        return [np.asarray(g) for g in got]

    # --- shape inference ------------------------------------------------------------------------
    def infer(self, node_name: str, attrs: FrameworkNodeAttrs, specs: list[TensorSpec],
              values: list[np.ndarray | None]) -> list[TensorSpec]:
        label = f"node '{node_name}' (framework-fallback paddle op '{attrs.op_type}')"
        if any(s.type is Type.dynamic or s.shape.rank is None for s in specs):
            return [TensorSpec(Type.dynamic, PartialShape.dynamic()) for _ in range(attrs.num_outputs)]
        key = (attrs.payload, tuple((s.type, s.shape) for s in specs))
        hit = self._infer_cache.get(key)
        if hit is not None:
            return hit
        entry = self._program(attrs, specs, label)
        out: list[TensorSpec] = []
        for var in entry[2]:
            shape = None if var.shape is None else [d if d >= 0 else None for d in var.shape]
            out.append(TensorSpec(_type_of(var.dtype, label), PartialShape(shape)))
        if not all(s.shape.is_static for s in out) and all(s.shape.is_static for s in specs):
            # run on zeros and on ones: a dimension that differs depends on the data, stays dynamic
            shapes: list[list[tuple[int, ...]]] = []
            for fill in (0, 1):
                feed = {f"in{i}": (np.asarray(v) if v is not None else np.full(s.shape.to_tuple(), fill, s.type.np))
                        for i, (s, v) in enumerate(zip(specs, values))}
                try:
                    shapes.append([g.shape for g in self._run(_import_paddle(), entry, feed)])
                except Exception as err:  # noqa: BLE001 - paddle raises its own error types
                    raise ShapeInferenceError(f"{label}: paddle failed to run the op on {fill}s to find its "
                                              f"output shapes: {_first_line(err)}") from None
            out = [TensorSpec(s.type, s.shape.merge(PartialShape(
                [x if x == y else None for x, y in zip(a, b)] if len(a) == len(b) else None)))
                for s, a, b in zip(out, shapes[0], shapes[1])]
        if len(self._infer_cache) > 4 * PROGRAM_CACHE_SIZE:
            self._infer_cache.clear()
        self._infer_cache[key] = out
        return out

    # --- inference ------------------------------------------------------------------------------
    def run(self, attrs: FrameworkNodeAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        label = f"framework-fallback paddle op '{attrs.op_type}'"
        arrays = [np.asarray(x) for x in inputs]
        specs = [TensorSpec(Type.from_numpy(a.dtype), PartialShape(a.shape)) for a in arrays]
        entry = self._program(attrs, specs, label)
        try:
            return self._run(_import_paddle(), entry, {f"in{i}": a for i, a in enumerate(arrays)})
        except Exception as err:  # noqa: BLE001 - paddle raises its own error types
            raise KernelError(f"{label} failed in paddle: {_first_line(err)}") from None


class _StaticMode:
    """paddle's legacy static mode for the block, restoring whatever mode the process was in."""

    def __init__(self, paddle: Any) -> None:
        self.paddle = paddle
        self.was_dynamic = False
        self.guard: Any = None

    def __enter__(self) -> None:
        self.was_dynamic = bool(self.paddle.in_dynamic_mode())
        self.guard = self.paddle.pir_utils.OldIrGuard()
        self.guard.__enter__()
        self.paddle.enable_static()

    def __exit__(self, *exc: Any) -> None:
        if self.was_dynamic:
            self.paddle.disable_static()
        self.guard.__exit__(*exc)


def _decode(payload: str) -> dict[str, Any]:
    try:
        doc = json.loads(base64.b64decode(payload.encode("ascii"), validate=True))
    except (ValueError, UnicodeDecodeError) as err:
        raise ShapeInferenceError(f"framework-fallback paddle node: its payload is not valid: {err}") from None
    if not isinstance(doc, dict) or not {"type", "inputs", "outputs", "attrs"} <= set(doc):
        raise ShapeInferenceError("framework-fallback paddle node: its payload lacks type/inputs/outputs/attrs")
    return doc


def _dtype_name(t: Type) -> str:
    return "bool" if t is Type.boolean else str(t.np)


def _type_of(dtype: Any, label: str) -> Type:
    name = str(dtype).rsplit(".", 1)[-1].lower()
    try:
        return Type.parse(name)
    except Exception:  # noqa: BLE001 - any paddle dtype opforge lacks
        raise ShapeInferenceError(f"{label}: paddle gives output type {dtype}, which opforge has no type for") from None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    # paddle's errors carry a C++ stack; the summary line says what went wrong
    for line in text.splitlines():
        if "Error" in line and ":" in line:
            return line.strip()
    return text.splitlines()[0] if text else type(err).__name__
