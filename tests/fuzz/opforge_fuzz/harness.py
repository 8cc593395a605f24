"""What counts as a finding, and the per-input limits every engine applies.

A fuzz target is a function ``fuzz_one(data: bytes) -> None``. Feeding it hostile bytes may end
in exactly two acceptable ways: it returns, or it raises an :class:`opforge.errors.OpforgeError`
subclass with a non-empty message (the one exception hierarchy users are promised). Everything
else is a finding:

* ``bare-exception`` -- any other exception (``ValueError``, ``KeyError``, ``MemoryError``,
  ``RecursionError``, ``OverflowError``...), i.e. a failure the reader did not anticipate;
* ``empty-message`` -- an opforge error that says nothing (the issue's "bare MemoryError with an
  empty message" class of bug);
* ``oracle`` -- a target's own check failed (:class:`OracleFailure`: a silent wrong answer);
* ``hang`` -- one input used more CPU time than the per-input timeout (:class:`InputTimeout`);
* ``crash`` -- the process died (only the parent of a fuzzing process can see that; the smoke
  test and ``scripts/fuzz`` run targets in a child process for this reason).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import resource
import signal
import struct
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from opforge.errors import OpforgeError

#: Limits every fuzzing process sets before opforge reads anything (``opforge.limits`` reads them
#: from the environment): far below the defaults, so that a missing limit check shows up as an
#: allocation past the address-space cap (a bare ``MemoryError``) instead of a slow swap.
FUZZ_LIMIT_ENV = {
    "OPFORGE_MAX_MODEL_FILE_BYTES": str(64 << 20),
    "OPFORGE_MAX_WEIGHTS_BYTES": str(256 << 20),
    "OPFORGE_MAX_TENSOR_BYTES": str(64 << 20),
    "OPFORGE_MAX_NODES": "20000",
}
#: The address-space cap of a fuzzing process (the limits above stay far below it).
DEFAULT_MEMORY_MB = 4096
#: A reader taking longer than this on one small input is a hang (OSS-Fuzz uses 25 s for big
#: C++ parsers; ours read inputs of a few KiB).
DEFAULT_TIMEOUT_S = 2.0


class OracleFailure(AssertionError):
    """A target's own consistency check failed: a wrong answer, not an error."""


class InputTimeout(BaseException):
    """Raised by the watchdog inside a target that ran past the per-input timeout.
    A BaseException so that a target's ``except Exception`` cannot swallow it."""


@dataclasses.dataclass(frozen=True)
class Finding:
    kind: str  # bare-exception | empty-message | oracle | hang
    exc_type: str
    message: str
    where: str  # innermost file:line of the traceback inside the repository (dedup key)
    trace: str

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.exc_type}:{self.where}"


def set_fuzz_limits(memory_mb: int = DEFAULT_MEMORY_MB) -> None:
    """Environment limits (before opforge reads them) and the address-space cap."""
    for k, v in FUZZ_LIMIT_ENV.items():
        os.environ.setdefault(k, v)
    if memory_mb > 0:
        cap = memory_mb << 20
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _where(tb: list[traceback.FrameSummary]) -> str:
    """The innermost frame in opforge's own code (frames of numpy/onnx/stdlib say less)."""
    for fr in reversed(tb):
        if "/site-packages/" not in fr.filename and "/lib/python" not in fr.filename \
                and "opforge_fuzz" not in fr.filename and not fr.filename.startswith("<"):
            path = fr.filename
            for marker in ("/core/src/", "/frontends/", "/plugin-", "/plugins/"):
                i = path.find(marker)
                if i >= 0:
                    path = path[i + 1:]
                    break
            return f"{path}:{fr.lineno} ({fr.name})"
    fr = tb[-1] if tb else None
    return f"{fr.filename}:{fr.lineno} ({fr.name})" if fr else "?"


def classify(err: BaseException) -> Finding | None:
    """None when ``err`` is an acceptable outcome, else the finding it represents."""
    if isinstance(err, OpforgeError) and str(err).strip():
        return None
    tb = traceback.extract_tb(err.__traceback__)
    if isinstance(err, InputTimeout):
        kind = "hang"
    elif isinstance(err, OracleFailure):
        kind = "oracle"
    elif isinstance(err, OpforgeError):
        kind = "empty-message"
    else:
        kind = "bare-exception"
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    name = type(err).__name__
    cause = err.__cause__
    if kind == "oracle" and cause is not None:
        # Dedup oracle findings by what went wrong inside opforge, not by the check that saw it.
        tb = traceback.extract_tb(cause.__traceback__)
        name = f"{name}({type(cause).__name__})"
    return Finding(kind, name, str(err)[:500], _where(tb), text[-6000:])


_armed = [False]
_installed = [False]


def _on_timer(signum: int, frame: FrameType | None) -> None:
    # A SIGPROF that was already pending when the input finished is handled at the next bytecode
    # boundary, possibly outside the input: only an armed watchdog raises.
    if _armed[0]:
        _armed[0] = False
        raise InputTimeout("input ran past the per-input timeout")


@contextmanager
def watchdog(timeout_s: float) -> Iterator[None]:
    """SIGPROF raises :class:`InputTimeout` in Python code that has used ``timeout_s`` of CPU
    time. CPU time, not wall time: on a shared, busy machine a niced fuzzer waits for a core, and
    wall-clock timeouts then report inputs that merely waited. An input blocked without using CPU
    (a read that never returns) and code stuck in C are caught by the wall-clock ``faulthandler``
    backstop the engines arm. The handler stays installed for the life of the process (a late
    SIGPROF with the default disposition would kill it)."""
    if timeout_s <= 0:
        yield
        return
    if not _installed[0]:
        signal.signal(signal.SIGPROF, _on_timer)
        _installed[0] = True
    _armed[0] = True
    signal.setitimer(signal.ITIMER_PROF, timeout_s)
    try:
        yield
    finally:
        _armed[0] = False
        signal.setitimer(signal.ITIMER_PROF, 0)


def run_one(fuzz_one: Callable[[bytes], None], data: bytes, timeout_s: float) -> Finding | None:
    """Run one input; the finding it produced, if any."""
    try:
        with watchdog(timeout_s):
            fuzz_one(data)
    except (Exception, InputTimeout) as err:  # noqa: BLE001 - every outcome is classified
        return classify(err)
    return None


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:16]


# --- several files in one input ----------------------------------------------------------------
def join_parts(first: bytes, second: bytes) -> bytes:
    """Two files (model + weights) as one fuzz input: a u32 length of the first, then both. The
    same idea as OpenVINO's read_model fuzzer, which splits xml and weights at a marker."""
    return struct.pack("<I", len(first)) + first + second


def split_parts(data: bytes) -> tuple[bytes, bytes]:
    if len(data) < 4:
        return data, b""
    (n,) = struct.unpack_from("<I", data)
    n = min(n, len(data) - 4)
    return data[4:4 + n], data[4 + n:]
