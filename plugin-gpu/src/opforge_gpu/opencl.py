"""The OpenCL side of the plugin: device enumeration, one context per device, program builds.

Everything here imports ``pyopencl`` lazily, inside functions: importing the plugin (which
``opforge`` does for every installed plugin) must never load an OpenCL driver. Only asking for
the GPU device does.

Programs are built once per (device, source, options): first from an in-process table, then from
an on-disk cache of program binaries (``CACHE_DIR``), and only then by the driver.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

from opforge.errors import DeviceUnavailableError, KernelError

from opforge_gpu.compiler_probe import compiler_problem

#: order of OpenCL device types when enumerating: real GPUs first, CPUs (PoCL) last
_TYPE_RANK = {"GPU": 0, "ACCELERATOR": 1, "CUSTOM": 2, "CPU": 3}


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """One enumerated OpenCL device, with what the kernels and errors need to know about it."""

    index: int
    platform_index: int
    device_index: int
    platform_name: str
    platform_version: str
    name: str
    type: str  # "GPU", "CPU", "ACCELERATOR", "CUSTOM"
    driver_version: str
    version: str
    extensions: tuple[str, ...]
    compute_units: int
    max_work_group_size: int
    local_mem_size: int
    global_mem_size: int
    mem_base_addr_align: int
    #: CL_DEVICE_MAX_MEM_ALLOC_SIZE: the largest single buffer (0: unknown, use global_mem_size)
    max_mem_alloc_size: int = 0
    #: CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT in CL_DEVICE_SINGLE_FP_CONFIG: the device can divide
    #: (and take square roots) in float exactly as IEEE 754 and NumPy do, if the program asks
    correctly_rounded_divide: bool = False

    @property
    def max_buffer_bytes(self) -> int:
        """The largest buffer the device can allocate (never more than its global memory)."""
        size = self.max_mem_alloc_size or self.global_mem_size
        return min(size, self.global_mem_size) if self.global_mem_size else size

    @property
    def has_fp16(self) -> bool:
        return "cl_khr_fp16" in self.extensions

    @property
    def has_fp64(self) -> bool:
        return "cl_khr_fp64" in self.extensions

    @property
    def description(self) -> str:
        return f"{self.name} ({self.platform_name}, {self.type}, {self.version})"

    @property
    def cache_identity(self) -> str:
        # Binaries are only valid for the exact driver and device that produced them.
        return "|".join((self.platform_name, self.platform_version, self.name, self.driver_version, self.version))


def _type_name(cl: Any, dev: Any) -> str:
    t = int(dev.type)
    for name in ("GPU", "ACCELERATOR", "CPU", "CUSTOM"):
        flag = getattr(cl.device_type, name, None)
        if flag is not None and t & int(flag):
            return name
    return "CUSTOM"


class OpenCLUnavailable(Exception):
    """Why no OpenCL device can be used here (shown by ``availability()``)."""


def _import_cl() -> Any:
    try:
        import pyopencl as cl
    except ImportError as err:
        raise OpenCLUnavailable(
            f"pyopencl cannot be imported ({err}); install it with `pip install pyopencl "
            "pocl-binary-distribution`"
        ) from err
    return cl


def enumerate_devices() -> list[DeviceInfo]:
    """Every OpenCL device here, real GPUs first, then accelerators, then CPUs (PoCL).

    Raises :class:`OpenCLUnavailable` with the reason when there are none.
    """
    vendors = os.environ.get("OCL_ICD_VENDORS")
    if vendors and Path(vendors).is_dir() and not any(Path(vendors).glob("*.icd")) \
            and not os.environ.get("OCL_ICD_FILENAMES"):
        # The user limited the ICD loader to an empty folder. pyopencl's bundled loader would still
        # add the PoCL it ships with, so honour the restriction here: no platform was asked for.
        raise OpenCLUnavailable(
            f"no OpenCL platform: OCL_ICD_VENDORS={vendors} lists no ICD file (*.icd). Point it at a "
            "folder with your driver's .icd file, or unset it to use the installed drivers"
        )
    cl = _import_cl()
    try:
        platforms = cl.get_platforms()
    except Exception as err:
        raise OpenCLUnavailable(_no_platform_reason(err)) from err
    found: list[tuple[tuple[int, int, int], Any, Any, int, int]] = []
    problems: list[str] = []
    for pi, plat in enumerate(platforms):
        try:
            devices = plat.get_devices()
        except Exception as err:  # noqa: BLE001 - a platform with no device raises DEVICE_NOT_FOUND
            problems.append(f"platform '{plat.name}': {err}")
            continue
        for di, dev in enumerate(devices):
            # A device whose compiler fails on a one-line kernel is left out, not numbered: every
            # model would fail at its first kernel (compiler_probe.py says when this happens).
            problem = compiler_problem(cl, dev)
            if problem is not None:
                problems.append(f"device '{dev.name.strip()}' of platform '{plat.name.strip()}' "
                                f"({plat.version.strip()}) left out: {problem}")
                continue
            rank = _TYPE_RANK.get(_type_name(cl, dev), 2)
            found.append(((rank, pi, di), plat, dev, pi, di))
    _skipped[:] = problems
    if not found:
        detail = f" ({'; '.join(problems)})" if problems else ""
        raise OpenCLUnavailable(f"OpenCL platforms found but no usable device{detail}")
    found.sort(key=lambda f: f[0])
    out = []
    for i, (_, plat, dev, pi, di) in enumerate(found):
        out.append(DeviceInfo(
            index=i, platform_index=pi, device_index=di,
            platform_name=plat.name.strip(), platform_version=plat.version.strip(),
            name=dev.name.strip(), type=_type_name(cl, dev), driver_version=str(dev.driver_version).strip(),
            version=dev.version.strip(), extensions=tuple(dev.extensions.split()),
            compute_units=int(dev.max_compute_units), max_work_group_size=int(dev.max_work_group_size),
            local_mem_size=int(dev.local_mem_size), global_mem_size=int(dev.global_mem_size),
            mem_base_addr_align=max(8, int(dev.mem_base_addr_align) // 8),
            max_mem_alloc_size=int(dev.max_mem_alloc_size),
            correctly_rounded_divide=_has_correctly_rounded_divide(cl, dev),
        ))
    return out


def _has_correctly_rounded_divide(cl: Any, dev: Any) -> bool:
    try:
        flag = int(cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
        return bool(int(dev.single_fp_config) & flag)
    except Exception:  # noqa: BLE001 - an old driver without the query: divide as it always did
        return False


def _no_platform_reason(err: BaseException) -> str:
    vendors = os.environ.get("OCL_ICD_VENDORS")
    where = ""
    if vendors:
        p = Path(vendors)
        icds = sorted(x.name for x in p.glob("*.icd")) if p.is_dir() else []
        where = (f"; OCL_ICD_VENDORS={vendors} lists no ICD file" if not icds
                 else f"; OCL_ICD_VENDORS={vendors} has {', '.join(icds)} but none loaded")
    return (f"no OpenCL platform found ({type(err).__name__}: {err}){where}. Install a driver, or "
            "`pip install pocl-binary-distribution` for a CPU OpenCL device")


class DeviceContext:
    """An OpenCL context, the built programs and the constant buffers of one device.

    Shared by every compiled model on that device in this process."""

    def __init__(self, info: DeviceInfo) -> None:
        cl = _import_cl()
        self.cl = cl
        self.info = info
        plat = cl.get_platforms()[info.platform_index]
        self.device = plat.get_devices()[info.device_index]
        self.context = cl.Context([self.device])
        self._programs: dict[str, Any] = {}
        self._lock = threading.Lock()

    def queue(self, profiling: bool = False) -> Any:
        props = self.cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
        return self.cl.CommandQueue(self.context, self.device, properties=props)

    # --- programs --------------------------------------------------------------------------
    def program(self, source: str, options: str, cache_dir: str | None, *, what: str,
                files: dict[str, str] | None = None) -> Any:
        """The built program for ``source`` + ``options``: from memory, the disk cache, or the driver.

        ``what`` names the kernel for errors; ``files`` maps the ``#line`` file names used in
        ``source`` to their paths, so a build error can quote the offending line."""
        key = hashlib.sha256("\0".join((self.info.cache_identity, options, source)).encode()).hexdigest()
        with self._lock:
            prg = self._programs.get(key)
            if prg is not None:
                return prg
        prg = self._load_cached(key, options, cache_dir)
        if prg is None:
            prg = self._build(source, options, what, files or {})
            self._store_cached(key, prg, cache_dir)
        with self._lock:
            self._programs.setdefault(key, prg)
            return self._programs[key]

    def _build(self, source: str, options: str, what: str, files: dict[str, str]) -> Any:
        cl = self.cl
        raw = getattr(getattr(cl, "_cl", None), "_Program", None)
        try:
            if raw is not None:
                # The low-level program skips pyopencl's own cache: ours is keyed by CACHE_DIR.
                low = raw(self.context, source)
                low.build(options.encode(), [self.device])
                return cl.Program(low)
            return cl.Program(self.context, source).build(options=options)
        except cl.Error as err:
            log = _build_log(cl, err, self.device, locals().get("low"))
            raise KernelError(format_build_error(what, self.info, log, source, files)) from None

    def _load_cached(self, key: str, options: str, cache_dir: str | None) -> Any:
        if not cache_dir:
            return None
        path = Path(cache_dir) / f"{key}.bin"
        try:
            binary = path.read_bytes()
        except OSError:
            return None
        try:
            prg = self.cl.Program(self.context, [self.device], [binary])
            prg.build(options=options)
            return prg
        except Exception:  # noqa: BLE001 - a stale or foreign binary: rebuild from source
            with contextlib.suppress(OSError):
                path.unlink()
            return None

    def _store_cached(self, key: str, prg: Any, cache_dir: str | None) -> None:
        if not cache_dir:
            return
        try:
            binaries = prg.get_info(self.cl.program_info.BINARIES)
            if not binaries or not binaries[0]:
                return
            d = Path(cache_dir)
            d.mkdir(parents=True, exist_ok=True)
            # Write then rename: concurrent processes must never read half a binary.
            fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(bytes(binaries[0]))
            os.replace(tmp, d / f"{key}.bin")
        except OSError:
            # The cache is an optimisation: a read-only or full disk must not fail compilation.
            return


def _build_log(cl: Any, err: BaseException, device: Any, low: Any) -> str:
    if low is not None:
        try:
            log = low.get_build_info(device, cl.program_build_info.LOG)
            if log and log.strip():
                return str(log)
        except Exception:  # noqa: BLE001 - fall back to the exception text
            pass
    return str(err)


_LOC = re.compile(r'(?P<file>[^\s:"]+\.cl|<[^>]+>):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<kind>error|warning)?')


def format_build_error(what: str, info: DeviceInfo, log: str, source: str, files: dict[str, str]) -> str:
    """A KernelError message: the kernel, the device, the first error's file and line with that
    line quoted, and the whole build log."""
    where = ""
    for m in _LOC.finditer(log):
        if m.group("kind") == "error" or m.group("kind") is None:
            fname, line = m.group("file"), int(m.group("line"))
            if fname.startswith("<"):
                # Some compilers (NVIDIA's) ignore #line and count lines of the whole program
                # ("<kernel>:32:12"): map that back through our own #line directives.
                fname, line = _unmap_line(source, line, fname)
            quoted = _quote_line(files.get(fname), line)
            where = f" at {files.get(fname, fname)}:{line}" + (f": `{quoted}`" if quoted else "")
            break
    log_text = "\n".join("    " + ln for ln in log.strip().splitlines()[:60])
    return (f"OpenCL build of {what} failed on {info.description}{where}. Build log:\n{log_text}")


_LINE_DIRECTIVE = re.compile(r'^\s*#line\s+(\d+)\s+"([^"]+)"')


def _unmap_line(source: str, line: int, default: str) -> tuple[str, int]:
    """The (file, line) a line number of the assembled program comes from, following the
    ``#line N "file"`` directives the program was built with; ``default`` when none applies."""
    current: tuple[str, int, int] | None = None  # (file, its line number, program line it starts at)
    for i, text in enumerate(source.splitlines()[: max(line - 1, 0)], start=1):
        m = _LINE_DIRECTIVE.match(text)
        if m:
            current = (m.group(2), int(m.group(1)), i + 1)
    if current is None:
        return default, line
    fname, first, starts_at = current
    return fname, first + (line - starts_at)


def _quote_line(path: str | None, line: int) -> str:
    if not path:
        return ""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


# --- process-wide device table ----------------------------------------------------------------
_devices_lock = threading.Lock()
_devices: list[DeviceInfo] | None = None
#: keyed by the OpenCL (platform, device): the GPU and VPU devices number the same devices differently
_contexts: dict[tuple[int, int], DeviceContext] = {}


#: why devices the drivers list were left out by the last enumeration (compiler_probe.py)
_skipped: list[str] = []


def devices() -> list[DeviceInfo]:
    """The enumerated devices (cached for the process: drivers do not appear at run time)."""
    global _devices
    with _devices_lock:
        if _devices is None:
            _devices = enumerate_devices()
        return _devices


def skipped_devices() -> list[str]:
    """Why the devices the OpenCL drivers list but opforge does not number were left out."""
    with contextlib.suppress(OpenCLUnavailable):
        devices()
    with _devices_lock:
        return list(_skipped)


def context_for(info: DeviceInfo) -> DeviceContext:
    with _devices_lock:
        key = (info.platform_index, info.device_index)
        ctx = _contexts.get(key)
        if ctx is None:
            try:
                ctx = _contexts[key] = DeviceContext(info)
            except Exception as err:
                raise DeviceUnavailableError(
                    f"GPU.{info.index} ({info.description}): cannot create an OpenCL context: "
                    f"{type(err).__name__}: {err}"
                ) from err
        return ctx


def default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/opforge/gpu-kernels`` (``~/.cache`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "opforge", "gpu-kernels")
