"""oneDNN of opforge-cpu and of another package (paddle) in one process, in either import order.

opforge-cpu ships oneDNN under the private soname libopforge_dnnl.so.3; with the PyPI name
libdnnl.so.3, ``import paddle`` after the CPU device failed with "libphi_core.so: undefined
symbol: dnnl_layer_normalization_forward_primitive_desc_create_v2" (paddle bound to our older
oneDNN). Each order runs in a fresh interpreter, since the loader state is per process.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("paddle") is None, reason="paddle is not installed")

_RUN_CPU = """
import numpy as np
import opforge
from opforge.graph import Model
from opforge.reference import evaluate_model

x = opforge.op("Parameter", element_type="f32", shape=[1, 8, 9, 9], name="x")
w = opforge.op("Constant", value=np.random.default_rng(0).standard_normal((4, 8, 3, 3)).astype(np.float32))
conv = opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1])
model = Model(opforge.op("Relu", conv).outputs(), [x], name="conv")
xv = np.random.default_rng(1).standard_normal((1, 8, 9, 9)).astype(np.float32)
got = opforge.Core().compile_model(model, "CPU")([xv]).to_tuple()[0]
ref = evaluate_model(model, [xv])[0]
assert np.abs(got - ref).max() <= 1e-4 * np.abs(ref).max(), "CPU result wrong"
"""

_RUN_PADDLE = """
import numpy as np
import paddle
t = paddle.to_tensor(np.random.default_rng(2).standard_normal((2, 8, 16)).astype(np.float32))
out = paddle.nn.functional.layer_norm(t, [16]).numpy()
assert np.abs(out.mean(-1)).max() < 1e-4
"""

_LIBS = """
from opforge_cpu._loader import ONEDNN_SONAME, load_core
assert load_core().onednn_version().startswith("3.2"), load_core().onednn_version()
maps = open("/proc/self/maps").read()
assert ONEDNN_SONAME in maps, "opforge-cpu's oneDNN is not loaded"
"""


def _run(code: str) -> None:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "GLOG_minloglevel": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_paddle_imported_after_cpu_device_ran() -> None:
    _run(_RUN_CPU + _RUN_PADDLE + _RUN_CPU + _LIBS)


def test_paddle_imported_before_cpu_device() -> None:
    _run(_RUN_PADDLE + _RUN_CPU + _RUN_PADDLE + _LIBS)


def test_private_soname() -> None:
    """The extension needs libopforge_dnnl.so.3, never the shared name libdnnl.so.3."""
    from opforge_cpu import _core

    out = subprocess.run(["readelf", "-d", _core.__file__], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("readelf is not available")
    assert "[libopforge_dnnl.so.3]" in out.stdout
    assert "[libdnnl.so" not in out.stdout
