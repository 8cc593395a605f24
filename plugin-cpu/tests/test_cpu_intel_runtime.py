"""The TBB oneDNN without Intel's compiler runtime (CMakeLists.txt, csrc/dnnl_runtime/).

PyPI's onednn-cpu-tbb lists libimf.so and libintlc.so.5 (wheel intel-cmplr-lib-rt, 130 MB) as
DT_NEEDED but imports only ``_intel_fast_memcpy`` / ``_intel_fast_memset`` from them. The build
replaces both entries of our private copy with libopforge_intel_mem.so and libm.so.6. Checked
here: the installed copy no longer lists them, every symbol of the module and its libraries
resolves at load time (``LD_BIND_NOW``, so a missing one would be an ImportError in the child,
not a "symbol lookup error" at some later call), a model runs and matches ONNX Runtime, Intel's
libraries are not in the process, and the two replacement functions keep memcpy/memset's
contract on every length and alignment."""

from __future__ import annotations

import ctypes
import importlib.metadata as md
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from opforge_cpu._loader import ONEDNN_SONAME

INTEL_SONAMES = ("libimf.so", "libintlc.so.5")
SHIM = "libopforge_intel_mem.so"


def package_dir() -> Path:
    spec = importlib.util.find_spec("opforge_cpu._core")
    if spec is None or spec.origin is None:
        pytest.fail("opforge_cpu._core is not installed")
    return Path(spec.origin).parent


def needed(lib: Path) -> list[str]:
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    out = subprocess.run([readelf, "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line]


def shipped_shim() -> Path:
    shim = package_dir() / SHIM
    if not shim.exists():
        pytest.skip(f"this build's oneDNN needs no Intel runtime ({SHIM} not built): the OpenMP build")
    return shim


def test_the_onednn_copy_lists_no_intel_runtime() -> None:
    deps = needed(package_dir() / ONEDNN_SONAME)
    for soname in INTEL_SONAMES:
        assert soname not in deps, deps
    if (package_dir() / SHIM).exists():
        assert SHIM in deps and "libm.so.6" in deps, deps


def test_the_package_does_not_depend_on_intel_cmplr_lib_rt() -> None:
    requires = md.requires("opforge-cpu") or []
    assert not [r for r in requires if r.lower().startswith("intel-cmplr-lib-rt")], requires


CHILD = r"""
import json, sys
from pathlib import Path
import numpy as np
import opforge
from opforge_cpu._loader import load_core
path, out = sys.argv[1], sys.argv[2]
core = opforge.Core()
compiled = core.compile_model(core.read_model(path), "CPU",
                              {"INFERENCE_NUM_THREADS": 2, "INFERENCE_PRECISION_HINT": "f32"})
x = np.random.default_rng(3).standard_normal((1, 8, 20, 20)).astype(np.float32)
y = compiled.create_infer_request().infer({"x": x}).to_tuple()[0]
maps = Path("/proc/self/maps").read_text()
np.save(out, np.asarray(y))
print(json.dumps({"runtime": load_core().threading_runtime(),
                  "intel": [s for s in ("libimf.so", "libintlc.so") if s in maps],
                  "shim": "libopforge_intel_mem.so" in maps}))
"""


def test_every_symbol_resolves_at_load_and_a_model_matches_onnx_runtime(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    from onnx_graph import OnnxGraph

    g = OnnxGraph(seed=5)
    # a convolution (oneDNN reorders its weights and the source to blocked layouts: the copies
    # oneDNN does with _intel_fast_memcpy), pooling and a Softmax
    c = g.relu(g.conv("x", 8, 24, k=3))
    p = g.node("MaxPool", [c], kernel_shape=[2, 2], strides=[2, 2])
    s = g.node("Softmax", [p], axis=-1)
    model = g.save(tmp_path / "m.onnx", (1, 8, 20, 20), [s], opset=13)
    out = tmp_path / "y.npy"
    env = dict(os.environ, LD_BIND_NOW="1")
    res = subprocess.run([sys.executable, "-c", CHILD, str(model), str(out)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["intel"] == [], report
    assert report["shim"] == (report["runtime"] == "tbb" and (package_dir() / SHIM).exists()), report
    x = np.random.default_rng(3).standard_normal((1, 8, 20, 20)).astype(np.float32)
    want = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load(out), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [0, 1, 7, 31, 64, 65, 4096, 100003])
@pytest.mark.parametrize("offset", [0, 3])
def test_the_replacements_keep_memcpy_and_memset_contracts(n: int, offset: int) -> None:
    lib = ctypes.CDLL(str(shipped_shim()), mode=ctypes.RTLD_LOCAL)
    memcpy = lib._intel_fast_memcpy
    memcpy.restype = ctypes.c_void_p
    memcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    memset = lib._intel_fast_memset
    memset.restype = ctypes.c_void_p
    memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]

    rng = np.random.default_rng(n + offset)
    # guard bytes on both sides: nothing outside [offset, offset + n) may change
    src = rng.integers(0, 256, n + 16, dtype=np.uint8)
    dst = np.full(n + 16, 0xA5, dtype=np.uint8)
    ret = memcpy(dst.ctypes.data + offset, src.ctypes.data + offset, n)
    assert ret == dst.ctypes.data + offset
    np.testing.assert_array_equal(dst[offset:offset + n], src[offset:offset + n])
    assert (dst[:offset] == 0xA5).all() and (dst[offset + n:] == 0xA5).all()

    ret = memset(dst.ctypes.data + offset, 0x13C, n)  # memset converts the value to unsigned char
    assert ret == dst.ctypes.data + offset
    assert (dst[offset:offset + n] == 0x3C).all()
    assert (dst[:offset] == 0xA5).all() and (dst[offset + n:] == 0xA5).all()
