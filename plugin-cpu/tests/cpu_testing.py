"""Helpers of the CPU device tests: a Core with only the CPU plugin (no autoload, so other
installed plugins cannot change the results), and helpers comparing against the reference."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import opforge
from opforge.graph import Model, Node
from opforge.plugins import PluginInfo, PluginSystem
from opforge.reference import evaluate_model

#: whether oneDNN's effective ISA has AMX here: the CPU's flag, and no ONEDNN_MAX_CPU_ISA cap below
#: it (the host rules of dw_conv_plan.cpp, nn.cpp and the splits apply where this is False)
_CAP = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
_CPUINFO = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
ONEDNN_HAS_AMX = " amx_tile" in _CPUINFO and _CAP in {"ALL", "DEFAULT", "AVX512_CORE_AMX", "AVX512_CORE_AMX_FP16"}


def load_module(path: Path, name: str | None = None) -> ModuleType:
    """A Python file or a compiled extension by path (a benchmark script, a test-built kernel
    module), registered in ``sys.modules`` under ``name`` (default: the file's stem), where a
    dataclass of the module resolves its annotations."""
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def make_plugins(*extra: tuple[Any, str]) -> PluginSystem:
    import opforge_cpu.plugin

    ps = PluginSystem(autoload=False)
    ps.register_module(opforge_cpu.plugin, PluginInfo("cpu", "opforge-cpu", "0.1.0"))
    for module, name in extra:
        ps.register_module(module, PluginInfo(name, f"test-{name}", "0.0"))
    return ps


def param(name: str, shape: Sequence[int | None], dtype: str = "f32") -> Node:
    p = opforge.op("Parameter", element_type=dtype, shape=list(shape), name=name)
    p.output(0).set_names([name])
    return p


def const(value: Any, dtype: Any = np.float32, name: str | None = None) -> Node:
    return opforge.op("Constant", value=np.asarray(value, dtype=dtype), name=name)


def rand(shape: Sequence[int], dtype: Any = np.float32, seed: int = 0, low: float = -2, high: float = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) > 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else int(low) * 3
        return rng.integers(lo, int(high) * 3 + 1, size=shape).astype(dt)
    return rng.uniform(low, high, size=shape).astype(dt)


def check(core: opforge.Core, model: Model, inputs: list[np.ndarray], rtol: float = 1e-5, atol: float = 1e-5,
          config: dict[str, Any] | None = None) -> list[np.ndarray]:
    """Run ``model`` on CPU and on the reference; outputs must match in type, shape and value."""
    want = evaluate_model(model, inputs)
    compiled = core.compile_model(model, "CPU", config)
    got = compiled(inputs).to_tuple()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape, (g.shape, w.shape)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
    return list(got)


def single(op_type: str, inputs: list[np.ndarray], const_inputs: dict[int, Any] | None = None,
           **attrs: Any) -> tuple[Model, list[np.ndarray]]:
    """A model of one node: non-constant inputs become parameters."""
    const_inputs = const_inputs or {}
    args: list[Node] = []
    params: list[Node] = []
    feeds: list[np.ndarray] = []
    for i, a in enumerate(inputs):
        if i in const_inputs:
            args.append(opforge.op("Constant", value=np.asarray(const_inputs[i])))
        else:
            p = param(f"in{i}", a.shape, opforge.Type.from_numpy(a.dtype).ir)
            args.append(p)
            params.append(p)
            feeds.append(a)
    node = opforge.op(op_type, *args, name="node", **attrs)
    # one Result per output, each with its own name (models are validated when re-planned)
    outs = [Node.create("Result", [o], name=f"node/result{i}") for i, o in enumerate(node.outputs())]
    return Model(outs, params, name=op_type), feeds


def infer_twice(path: Path, feeds: dict[str, np.ndarray], threads: int,
                precision: str) -> tuple[list[np.ndarray], list[Any]]:
    """Outputs of the ONNX file ``path`` on CPU (profiling on) and its executed profiling rows.
    Runs it again with other data and then the same data, and fails unless the last outputs equal
    the first: a kernel that keeps state in, or reads stale data from, its buffers shows there."""
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": precision})
    req = compiled.create_infer_request()
    got = [np.asarray(r).copy() for r in req.infer(feeds).to_tuple()]
    req.infer({k: v * 0.5 for k, v in feeds.items()})
    again = req.infer(feeds).to_tuple()
    for i, g in enumerate(got):
        np.testing.assert_array_equal(np.asarray(again[i]), g, err_msg=f"output {i}, second run")
    return got, [r for r in req.get_profiling_info() if r.status == "EXECUTED"]


def bf16_run(path: Path, x: np.ndarray, threads: int) -> tuple[list[np.ndarray], dict[str, str]]:
    """bf16 outputs of the ONNX file ``path`` with one input ``x`` (through infer_twice) and the
    exec type of each executed node, by node name."""
    got, rows = infer_twice(path, {"x": x}, threads, "bf16")
    return got, {r.node_name: r.exec_type for r in rows}


def check_bf16_split(path: Path, x: np.ndarray, marker: str) -> tuple[dict[str, str], dict[str, str]]:
    """A step split into chunks at 2 threads (its exec type carries ``marker``: ``+pixels``,
    ``+rows``...) must give the bytes of the unsplit step at 1 thread, and both must be within bf16
    rounding of ONNX Runtime f32. Returns the exec types at 1 and at 2 threads."""
    import onnxruntime as ort

    one, types1 = bf16_run(path, x, 1)
    two, types2 = bf16_run(path, x, 2)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for a, b, w in zip(one, two, want, strict=True):
        np.testing.assert_array_equal(b, a)
        scale = float(np.abs(w).max())
        assert np.abs(a - w).max() / scale < 3e-2, np.abs(a - w).max() / scale
    assert not any(marker in t for t in types1.values()), types1
    return types1, types2


# the child of bf16_in_child: bf16 outputs (infer_twice: a second run on the same data must
# repeat them) and the (node type, exec type) of each executed step
_BF16_CHILD = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[4])
from pathlib import Path
from cpu_testing import infer_twice
got, rows = infer_twice(Path(sys.argv[1]), {"x": np.load(sys.argv[2])}, int(sys.argv[3]), "bf16")
np.savez(sys.argv[2] + ".out.npz", *got)
print(json.dumps([[r.node_type, r.exec_type] for r in rows]))
"""


def bf16_in_child(tmp_path: Path, path: Path, x: np.ndarray, threads: int, drop: Sequence[str],
                  env_set: dict[str, str]) -> tuple[list[np.ndarray], list[tuple[str, str]]]:
    """bf16 outputs and (node type, exec type) rows of the ONNX file ``path`` (one input ``x``)
    in a child process whose environment lacks the variables ``drop`` but for those in
    ``env_set``: the plugin reads each switch once a process."""
    np.save(tmp_path / "x.npy", x)
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_set)
    res = subprocess.run([sys.executable, "-c", _BF16_CHILD, str(path), str(tmp_path / "x.npy"), str(threads),
                          str(Path(__file__).parent)], env=env, capture_output=True, text=True, timeout=180,
                         check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    out = np.load(str(tmp_path / "x.npy") + ".out.npz")
    rows = [(t, e) for t, e in json.loads(res.stdout.strip().splitlines()[-1])]
    return [out[f"arr_{i}"] for i in range(len(out.files))], rows
