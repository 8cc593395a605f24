"""OpenVINO-compatible custom GPU kernels: the ``CustomLayer`` XML configuration and its JIT."""

from opforge_gpu.custom.config import CustomLayerSpec, KernelConfigError, load_config, parse_layers
from opforge_gpu.custom.kernel import CustomKernel

__all__ = ["CustomKernel", "CustomLayerSpec", "KernelConfigError", "load_config", "parse_layers"]
