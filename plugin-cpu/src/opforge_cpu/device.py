"""The CPU device: compiles models into C++ programs and runs them without the GIL."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.errors import KernelError, PropertyError, UnsupportedOpError
from opforge.graph import Model
from opforge.runtime.allocation import check_allocation, host_available_bytes
from opforge.runtime.device import Availability, CompileContext, Device, Executable
from opforge.runtime.profiling import ProfilingInfo
from opforge.runtime.properties import COMMON_PROPERTIES

from opforge_cpu._loader import load_core
from opforge_cpu.emit import Emitter, contiguous
from opforge_cpu.precision import lower_precision
from opforge_cpu.prepare import specialize, value_inputs
from opforge_cpu.staging import StagedProgram, dynamic_node
from opforge_cpu.support import supported_nodes


def _failing_node(message: str) -> set[str]:
    """The node named in a compile error ("node 'name' (...)")."""
    import re

    m = re.search(r"node '([^']+)'", message)
    return {m.group(1)} if m else set()


def cpu_count() -> int:
    """Cores this process may run on (the affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class CpuDevice(Device):
    """``"CPU"``: every standard op in C++ (oneDNN for the heavy ones), plus plugin kernels."""

    property_specs = COMMON_PROPERTIES

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._core = load_core()

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
        return f"{model or 'CPU'} (opforge-cpu, oneDNN {self._core.onednn_version()})"

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
        failing = {n for n, why in reasons.items() if why}
        missing = sorted({f"'{n}' ({why})" for n, why in reasons.items() if why})
        if missing and value_inputs(model, failing):
            # Operands such as axes or a shape are model inputs: plan per input value.
            return CpuExecutable(self._core, model, kernels, plugins, ctx.config, value_inputs(model, failing))
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
    OpenVINO's CPU plugin does on hosts without f16 arithmetic) and reports ``f32``. The default
    stays ``f32`` on every host (see plugin-cpu/README.md).
    """
    want = str(getattr(requested, "value", requested) or "f32").lower()
    if want != "bf16":
        return "f32"
    if not core.native_bf16():
        raise PropertyError(
            f"device CPU: INFERENCE_PRECISION_HINT=bf16 needs a CPU with bf16 arithmetic (AVX512_BF16, "
            f"AMX-BF16 or AVX-NE-CONVERT); this host's oneDNN ISA is {core.cpu_isa()}. Use f32."
        )
    return "bf16"


class _Compiled:
    """One program for one set of input shapes."""

    def __init__(self, program: Any, model: Model, emitter: Emitter | None) -> None:
        self.program = program
        self.model = model
        self.python_nodes = list(emitter.python_nodes) if emitter else []
        self.abi_nodes = list(emitter.abi_nodes) if emitter else []


#: programs (one per input shape, or per value of a value input) an executable keeps; the least
#: recently used one is dropped past this, so a model fed ever new shapes or values (a Reshape
#: to a fed shape, a Range of fed bounds) does not grow without limit
PROGRAM_CACHE_SIZE = 16


class CpuState:
    """Per-request memory: one C++ state (arena, bound kernels) per input shape seen, at most
    ``PROGRAM_CACHE_SIZE`` of them (least recently used dropped)."""

    def __init__(self) -> None:
        #: key -> (the program it belongs to, its C++ state); the program is kept with its state
        self.states: OrderedDict[Any, tuple[Any, Any]] = OrderedDict()
        self.last: Any = None


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


class CpuExecutable(Executable):
    def __init__(self, core: Any, model: Model, kernels: dict[tuple[str, str | None], Any],
                 plugins: dict[tuple[str, str | None], str], config: dict[str, Any],
                 values: list[int] | None = None) -> None:
        self._core = core
        self._kernels = kernels
        self._plugins = plugins
        self._model = model
        cores = cpu_count()
        hint = str(config.get("PERFORMANCE_HINT", "LATENCY")).upper()
        streams = int(config.get("NUM_STREAMS", 1) or 1)
        if hint == "THROUGHPUT" and streams <= 1:
            streams = cores
        self.streams = max(1, streams)
        threads = int(config.get("INFERENCE_NUM_THREADS", 0) or 0)
        self.threads = threads if threads > 0 else max(1, cores // self.streams)
        self.profiling = bool(config.get("ENABLE_PROFILING", False))
        self.precision = inference_precision(core, config.get("INFERENCE_PRECISION_HINT", "f32"))
        # At most NUM_STREAMS inferences run at once; more requests wait instead of
        # oversubscribing the cores.
        self._streams_sem = threading.BoundedSemaphore(self.streams)
        self._lock = threading.Lock()
        self._programs: OrderedDict[Any, _Compiled] = OrderedDict()  # LRU, PROGRAM_CACHE_SIZE at most
        self.cache_size = PROGRAM_CACHE_SIZE
        #: inputs whose values (not only shapes) select the program (see lowering.value_inputs)
        self._values: list[int] = list(values or [])
        self._static = all(p.output(0).partial_shape.is_static for p in model.parameters)
        if self._static and not self._values:
            key = tuple(tuple(p.output(0).shape) for p in model.parameters)
            try:
                self._programs[key] = self._build(specialize(model, None))
            except UnsupportedOpError as err:
                # A shape that only an input's value decides (Reshape to a fed shape...).
                failing = {getattr(err, "node_name", "")} | _failing_node(str(err))
                self._values = value_inputs(model, failing)
                if not self._values:
                    raise

    # --- compilation -----------------------------------------------------------------------
    def _sub_executable(self, model: Model) -> CpuExecutable:
        """A stage of a staged model (see ``staging``), with this executable's settings."""
        config = {"INFERENCE_NUM_THREADS": self.threads, "NUM_STREAMS": self.streams,
                  "ENABLE_PROFILING": self.profiling, "INFERENCE_PRECISION_HINT": self.precision}
        return CpuExecutable(self._core, model, self._kernels, self._plugins, config)

    def _build(self, model: Model) -> _Compiled:
        check_output_sizes(model)
        lower_precision(self._core, model, self._kernels)
        dyn = dynamic_node(model)
        if dyn is not None:
            # An op decides its output shape at run time: run the model in stages around it.
            staged = StagedProgram(self._sub_executable, self._core, model, dyn, self.threads)
            return _Compiled(staged, model, None)
        emitter = Emitter(self._core, model, self._kernels, self._plugins, bf16=self.precision == "bf16")
        try:
            program = emitter.build(self.threads, self.profiling)
        except self._core.NodeCompileFailure as err:
            raise UnsupportedOpError(f"device CPU: {err}") from None
        return _Compiled(program, model, emitter)

    def _program(self, key: Any, shapes: tuple[tuple[int, ...], ...], inputs: Sequence[np.ndarray]) -> _Compiled:
        compiled = self._programs.get(key)
        if compiled is not None:
            if len(self._programs) > 1:
                with self._lock:
                    if key in self._programs:
                        self._programs.move_to_end(key)
            return compiled
        with self._lock:
            compiled = self._programs.get(key)
            if compiled is None:
                # A new input shape (or value of a value input): specialize the graph and plan
                # again (cached by that key; the least recently used program goes past the limit).
                values = {i: np.asarray(inputs[i]).reshape(shapes[i]) for i in self._values}
                compiled = self._build(specialize(self._model, dict(enumerate(shapes)), values))
                self._programs[key] = compiled
                while len(self._programs) > self.cache_size:
                    self._programs.popitem(last=False)
        return compiled

    # --- Executable ------------------------------------------------------------------------
    def create_state(self) -> CpuState:
        return CpuState()

    def infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        st: CpuState = state if isinstance(state, CpuState) else CpuState()
        shapes = tuple(tuple(int(d) for d in a.shape) for a in inputs)
        key: Any = shapes
        if self._values:
            key = (shapes, tuple(np.asarray(inputs[i]).tobytes() for i in self._values))
        compiled = self._program(key, shapes, inputs)
        entry = st.states.get(key)
        if entry is None or entry[0] is not compiled:
            entry = st.states[key] = (compiled, compiled.program.create_state())
            while len(st.states) > self.cache_size:
                st.states.popitem(last=False)
        elif len(st.states) > 1:
            st.states.move_to_end(key)
        native = entry[1]
        arrays = [contiguous(a) for a in inputs]
        with self._streams_sem:
            try:
                outs = compiled.program.run(native, arrays)
            except self._core.NodeFailure as err:
                raise KernelError(str(err)) from None
        st.last = key
        return list(outs)

    def performance_counters(self, state: Any) -> list[ProfilingInfo]:
        st: CpuState = state
        if not self.profiling or st.last is None or st.last not in st.states:
            return []
        compiled, native = st.states[st.last]
        # The C++ program reports the core's five columns plus ``fused_names`` (kept as an extra);
        # each node fused into a step gets its own OPTIMIZED_OUT row, as OpenVINO reports them.
        types = {n.name: n.type_name for n in compiled.model.get_ordered_ops()}
        rows: list[ProfilingInfo] = []
        for row in compiled.program.profile(native):
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
        }

    # --- introspection (tests, benchmarks) -------------------------------------------------
    def programs(self) -> dict[tuple[tuple[int, ...], ...], _Compiled]:
        return dict(self._programs)

    def python_kernel_calls(self) -> int:
        return sum(int(c.program.python_calls) for c in self._programs.values())
