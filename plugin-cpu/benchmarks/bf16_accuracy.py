"""Accuracy of INFERENCE_PRECISION_HINT=bf16 against f32 on the benchmark models.

For each model of ``make_models.py`` (``--models``) and ``--samples`` random inputs (N(0,1)
images; random token ids with the reference mask; N(0,1) MLP rows), runs opforge f32 and bf16
and, for comparison, OpenVINO f32 and OpenVINO at its default precision (bf16 on hosts with
bf16 arithmetic). Prints, per model, the worst max|bf16 - f32| / max|f32| over the samples and
the top-1 agreement (argmax over the last axis of each output row: the class for the CNNs, the
output unit per row/token for the MLP and BERT's hidden states).

    python plugin-cpu/benchmarks/bf16_accuracy.py --models /tmp/bench-models [--samples 8]
    python plugin-cpu/benchmarks/bf16_accuracy.py --models /tmp/real-models --only googlenet densenet121
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

Feeds = dict[str, np.ndarray]


def random_feeds(ref: Feeds, rng: np.random.Generator) -> Feeds:
    out: Feeds = {}
    for k, v in ref.items():
        if k == "attention_mask":
            out[k] = v  # the reference mask (16 padded positions)
        elif v.dtype.kind in "iu":
            out[k] = rng.integers(0, int(v.max()) + 1, v.shape).astype(v.dtype)
        else:
            out[k] = rng.standard_normal(v.shape).astype(v.dtype)
    return out


def opforge_runner(path: Path, precision: str) -> Callable[[Feeds], np.ndarray]:
    import opforge

    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_PRECISION_HINT": precision})
    got = compiled.get_property("INFERENCE_PRECISION_HINT")
    if got != precision:
        raise SystemExit(f"opforge compiled {path.name} in {got}, not {precision}")
    req = compiled.create_infer_request()
    return lambda f: np.asarray(req.infer(f)[0])


def openvino_runner(path: Path, precision: str | None) -> tuple[Callable[[Feeds], np.ndarray], str]:
    import openvino as ov

    config = {} if precision is None else {"INFERENCE_PRECISION_HINT": precision}
    compiled = ov.Core().compile_model(str(path), "CPU", config)
    req = compiled.create_infer_request()
    prec = compiled.get_property("INFERENCE_PRECISION_HINT")  # an ov.Type: "f32", "bf16"
    return (lambda f: np.asarray(req.infer(f)[0])), str(getattr(prec, "get_type_name", lambda: prec)())


def compare(ref: list[np.ndarray], got: list[np.ndarray]) -> tuple[float, float]:
    rel, agree, rows = 0.0, 0, 0
    for r, g in zip(ref, got, strict=True):
        r64, g64 = r.astype(np.float64), g.astype(np.float64)
        rel = max(rel, float(np.abs(g64 - r64).max() / max(np.abs(r64).max(), 1e-30)))
        ra, ga = r64.reshape(-1, r64.shape[-1]).argmax(-1), g64.reshape(-1, g64.shape[-1]).argmax(-1)
        agree += int((ra == ga).sum())
        rows += ra.size
    return rel, agree / rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=Path, required=True, help="folder of make_models.py output")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--only", nargs="*", default=["resnet18", "mobilenet_v2", "bert_small", "mlp"],
                    help="models of the folder (a make_real_models.py folder: googlenet densenet121 ...)")
    args = ap.parse_args()
    print(f"{'model':<14}{'rows':>6}{'opforge bf16 rel':>18}{'top-1':>8}{'OpenVINO default rel':>22}{'top-1':>8}")
    for name in args.only:
        path, ref = args.models / "onnx" / f"{name}.onnx", args.models / "ref" / f"{name}.npz"
        if not path.exists() or not ref.exists():
            print(f"{name}: not in {args.models}", file=sys.stderr)
            continue
        data = np.load(ref)
        base = {k.removeprefix("in."): data[k] for k in data.files if k.startswith("in.")}
        rng = np.random.default_rng(0)
        samples = [random_feeds(base, rng) for _ in range(args.samples)]
        of32, of16 = opforge_runner(path, "f32"), opforge_runner(path, "bf16")
        ov32, _ = openvino_runner(path, "f32")
        ovd, ov_prec = openvino_runner(path, None)
        f32 = [of32(s) for s in samples]
        rel, top1 = compare(f32, [of16(s) for s in samples])
        ov_ref = [ov32(s) for s in samples]
        ov_rel, ov_top1 = compare(ov_ref, [ovd(s) for s in samples])
        rows = sum(int(np.prod(r.shape[:-1])) for r in f32)
        print(f"{name:<14}{rows:>6}{rel:>18.2e}{top1:>8.1%}{rel_label(ov_rel, ov_prec):>22}{ov_top1:>8.1%}", flush=True)
    return 0


def rel_label(rel: float, precision: str) -> str:
    return f"{rel:.2e} ({precision})"


if __name__ == "__main__":
    sys.exit(main())
