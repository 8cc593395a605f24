"""ONNX Runtime's QOperator-format int8 models (QLinearConv + com.microsoft QLinearAdd, QGemm, ...)
against the QDQ copy of the same model: opforge and ONNX Runtime, each engine in its own process,
timed in alternating rounds (``engine_process.py``). OpenVINO 2026.4 cannot load the QOperator
copies, so it is not a column.

The QOperator copy is made here: ``quant_pre_process`` then ``quantize_static(...,
quant_format=QOperator, per_channel=True, activation_type=QUInt8, weight_type=QInt8)`` with
``--calibration`` seeded N(0, 1) inputs; the QDQ copy is the one the benchmark sets already have
(``<models>/int8/<m>.onnx``). Prints one JSON line per model: medians (ms), ratios, and the max
abs difference of each engine's output from ONNX Runtime's on the same copy.

    python plugin-cpu/benchmarks/bench_qoperator.py --models /tmp/bench-models --only resnet18 mobilenet_v2 \
        --threads 1 2 --runs 48 --rounds 6 [--reverse]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_process import EngineProcess, interleaved_medians_remote


def qoperator_copy(src: Path, dst: Path, calibration: int) -> Path:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = dst.with_suffix(".pre.onnx")
    quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)
    inp = onnx.load(str(src)).graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(0)

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.it = iter([{inp.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(calibration)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    quantize_static(str(pre), str(dst), Reader(), quant_format=QuantFormat.QOperator, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return dst


def bench(name: str, files: dict[str, Path], threads: int, runs: int, rounds: int, reverse: bool) -> dict[str, object]:
    inp = onnx.load(str(files["qop"])).graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    feeds = {inp.name: np.random.default_rng(1).standard_normal(shape).astype(np.float32)}
    procs: dict[str, EngineProcess] = {}
    outs: dict[str, np.ndarray] = {}
    try:
        for engine, tag in (("opforge", "of"), ("onnxruntime", "ort")):
            for form, path in files.items():
                proc = EngineProcess(engine)
                procs[f"{tag}_{form}"] = proc
                outs[f"{tag}_{form}"] = proc.prepare(path, feeds, threads, *(("bf16",) if engine == "opforge" else ()))[0]
        order = dict(reversed(list(procs.items()))) if reverse else procs
        med = interleaved_medians_remote(order, runs, rounds)
    finally:
        for proc in procs.values():
            proc.close()
    return {"model": name, "threads": threads, "load": round(os.getloadavg()[0], 2),
            **{k: round(v, 3) for k, v in med.items()},
            "of/ort qop": round(med["of_qop"] / med["ort_qop"], 3), "of/ort qdq": round(med["of_qdq"] / med["ort_qdq"], 3),
            "of qop/qdq": round(med["of_qop"] / med["of_qdq"], 3),
            "maxabs_vs_ort": {f: float(np.abs(outs[f"of_{f}"] - outs[f"ort_{f}"]).max()) for f in files}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=Path, default=Path("/tmp/bench-models"), help="folder with onnx/ and int8/")
    ap.add_argument("--only", nargs="*", default=["resnet18", "mobilenet_v2"])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--calibration", type=int, default=8, help="seeded N(0, 1) calibration inputs")
    ap.add_argument("--reverse", action="store_true", help="time the engines in the opposite order")
    ap.add_argument("--keep", type=Path, default=None, help="folder to keep the QOperator copies in")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.keep or Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        for m in args.only:
            qop = qoperator_copy(args.models / "onnx" / f"{m}.onnx", out_dir / f"{m}_qop.onnx", args.calibration)
            files = {"qop": qop, "qdq": args.models / "int8" / f"{m}.onnx"}
            for t in args.threads:
                print(json.dumps(bench(m, files, t, args.runs, args.rounds, args.reverse)), flush=True)


if __name__ == "__main__":
    main()
