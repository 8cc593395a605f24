"""QuantizedAvgPool's register build (issue 15, stop 21): with a channels-last output and
oneDNN's ISA at AVX-512, each output pixel's 16-channel blocks are summed, requantized and stored
on registers (exec type ``sum_regs:avx512``); the bytes are exactly those of the array loops it
replaces (``OPFORGE_CPU_INT8_AVG_POOL_REGS=0``, run in a child process: the switch is read once
per process) and of the baseline build, on channel counts with a masked tail, u8 and i8, padded
and unpadded, strided and global windows, and within one step of ONNX Runtime's QDQ graph. The
AVX2 register build (stop 22, ``sum_regs:avx2``, under ``ONEDNN_MAX_CPU_ISA=AVX2_VNNI``; 8
channels a vector, a scalar tail) gives the baseline's bytes too (``OPFORGE_CPU_INT8_AVX2=0``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

pytest.importorskip("onnxruntime")

from int8_testing import assert_close_steps, run_qdq_graph, save_model

SWITCH = "OPFORGE_CPU_INT8_AVG_POOL_REGS"

_RUN_SAVED = """
import sys
import numpy as np
import opforge
core = opforge.Core()
req = core.compile_model(core.read_model(sys.argv[1]), "CPU", {"ENABLE_PROFILING": True}).create_infer_request()
np.save(sys.argv[3], np.asarray(req.infer({0: np.load(sys.argv[2])})[0]))
print(sorted({r.exec_type for r in req.get_profiling_info() if r.node_type == "QuantizedAvgPool"}))
"""


def _pool_model(path: Path, c: int, t: str, pool: dict[str, object]) -> Path:
    """x -> QuantizeLinear -> DequantizeLinear -> AveragePool / GlobalAveragePool ->
    QuantizeLinear -> DequantizeLinear (the pool's reader takes any layout: channels-last)."""
    zt = {"u8": TensorProto.UINT8, "i8": TensorProto.INT8}[t]
    z0, z1 = (7, 3) if t == "u8" else (-4, 2)
    inits = [helper.make_tensor("s0", TensorProto.FLOAT, [], [0.037]), helper.make_tensor("z0", zt, [], [z0]),
             helper.make_tensor("s1", TensorProto.FLOAT, [], [0.029]), helper.make_tensor("z1", zt, [], [z1])]
    attrs = dict(pool)
    op = str(attrs.pop("op", "AveragePool"))
    out_hw = attrs.pop("out_hw")
    assert isinstance(out_hw, list)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s0", "z0"], ["q0"]),
             helper.make_node("DequantizeLinear", ["q0", "s0", "z0"], ["d0"]),
             helper.make_node(op, ["d0"], ["p"], **attrs),
             helper.make_node("QuantizeLinear", ["p", "s1", "z1"], ["q1"]),
             helper.make_node("DequantizeLinear", ["q1", "s1", "z1"], ["y"])]
    return save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 13, 11])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, *out_hw])], inits, path)


POOLS = {
    "3x3_pad_include": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1, "out_hw": [13, 11]},
    "3x3_pad_exclude": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 0, "out_hw": [13, 11]},
    "2x2_unpadded": {"kernel_shape": [2, 2], "out_hw": [12, 10]},
    "3x3_stride2_ceil": {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "out_hw": [6, 5]},
    "global": {"op": "GlobalAveragePool", "out_hw": [1, 1]},
}


@pytest.mark.parametrize("pool", sorted(POOLS))
@pytest.mark.parametrize(("c", "t"), [(19, "u8"), (40, "i8")])
def test_register_build_gives_the_array_loops_bytes(tmp_path: Path, pool: str, c: int, t: str) -> None:
    path = _pool_model(tmp_path / "m.onnx", c, t, POOLS[pool])
    x = (np.random.default_rng(51).standard_normal((1, c, 13, 11)) * 2).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    got, ran = {}, {}
    runs: tuple[tuple[str, dict[str, str]], ...] = (
        ("regs", {}), ("arrays", {SWITCH: "0"}),
        ("regs_avx2", {"ONEDNN_MAX_CPU_ISA": "AVX2_VNNI"}),  # the AVX2 register build (stop 22)
        ("baseline", {"ONEDNN_MAX_CPU_ISA": "AVX2_VNNI", "OPFORGE_CPU_INT8_AVX2": "0"}))
    for name, env_set in runs:
        env = dict(os.environ)
        env.pop("ONEDNN_MAX_CPU_ISA", None)
        env.pop(SWITCH, None)
        env.pop("OPFORGE_CPU_INT8_AVX2", None)
        env.update(env_set)
        done = subprocess.run([sys.executable, "-c", _RUN_SAVED, str(path), str(tmp_path / "x.npy"), str(tmp_path / f"{name}.npy")],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        got[name] = np.load(tmp_path / f"{name}.npy")
        ran[name] = done.stdout.strip().splitlines()[-1]
    # the register build wherever the AVX-512 build runs (the pool reads the Quantize's plain
    # output through a reorder, and its reader takes channels-last); neither switched-off run has it
    wide = ":avx512" in ran["arrays"]
    assert ("sum_regs:avx512" in ran["regs"]) == wide and "sum_regs" not in ran["arrays"] + ran["baseline"], ran
    assert ":avx512" not in ran["baseline"], ran
    assert "sum_regs:avx2" in ran["regs_avx2"], ran
    np.testing.assert_array_equal(got["regs"], got["arrays"])
    np.testing.assert_array_equal(got["regs"], got["baseline"])
    np.testing.assert_array_equal(got["regs_avx2"], got["baseline"])
    assert_close_steps(got["regs"], run_qdq_graph(path, x), 0.029)
    assert len(np.unique(got["regs"])) > 10  # (not a saturated constant)
