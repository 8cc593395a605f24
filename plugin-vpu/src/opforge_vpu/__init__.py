"""opforge's VPU device plugin: the MYRIAD (Neural Compute Stick) device brought back on any OpenCL
device, on the GPU plugin's OpenCL runtime and kernel library (``opforge_gpu.runtime``). It runs
models in FP16 like the real VPU and loads OpenVINO's MVCL custom layers (``CONFIG_FILE``), with
kernels compiled offline (``opforge vpu compile``) or from ``.cl`` at load.

Importing this package does not import pyopencl or touch any driver.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
