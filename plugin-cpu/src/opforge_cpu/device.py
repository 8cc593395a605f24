"""The CPU device: compiles models into C++ programs and runs them without the GIL."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.errors import KernelError, PropertyError, UnsupportedOpError
from opforge.graph import WEIGHTS_RELEASED, Model
from opforge.opset.constant import ConstantAttrs
from opforge.planning import PlannedExecutable, PlanStates, StagedExecutable, lone_data_dependent_node
from opforge.planning.plan_cache import plan_key
from opforge.runtime.allocation import check_allocation, host_available_bytes
from opforge.runtime.device import Availability, CompileContext, Device, Executable
from opforge.runtime.profiling import ProfilingInfo
from opforge.runtime.properties import COMMON_PROPERTIES
from opforge.transformations.base import Transformation
from opforge.transformations.fold_batch_norm import FoldBatchNormIntoConvolution
from opforge.transformations.fuse_gelu_erf import FuseGeluErf
from opforge.transformations.fuse_gelu_tanh import FuseGeluTanh
from opforge.transformations.fuse_layer_norm import FuseLayerNormToMVN
from opforge.transformations.fuse_rms_norm import FuseRMSNormalization
from opforge.transformations.fuse_swish import FuseSwish
from opforge.transformations.merge_transposes import MergeTransposes

from opforge_cpu._loader import load_core
from opforge_cpu.data_dependent import DataDependentProgram
from opforge_cpu.emit import Emitter, contiguous
from opforge_cpu.passes.head_slice import SliceBeforeTranspose
from opforge_cpu.passes.int8 import Int8Fusion
from opforge_cpu.passes.int8.s8_shift import S8SourceShift
from opforge_cpu.passes.noop_moves import NoopMoveElimination
from opforge_cpu.passes.parallel_residual import ParallelResidual
from opforge_cpu.passes.permute_chain import PermuteChainFusion
from opforge_cpu.passes.qkv_split import QkvSplitBeforeTranspose
from opforge_cpu.passes.resize_concat_conv import ConvIntoTokenMatMul, ConvThroughResize, IdentityInterpolate
from opforge_cpu.passes.rope import RoPEFusion
from opforge_cpu.passes.shuffle_channels import ShuffleChannelsFusion
from opforge_cpu.precision import LowerPrecision
from opforge_cpu.reference_primitives import describe, reference_primitives, warn_reference_primitives
from opforge_cpu.support import supported_nodes


def cpu_count() -> int:
    """Cores this process may run on (the affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: the deployment knob for the precision a model compiles to when it names none (README.md)
DEFAULT_PRECISION_VAR = "OPFORGE_CPU_DEFAULT_PRECISION"


def default_precision(core: Any, environ: Mapping[str, str] = os.environ) -> str:
    """``INFERENCE_PRECISION_HINT`` when a compile names none: ``bf16`` on a host with bf16
    arithmetic, ``f32`` elsewhere, as OpenVINO's CPU plugin chooses. ``OPFORGE_CPU_DEFAULT_PRECISION``
    (``auto``, ``f32`` or ``bf16``) overrides the choice for a deployment, e.g. a fleet that must
    give the same numbers on every host, or a test suite comparing against f32 references."""
    raw = environ.get(DEFAULT_PRECISION_VAR, "").strip()
    want = raw.lower() or "auto"
    if want not in ("auto", "f32", "bf16"):
        raise PropertyError(f"environment variable {DEFAULT_PRECISION_VAR}={raw!r} is not a precision of "
                            "device CPU: expected auto, f32 or bf16")
    if want == "auto":
        return "bf16" if core.native_bf16() else "f32"
    if want == "bf16" and not core.native_bf16():
        raise PropertyError(
            f"environment variable {DEFAULT_PRECISION_VAR}=bf16 needs a CPU with bf16 arithmetic (AVX512_BF16, "
            f"AMX-BF16 or AVX-NE-CONVERT); this host's oneDNN ISA is {core.cpu_isa()}. Use auto or f32.")
    return want


class CpuDevice(Device):
    """``"CPU"``: every standard op in C++ (oneDNN for the heavy ones), plus plugin kernels."""

    property_specs = COMMON_PROPERTIES

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._core = load_core()
        # The host decides the default precision (bf16 where it has bf16 arithmetic), so
        # core.get_property("CPU", "INFERENCE_PRECISION_HINT") reports what a compile will use.
        self.default_precision = default_precision(self._core)
        self.property_specs = tuple(
            dataclasses.replace(s, default=self.default_precision) if s.name == "INFERENCE_PRECISION_HINT" else s
            for s in COMMON_PROPERTIES)

    def availability(self) -> Availability:
        return Availability(True)

    def full_name(self, device_name: str) -> str:
        model = ""
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                for line in f:
                    if line.startswith("model name"):
                        model = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        # the threading runtime (omp, tbb) is a build option: docs/kernel-library.md
        return (f"{model or 'CPU'} (opforge-cpu, oneDNN {self._core.onednn_version()}, "
                f"{self._core.threading_runtime()} threads)")

    def extension_files(self) -> dict[str, str]:
        """The kernel ABI header a package's compiled CPU kernel is built against."""
        from opforge_cpu import get_include

        header = Path(get_include()) / "opforge_cpu" / "kernel_abi.h"
        return {"csrc/include/opforge_cpu/kernel_abi.h": header.read_text(encoding="utf-8")}

    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        reasons = supported_nodes(self._core, model, ctx.kernels())
        return {name: self.name for name, why in reasons.items() if not why}

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        kernels = ctx.kernels()
        plugins: dict[tuple[str, str | None], str] = {}
        for key in kernels:
            reg = ctx.plugins.kernels.registration(("CPU", *key))
            if reg is not None:
                plugins[key] = str(reg.plugin)
        reasons = supported_nodes(self._core, model, kernels)
        missing = sorted({f"'{n}' ({why})" for n, why in reasons.items() if why})
        if missing:
            raise UnsupportedOpError(
                f"device CPU cannot run model '{model.name}': no kernel for node(s) {', '.join(missing[:20])}"
                + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
                + ". A plugin can add kernels through the opforge_register_kernels hook."
            )
        return CpuExecutable(self._core, model, kernels, plugins, ctx.config)


def inference_precision(core: Any, requested: Any) -> str:
    """The precision a compiled model computes in for ``INFERENCE_PRECISION_HINT``.

    ``bf16``: MatMuls and convolutions with constant weights (not depthwise ones) run in bf16
    (f32 accumulation; f32 between ops, except a tensor only bf16 convolutions read), only on a host with bf16 dot products in hardware (AVX512_BF16, AMX,
    AVX-NE-CONVERT): elsewhere oneDNN has no fast bf16 kernel, so the request is refused rather
    than run slower than f32. ``f16`` is not implemented on CPU: it computes in f32 (as
    OpenVINO's CPU plugin does on hosts without f16 arithmetic) and reports ``f32``. Without a
    hint the compile gets :func:`default_precision` (bf16 on bf16 hosts, through the device's
    property default).
    """
    want = str(getattr(requested, "value", requested) or default_precision(core)).lower()
    if want != "bf16":
        return "f32"
    if not core.native_bf16():
        raise PropertyError(
            f"device CPU: INFERENCE_PRECISION_HINT=bf16 needs a CPU with bf16 arithmetic (AVX512_BF16, "
            f"AMX-BF16 or AVX-NE-CONVERT); this host's oneDNN ISA is {core.cpu_isa()}. Use f32."
        )
    return "bf16"


def _create_native_state(plan: CpuPlan) -> Any:
    """A request's C++ state (arena, bound kernels) for ``plan``."""
    return plan.program.create_state()


class CpuPlan:
    """One plan: the C++ program for one specialized model (one input shape, one value of the
    value inputs), and that model."""

    def __init__(self, program: Any, model: Model, emitter: Emitter | None = None) -> None:
        self.program = program
        self.model = model
        self.python_nodes = list(emitter.python_nodes) if emitter else []
        self.abi_nodes = list(emitter.abi_nodes) if emitter else []


def check_output_sizes(model: Model) -> None:
    """Every tensor the program will allocate (each node output of the specialized model) must
    fit the host memory still available: checked with Python integers before the C++ planner
    multiplies the dimensions (where ``(2**62, 4)`` wraps around) or allocates its arena (where
    a OneHot of depth 10^9 raised a bare ``std::bad_alloc``)."""
    limit = host_available_bytes()
    for node in model.get_ordered_ops():
        if node.type_name == "Constant":
            continue  # already in memory
        for i, spec in enumerate(node.output_specs):
            if not spec.shape.is_static or spec.type is Type.dynamic:
                continue
            what = (f"model input '{node.output(0).any_name}'" if node.type_name == "Parameter"
                    else f"node '{node.name}' ({node.type_name}): output {i}")
            check_allocation(spec.shape.to_tuple(), spec.type.np.itemsize, what=what, device="CPU",
                             limit=limit, limit_name="the host memory available to this process (MemAvailable, "
                             "RLIMIT_AS)")


class CpuExecutable(PlannedExecutable[CpuPlan]):
    """A model compiled for the CPU: the front half (``opforge.planning``) plans it per input
    shape and value-input value; each plan is one C++ program (``build_plan``), run without the
    GIL. A request keeps one C++ state (arena, bound kernels) per plan it ran."""

    device_name = "CPU"

    def __init__(self, core: Any, model: Model, kernels: dict[tuple[str, str | None], Any],
                 plugins: dict[tuple[str, str | None], str], config: dict[str, Any]) -> None:
        super().__init__(model)
        self._core = core
        self._kernels = kernels
        self._plugins = plugins
        cores = cpu_count()
        hint = str(config.get("PERFORMANCE_HINT", "LATENCY")).upper()
        streams = int(config.get("NUM_STREAMS", 1) or 1)
        if hint == "THROUGHPUT" and streams <= 1:
            streams = cores
        self.streams = max(1, streams)
        threads = int(config.get("INFERENCE_NUM_THREADS", 0) or 0)
        self.threads = threads if threads > 0 else max(1, cores // self.streams)
        self.profiling = bool(config.get("ENABLE_PROFILING", False))
        self.precision = inference_precision(core, config.get("INFERENCE_PRECISION_HINT"))
        # At most NUM_STREAMS inferences run at once; more requests wait instead of
        # oversubscribing the cores. One stream: a plain lock (C) costs a fraction of the
        # semaphore (Python) on every inference.
        self._streams_sem: Any = threading.Lock() if self.streams == 1 else threading.BoundedSemaphore(self.streams)
        # A static model's one plan with its input shapes: found by comparing shapes, without
        # building the cache key on every inference.
        self._static: tuple[tuple[tuple[int, ...], ...], Any, CpuPlan | StagedExecutable] | None = None
        if self.static_at_compile():
            self.plan_now()  # errors (a kernel refusing a node) come at compile time
            self._release_unplanned_constants()
            shapes = tuple(tuple(p.output(0).partial_shape.to_tuple()) for p in self.model.parameters)
            key = plan_key(shapes)
            plan = self.plans.peek(key)
            self._static = (shapes, key, plan) if plan is not None else None

    # --- the device's half ---------------------------------------------------------------------
    def planning_passes(self) -> list[Transformation]:
        """Run on every specialized model (in their ``sort_key`` order): data-movement nodes that
        move nothing taken out (passes/noop_moves.py: GhostNet's Slice of every channel),
        BatchNorm folding, the GELU (erf, tanh)/LayerNorm/RMSNorm/SiLU fusions and Transpose merging (core's), the int8
        regions (passes/int8/), ShuffleNet's channel shuffle as one node (passes/shuffle_channels.py),
        a decoder's rotary embedding as one node (passes/rope.py) and the column slices of a
        head split taken before it (passes/head_slice.py), a Reshape/Transpose chain as one
        Transpose (passes/permute_chain.py), timm's fused QKV split taken before its head
        Transpose (passes/qkv_split.py), a parallel block's (m + a) + x residual as two MatMul
        sums (passes/parallel_residual.py), a same-size Interpolate dropped and a 1x1
        convolution over a Concat of upsampled maps taken before the upsampling and into the
        token projections feeding it (passes/resize_concat_conv.py: SegFormer's decode head),
        u8 sources for the int8 convolutions of s8 tensors
        on a host without VNNI (passes/int8/s8_shift.py), then f32 compute for f16/bf16/f64
        nodes without a kernel of their type."""
        return [NoopMoveElimination(), FoldBatchNormIntoConvolution(), FuseGeluErf(), FuseGeluTanh(), MergeTransposes(),
                FuseLayerNormToMVN(), FuseRMSNormalization(), FuseSwish(), Int8Fusion(), ShuffleChannelsFusion(),
                RoPEFusion(), SliceBeforeTranspose(), PermuteChainFusion(), QkvSplitBeforeTranspose(), ParallelResidual(),
                IdentityInterpolate(), ConvThroughResize(), ConvIntoTokenMatMul(),
                S8SourceShift(), LowerPrecision(self._core, self._kernels)]

    def build_plan(self, model: Model) -> CpuPlan:
        check_output_sizes(model)
        try:
            lone = lone_data_dependent_node(model)
            if lone is not None:
                return CpuPlan(DataDependentProgram(self._core, lone, self.threads, self.profiling), model)
            emitter = Emitter(self._core, model, self._kernels, self._plugins, bf16=self.precision == "bf16")
            program = emitter.build(self.threads, self.profiling)
            # once per program: heavy oneDNN primitives that fell on a reference implementation
            warn_reference_primitives(reference_primitives(program.primitives()), self._core.cpu_isa(), stacklevel=2)
            return CpuPlan(program, model, emitter)
        except self._core.NodeCompileFailure as err:
            raise UnsupportedOpError(f"device CPU: {err}") from None

    def compile_stage(self, model: Model) -> CpuExecutable:
        config = {"INFERENCE_NUM_THREADS": self.threads, "NUM_STREAMS": self.streams,
                  "ENABLE_PROFILING": self.profiling, "INFERENCE_PRECISION_HINT": self.precision}
        return CpuExecutable(self._core, model, self._kernels, self._plugins, config)

    def _release_unplanned_constants(self) -> None:
        """A static model is planned once, so the weights its plan packed (and released) or
        folded into others (BatchNorm into a convolution) are never read from the model again:
        they leave the executable's model too (a zero-byte stand-in, marked released), so the
        process holds each weight once, packed. Small constants (shapes, axes: up to 1 KiB) stay."""
        plans = [p for p in self.plans.values() if isinstance(p, CpuPlan)]
        if not plans:
            return
        kept = {n.attrs.value.ctypes.data for n in plans[0].model.get_ordered_ops()  # type: ignore[attr-defined]
                if n.type_name == "Constant" and not n.rt_info.get(WEIGHTS_RELEASED)}
        released = False
        for n in self.model.get_ordered_ops():
            if n.type_name != "Constant" or n.rt_info.get(WEIGHTS_RELEASED):
                continue
            v: np.ndarray = n.attrs.value  # type: ignore[attr-defined]
            if v.nbytes <= 1024 or v.ctypes.data in kept:
                continue
            n.attrs = ConstantAttrs(value=np.broadcast_to(np.zeros((), v.dtype), v.shape))
            n.rt_info[WEIGHTS_RELEASED] = "the CPU device"
            released = True
        if released:
            self.model.rt_info[WEIGHTS_RELEASED] = "the CPU device"

    # --- Executable ------------------------------------------------------------------------
    def create_state(self) -> PlanStates[Any, Any]:
        return PlanStates(self.plans.capacity)

    def infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        st: PlanStates[Any, Any] = state if isinstance(state, PlanStates) else self.create_state()
        # A static model's inputs: its shapes compared and the program's C-contiguous arrays made
        # in one plain loop (a generator and np.shape cost ~1 us of a 1-node model's ~5); an
        # input of another shape, or not a plain array, takes the general lookup, which converts.
        static = self._static
        arrays: list[np.ndarray] | None = None
        if static is not None and len(inputs) == len(static[0]):
            arrays = []
            for a, shape in zip(inputs, static[0]):
                if type(a) is not np.ndarray or a.shape != shape:
                    arrays = None
                    break
                arrays.append(a if a.flags.c_contiguous else contiguous(a))
        if arrays is not None and static is not None:
            key, plan = static[1], static[2]
        else:
            key, plan = self.plan_for(inputs)
        if not isinstance(plan, CpuPlan):
            # a StagedExecutable: its stages are executables of this device, each waiting for a
            # stream itself (asked this way round: isinstance of an ABC costs ~1 us when false)
            return plan.infer(inputs, st.get(key, plan, StagedExecutable.create_state))
        native = st.get(key, plan, _create_native_state)
        if arrays is None:
            arrays = [contiguous(a) for a in inputs]
        with self._streams_sem:
            try:
                outs: list[np.ndarray] = plan.program.run(native, arrays)  # a new list, the caller's
            except self._core.NodeFailure as err:
                raise KernelError(str(err)) from None
        return outs

    def performance_counters(self, state: Any) -> list[ProfilingInfo]:
        entry = state.last_entry() if isinstance(state, PlanStates) else None
        if not self.profiling or entry is None:
            return []
        plan, native = entry
        if isinstance(plan, StagedExecutable):
            return list(plan.performance_counters(native))
        # The C++ program reports the core's five columns plus ``fused_names`` (kept as an extra);
        # each node fused into a step gets its own OPTIMIZED_OUT row, as OpenVINO reports them.
        types = {n.name: n.type_name for n in plan.model.get_ordered_ops()}
        rows: list[ProfilingInfo] = []
        for row in plan.program.profile(native):
            step = ProfilingInfo.from_mapping(row, "CPU")
            rows.append(step)
            for name in step.extra.get("fused_names") or []:
                if name != step.node_name:
                    rows.append(ProfilingInfo(str(name), types.get(str(name), "unknown"), "fused", 0.0,
                                              "OPTIMIZED_OUT", {"fused_into": step.node_name, "fused_names": []}))
        return rows

    def properties(self) -> dict[str, Any]:
        return {
            "EXECUTION_DEVICES": ["CPU"],
            "INFERENCE_NUM_THREADS": self.threads,
            "NUM_STREAMS": self.streams,
            "INFERENCE_PRECISION_HINT": self.precision,
            # heavy oneDNN primitives on a reference implementation, one line each (see
            # reference_primitives.py); empty when every one got an optimised kernel
            "ONEDNN_REFERENCE_PRIMITIVES": [describe(r) for r in self.reference_primitives()],
        }

    # --- introspection (tests, benchmarks) -------------------------------------------------
    def programs(self) -> dict[Any, CpuPlan]:
        """The C++ plans by key (input shapes, or shapes and value-input values)."""
        return {k: p for k, p in self.plans.items() if isinstance(p, CpuPlan)}

    def primitives(self) -> list[dict[str, Any]]:
        """Every oneDNN primitive of this model's C++ programs and the implementation oneDNN
        chose for it (node, node_type, kind, impl, src/weights/dst, reference, heavy)."""
        rows: list[dict[str, Any]] = []
        for plan in self.programs().values():
            listed = getattr(plan.program, "primitives", None)  # a DataDependentProgram has none
            if listed is not None:
                rows += listed()
        return rows

    def reference_primitives(self) -> list[dict[str, Any]]:
        """The heavy ones among :meth:`primitives` on a oneDNN reference implementation."""
        return reference_primitives(self.primitives())

    def python_kernel_calls(self) -> int:
        return sum(int(p.program.python_calls) for p in self.programs().values())
