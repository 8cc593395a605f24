"""The compile cache (``CACHE_DIR``): compiled-model blobs on disk, keyed by what the compilation
depends on, so a second ``compile_model`` of the same model loads the first one's result.

Key = sha256 of: the model's identity (its hash; for a model given as a file path, the file's
bytes plus the names, sizes and modification times of the files beside it, so the frontend need
not run on a hit), the device name, the compile config (without ``CACHE_DIR``), and the versions
of opforge and of the plugins the compilation depends on. An unreadable entry is reported with a
warning, recompiled and overwritten: the cache can make compiling faster, never make it fail.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from opforge.errors import PropertyError
from opforge.runtime.fingerprint import config_text

SUFFIX = ".ofblob"


class CacheWarning(UserWarning):
    """A compile-cache entry could not be read or written; opforge compiled without it."""


@dataclasses.dataclass
class CacheStats:
    """What the cache did for one ``Core``: the trace tests and users can check."""

    hits: int = 0
    misses: int = 0
    stores: int = 0
    errors: int = 0
    last_key: str | None = None


def file_stamp(path: Path) -> tuple[tuple[str, int, int], ...]:
    """Name, size and mtime of a model file and of the files beside it: cheap (no reading) and
    enough to tell that nothing there changed since it was read."""
    folder = path.parent if str(path.parent) else Path(".")
    out = []
    for p in sorted(folder.iterdir()):
        if p.is_file():
            st = p.stat()
            out.append((p.name, st.st_size, st.st_mtime_ns))
    return tuple(out)


def file_identity(path: Path) -> str:
    """A model file's identity: its bytes, and the name, size and mtime of every other file in
    its folder (weights in a ``.bin``/``.pdiparams``/external-data file change those)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    for other in sorted(path.parent.iterdir()):
        if other.name == path.name or not other.is_file():
            continue
        st = other.stat()
        h.update(f"\0{other.name}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return "file:" + h.hexdigest()


def current_umask() -> int:
    """The process umask, read without changing it where /proc allows (os.umask both sets and
    returns it, which would briefly change it for every thread)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def cache_key(model_identity: str, device: str, config: Mapping[str, Any], versions: Mapping[str, str]) -> str:
    cfg = {k: v for k, v in config.items() if k != "CACHE_DIR"}
    text = "\n".join([model_identity, device.upper(), config_text(cfg), config_text(dict(versions))])
    return hashlib.sha256(text.encode()).hexdigest()


class CompileCache:
    """One ``CACHE_DIR``: ``<key>.ofblob`` files written atomically with the usual permissions."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise PropertyError(f"CACHE_DIR '{self.directory}' cannot be created: {err}") from err
        if not os.access(self.directory, os.W_OK):
            raise PropertyError(f"CACHE_DIR '{self.directory}' is not writable")

    def path(self, key: str) -> Path:
        return self.directory / f"{key}{SUFFIX}"

    def load(self, key: str) -> bytes | None:
        p = self.path(key)
        try:
            return p.read_bytes()
        except FileNotFoundError:
            return None

    def store(self, key: str, data: bytes) -> Path:
        target = self.path(key)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            # mkstemp makes 0600 files; a cache entry gets what any new file gets (umask).
            os.chmod(tmp, 0o666 & ~current_umask())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target
