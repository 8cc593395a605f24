"""MatMul with constant weights as oneDNN's inner_product (core/fully_connected.cpp), chosen with
OPFORGE_CPU_MATMUL=inner_product: every form it takes (batch dimensions flattened into M,
transposed weights, leading 1s, N = 1, fused bias/ReLU/residual sum) agrees with NumPy, natively
and with oneDNN limited to AVX2; the forms it does not take stay on matmul; a bad value is a clear
error. Unset, the measured rule picks: inner_product on an AMD CPU at AVX2 (no AVX-512, or
ONEDNN_MAX_CPU_ISA=AVX2) for two rows or more, matmul otherwise; OPFORGE_CPU_FC_AMD_AVX2=0 turns
the rule off. The variables are read once per process, so each case runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).parent

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import opforge
    from cpu_testing import const, make_plugins, param, rand
    from opforge.graph import Model

    def fc(name, xs, ws, tb=False, bias=False, relu=False, residual=False):
        x = param("x", xs)
        w = rand(ws, seed=1) * 0.1
        y = opforge.op("MatMul", x, const(w), transpose_b=tb, name="fc")
        b = rand((w.shape[-2] if tb else w.shape[-1],), seed=2)
        if bias:
            y = opforge.op("Add", y, const(b), name="bias")
        if relu:
            y = opforge.op("Relu", y, name="relu")
        inputs = [x]
        if residual:
            r = param("r", [*xs[:-1], w.shape[-2] if tb else w.shape[-1]])
            inputs.append(r)
            y = opforge.op("Add", y, r, name="sum")
        feeds = {"x": rand(xs, seed=3)}
        if residual:
            feeds["r"] = rand(r.output(0).shape, seed=4)
        ref = np.matmul(feeds["x"].astype(np.float64), np.swapaxes(w, -1, -2) if tb else w)
        if bias:
            ref = ref + b
        if relu:
            ref = np.maximum(ref, 0)
        if residual:
            ref = ref + feeds["r"]
        return name, Model([y], inputs, name=name), feeds, ref

    cases = [
        fc("batch_dims_bias_relu", [2, 8, 64], (64, 48), bias=True, relu=True),
        fc("transposed", [5, 64], (48, 64), tb=True),
        fc("leading_ones", [3, 64], (1, 64, 48), bias=True),
        fc("one_column", [7, 64], (64, 1)),
        fc("residual_sum", [4, 32], (32, 16), bias=True, residual=True),
        fc("vector_input", [64], (64, 24)),
        fc("batched_weights", [2, 3, 64], (2, 64, 16)),
    ]
    core = opforge.Core(plugins=make_plugins())
    out = {}
    for name, model, feeds, ref in cases:
        cm = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "ENABLE_PROFILING": True})
        req = cm.create_infer_request()
        y = np.asarray(req.infer(feeds)[0])
        # (the rows of the ops fused into it say "fused")
        impls = [r.exec_type for r in req.get_profiling_info() if r.node_type == "MatMul" and r.exec_type != "fused"]
        err = float(np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-30))
        out[name] = {"shape_ok": list(y.shape) == list(ref.shape), "err": err, "impls": impls}
    print(json.dumps(out))
""")


def run_cases(env: dict[str, str]) -> dict[str, dict[str, object]]:
    full = {**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=full, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, dict[str, object]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def is_inner_product(impl: str) -> bool:
    # the kernel prefixes oneDNN's implementation name ("inner_product:brgemm:avx2")
    return impl.startswith("inner_product:")


@pytest.mark.parametrize("isa", ["native", "AVX2"])
def test_inner_product_forms_match_numpy(isa: str) -> None:
    env = {"OPFORGE_CPU_MATMUL": "inner_product"}
    if isa != "native":
        env["ONEDNN_MAX_CPU_ISA"] = isa
    res = run_cases(env)
    for name, r in res.items():
        assert r["shape_ok"], name
        assert float(r["err"]) < 1e-5, (name, r)  # type: ignore[arg-type]
    taken = ["batch_dims_bias_relu", "transposed", "leading_ones", "one_column", "residual_sum", "vector_input"]
    for name in taken:
        impls = res[name]["impls"]
        assert impls and all(is_inner_product(i) for i in impls), (name, impls)  # type: ignore[union-attr]
    # weights with a real batch dimension are a batched product: matmul
    assert not any(is_inner_product(i) for i in res["batched_weights"]["impls"])  # type: ignore[union-attr]


#: the cases of SCRIPT with two rows or more that inner_product takes; "vector_input" has one row
MULTI_ROW = ["batch_dims_bias_relu", "transposed", "leading_ones", "one_column", "residual_sum"]


def host_is_amd() -> bool:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        return any(line.startswith("vendor_id") and "AuthenticAMD" in line for line in f)


def plugin_host_isa(env: dict[str, str]) -> str:
    """What the plugin's kernels dispatch to under `env` (cpuid AND oneDNN's effective ISA)."""
    code = "from opforge_cpu._loader import load_core; print(load_core().host_isa())"
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("isa", ["native", "AVX2"])
def test_default_follows_the_measured_rule(isa: str) -> None:
    # empty: the rule on, whatever the caller's environment set
    env = {"OPFORGE_CPU_MATMUL": "", "OPFORGE_CPU_FC_AMD_AVX2": ""}
    if isa != "native":
        env["ONEDNN_MAX_CPU_ISA"] = isa
    # the rule: an AMD CPU whose plugin runs at AVX2 (no AVX-512 as oneDNN sees it)
    expect_ip = host_is_amd() and plugin_host_isa(env) == "avx2"
    res = run_cases(env)
    for name, r in res.items():
        assert r["shape_ok"], name
        assert float(r["err"]) < 1e-5, (name, r)  # type: ignore[arg-type]
    for name in MULTI_ROW:
        impls = res[name]["impls"]
        assert impls and all(is_inner_product(i) == expect_ip for i in impls), (name, expect_ip, impls)  # type: ignore[union-attr]
    # one row (a GEMV: gemm:jit's is as fast) and batched weights stay on matmul
    for name in ("vector_input", "batched_weights"):
        assert not any(is_inner_product(i) for i in res[name]["impls"]), (name, res[name])  # type: ignore[union-attr]


def test_rule_off_switch_keeps_matmul_at_avx2() -> None:
    res = run_cases({"OPFORGE_CPU_MATMUL": "", "ONEDNN_MAX_CPU_ISA": "AVX2", "OPFORGE_CPU_FC_AMD_AVX2": "0"})
    for name, r in res.items():
        assert float(r["err"]) < 1e-5, (name, r)  # type: ignore[arg-type]
        assert not any(is_inner_product(i) for i in r["impls"]), (name, r)  # type: ignore[union-attr]


def test_forced_matmul_keeps_matmul_at_avx2() -> None:
    res = run_cases({"OPFORGE_CPU_MATMUL": "matmul", "ONEDNN_MAX_CPU_ISA": "AVX2"})
    for name, r in res.items():
        assert float(r["err"]) < 1e-5, (name, r)  # type: ignore[arg-type]
        assert not any(is_inner_product(i) for i in r["impls"]), (name, r)  # type: ignore[union-attr]


def test_bad_choice_is_a_clear_error() -> None:
    full = {**os.environ, "OPFORGE_CPU_MATMUL": "fastest",
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=full, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "OPFORGE_CPU_MATMUL='fastest': expected matmul or inner_product" in proc.stderr
