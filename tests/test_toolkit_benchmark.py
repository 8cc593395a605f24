"""``opforge benchmark`` and the profiling record, on every device here (CPU, GPU, HETERO), plus
export/import and CACHE_DIR on the real devices."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge import Model
from opforge.benchmark import BenchmarkSettings, run_benchmark
from opforge.cli import main
from opforge.reference import evaluate_model
from opforge.runtime import ProfilingInfo
from opforge.runtime.profiling import STATUSES


def mlp(batch: int | None = 2) -> Model:
    rng = np.random.default_rng(0)
    x = opforge.op("Parameter", element_type="f32", shape=[batch, 16], name="x")
    x.output(0).set_names(["x"])
    w = opforge.op("Constant", value=rng.standard_normal((16, 8)).astype(np.float32), name="w")
    b = opforge.op("Constant", value=rng.standard_normal(8).astype(np.float32), name="b")
    y = opforge.op("Relu", opforge.op("Add", opforge.op("MatMul", x, w, name="mm"), b, name="add"), name="relu")
    y.output(0).set_names(["y"])
    return Model([y], [x], name="mlp")


@pytest.fixture
def mlp_xml(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.xml"
    opforge.save_model(mlp(), path)
    return path


def quiet_compile(core: opforge.Core, model: Any, device: str, config: dict[str, Any] | None = None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # HETERO's fallback warning
        return core.compile_model(model, device, config)


def check_rows(rows: list[Any]) -> None:
    assert rows, "no profiling rows"
    for r in rows:
        assert isinstance(r, ProfilingInfo)
        assert isinstance(r.node_name, str) and r.node_name and isinstance(r.node_type, str) and r.node_type
        assert isinstance(r.exec_type, str) and r.exec_type
        assert isinstance(r.real_time_ms, float) and r.real_time_ms >= 0
        assert r.status in STATUSES


# ============================================================================ profiling record
def test_profiling_record_is_the_same_on_every_device(device: str) -> None:
    core = opforge.Core()
    compiled = quiet_compile(core, mlp(), device, {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    req.infer([np.ones((2, 16), np.float32)])
    rows = req.get_profiling_info()
    check_rows(rows)
    names = {r.node_name for r in rows}
    if device.startswith("HETERO"):
        assert any(r.node_type == "HeteroSubgraph" and "transfer_bytes_in" in r.extra for r in rows)
    else:
        assert names & {"mm", "add", "relu"}, names  # the model's own nodes, by name
    if device == "CPU":  # MatMul + bias Add + Relu run as one oneDNN step: the others are fused
        fused = {r.node_name: r for r in rows if r.status == "OPTIMIZED_OUT"}
        assert set(fused) == {"mm", "add"} and {r.extra["fused_into"] for r in fused.values()} == {"relu"}
        assert fused["mm"].node_type == "MatMul" and fused["mm"].real_time_ms == 0.0


# ============================================================================ benchmark
def test_benchmark_cli_json_report(device: str, mlp_xml: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["benchmark", "-m", str(mlp_xml), "-d", device, "-niter", "7", "-pc", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "latency (ms): median" in text and "Per-layer performance counters" in text
    report = json.loads(out.read_text())
    lat = report["latency_ms"]
    assert set(lat) == {"median", "average", "min", "max", "p90", "p99", "count"} and lat["count"] == 7
    assert 0 < lat["min"] <= lat["median"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    assert lat["min"] <= lat["average"] <= lat["max"]
    assert report["iterations"] == 7 and report["nireq"] == 1 and report["hint"] == "latency"
    assert report["throughput_fps"] == pytest.approx(7 / report["duration_s"], rel=1e-2)
    assert report["device"] == device and report["execution_devices"]
    assert report["config"]["PERFORMANCE_HINT"] == "LATENCY" and report["config"]["ENABLE_PROFILING"] is True
    assert report["input_shapes"] == {"x": [2, 16]}
    assert report["counters"] and all(set(ProfilingInfo.COLUMNS) <= set(c) for c in report["counters"])
    # the precision it ran in (the suite pins the CPU's default to f32; the VPU's is f16), and
    # that it was the device's default
    precision = report["inference_precision"]
    assert precision == ("f16" if device.startswith("VPU") else "f32")
    assert report["inference_precision_source"] == "device default"
    assert f"precision:    {precision} (the device's default here; -infer_precision to choose)" in text


def test_benchmark_infer_precision_is_passed_and_reported(mlp_xml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from opforge_cpu._loader import load_core

    wanted = "bf16" if load_core().native_bf16() else "f32"
    assert main(["benchmark", "-m", str(mlp_xml), "-d", "CPU", "-niter", "2", "-infer_precision", wanted.upper()]) == 0
    assert f"precision:    {wanted} (set by -infer_precision)" in capsys.readouterr().out
    report = run_benchmark(BenchmarkSettings(str(mlp_xml), "CPU", niter=2, infer_precision=wanted))
    assert (report.precision, report.precision_chosen) == (wanted, True)
    assert report.config["INFERENCE_PRECISION_HINT"] == wanted
    assert report.to_dict()["inference_precision_source"] == "-infer_precision"


def test_benchmark_throughput_with_several_requests(mlp_xml: Path) -> None:
    report = run_benchmark(BenchmarkSettings(str(mlp_xml), "CPU", hint="throughput", nireq=3, niter=12, nthreads=1))
    assert (report.nireq, report.iterations, report.latency.count) == (3, 12, 12)
    assert report.config["PERFORMANCE_HINT"] == "THROUGHPUT" and report.config["INFERENCE_NUM_THREADS"] == 1


def test_benchmark_time_limit_and_progress_bar(mlp_xml: Path) -> None:
    bar = io.StringIO()
    report = run_benchmark(BenchmarkSettings(str(mlp_xml), "CPU", time_s=0.3, progress=True), progress_stream=bar)
    assert 0.3 <= report.duration_s < 3 and report.iterations > 0
    drawn = bar.getvalue()
    assert drawn.startswith("\r[") and "100.0%" in drawn and drawn.endswith("\n")
    # not a terminal and not asked for: nothing drawn
    silent = io.StringIO()
    run_benchmark(BenchmarkSettings(str(mlp_xml), "CPU", niter=3), progress_stream=silent)
    assert silent.getvalue() == ""


def test_benchmark_shapes_batch_and_npz_inputs(tmp_path: Path) -> None:
    dyn = tmp_path / "dyn.xml"
    opforge.save_model(mlp(batch=None), dyn)
    for extra, shape in (({"shape": "x[3,16]"}, [3, 16]), ({"shape": "[5,16]"}, [5, 16]), ({"batch": 4}, [4, 16])):
        report = run_benchmark(BenchmarkSettings(str(dyn), "CPU", niter=2, **extra))
        assert report.input_shapes == {"x": shape}
    assert run_benchmark(BenchmarkSettings(str(dyn), "CPU", niter=2, batch=4)).batch == 4
    # the bench reference files' layout: in.<name>
    x = np.random.default_rng(1).standard_normal((6, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", **{"in.x": x})
    report = run_benchmark(BenchmarkSettings(str(dyn), "CPU", niter=2, inputs=str(tmp_path / "in.npz")))
    assert report.input_shapes == {"x": [6, 16]}


def test_benchmark_errors_are_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dyn = tmp_path / "dyn.xml"
    opforge.save_model(mlp(batch=None), dyn)
    cases = [
        (["-m", str(dyn)], r"input 'x' has a dynamic shape \[\?,16\]: give it one with -shape x\[1,16\]"),
        (["-m", str(dyn), "-shape", "y[1,16]"], r"model has no input 'y'; inputs: 'x'"),
        (["-m", str(dyn), "-i", str(tmp_path / "none.npz")], r"-i .*none.npz: no such file"),
        (["-m", str(dyn), "-b", "2", "-niter", "0"], r"-niter must be >= 1, got 0"),
        (["-m", str(dyn), "-b", "2", "-c", "k.xml"], r"device CPU does not support CONFIG_FILE \(asked for by -c\)"),
    ]
    np.savez(tmp_path / "wrong.npz", z=np.zeros((1, 16), np.float32))
    cases.append((["-m", str(dyn), "-i", str(tmp_path / "wrong.npz")], r"has no array for input 'x'; it has: z"))
    import re

    for argv, pattern in cases:
        assert main(["benchmark", *argv, "-niter", "1"] if "-niter" not in argv else ["benchmark", *argv]) == 2
        err = capsys.readouterr().err
        assert re.search(pattern, err), (argv, err)


# ============================================================================ deployment on real devices
def test_export_import_on_every_device(device: str) -> None:
    core = opforge.Core()
    model = mlp()
    x = np.random.default_rng(2).standard_normal((2, 16)).astype(np.float32)
    compiled = quiet_compile(core, model, device)
    imported = quiet_compile_import(core, compiled.export_model())
    assert imported.device == compiled.device
    np.testing.assert_allclose(imported([x])[0], compiled([x])[0], rtol=1e-6, atol=1e-6)
    # a device that stores f32 tensors in f16 (the VPU) is held to f16 tolerances
    tol = 1e-2 if str(compiled.get_property("INFERENCE_PRECISION_HINT")).lower() == "f16" else 1e-4
    np.testing.assert_allclose(imported([x])[0], evaluate_model(model, [x])[0], rtol=tol, atol=tol)


def quiet_compile_import(core: opforge.Core, blob: bytes) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return core.import_model(blob)


def test_cpu_cache_dir_loads_onnx_from_cache(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    path = tmp_path / "m" / "relu.onnx"
    path.parent.mkdir()
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    core = opforge.Core()
    core.set_property("CPU", {"CACHE_DIR": str(tmp_path / "cache")})
    first = core.compile_model(str(path), "CPU")
    second = core.compile_model(str(path), "CPU")
    assert (core.cache_stats.misses, core.cache_stats.stores, core.cache_stats.hits) == (1, 1, 1)
    assert not first.get_property("LOADED_FROM_CACHE") and second.get_property("LOADED_FROM_CACHE")
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(second([x])[0], np.maximum(x, 0))


EXTENSION = '''
from typing import Any
import numpy as np
from opforge import InferContext, Op, OpAttrs, TensorSpec, hookimpl

class TwiceAttrs(OpAttrs):
    factor: float = 2.0

class Twice(Op):
    type_name = "Twice"
    version = "bench_test_ext"
    Attrs = TwiceAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [inputs[0] * np.float32(attrs.factor)]

@hookimpl
def opforge_register_ops(register):
    register(Twice)

@hookimpl
def opforge_register_kernels(register):
    register("CPU", Twice, lambda attrs, inputs: [inputs[0] * np.float32(attrs.factor)])
'''


def test_benchmark_loads_extensions_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ext = tmp_path / "twice_ext.py"
    ext.write_text(EXTENSION)
    core = opforge.Core()
    core.add_extension(str(ext))
    x = opforge.op("Parameter", element_type="f32", shape=[4], name="x")
    twice = opforge.Node.create("Twice", [x], {"factor": 3.0}, "twice", version="bench_test_ext",
                                registry=core.plugins.ops)
    xml = tmp_path / "twice.xml"
    opforge.save_model(Model([twice], [x]), xml)
    assert main(["benchmark", "-m", str(xml), "-niter", "3"]) == 2  # the op is unknown without it
    assert "Twice" in capsys.readouterr().err
    out = tmp_path / "r.json"
    assert main(["benchmark", "-m", str(xml), "-niter", "3", "-extensions", str(ext), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["iterations"] == 3


def test_benchmark_config_file_reaches_the_gpu_kernel(tmp_path: Path) -> None:
    core = opforge.Core()
    gpus = [d for d in core.available_devices if d.startswith("GPU")]
    if not gpus:
        pytest.skip("no GPU device here")
    leaky = Path(__file__).resolve().parents[1] / "plugin-gpu" / "tests" / "data" / "leaky.xml"
    x = opforge.op("Parameter", element_type="f32", shape=[1, 2, 3, 4], name="x")
    xml = tmp_path / "relu.xml"
    opforge.save_model(Model([opforge.op("Relu", x, name="act")], [x]), xml)
    for device in (gpus[0], f"HETERO:{gpus[0]},CPU", f"AUTO:{gpus[0]},CPU"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # leaky.xml's Define reads an attribute Relu lacks (reported)
            report = run_benchmark(BenchmarkSettings(str(xml), device, niter=2, config_file=str(leaky),
                                                     perf_counts=True))
        assert any(c.exec_type == "ocl:leaky_relu" for c in report.counters), (device, report.counters)
