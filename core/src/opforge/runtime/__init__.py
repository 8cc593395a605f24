"""The runtime API: Core, CompiledModel, InferRequest, AsyncInferQueue, and the device interface."""

from opforge.runtime.compiled_model import CompiledModel
from opforge.runtime.core import Core
from opforge.runtime.device import Availability, CompileContext, Device, Executable
from opforge.runtime.infer_request import AsyncInferQueue, InferRequest
from opforge.runtime.profiling import ProfilingInfo
from opforge.runtime.properties import COMMON_PROPERTIES, PropertySpec
from opforge.runtime.results import Results

__all__ = [
    "COMMON_PROPERTIES", "AsyncInferQueue", "Availability", "CompileContext", "CompiledModel", "Core",
    "Device", "Executable", "InferRequest", "ProfilingInfo", "PropertySpec", "Results",
]
