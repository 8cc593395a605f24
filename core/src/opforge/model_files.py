"""Opening model files without trusting what sits at their path.

``open()`` on a FIFO blocks until a writer appears, and a read from ``/dev/zero`` or a character
device never ends: a path named ``model.onnx`` can be either. Every reader opens model files
through these helpers, which

* ``stat`` the path first and refuse anything that is not a regular file (FIFO, socket, device,
  directory) with a :class:`~opforge.errors.ModelFormatError` naming the path;
* open with ``O_NONBLOCK`` so that a path swapped for a FIFO between the check and the open
  cannot block either, and check the open descriptor again (``fstat``);
* compare the size with a limit (:mod:`opforge.limits`) before reading anything.

:func:`recording` lists the files a read opened (model, weights, external data), so that a
converter can refuse to overwrite any of them.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from opforge.errors import ModelFormatError, ResourceLimitError
from opforge.limits import current

_KINDS = (
    (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
)


_recorded: contextvars.ContextVar[list[Path] | None] = contextvars.ContextVar("opforge_files_read", default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[Path]]:
    """Inside the block, every model file opened (by these helpers or :func:`note_read`) is
    appended to the list it yields."""
    files: list[Path] = []
    token = _recorded.set(files)
    try:
        yield files
    finally:
        _recorded.reset(token)


def note_read(path: os.PathLike[str] | str) -> None:
    """Record that a reader opened ``path`` (for readers that open files themselves)."""
    files = _recorded.get()
    if files is not None:
        files.append(Path(path))


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a special file"


def not_regular(path: os.PathLike[str] | str, mode: int, what: str) -> ModelFormatError:
    return ModelFormatError(
        f"{what} '{path}' is not a regular file but {_kind(mode)}; opforge reads models only from "
        "regular files (a FIFO or device could block the reader or never end)"
    )


def check_regular(path: os.PathLike[str] | str, what: str = "model file") -> os.stat_result:
    """The ``stat`` of ``path`` if it is a regular file (symlinks followed), else ModelFormatError."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ModelFormatError(f"{what} '{path}' does not exist") from None
    except OSError as err:
        raise ModelFormatError(f"{what} '{path}' cannot be read: {err.strerror or err}") from None
    if not stat.S_ISREG(st.st_mode):
        raise not_regular(path, st.st_mode, what)
    return st


def open_regular(path: os.PathLike[str] | str, what: str = "model file") -> tuple[int, os.stat_result]:
    """An open read-only descriptor of the regular file at ``path`` and its ``fstat``; the caller
    closes it. Never blocks (``O_NONBLOCK``), also when the path is swapped after the check."""
    check_regular(path, what)
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise ModelFormatError(f"{what} '{path}' cannot be opened: {err.strerror or err}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise not_regular(path, st.st_mode, what)
    note_read(path)
    return fd, st


def read_regular(path: os.PathLike[str] | str, what: str = "model file",
                 limit: str = "MAX_MODEL_FILE_BYTES") -> bytes:
    """All bytes of the regular file at ``path``, after checking its size against ``limit``."""
    fd, st = open_regular(path, what)
    try:
        lim = current().get(limit)
        current().check_bytes(limit, st.st_size, f"{what} '{path}'")
        chunks = []
        left = st.st_size + 1  # one byte more: a file that grew since fstat is caught below
        while left > 0:
            try:
                chunk = os.read(fd, min(left, 1 << 24))
            except OSError as err:
                raise ModelFormatError(f"{what} '{path}' cannot be read: {err.strerror or err}") from None
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > lim:
            raise ResourceLimitError(f"{what} '{path}' grew past the limit {limit}={lim} while being read")
        return data
    finally:
        os.close(fd)


def head(path: Path, n: int) -> bytes:
    """The first ``n`` bytes of a regular file, for format detection (non-regular: ``b""``)."""
    try:
        fd, _ = open_regular(path)
    except ModelFormatError:
        return b""
    try:
        return os.read(fd, n)
    except OSError:
        return b""
    finally:
        os.close(fd)
