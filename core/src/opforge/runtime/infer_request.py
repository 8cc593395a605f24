"""Infer requests (one inference at a time each) and the async queue of several requests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from opforge.errors import (
    InferenceInputError,
    KernelError,
    OpforgeError,
    RequestBusyError,
    ResourceLimitError,
)
from opforge.runtime.inputs import check_input
from opforge.runtime.profiling import ProfilingInfo, normalize
from opforge.runtime.results import Results

if TYPE_CHECKING:
    from opforge.runtime.compiled_model import CompiledModel

Inputs = Sequence[Any] | Mapping[Any, Any] | None


class InferRequest:
    """Runs the compiled model on one set of inputs at a time. Not shareable between threads
    while busy: a second ``infer`` during a running one raises :class:`RequestBusyError`."""

    def __init__(self, compiled: CompiledModel) -> None:
        self._compiled = compiled
        self._executable = compiled._executable
        self._binder = compiled._binder
        self._state = compiled._executable.create_state()
        # the ports, kept: each access to compiled.inputs/outputs builds the list anew
        self._in_ports = compiled.inputs
        self._out_ports = compiled.outputs
        self._inputs: list[np.ndarray | None] = [None] * len(self._in_ports)
        self._results: Results | None = None
        self._busy = threading.Lock()
        self._future: Future[Results] | None = None
        self._callback: Callable[[Any], None] | None = None
        self.userdata: Any = None
        self.latency_ms: float = 0.0

    @property
    def model_inputs(self) -> list[Any]:
        return self._compiled.inputs

    @property
    def model_outputs(self) -> list[Any]:
        return self._compiled.outputs

    # --- tensors -----------------------------------------------------------------------------
    def set_tensor(self, key: int | str | Any, value: np.ndarray) -> None:
        """Set an input for the next :meth:`infer` or :meth:`start_async`.

        The request keeps a reference to ``value`` (no copy, like an OpenVINO tensor sharing
        host memory): change the array after ``set_tensor`` and the next run sees the change.
        :meth:`start_async` snapshots the inputs it will run on, so changing the array while a
        run is pending never changes that run. Setting a tensor while a run is pending raises
        :class:`RequestBusyError` (the pending run would otherwise compute on the new one)."""
        idx = self._input_index(key)
        checked = check_input(self._compiled.inputs[idx], value)
        if not self._busy.acquire(blocking=False):
            raise RequestBusyError(
                f"cannot set input {key!r}: this infer request is running (start_async() pending); "
                "wait() for it first, or use another request"
            )
        try:
            self._inputs[idx] = checked
        finally:
            self._busy.release()

    def set_input_tensor(self, value: np.ndarray, index: int = 0) -> None:
        self.set_tensor(index, value)

    def get_tensor(self, key: int | str | Any) -> np.ndarray:
        """An output by index/name/port if it is one, else the input set for that name."""
        if self._results is not None and key in self._results:
            return self._results[key]
        idx = self._input_index(key)
        v = self._inputs[idx]
        if v is None:
            raise InferenceInputError(f"input {key!r} has not been set")
        return v

    def get_output_tensor(self, index: int = 0) -> np.ndarray:
        return self.results[index]

    def _input_index(self, key: int | str | Any) -> int:
        ports = self._compiled.inputs
        if isinstance(key, int):
            if 0 <= key < len(ports):
                return key
        else:
            for i, p in enumerate(ports):
                if p == key or key in p.names or p.any_name == key:
                    return i
        raise InferenceInputError(
            f"no input {key!r}; inputs: " + ", ".join(repr(p.any_name) for p in ports)
        )

    @property
    def results(self) -> Results:
        if self._results is None:
            raise OpforgeError("no results yet: call infer() or start_async() + wait() first")
        return self._results

    # --- running -----------------------------------------------------------------------------
    def infer(self, inputs: Inputs = None) -> Results:
        """Run synchronously and return the outputs (also kept in :attr:`results`)."""
        if not self._busy.acquire(blocking=False):
            raise RequestBusyError("this infer request is already running; create another request "
                                   "per thread, or use AsyncInferQueue")
        try:
            return self._run(inputs)
        finally:
            self._busy.release()

    def _run(self, inputs: Inputs) -> Results:
        if inputs is not None:
            # every input bound and checked (bind_inputs raises for a missing one)
            feed: list[np.ndarray] = self._binder.bind(inputs)
            self._inputs = list(feed)
        else:
            missing = [p.any_name for p, v in zip(self._in_ports, self._inputs) if v is None]
            if missing:
                raise InferenceInputError("missing input(s): " + ", ".join(repr(m) for m in missing))
            feed = [v for v in self._inputs if v is not None]
        t0 = time.perf_counter()
        try:
            outs = self._executable.infer(feed, self._state)
        except OpforgeError:
            raise
        except MemoryError as err:  # the devices check sizes first; this is the net under them
            raise ResourceLimitError(
                f"inference on {self._compiled.device} ran out of memory: {err or 'MemoryError'}"
            ) from err
        except Exception as err:
            # Every device plugin, third-party ones included: a bare builtin exception from a
            # kernel becomes an opforge error naming the device (KeyboardInterrupt passes).
            raise KernelError(f"inference on {self._compiled.device} failed: {type(err).__name__}: {err}") from err
        self.latency_ms = (time.perf_counter() - t0) * 1e3
        self._results = Results(self._out_ports, outs)
        return self._results

    def start_async(self, inputs: Inputs = None, userdata: Any = None) -> None:
        """Start running in the background; :meth:`wait` for it.

        The run computes on the input values as they are now: the arrays (given here or by
        :meth:`set_tensor`) are copied, so the caller may reuse or change them at once (as
        OpenVINO's ``start_async(share_inputs=False)``, its default). Until the run finishes,
        ``set_tensor``, ``infer`` and another ``start_async`` raise :class:`RequestBusyError`."""
        if not self._busy.acquire(blocking=False):
            raise RequestBusyError("this infer request is already running; wait() for it first")
        self.userdata = userdata
        # Bind inputs now, in the caller's thread, so input errors surface here.
        try:
            if inputs is not None:
                self._inputs = list(self._binder.bind(inputs))
            self._inputs = _snapshot(self._compiled.inputs, self._inputs)
        except Exception:
            self._busy.release()
            raise

        def job() -> Results:
            try:
                return self._run(None)
            finally:
                self._busy.release()
                if self._callback is not None:
                    self._callback(self.userdata)

        self._future = self._compiled._pool().submit(job)

    def set_callback(self, callback: Callable[[Any], None]) -> None:
        """Called with ``userdata`` when an async run finishes (in a worker thread)."""
        self._callback = callback

    def wait(self) -> None:
        """Block until the async run finishes; re-raises its error."""
        if self._future is not None:
            fut, self._future = self._future, None
            fut.result()

    def wait_for(self, timeout_ms: int) -> bool:
        """Wait up to ``timeout_ms``; True if finished."""
        if self._future is None:
            return True
        try:
            self._future.result(timeout=timeout_ms / 1e3)
        except TimeoutError:
            return False
        self._future = None
        return True

    def get_profiling_info(self) -> list[ProfilingInfo]:
        """Per-layer counters of the last inference (compile with ``ENABLE_PROFILING``): the same
        :class:`ProfilingInfo` columns on every device."""
        return normalize(self._compiled._executable.performance_counters(self._state), self._compiled.device)


def _snapshot(ports: Sequence[Any], arrays: Sequence[np.ndarray | None]) -> list[Any]:
    """Copies of the inputs an asynchronous run will compute on (the caller may change its own)."""
    out: list[Any] = []
    for port, v in zip(ports, arrays):
        if v is None:
            out.append(None)
            continue
        try:
            out.append(np.array(v, copy=True))
        except MemoryError as err:
            raise ResourceLimitError(
                f"Input '{port.any_name}': no memory for the copy start_async() takes of its "
                f"{v.nbytes} bytes (shape {tuple(v.shape)}); run it with infer(), which needs no copy"
            ) from err
    return out


class AsyncInferQueue:
    """A pool of infer requests fed with ``start_async``; a callback sees each result."""

    def __init__(self, compiled: CompiledModel, jobs: int = 0) -> None:
        n = jobs or max(1, int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
        self._requests = [compiled.create_infer_request() for _ in range(n)]
        self._idle: list[int] = list(range(n))
        self._cond = threading.Condition()
        self._callback: Callable[[InferRequest, Any], None] | None = None
        self._errors: list[BaseException] = []
        self._executor = ThreadPoolExecutor(max_workers=n, thread_name_prefix="opforge-queue")

    def __len__(self) -> int:
        return len(self._requests)

    def __getitem__(self, i: int) -> InferRequest:
        return self._requests[i]

    def __iter__(self) -> Any:
        return iter(self._requests)

    def set_callback(self, callback: Callable[[InferRequest, Any], None]) -> None:
        self._callback = callback

    def is_ready(self) -> bool:
        with self._cond:
            return bool(self._idle)

    def get_idle_request_id(self) -> int:
        with self._cond:
            while not self._idle:
                self._cond.wait()
            return self._idle[0]

    def start_async(self, inputs: Inputs = None, userdata: Any = None) -> None:
        """Run ``inputs`` on the next idle request. As :meth:`InferRequest.start_async`, the
        inputs are copied here, in the caller's thread, so the caller may reuse its arrays at
        once; a bad input is re-raised from :meth:`wait_all`, like any error of a job."""
        with self._cond:
            while not self._idle:
                self._cond.wait()
            rid = self._idle.pop(0)
        req = self._requests[rid]
        if inputs is not None:
            try:
                inputs = _snapshot(req._compiled.inputs, req._binder.bind(inputs))
            except Exception as err:  # noqa: BLE001 - re-raised from wait_all()
                self._errors.append(err)
                with self._cond:
                    self._idle.append(rid)
                    self._cond.notify_all()
                return

        def job() -> None:
            try:
                req.infer(inputs)
                if self._callback is not None:
                    self._callback(req, userdata)
            except BaseException as err:  # noqa: BLE001 - re-raised from wait_all()
                self._errors.append(err)
            finally:
                with self._cond:
                    self._idle.append(rid)
                    self._cond.notify_all()

        self._executor.submit(job)

    def wait_all(self) -> None:
        """Wait until every started job finished; raises the first error any of them hit."""
        with self._cond:
            while len(self._idle) < len(self._requests):
                self._cond.wait()
        if self._errors:
            err, self._errors = self._errors[0], []
            raise err
