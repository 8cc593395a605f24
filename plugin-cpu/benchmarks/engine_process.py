"""One inference engine per child process, timed in alternating rounds from the parent.

Why: ONNX Runtime's intra-op workers spin while they wait for work (``allow_spinning``, its
default), and they keep spinning while another engine of the same process runs. On a 2-core
host one spinning ORT worker takes a core from whichever engine is being timed: opforge's
mobilenet_v2 at 2 threads measured 3.5 ms alone and 8.4 ms with an ORT session in the process
(OpenVINO 4.3 -> 4.8 ms), and 2-thread rows came out slower than 1-thread ones. A user runs one
engine per process, so the benchmark does too: each engine lives in its own process, the parent
sends "run n" to each in turn, and only the engine being timed has threads awake.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

import numpy as np

#: engine name -> "module:function" making (infer callable, first output, precision) in the child
PREPARERS = {
    "opforge": "bench_cpu:prepare_opforge",
    "openvino": "bench_cpu:prepare_openvino",
    "onnxruntime": "bench_cpu:prepare_ort",
}


def _resolve(spec: str) -> Callable[..., Any]:
    import importlib

    module, func = spec.split(":")
    return getattr(importlib.import_module(module), func)  # type: ignore[no-any-return]


def _serve(conn: Connection, preparer: str) -> None:
    """The child's loop: prepare a model, run it n times and send the latencies (ms), drop it."""
    prepare = _resolve(preparer)
    infer: Callable[[], Any] | None = None
    while True:
        msg = conn.recv()
        if msg is None:
            return
        kind, *rest = msg
        try:
            if kind == "prepare":
                infer = None  # free the previous model before compiling the next
                infer, out, prec = prepare(*rest)
                conn.send(("ok", np.asarray(out), prec))
            elif kind == "run":
                if infer is None:
                    raise RuntimeError("run before prepare")
                times = []
                for _ in range(int(rest[0])):
                    t0 = time.perf_counter()
                    infer()
                    times.append((time.perf_counter() - t0) * 1e3)
                conn.send(("ok", times))
            elif kind == "drop":
                infer = None
                conn.send(("ok",))
        except Exception as err:  # noqa: BLE001 - reported to the parent, which prints it as a failure
            conn.send(("err", f"{type(err).__name__}: {err}"))


class EngineProcess:
    """A child process holding one engine; restarted if it dies (OpenVINO segfaults on a few
    models, which must not take the other rows down)."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self._proc: Any = None
        self._conn: Connection | None = None

    def _start(self) -> Connection:
        if self._conn is None or self._proc is None or not self._proc.is_alive():
            ctx = mp.get_context("spawn")  # no inherited thread pools or loaded runtimes
            parent, child = ctx.Pipe()
            self._proc = ctx.Process(target=_serve, args=(child, PREPARERS[self.engine]), daemon=True)
            self._proc.start()
            child.close()
            self._conn = parent
        return self._conn

    def _call(self, *msg: Any) -> tuple[Any, ...]:
        conn = self._start()
        try:
            conn.send(msg)
            reply = conn.recv()
        except (EOFError, OSError) as err:
            code = self._proc.exitcode if self._proc is not None else None
            self._conn = None
            raise RuntimeError(f"the {self.engine} process died (exit code {code})") from err
        if reply[0] == "err":
            raise RuntimeError(reply[1])
        return tuple(reply[1:])

    def prepare(self, path: Path, feeds: dict[str, np.ndarray], threads: int, *extra: Any) -> tuple[np.ndarray, str]:
        out, prec = self._call("prepare", path, feeds, threads, *extra)
        return out, prec

    def run(self, n: int) -> list[float]:
        (times,) = self._call("run", n)
        return list(times)

    def drop(self) -> None:
        if self._conn is not None:
            self._call("drop")

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.send(None)
            self._conn = None
        if self._proc is not None:
            self._proc.join(timeout=10)
            self._proc = None


#: pause after each engine's block of runs. ONNX Runtime's workers go on spinning for tens of ms
#: after a run, in their own process too: without the pause the engine timed next lost a core
#: to them (opforge's mobilenet_v2 at 2 threads, timed right after ORT: 7.7 ms, alone 4.4 ms)
SETTLE_S = 0.25


#: untimed runs each engine makes at the start of each of its rounds. After the SETTLE_S pause
#: the first run finds the vCPUs halted and the caches cold: on the Zen 5 VM of stops 18-21 it
#: took 1.19-1.33x a warm run for every engine, by an amount that differs from engine to engine
#: and from round to round, so with 2 runs a round it moved medians by several percent. The
#: figures are of back-to-back inference (what a server sees); the cold start is measured on
#: its own (kernel-library.md, "The f32 rows behind ONNX Runtime at 1 thread (stop 20)").
ROUND_WARMUP = 1


class TimedRuns(Protocol):
    """What the interleaver needs of an engine: n runs, their latencies in ms (an EngineProcess;
    bench_threading.py's child of another environment's Python)."""

    def run(self, n: int) -> list[float]: ...


def interleaved_medians_remote(engines: Mapping[str, TimedRuns], runs: int, rounds: int = 10,
                               warmup: int = 5, round_warmup: int = ROUND_WARMUP) -> dict[str, float]:
    """Median latency of each (prepared) engine, timed in alternating rounds, each in its process;
    every round of an engine starts with ``round_warmup`` untimed runs."""
    import statistics

    for proc in engines.values():
        proc.run(warmup)
        time.sleep(SETTLE_S)
    per_round = max(1, runs // rounds)
    times: dict[str, list[float]] = {k: [] for k in engines}
    for _ in range(rounds):
        for k, proc in engines.items():
            times[k] += proc.run(round_warmup + per_round)[round_warmup:]
            time.sleep(SETTLE_S)
    return {k: statistics.median(v) for k, v in times.items()}
