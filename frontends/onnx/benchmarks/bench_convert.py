"""Conversion speed: opforge (read ONNX + save IR) against OpenVINO (convert_model + save_model)
on the same files, side by side in one run, median of N rounds in alternating order.

    python frontends/onnx/benchmarks/bench_convert.py /tmp/bench-models/onnx/*.onnx --rounds 7

The models come from ../shared/bench/make_models.py (they need paddle and torch to generate,
so they are not part of the test suite).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path


def opforge_convert(path: Path, out: Path) -> float:
    import opforge

    t0 = time.perf_counter()
    model = opforge.Core().read_model(path)
    opforge.save_model(model, out / "opforge.xml")
    return time.perf_counter() - t0


def openvino_convert(path: Path, out: Path) -> float:
    import openvino as ov

    t0 = time.perf_counter()
    model = ov.convert_model(str(path))
    ov.save_model(model, str(out / "openvino.xml"), compress_to_fp16=False)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print(f"{'model':16s} {'opforge ms':>11s} {'OpenVINO ms':>12s} {'ratio':>7s}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for path in args.models:
            opforge_convert(path, out)  # warm-up: imports, plugin loading
            openvino_convert(path, out)
            ours, theirs = [], []
            for r in range(args.rounds):
                # alternate who goes first so a noisy neighbour hurts both alike
                pair = (opforge_convert, openvino_convert) if r % 2 == 0 else (openvino_convert, opforge_convert)
                for fn in pair:
                    (ours if fn is opforge_convert else theirs).append(fn(path, out))
            a, b = statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3
            print(f"{path.stem:16s} {a:11.1f} {b:12.1f} {a / b:7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
