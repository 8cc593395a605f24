"""Fixtures of the CPU device tests. The helpers live in cpu_testing.py, importable from every
test module (pytest runs with --import-mode=importlib, so this folder is put on sys.path here)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The bf16 pixel and MatMul row splits run by default only where oneDNN's ISA has AMX
# (chunk_split.cpp's host rule, stop 18). The suite takes them on every host, so that their tests
# (test_cpu_bf16_pixel_split.py, test_cpu_bf16_row_split.py and the blocks that contain them)
# exercise them on AVX512_BF16 hosts without AMX too; test_cpu_split_host_rule.py checks the
# default in a child process without this variable. Set before any program is compiled (the
# plugin reads it once a process); child processes of the tests inherit it.
os.environ.setdefault("OPFORGE_CPU_SPLIT_HOST_RULE", "0")
# Likewise the bf16 grouped convolutions' regrouping (core/nn.cpp regroup_bf16) runs by default only
# where oneDNN's ISA has AMX (stop 19); the suite takes it everywhere, so test_cpu_bf16_grouped.py
# exercises it on hosts without AMX; test_cpu_bf16_grouped_host_rule.py checks the default.
os.environ.setdefault("OPFORGE_CPU_REGROUP_HOST_RULE", "0")

import opforge
from cpu_testing import make_plugins


@pytest.fixture
def core() -> opforge.Core:
    return opforge.Core(make_plugins())
