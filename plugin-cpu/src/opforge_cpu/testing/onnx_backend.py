"""``run_node_tests.py --backend module:opforge_cpu.testing.onnx_backend``: converts with opforge's
ONNX frontend and compiles on the ``CPU`` device. See :mod:`opforge_onnx.testing.harness`."""

from __future__ import annotations

from opforge_onnx.testing.harness import backend_for

prepare, run = backend_for("CPU")
