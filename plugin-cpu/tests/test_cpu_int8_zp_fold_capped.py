"""The zero-point fold (kernels/quantized_convolution.cpp) on hosts without oneDNN's AMX brgconv:
an AVX2 host's jit_uni_int8 and an AVX2-VNNI host's brgconv run slower with oneDNN's own source
zero point (1.25-1.9x on padded 3x3 convolutions at AVX2), so there the zero points fold into the
bias with the kernel unchanged (exec type ``+zp_folded``, ``+zp_folded+prepad``);
OPFORGE_CPU_INT8_ZP_FOLD_ANY=0 folds only where that gets brgconv (stop 15's rule). Each case runs
in a child process with ONEDNN_MAX_CPU_ISA set, as such a host; the fold changes only the f32
rounding of the requantization: within one step of the unfolded kernel, 99 % equal, and (with
VNNI, where the weights are the model's) within one step of ONNX Runtime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime.quantization")
import onnxruntime as ort
from int8_testing import assert_close_steps, output_scale, quantize
from test_cpu_int8_zp_fold import one_convolution, padded_conv

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from test_cpu_int8_zp_fold import run
    got, types = run(Path(sys.argv[2]), np.load(sys.argv[3]), 1)
    np.save(sys.argv[4], got)
    print(json.dumps(sorted(types.values())))
""")


def _child(q: Path, x: np.ndarray, tmp_path: Path, isa: str, fold_any: bool) -> tuple[np.ndarray, list[str]]:
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / f"out_{isa}_{fold_any}.npy"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ONEDNN_MAX_CPU_ISA", "OPFORGE_CPU_INT8_"))}
    env["ONEDNN_MAX_CPU_ISA"] = isa
    if not fold_any:
        env["OPFORGE_CPU_INT8_ZP_FOLD_ANY"] = "0"
    done = subprocess.run([sys.executable, "-c", CHILD, str(Path(__file__).parent), str(q), str(tmp_path / "x.npy"), str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return np.load(out), json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("isa", ["AVX2", "AVX2_VNNI"])
@pytest.mark.parametrize("case", ["1x1", "3x3"])
def test_zero_points_fold_with_the_kernel_unchanged(tmp_path: Path, isa: str, case: str) -> None:
    if case == "1x1":  # the input (zero point ~128), linear: both zero points
        shape = (1, 48, 7, 9)
        src = one_convolution(tmp_path / "f32.onnx", "both", 48, shape)
    else:  # padded 3x3 over 64 channels: the kernel pads the source with its zero point
        shape = (2, 64, 9, 7)
        src = padded_conv(tmp_path / "f32.onnx", 3, [1, 1, 1, 1], 1, shape)
    q = quantize(src, tmp_path / "q.onnx", shape, True, "u8")
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    got, types = _child(q, x, tmp_path, isa, True)
    off, off_types = _child(q, x, tmp_path, isa, False)
    want = "+zp_folded" if case == "1x1" else "+zp_folded+prepad"
    assert len(types) == 1 and types[0].endswith(want), types
    assert len(off_types) == 1 and "+zp_folded" not in off_types[0], off_types
    assert types[0].removesuffix(want) == off_types[0], (types, off_types)  # the same oneDNN kernel
    step = output_scale(q)
    assert_close_steps(got, off, step)
    if isa == "AVX2_VNNI":  # (without VNNI both runs round the weights to 7 bits)
        sess = ort.InferenceSession(str(q), providers=["CPUExecutionProvider"])
        assert_close_steps(got, sess.run(None, {"x": x})[0], step)
