"""opforge's GPU device plugin: runs models on any OpenCL device (real GPUs first, PoCL's CPU
device otherwise), with OpenVINO-compatible custom kernels (``CONFIG_FILE`` XML + OpenCL C).

Importing this package does not import pyopencl or touch any driver.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
