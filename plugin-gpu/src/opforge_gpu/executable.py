"""A model compiled for the GPU: the OpenCL half of a device on core's front half.

Core (:class:`~opforge.planning.PlannedExecutable`) specialises the model per input shapes and
value-input values, runs the GPU's planning passes (:mod:`.epilogue`), keeps the bounded plan
cache and stages models around data-dependent shapes. This module turns one specialised model
into a :class:`~opforge_gpu.plan.Plan` (OpenCL launches and a memory plan) and runs plans with a
request's device memory.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from opforge.errors import KernelError, OpforgeError, ResourceLimitError
from opforge.graph import Model, Node
from opforge.op import STRUCTURAL, TensorSpec
from opforge.planning import (
    PlanCache,
    PlannedExecutable,
    PlanStates,
    StagedExecutable,
    lone_data_dependent_node,
)
from opforge.runtime.device import Executable
from opforge.runtime.profiling import ProfilingInfo
from opforge.transformations.base import Transformation

from opforge_gpu.epilogue import Epilogue, EpilogueFusion, epilogue_of
from opforge_gpu.library import BuiltinKernels
from opforge_gpu.library.dynamic import observed_shapes
from opforge_gpu.lowering import ConstBuffers, KernelImpl, Lowering
from opforge_gpu.opencl import DeviceContext
from opforge_gpu.plan import Plan, RequestMemory

Chooser = Callable[[Node], KernelImpl | None]


class CountedPlan:
    """The plan of a model that is one data-dependent node (NonZero, Unique, NMS: a stage core's
    staging made): a *count* pass whose only output is the node's size, and per observed size
    a *fill* pass where the node's outputs have that size. Only the node runs twice."""

    def __init__(self, count: Plan, fill: Callable[[int], Plan]) -> None:
        self.count = count
        self._fill = fill
        #: fill plans per observed size (bounded like every plan cache)
        self.fills: PlanCache[Plan] = PlanCache()

    def fill(self, size: int) -> Plan:
        return self.fills.get(size, lambda: self._fill(size))


GpuPlan = Plan | CountedPlan


class RequestState:
    """Per infer request: a command queue and the memory of each plan it has run."""

    def __init__(self, dev: DeviceContext, profiling: bool) -> None:
        self.queue = dev.queue(profiling)
        #: per plan key: the plan's RequestMemory (a staged plan's stage states), least recently
        #: used dropped like plans
        self.memory: PlanStates[Any, Any] = PlanStates()
        self.events: list[tuple[str, str, str, str, Any]] = []
        #: the staged plan the last inference ran, with its state (profiling reads its stages)
        self.staged: tuple[StagedExecutable, Any] | None = None


class GpuExecutable(PlannedExecutable[GpuPlan]):
    def __init__(self, model: Model, dev: DeviceContext, device_name: str, config: dict[str, Any],
                 choose: Chooser, cache_dir: str | None, const_cache: ConstBuffers | None = None) -> None:
        super().__init__(model)
        self.dev = dev
        self.device_name = device_name
        self.config = config
        self.choose = choose
        self.cache_dir = cache_dir
        self.half = str(config.get("INFERENCE_PRECISION_HINT", "f32")).lower() == "f16"
        self.profiling = bool(config.get("ENABLE_PROFILING", False))
        #: device copies of constants, shared with the executables of this model's stages
        self._const_cache = const_cache if const_cache is not None else ConstBuffers()
        if self.static_at_compile():
            # Static models build (and report errors) at compile time, not at first inference.
            self.plan_now()

    # --- the device half of planning ---------------------------------------------------------
    def planning_passes(self) -> Sequence[Transformation]:
        builtin = getattr(self.choose, "builtin", None) or (lambda n: isinstance(self.choose(n), BuiltinKernels))
        return (EpilogueFusion(builtin),)

    def compile_stage(self, model: Model) -> Executable:
        return GpuExecutable(model, self.dev, self.device_name, self.config, self.choose, self.cache_dir,
                             self._const_cache)

    def build_plan(self, model: Model) -> GpuPlan:
        lone = lone_data_dependent_node(model)
        if lone is None:
            return self._lower_model(model)
        return CountedPlan(self._lower_model(model, lone, None), lambda size: self._fill_plan(model, size))

    def _fill_plan(self, model: Model, size: int) -> Plan:
        """The fill pass of a one-node model whose node produced ``size`` results."""
        m = model.clone()
        node = lone_data_dependent_node(m)
        if node is None:
            raise KernelError(f"{self.device_name}: model '{model.name}' is no longer one data-dependent node")
        node._set_specs([TensorSpec(s.type, shp) for s, shp in zip(node.output_specs, observed_shapes(node, size))])
        for r in m.results:
            r.validate_and_infer()
        return self._lower_model(m, node, size)

    def _kernels(self, m: Model) -> dict[int, KernelImpl]:
        impls: dict[int, KernelImpl] = {}
        for node in m.get_ordered_ops():
            if node.type_name in STRUCTURAL:
                continue
            impl = self.choose(node)
            if impl is None:
                shapes = [tuple(i.partial_shape.to_tuple()) for i in node.inputs]
                raise KernelError(
                    f"node '{node.name}' ({node.type_name}-{node.version}) has no GPU kernel on "
                    f"{self.device_name} for input shapes {shapes}"
                )
            impls[node.id] = impl
        return impls

    def _lower_model(self, m: Model, counted: Node | None = None, count: int | None = None) -> Plan:
        """The plan of specialised model ``m``. ``counted``: its data-dependent node, lowered for
        ``count`` results, or (None) as the count pass whose one output is the count."""
        impls = self._kernels(m)
        ops = m.get_ordered_ops()
        ids = {n.id for n in ops}
        # Epilogues (EpilogueFusion): an anchor is lowered where the last node it absorbs was,
        # since a residual it adds may be computed after the anchor itself.
        epilogues: dict[int, Epilogue] = {}
        at_last: dict[int, Node] = {}
        for node in ops:
            ep = epilogue_of(node)
            if ep is not None and ep.last is not None and all(x.id in ids for x in ep.members):
                epilogues[node.id] = ep
                at_last[ep.last.id] = node
        absorbed = {x.id for ep in epilogues.values() for x in ep.members}
        plan = Plan(self.dev)
        lw = Lowering(plan, self.dev, self.config, self.half, self._const_cache, self.cache_dir)
        lw.used = {(src.node.id, src.index) for n in ops for src in n.inputs}
        lw.counted, lw.count = counted, count
        for p in m.parameters:
            t = plan.new_tensor(p.output(0).shape, lw.storage(p.output_specs[0].type, "of a model input "), "param",
                                what=f"model input '{p.output(0).any_name}'")
            lw.set_output(p, 0, t)
            plan.inputs.append(t.id)
        for node in ops:
            if node.type_name in STRUCTURAL:
                continue
            anchor = at_last.get(node.id)
            if anchor is not None:
                self._lower(anchor, lw, impls[anchor.id], epilogues[anchor.id])
            elif node.id not in absorbed and node.id not in epilogues:
                self._lower(node, lw, impls[node.id], None)
        if counted is not None and count is None:
            if lw.probe is None:
                raise KernelError(f"node '{counted.name}' ({counted.type_name}) on {self.device_name}: its kernel "
                                  "declared no count of its results")
            outs = [lw.probe]
        else:
            outs = [lw.input(r, 0) for r in m.results]
        for t in outs:
            plan.outputs.append(t.id)
            plan.output_storages.append(t.storage)
        plan.finish()
        return plan

    def _lower(self, node: Node, lw: Lowering, impl: KernelImpl, ep: Epilogue | None) -> None:
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
        key, plan = self.plan_for(inputs)
        st.events.clear()
        st.staged = None
        if isinstance(plan, StagedExecutable):
            sub = st.memory.get(key, plan, lambda p: p.create_state())
            st.staged = (plan, sub)
            outs = plan.infer(inputs, sub)
        elif isinstance(plan, CountedPlan):
            counted = self._run(plan.count, (key, "count"), inputs, st)
            size = int(counted[0].reshape(-1)[0])
            if size < 0:
                raise KernelError(f"inference on {self.device_name}: a data-dependent node counted {size} results")
            outs = self._run(plan.fill(size), (key, size), inputs, st)
        else:
            outs = self._run(plan, key, inputs, st)
        result = []
        for o, port in zip(outs, self.model.outputs):
            want = port.element_type
            result.append(o.astype(want.np, copy=False) if o.dtype != want.np else o)
        return result

    def _run(self, plan: Plan, key: Hashable, inputs: Sequence[np.ndarray], st: RequestState) -> list[np.ndarray]:
        mem = st.memory.get(key, plan, lambda p: RequestMemory(p, st.queue))
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
        if mem.errors is not None:
            self._raise_index_error(plan, mem)
        return outs

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

    def performance_counters(self, state: Any) -> list[Any]:
        if not isinstance(state, RequestState):
            return []
        if state.staged is not None:
            staged, sub = state.staged
            return staged.performance_counters(sub)
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
            "GPU_PLANS": len(self.plans),
        }
