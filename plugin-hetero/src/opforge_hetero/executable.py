"""Running a HETERO model: the compiled sub-graphs in dependency order, the tensors between them.

Each device gets its own queue (a small thread pool sized by what the device says it can run at
once), so independent sub-graphs on different devices run at the same time, and consecutive
requests pipeline: request 2 runs its first sub-graph on one device while request 1 runs its
second on another. A request whose model is a single sub-graph skips the queues entirely.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from opforge.errors import OpforgeError
from opforge.runtime.compiled_model import CompiledModel
from opforge.runtime.device import Executable
from opforge.runtime.infer_request import InferRequest
from opforge.runtime.profiling import ProfilingInfo

from opforge_hetero.partition import Source
from opforge_hetero.placement import Placement


@dataclasses.dataclass
class CompiledSubgraph:
    index: int
    device: str
    compiled: CompiledModel
    inputs: list[Source]
    depends_on: list[int]
    #: sub-graphs that read this one's outputs
    dependents: list[int] = dataclasses.field(default_factory=list)


class HeteroState:
    """Per-request working memory: one infer request per sub-graph, and the last timings."""

    def __init__(self, subgraphs: Sequence[CompiledSubgraph]) -> None:
        self.requests: list[InferRequest] = [s.compiled.create_infer_request() for s in subgraphs]
        self.times_ms: list[float] = [0.0] * len(subgraphs)
        self.transfer_bytes: list[int] = [0] * len(subgraphs)


class _Run:
    """The bookkeeping of one asynchronous request."""

    def __init__(self, n: int, pending: list[int]) -> None:
        self.outputs: list[list[np.ndarray] | None] = [None] * n
        self.pending = pending
        self.in_flight = 0
        self.error: BaseException | None = None
        self.lock = threading.Lock()
        self.done = threading.Event()


class HeteroExecutable(Executable):
    def __init__(self, subgraphs: list[CompiledSubgraph], outputs: list[Source], placement: Placement,
                 *, use_queues: bool, policy_source: str) -> None:
        self.subgraphs = subgraphs
        self.outputs = outputs
        self.placement = placement
        self.use_queues = use_queues and len(subgraphs) > 1
        self.policy_source = policy_source
        for s in subgraphs:
            for d in s.depends_on:
                subgraphs[d].dependents.append(s.index)
        self._roots = [s.index for s in subgraphs if not s.depends_on]
        self._queues: dict[str, ThreadPoolExecutor] = {}
        self._queues_lock = threading.Lock()
        # The worker threads must end with the compiled model, not live until interpreter exit.
        self._finalizer = weakref.finalize(self, _shutdown, self._queues)

    # --- running -----------------------------------------------------------------------------
    def create_state(self) -> HeteroState:
        return HeteroState(self.subgraphs)

    def infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        st: HeteroState = state
        if self.use_queues:
            outs = self._run_queued(inputs, st)
        else:
            outs = [None] * len(self.subgraphs)
            for s in self.subgraphs:  # already in dependency order
                outs[s.index] = self._run_one(s, inputs, outs, st)
        return [self._value(src, inputs, outs) for src in self.outputs]

    @staticmethod
    def _value(src: Source, inputs: Sequence[np.ndarray], outs: Sequence[Sequence[np.ndarray] | None]) -> np.ndarray:
        if src.kind == "input":
            return inputs[src.index]
        if src.kind == "const":
            return np.asarray(src.value)
        produced = outs[src.index]
        if produced is None:  # dependency order guarantees it; this names the bug if not
            raise RuntimeError(f"HETERO internal error: sub-graph {src.index} has not run")
        return produced[src.port]

    def _run_one(self, sub: CompiledSubgraph, inputs: Sequence[np.ndarray],
                 outs: Sequence[Sequence[np.ndarray] | None], state: HeteroState) -> list[np.ndarray]:
        args = [self._value(src, inputs, outs) for src in sub.inputs]
        t0 = time.perf_counter()
        try:
            res = state.requests[sub.index].infer(args)
        except Exception as err:
            _note(err, f"while running HETERO sub-graph {sub.index} on {sub.device} "
                       f"({len(self.placement.subgraphs[sub.index].nodes)} nodes, first "
                       f"'{self.placement.subgraphs[sub.index].nodes[0]}')")
            raise
        state.times_ms[sub.index] = (time.perf_counter() - t0) * 1e3
        state.transfer_bytes[sub.index] = sum(int(a.nbytes) for src, a in zip(sub.inputs, args) if src.kind == "sub")
        return list(res.to_tuple())

    def _queue(self, device: str) -> ThreadPoolExecutor:
        with self._queues_lock:
            q = self._queues.get(device)
            if q is None:
                width = max(1, max(int(s.compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
                                   for s in self.subgraphs if s.device == device))
                q = ThreadPoolExecutor(max_workers=width, thread_name_prefix=f"opforge-hetero-{device}")
                self._queues[device] = q
            return q

    def _run_queued(self, inputs: Sequence[np.ndarray], state: HeteroState) -> list[list[np.ndarray] | None]:
        run = _Run(len(self.subgraphs), [len(s.depends_on) for s in self.subgraphs])
        with run.lock:
            for i in self._roots:
                self._launch(i, run, inputs, state)
        run.done.wait()
        if run.error is not None:
            raise run.error
        return run.outputs

    def _launch(self, index: int, run: _Run, inputs: Sequence[np.ndarray], state: HeteroState) -> None:
        # Called with run.lock held.
        run.in_flight += 1
        sub = self.subgraphs[index]
        self._queue(sub.device).submit(self._job, sub, run, inputs, state)

    def _job(self, sub: CompiledSubgraph, run: _Run, inputs: Sequence[np.ndarray], state: HeteroState) -> None:
        result: list[np.ndarray] | None = None
        error: BaseException | None = None
        if run.error is None:
            try:
                result = self._run_one(sub, inputs, run.outputs, state)
            except BaseException as err:  # noqa: BLE001 - handed to the waiting caller
                error = err
        with run.lock:
            run.in_flight -= 1
            if error is not None and run.error is None:
                run.error = error
            if result is not None:
                run.outputs[sub.index] = result
                if run.error is None:
                    for j in sub.dependents:
                        run.pending[j] -= 1
                        if run.pending[j] == 0:
                            self._launch(j, run, inputs, state)
            finished = run.in_flight == 0
        if finished:
            run.done.set()

    # --- reporting ---------------------------------------------------------------------------
    def performance_counters(self, state: Any) -> list[ProfilingInfo]:
        st: HeteroState = state
        out: list[ProfilingInfo] = []
        for s in self.subgraphs:
            out.append(ProfilingInfo(f"subgraph{s.index}", "HeteroSubgraph", s.device, st.times_ms[s.index],
                                     "EXECUTED", {"transfer_bytes_in": st.transfer_bytes[s.index]}))
            # The sub-graph's own rows, tagged with where they ran.
            for c in st.requests[s.index].get_profiling_info():
                out.append(dataclasses.replace(c, extra={**c.extra, "subgraph": s.index, "device": s.device}))
        return out

    def properties(self) -> dict[str, Any]:
        p = self.placement
        return {
            "EXECUTION_DEVICES": p.execution_devices(),
            "HETERO_NUMBER_OF_SUBMODELS": len(self.subgraphs),
            "HETERO_NUMBER_OF_TRANSFERS": len(p.transfers),
            "HETERO_TRANSFER_BYTES": p.transfer_bytes(),
            "HETERO_PLACEMENT": p,
            "HETERO_PLACEMENT_REPORT": p.report(),
            "HETERO_SUBGRAPHS": [s.to_dict() for s in p.subgraphs],
            "HETERO_PARTITION_POLICY_SOURCE": self.policy_source,
            **self._precisions(),
        }

    def _precisions(self) -> dict[str, Any]:
        """What each device's part computes in (``HETERO_INFERENCE_PRECISIONS``: a part left
        without a hint has its device's default, bf16 for the CPU on a bf16 host) and
        ``INFERENCE_PRECISION_HINT``: that precision when all parts agree, else
        ``"CPU:bf16,GPU.0:f32"``, never HETERO's own unused default."""
        per_device: dict[str, str] = {}
        for s in self.subgraphs:
            with contextlib.suppress(OpforgeError):  # a device without the property reports none
                per_device[s.device] = str(s.compiled.get_property("INFERENCE_PRECISION_HINT"))
        if not per_device:
            return {}
        distinct = set(per_device.values())
        summary = distinct.pop() if len(distinct) == 1 else ",".join(f"{d}:{p}" for d, p in sorted(per_device.items()))
        return {"HETERO_INFERENCE_PRECISIONS": per_device, "INFERENCE_PRECISION_HINT": summary}

    def submodels(self) -> list[CompiledModel]:
        """The compiled sub-graphs, in execution order (for benchmarks and debugging)."""
        return [s.compiled for s in self.subgraphs]


def _shutdown(queues: dict[str, ThreadPoolExecutor]) -> None:
    for q in list(queues.values()):
        q.shutdown(wait=False)


def _note(err: BaseException, text: str) -> None:
    add = getattr(err, "add_note", None)  # Python 3.11+: keeps the exception's type and message
    if add is not None:
        add(text)
