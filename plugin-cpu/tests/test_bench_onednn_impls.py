"""benchmarks/onednn_impls.py, the per-implementation summary of ONEDNN_VERBOSE used on the device
machine's host (stop 24): it counts only the timed inferences (after the marker), per inference,
and on a real model names the convolution's implementation once per inference."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from cpu_testing import load_module
from onnx_graph import OnnxGraph

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "onednn_impls.py"


def test_only_the_timed_runs_are_counted_per_inference() -> None:
    tool = load_module(SCRIPT)
    line = "onednn_verbose,exec,cpu,convolution,brgconv:avx512_core_amx,forward_inference,src_u8::blocked:acdb::f0,,alg,mb1,{}"
    warm = line.format("9.0")
    timed = "\n".join(line.format(t) for t in ("1.0", "3.0"))
    total, rows = tool.summarize(f"{warm}\n{tool.MARK}\n{timed}\n", runs=2)
    assert total == 2.0
    assert rows == [("convolution", "brgconv:avx512_core_amx", "src_u8::blocked:acdb::f0", 1, 2.0)]


def test_a_convolution_model_lists_its_implementation(tmp_path: Path) -> None:
    g = OnnxGraph(seed=5)
    path = g.save(tmp_path / "conv.onnx", (1, 8, 16, 16), [g.relu(g.conv("x", 8, 16, k=3))])
    x = np.random.default_rng(6).standard_normal((1, 8, 16, 16)).astype(np.float32)
    np.savez(tmp_path / "ref.npz", **{"in.x": x})
    done = subprocess.run([sys.executable, str(SCRIPT), str(path), str(tmp_path / "ref.npz"), "--runs", "3"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("conv.onnx f32 1 thread(s): oneDNN time"), lines
    conv = [ln for ln in lines[1:] if ln.split()[0] == "convolution"]
    assert len(conv) == 1 and " 1 calls " in conv[0], lines
