"""``run_node_tests.py --backend module:opforge_gpu.testing.onnx_backend``: converts with opforge's
ONNX frontend and compiles on the ``GPU`` device (``OPFORGE_GPU_DEVICE`` picks another, e.g.
``GPU.1``). See :mod:`opforge_onnx.testing.harness`."""

from __future__ import annotations

import os

from opforge_onnx.testing.harness import backend_for

prepare, run = backend_for(os.environ.get("OPFORGE_GPU_DEVICE", "GPU"))
