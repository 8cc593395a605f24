"""Configuration every test of the repository shares (pytest loads this file for any path under
the repository root, whichever package's tests run)."""

from __future__ import annotations

import os

# The CPU device computes in bf16 by default on hosts with bf16 arithmetic (as OpenVINO does);
# the suite compares CPU results with f32 references at 1e-4..1e-6, so it pins the CPU's default
# to f32 here, before any test (or test-collection code) creates a device. Subprocesses the tests
# start inherit it. Tests of the bf16 default itself run without it in a subprocess
# (plugin-cpu/tests/test_cpu_bf16.py). A caller's own value wins: OPFORGE_CPU_DEFAULT_PRECISION=auto
# runs the suite at the host's default.
os.environ.setdefault("OPFORGE_CPU_DEFAULT_PRECISION", "f32")
