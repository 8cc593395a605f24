"""Offline-compiled MVCL kernels, as on the real VPU (where ``clc`` compiled ``.cl`` to ``.bin``):
``opforge vpu compile kernel.cl -o kernel.bin`` or :func:`compile_file`.

A ``.bin`` is ``MAGIC``, one line of JSON (the header) and the OpenCL program binary. The header
names the device and driver the binary was built for, the build options, a SHA-256 of the
source, whether the ``half`` shim was used, and every kernel's arguments (MVCL binds kernel
arguments by name, and a binary has no source to read them from). A binary is only valid for
the exact device and driver that built it: any other is refused, with the command to recompile.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import weakref
from pathlib import Path
from typing import Any

from opforge.errors import KernelError
from opforge_gpu.runtime import DeviceContext, KernelConfigError, format_build_error

from opforge_vpu.source import Arg, Prepared, prepare

MAGIC = b"OPFORGE-VPU-BIN 1\n"


@dataclasses.dataclass
class Header:
    device: str
    platform: str
    driver: str
    identity: str  # DeviceInfo.cache_identity
    options: str
    source_sha256: str
    source: str
    fp16: bool
    kernels: dict[str, list[Arg]]

    def to_json(self) -> str:
        d = dataclasses.asdict(self)
        d["kernels"] = {k: [a.to_json() for a in v] for k, v in self.kernels.items()}
        return json.dumps(d, sort_keys=True)


def _build(dev: DeviceContext, prepared: Prepared, options: str, what: str, files: dict[str, str]) -> Any:
    cl = dev.cl
    try:
        return cl.Program(dev.context, prepared.source).build(options=options, devices=[dev.device])
    except cl.Error as err:
        log = str(err)
        raise KernelError(format_build_error(what, dev.info, log, prepared.source, files)) from None


def compile_source(dev: DeviceContext, source: Path, options: str = "") -> bytes:
    """The ``.bin`` bytes of ``source`` built for ``dev``."""
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise KernelConfigError(f"cannot read the kernel source {source}: {err}") from None
    label = source.name
    prepared = prepare([(label, text)], dev.info.has_fp16)
    prg = _build(dev, prepared, options, f"VPU kernel file {source}", {label: str(source)})
    binaries = prg.get_info(dev.cl.program_info.BINARIES)
    if not binaries or not binaries[0]:
        raise KernelError(f"{dev.info.description}: the driver returned no program binary for {source}; this "
                          "device cannot use offline-compiled kernels: name the .cl file in <Source> instead")
    info = dev.info
    header = Header(info.name, info.platform_name, info.driver_version, info.cache_identity, options,
                    hashlib.sha256(text.encode()).hexdigest(), source.name, info.has_fp16, prepared.kernels)
    return MAGIC + header.to_json().encode() + b"\n" + bytes(binaries[0])


def compile_file(source: str | Path, output: str | Path, device: str = "VPU", options: str = "") -> Header:
    """Compile ``source`` (MYRIAD OpenCL C) into the ``.bin`` ``output`` for the OpenCL device the
    opforge device ``device`` (``VPU``, ``VPU.1``) names; returns the written header."""
    from opforge_gpu.runtime import context_for

    from opforge_vpu.device import VpuDevice

    info = VpuDevice("VPU").resolve(device, {})
    data = compile_source(context_for(info), Path(source), options)
    out = Path(output)
    try:
        out.write_bytes(data)
    except OSError as err:
        raise KernelError(f"cannot write {out}: {err}") from None
    return read_header(out)


def read_header(path: str | Path, data: bytes | None = None) -> Header:
    p = Path(path)
    if data is None:
        try:
            data = p.read_bytes()
        except OSError as err:
            raise KernelConfigError(f"cannot read the compiled kernel {p}: {err}") from None
    header, _ = _split(p, data)
    return header


def _split(path: Path, data: bytes) -> tuple[Header, bytes]:
    if not data.startswith(MAGIC):
        raise KernelConfigError(f"{path} is not an opforge VPU binary (a MYRIAD clc .bin cannot run here): compile "
                                f"its source with `opforge vpu compile SOURCE.cl -o {path.name}`")
    end = data.find(b"\n", len(MAGIC))
    try:
        d = json.loads(data[len(MAGIC):end].decode())
        d["kernels"] = {k: [Arg.from_json(a) for a in v] for k, v in d["kernels"].items()}
        header = Header(**d)
    except (ValueError, KeyError, TypeError, IndexError) as err:
        raise KernelConfigError(f"{path}: the header of the VPU binary is damaged ({err}); recompile it with "
                                f"`opforge vpu compile SOURCE.cl -o {path.name}`") from None
    return header, data[end + 1:]


_lock = threading.Lock()
_loaded: weakref.WeakKeyDictionary[DeviceContext, dict[str, tuple[Any, Header]]] = weakref.WeakKeyDictionary()


def load_binary(dev: DeviceContext, path: str, referrer: str) -> tuple[Any, Header]:
    """The built program of the ``.bin`` at ``path`` on ``dev`` and its header; ``referrer``
    ("file.xml:12") names where it was asked for."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise KernelConfigError(f"{referrer}: cannot read {p}: {err}") from None
    key = hashlib.sha256(data).hexdigest()
    with _lock:
        got = _loaded.setdefault(dev, {}).get(key)
    if got is not None:
        return got
    header, binary = _split(p, data)
    info = dev.info
    if header.identity != info.cache_identity or header.fp16 != info.has_fp16:
        raise KernelConfigError(
            f"{referrer}: {p} was compiled for '{header.device}' ({header.platform}, driver {header.driver}), not for "
            f"this device '{info.name}' ({info.platform_name}, driver {info.driver_version}); recompile it here with "
            f"`opforge vpu compile {header.source} -o {p.name}`"
        )
    cl = dev.cl
    try:
        prg = cl.Program(dev.context, [dev.device], [binary])
        prg.build(options=header.options)
    except cl.Error as err:
        raise KernelConfigError(f"{referrer}: the driver refused the program binary {p} ({err}); recompile it with "
                                f"`opforge vpu compile {header.source} -o {p.name}`") from None
    with _lock:
        _loaded.setdefault(dev, {})[key] = (prg, header)
    return prg, header
