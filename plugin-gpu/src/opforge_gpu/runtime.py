"""The public face of the GPU plugin's OpenCL runtime and kernel library, for other devices built
on it (opforge-vpu). Everything a device needs is re-exported here, so the modules behind it stay
free to change; importing this module does not load an OpenCL driver.
"""

from __future__ import annotations

from opforge_gpu.custom.config import Element, KernelConfigError, Location, parse_xml
from opforge_gpu.custom.kernel import bfyx, pitches
from opforge_gpu.device import GPU_PROPERTIES, CustomKernelWarning, GpuDevice
from opforge_gpu.epilogue import Epilogue
from opforge_gpu.executable import GpuExecutable
from opforge_gpu.library.elementwise import run_unary
from opforge_gpu.library.movement import contiguous, strided_copy
from opforge_gpu.lowering import KernelImpl, Lowering, static_shape
from opforge_gpu.opencl import (
    DeviceContext,
    DeviceInfo,
    OpenCLUnavailable,
    context_for,
    default_cache_dir,
    devices,
    format_build_error,
)
from opforge_gpu.plan import LocalArg, ScalarArg, Tensor
from opforge_gpu.storage import Storage, storage_for

__all__ = [
    "GPU_PROPERTIES", "CustomKernelWarning", "DeviceContext", "DeviceInfo", "Element", "Epilogue", "GpuDevice",
    "GpuExecutable", "KernelConfigError", "KernelImpl", "LocalArg", "Location", "Lowering", "OpenCLUnavailable",
    "ScalarArg", "Storage", "Tensor", "bfyx", "context_for", "contiguous", "default_cache_dir", "devices",
    "format_build_error", "parse_xml", "pitches", "run_unary", "static_shape", "storage_for", "strided_copy",
]
