"""A model compiled for the GPU: plans per input shapes, per-request device memory, inference."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from opforge.errors import KernelError, OpforgeError, ResourceLimitError
from opforge.graph import Model, Node
from opforge.op import STRUCTURAL
from opforge.runtime.device import Executable
from opforge.runtime.profiling import ProfilingInfo

from opforge_gpu.library import BuiltinKernels
from opforge_gpu.library.dynamic import after, apply_counts, dynamic_nodes, is_dynamic
from opforge_gpu.lowering import (
    MAX_VALUE_INPUT,
    KernelImpl,
    Lowering,
    fold_constants,
    plan_epilogues,
    specialize,
    value_inputs,
)
from opforge_gpu.opencl import DeviceContext
from opforge_gpu.plan import Plan, RequestMemory

Chooser = Callable[[Node], KernelImpl | None]


class RequestState:
    """Per infer request: a command queue and the memory of each plan it has run."""

    def __init__(self, dev: DeviceContext, profiling: bool) -> None:
        self.queue = dev.queue(profiling)
        self.memory: dict[int, RequestMemory] = {}
        self.events: list[tuple[str, str, str, str, Any]] = []


class GpuExecutable(Executable):
    def __init__(self, model: Model, dev: DeviceContext, device_name: str, config: dict[str, Any],
                 choose: Chooser, cache_dir: str | None) -> None:
        self.model = model
        self.dev = dev
        self.device_name = device_name
        self.config = config
        self.choose = choose
        self.cache_dir = cache_dir
        self.half = str(config.get("INFERENCE_PRECISION_HINT", "f32")).lower() == "f16"
        self.profiling = bool(config.get("ENABLE_PROFILING", False))
        self._plans: dict[Any, Plan] = {}
        #: model inputs whose values the plans depend on (axes, shapes, pads... fed at run time)
        self.value_inputs = value_inputs(model)
        self._const_cache: dict[Any, Any] = {}
        self._lock = threading.Lock()
        shapes = [p.output(0).partial_shape for p in model.parameters]
        if all(s.is_static for s in shapes) and not self.value_inputs:
            # Static models build (and report errors) at compile time, not at first inference.
            self.plan(tuple(s.to_tuple() for s in shapes))

    # --- plans -----------------------------------------------------------------------------
    def plan(self, shapes: tuple[tuple[int, ...], ...], values: dict[int, np.ndarray] | None = None,
             counts: tuple[int, ...] = ()) -> Plan:
        """The plan for these shapes and values; ``counts`` are the output sizes observed so far of
        the data-dependent nodes (NonZero...) in order: the plan stops at the count pass of the
        next one (``plan.probe``), or is complete."""
        key: Any = shapes
        if values:
            key = (shapes, tuple((k, values[k].dtype.str, values[k].tobytes()) for k in sorted(values)))
        if counts:
            key = (key, counts)
        with self._lock:
            got = self._plans.get(key)
            if got is None:
                got = self._plans[key] = self._build(shapes, values, counts)
            return got

    def plan_key(self, inputs: Sequence[np.ndarray]) -> tuple[Any, dict[int, np.ndarray]]:
        """The shapes (and the values of value inputs) that select the plan for ``inputs``."""
        shapes = tuple(tuple(int(d) for d in a.shape) for a in inputs)
        values: dict[int, np.ndarray] = {}
        for k in self.value_inputs:
            et = self.model.parameters[k].output_specs[0].type
            v = np.array(inputs[k], dtype=et.np, order="C")
            if v.size > MAX_VALUE_INPUT:
                raise KernelError(
                    f"model input {k} ('{self.model.parameters[k].name}') sets shapes or axes, so the GPU reads "
                    f"it to plan the model; it has {v.size} elements (at most {MAX_VALUE_INPUT})"
                )
            values[k] = v
        return shapes, values

    def _build(self, shapes: tuple[tuple[int, ...], ...], values: dict[int, np.ndarray] | None = None,
               counts: tuple[int, ...] = ()) -> Plan:
        m = specialize(self.model, shapes, values)
        stop = apply_counts(m, counts)
        for _ in counts:
            # Observed sizes make the shape computations after them constant (the K of an SSD's
            # TopK = min(300, ShapeOf(NonZero)[1])): fold them, so kernels see static values.
            # Folding re-infers every node, so the counted sizes are applied again; one round per
            # count reaches the shapes behind each data-dependent node in turn.
            fold_constants(m, keep=is_dynamic)
            stop = apply_counts(m, counts)
        stop_after = set() if stop is None else after(m, stop)
        counts_of = dict(zip((n.id for n in dynamic_nodes(m)), counts))
        impls: dict[int, KernelImpl] = {}
        for node in m.get_ordered_ops():
            if node.type_name in STRUCTURAL:
                continue
            if stop is not None and node is not stop and node.id in stop_after:
                continue
            impl = self.choose(node)
            if impl is None:
                raise KernelError(
                    f"node '{node.name}' ({node.type_name}-{node.version}) has no GPU kernel on "
                    f"{self.device_name} for input shapes {list(shapes)}"
                )
            impls[node.id] = impl
        epilogues = plan_epilogues(m, lambda n: isinstance(impls.get(n.id), BuiltinKernels)
                                   and n.id not in stop_after and n is not stop)
        absorbed: set[int] = set()
        at_last: dict[int, Node] = {}
        for anchor_id, ep in epilogues.items():
            if ep.last is not None:
                for member in ep.members:
                    absorbed.add(member.id)
                at_last[ep.last.id] = next(n for n in m.get_ordered_ops() if n.id == anchor_id)
        plan = Plan(self.dev)
        lw = Lowering(plan, self.dev, self.config, self.half, self._const_cache, self.cache_dir)
        lw.used = {(src.node.id, src.index) for n in m.get_ordered_ops() for src in n.inputs}
        for p in m.parameters:
            t = plan.new_tensor(p.output(0).shape, lw.storage(p.output_specs[0].type, "of a model input "), "param",
                                what=f"model input '{p.output(0).any_name}'")
            lw.set_output(p, 0, t)
            plan.inputs.append(t.id)
        for node in m.get_ordered_ops():
            if node.type_name in STRUCTURAL:
                continue
            if stop is not None and node is stop:
                lw.count = None
                self._lower(node, lw, impls[node.id], None)
                assert lw.probe is not None
                plan.outputs.append(lw.probe.id)
                plan.output_storages.append(lw.probe.storage)
                plan.probe = True
                plan.finish()
                return plan
            if node.id in stop_after:
                continue
            if node.id in counts_of:
                lw.count = counts_of[node.id]
            anchor = at_last.get(node.id)
            if anchor is not None:
                self._lower(anchor, lw, impls[anchor.id], epilogues[anchor.id])
                continue
            if node.id in absorbed or (node.id in epilogues and epilogues[node.id].last is not None):
                continue
            self._lower(node, lw, impls[node.id], epilogues.get(node.id))
        for r in m.results:
            t = lw.input(r, 0)
            plan.outputs.append(t.id)
            plan.output_storages.append(t.storage)
        plan.finish()
        return plan

    def _lower(self, node: Node, lw: Lowering, impl: KernelImpl, ep: Any) -> None:
        lw.node = node
        try:
            impl.lower(node, lw, ep)
        except KernelError:
            raise
        except Exception as err:
            cl_error = getattr(self.dev.cl, "Error", ())
            if isinstance(err, cl_error):
                raise KernelError(
                    f"node '{node.name}' ({node.type_name}-{node.version}) on {self.device_name} "
                    f"({impl.origin} kernel): OpenCL error while preparing it: {err}"
                ) from err
            raise

    # --- inference -------------------------------------------------------------------------
    def create_state(self) -> RequestState:
        return RequestState(self.dev, self.profiling)

    def infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        """Run one inference. The one place where any failure becomes an opforge error naming the
        device: a bare builtin or pyopencl exception from planning, lowering or running is
        wrapped (KernelError; ResourceLimitError for memory); KeyboardInterrupt passes through."""
        try:
            return self._infer(inputs, state)
        except OpforgeError:
            raise
        except MemoryError as err:
            raise ResourceLimitError(f"inference on {self.device_name} ({self.dev.info.description}) ran out of "
                                     f"memory: {err or 'MemoryError'}") from err
        except Exception as err:
            raise KernelError(f"inference on {self.device_name} ({self.dev.info.description}) failed: "
                              f"{type(err).__name__}: {err}") from err

    def _infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        st: RequestState = state if isinstance(state, RequestState) else self.create_state()
        shapes, values = self.plan_key(inputs)
        counts: tuple[int, ...] = ()
        st.events.clear()
        while True:
            plan = self.plan(shapes, values, counts)
            outs, mem = self._run(plan, inputs, st)
            if mem.errors is not None:
                self._raise_index_error(plan, mem)
            if not plan.probe:
                break
            # a data-dependent node counted its output: plan (and run) again with that size
            counts += (int(outs[0].reshape(-1)[0]),)
        result = []
        for o, port in zip(outs, self.model.outputs):
            want = port.element_type
            result.append(o.astype(want.np, copy=False) if o.dtype != want.np else o)
        return result

    def _run(self, plan: Plan, inputs: Sequence[np.ndarray], st: RequestState) -> tuple[list[np.ndarray], Any]:
        mem = st.memory.get(id(plan))
        if mem is None or mem.plan is not plan:
            mem = st.memory[id(plan)] = RequestMemory(plan, st.queue)
        cl = self.dev.cl
        q = st.queue
        try:
            keep = []
            for tid, arr in zip(plan.inputs, inputs):
                t = plan.tensors[tid]
                host = np.ascontiguousarray(arr, dtype=t.storage.np)
                keep.append(host)
                if host.nbytes:
                    cl.enqueue_copy(q, mem.buffer(tid), host, is_blocking=False)
            if mem.errors is not None and mem.errors_dirty:
                mem.errors_host[:] = 0
                cl.enqueue_copy(q, mem.errors, mem.errors_host, is_blocking=True)
            mem.errors_dirty = mem.errors is not None
            for launch, (k, g, loc) in zip(plan.launches, mem.kernels):
                try:
                    ev = cl.enqueue_nd_range_kernel(q, k, g, loc)
                except cl.Error as err:
                    raise KernelError(
                        f"node '{launch.node}' ({launch.node_type}) on {self.device_name}: launching OpenCL kernel "
                        f"{launch.kernel} ({launch.source_file or 'custom'}) with global size {g}, local size {loc} "
                        f"failed: {err}"
                    ) from err
                if self.profiling:
                    st.events.append((launch.node, launch.node_type, launch.kernel, launch.source_file, ev))
            outs: list[np.ndarray] = []
            for tid in plan.outputs:
                t = plan.tensors[tid]
                if t.kind == "const" and t.value is not None:
                    outs.append(np.array(t.value).reshape(t.shape))
                    continue
                host = np.empty(t.shape, dtype=t.storage.np)
                if host.nbytes:
                    cl.enqueue_copy(q, host, mem.buffer(tid), is_blocking=False)
                outs.append(host)
            if mem.errors is not None:
                cl.enqueue_copy(q, mem.errors_host, mem.errors, is_blocking=False)
            q.finish()
        except cl.Error as err:
            raise KernelError(f"inference on {self.device_name} ({self.dev.info.description}) failed: {err}") from err
        return outs, mem

    def _raise_index_error(self, plan: Plan, mem: RequestMemory) -> None:
        """Raise the index out of range a kernel reported in this inference, if any."""
        words = mem.errors_host
        check = int(words[0])
        if not check:
            mem.errors_dirty = False
            return
        value = (int(words[2]) << 32) | (int(words[1]) & 0xFFFFFFFF)  # signed high word, unsigned low
        size, which = int(words[3]), int(words[4])
        if not 0 < check <= len(plan.checks):
            raise KernelError(f"inference on {self.device_name}: a kernel reported an index error with an "
                              f"unknown check id {check}")
        c = plan.checks[check - 1]
        raise KernelError(f"node '{c.node}' ({c.node_type}) on {self.device_name}: {c.describe(value, size, which)}")

    def performance_counters(self, state: Any) -> list[ProfilingInfo]:
        if not isinstance(state, RequestState):
            return []
        out = []
        for node, node_type, kernel, source, ev in state.events:
            try:
                ns = ev.profile.end - ev.profile.start
            except Exception:  # noqa: BLE001 - a driver without timestamps
                ns = 0
            # One row per kernel launch: a node that needs several launches has several rows.
            # ``source``: the built-in kernel file, or where a custom kernel (a VPU stage) is configured
            out.append(ProfilingInfo(node, node_type, f"ocl:{kernel}", ns / 1e6, "EXECUTED",
                                     {"kernel": kernel, "source": source}))
        return out

    def properties(self) -> dict[str, Any]:
        return {
            "EXECUTION_DEVICES": [self.device_name],
            "FULL_DEVICE_NAME": self.dev.info.description,
            "GPU_PLANS": len(self._plans),
        }
