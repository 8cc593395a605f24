"""``run_node_tests.py --backend module:opforge_onnx.testing.reference_backend``: conversion +
reference evaluation (the oracle), not a device's numbers. See :mod:`opforge_onnx.testing.harness`."""

from __future__ import annotations

from opforge_onnx.testing.harness import backend_for

prepare, run = backend_for("REFERENCE")
