"""Compile a model and run it for a number of iterations or seconds, as OpenVINO's benchmark_app
does: one request in a loop for ``latency``, several requests in flight for ``throughput``."""

from __future__ import annotations

import dataclasses
import time
from typing import Any, TextIO

import numpy as np

from opforge.benchmark.inputs import apply_batch, load_npz, parse_shapes, random_inputs
from opforge.benchmark.progress import ProgressBar
from opforge.benchmark.stats import LatencyStats
from opforge.errors import OpforgeError, PropertyError
from opforge.runtime.compiled_model import CompiledModel
from opforge.runtime.core import Core
from opforge.runtime.device_name import parse_device_name
from opforge.runtime.infer_request import AsyncInferQueue, InferRequest
from opforge.runtime.profiling import ProfilingInfo

#: how long a run lasts when neither -niter nor -t is given
DEFAULT_SECONDS = 10.0


@dataclasses.dataclass
class BenchmarkSettings:
    """What ``opforge benchmark`` was asked to do (its command-line options)."""

    model: str
    device: str = "CPU"
    inputs: str | None = None          # an .npz of inputs by name; None or "random": seeded random data
    shape: str | None = None           # "x[1,3,224,224]" (several: comma separated)
    batch: int | None = None
    niter: int | None = None
    time_s: float | None = None
    nireq: int | None = None
    hint: str = "latency"              # latency | throughput
    nthreads: int | None = None
    infer_precision: str | None = None  # INFERENCE_PRECISION_HINT; None: the device's default
    extensions: list[str] = dataclasses.field(default_factory=list)
    config_file: str | None = None     # the GPU/VPU CONFIG_FILE of custom kernels
    perf_counts: bool = False
    progress: bool = False             # draw the bar even when stderr is not a terminal
    warmup: int = 1                    # untimed inferences before measuring

    def validate(self) -> None:
        if self.hint.lower() not in ("latency", "throughput"):
            raise PropertyError(f"-hint {self.hint!r}: expected 'latency' or 'throughput'")
        for flag, value in (("-niter", self.niter), ("-nireq", self.nireq), ("-b", self.batch),
                            ("-nthreads", self.nthreads)):
            if value is not None and value < 1:
                raise PropertyError(f"{flag} must be >= 1, got {value}")
        if self.time_s is not None and self.time_s <= 0:
            raise PropertyError(f"-t must be > 0 seconds, got {self.time_s}")


@dataclasses.dataclass
class BenchmarkReport:
    """What a run measured; ``to_dict`` is the ``--json`` file."""

    model: str
    device: str
    execution_devices: list[str]
    hint: str
    nireq: int
    batch: int
    iterations: int
    duration_s: float
    latency: LatencyStats
    throughput_fps: float
    first_inference_ms: float
    read_ms: float
    compile_ms: float
    config: dict[str, Any]
    input_shapes: dict[str, list[int]]
    counters: list[ProfilingInfo] = dataclasses.field(default_factory=list)
    #: what the compiled model computes in (INFERENCE_PRECISION_HINT as it reports it: the CPU's
    #: default is bf16 on a bf16 host), "" for a device that does not say
    precision: str = ""
    #: whether -infer_precision chose it or it is the device's default
    precision_chosen: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "device": self.device, "execution_devices": self.execution_devices,
            "hint": self.hint, "nireq": self.nireq, "batch": self.batch, "iterations": self.iterations,
            # Nanoseconds, not microseconds: a tiny model's few iterations can take 40 us, where
            # a microsecond rounding puts throughput_fps and iterations / duration_s 1-2 % apart.
            "duration_s": round(self.duration_s, 9),
            "latency_ms": self.latency.to_dict(),
            "throughput_fps": round(self.throughput_fps, 3),
            "first_inference_ms": round(self.first_inference_ms, 4),
            "read_ms": round(self.read_ms, 3), "compile_ms": round(self.compile_ms, 3),
            "inference_precision": self.precision or None,
            "inference_precision_source": "-infer_precision" if self.precision_chosen else "device default",
            "config": {k: _jsonable(v) for k, v in self.config.items()},
            "input_shapes": self.input_shapes,
            "counters": [c.to_dict() for c in self.counters],
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return str(v)


def device_config(core: Core, s: BenchmarkSettings) -> dict[str, Any]:
    """The compile properties the options ask for. A property the device (HETERO, AUTO) does not
    take itself goes to those of its listed devices that do, through DEVICE_PROPERTIES."""
    wanted: dict[str, Any] = {"PERFORMANCE_HINT": s.hint.upper()}
    if s.nthreads is not None:
        wanted["INFERENCE_NUM_THREADS"] = s.nthreads
    if s.perf_counts:
        wanted["ENABLE_PROFILING"] = True
    if s.config_file:
        wanted["CONFIG_FILE"] = s.config_file
    if s.infer_precision:
        wanted["INFERENCE_PRECISION_HINT"] = s.infer_precision
    parsed = parse_device_name(s.device)
    supported = set(core.get_property(parsed.base, "SUPPORTED_PROPERTIES"))
    config: dict[str, Any] = {}
    per_device: dict[str, dict[str, Any]] = {}
    for key, value in wanted.items():
        if key in supported:
            config[key] = value
            continue
        takers = [t for t in parsed.targets
                  if key in set(core.get_property(t, "SUPPORTED_PROPERTIES"))] if "DEVICE_PROPERTIES" in supported else []
        if not takers:
            flag = {"PERFORMANCE_HINT": "-hint", "INFERENCE_NUM_THREADS": "-nthreads", "ENABLE_PROFILING": "-pc",
                    "CONFIG_FILE": "-c", "INFERENCE_PRECISION_HINT": "-infer_precision"}[key]
            raise PropertyError(f"device {s.device} does not support {key} (asked for by {flag}); "
                                f"it supports: {', '.join(sorted(supported))}")
        for t in takers:
            per_device.setdefault(t, {})[key] = value
    if per_device:
        config["DEVICE_PROPERTIES"] = per_device
    return config


def run_benchmark(s: BenchmarkSettings, core: Core | None = None, progress_stream: TextIO | None = None) -> BenchmarkReport:
    """Read, reshape, compile and measure ``s.model`` on ``s.device``."""
    s.validate()
    core = core or Core()
    for ext in s.extensions:
        core.add_extension(ext)
    t0 = time.perf_counter()
    model = core.read_model(s.model)
    shapes = parse_shapes(s.shape, model)
    if s.batch is not None:
        shapes = apply_batch(model, s.batch, shapes)
    if shapes:
        model.reshape(shapes)
    read_ms = (time.perf_counter() - t0) * 1e3
    if s.inputs and s.inputs != "random":
        feeds = load_npz(s.inputs, model)
    else:
        feeds = random_inputs(model)
    config = device_config(core, s)
    t0 = time.perf_counter()
    compiled = core.compile_model(model, s.device, config)
    compile_ms = (time.perf_counter() - t0) * 1e3

    niter, seconds = s.niter, s.time_s
    if niter is None and seconds is None:
        seconds = DEFAULT_SECONDS
    throughput = s.hint.lower() == "throughput"
    nireq = s.nireq or (int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")) if throughput else 1)
    bar = ProgressBar(ProgressBar.wanted(s.progress, progress_stream), niter, seconds, stream=progress_stream)
    if nireq == 1:
        latencies, duration, first_ms, counters = _run_sync(compiled, feeds, niter, seconds, s.warmup, bar)
    else:
        latencies, duration, first_ms, counters = _run_async(compiled, feeds, nireq, niter, seconds, s.warmup, bar)
    batch = s.batch or 1
    try:
        executing = [str(d) for d in compiled.get_property("EXECUTION_DEVICES")]
    except PropertyError:
        executing = [compiled.device]
    try:
        precision = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    except PropertyError:
        precision = ""
    return BenchmarkReport(
        model=s.model, device=compiled.device, execution_devices=executing, hint=s.hint.lower(), nireq=nireq,
        batch=batch, iterations=len(latencies), duration_s=duration, latency=LatencyStats.of(latencies),
        throughput_fps=len(latencies) * batch / duration if duration > 0 else 0.0,
        first_inference_ms=first_ms, read_ms=read_ms, compile_ms=compile_ms, config=config,
        input_shapes={k: list(np.shape(v)) for k, v in feeds.items()},
        counters=counters if s.perf_counts else [], precision=precision, precision_chosen=bool(s.infer_precision),
    )


def _done(count: int, t_start: float, niter: int | None, seconds: float | None) -> bool:
    if niter is not None and count >= niter:
        return True
    return seconds is not None and time.perf_counter() - t_start >= seconds


def _run_sync(compiled: CompiledModel, feeds: dict[str, np.ndarray], niter: int | None, seconds: float | None,
              warmup: int, bar: ProgressBar) -> tuple[list[float], float, float, list[ProfilingInfo]]:
    req: InferRequest = compiled.create_infer_request()
    t = time.perf_counter()
    req.infer(feeds)
    first_ms = (time.perf_counter() - t) * 1e3
    for _ in range(max(0, warmup - 1)):
        req.infer(feeds)
    latencies: list[float] = []
    start = time.perf_counter()
    # Timed around the whole call, input binding included: what a user's loop sees, and what the
    # bench scripts time.
    while not _done(len(latencies), start, niter, seconds):
        t = time.perf_counter()
        req.infer(feeds)
        latencies.append((time.perf_counter() - t) * 1e3)
        bar.update(len(latencies))
    duration = time.perf_counter() - start
    bar.close(len(latencies))
    return latencies, duration, first_ms, req.get_profiling_info()


def _run_async(compiled: CompiledModel, feeds: dict[str, np.ndarray], nireq: int, niter: int | None,
               seconds: float | None, warmup: int, bar: ProgressBar) -> tuple[list[float], float, float, list[ProfilingInfo]]:
    queue = AsyncInferQueue(compiled, nireq)
    t = time.perf_counter()
    queue[0].infer(feeds)
    first_ms = (time.perf_counter() - t) * 1e3
    for _ in range(max(0, warmup)):
        for r in range(1, nireq):
            queue.start_async(feeds, r)
        queue.wait_all()
    latencies: list[float] = []
    queue.set_callback(lambda req, _userdata: latencies.append(req.latency_ms))
    start = time.perf_counter()
    started = 0
    while not _done(started, start, niter, seconds):
        queue.start_async(feeds, started)
        started += 1
        bar.update(len(latencies))
    queue.wait_all()
    duration = time.perf_counter() - start
    bar.close(len(latencies))
    if len(latencies) != started:
        raise OpforgeError(f"{started} inferences started but {len(latencies)} reported back")
    return latencies, duration, first_ms, queue[0].get_profiling_info()
