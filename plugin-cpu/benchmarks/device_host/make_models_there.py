"""Make the benchmark models on the device machine's host (torch is there; paddle is not), in the
layout of ``make_real_models.py`` (``onnx/``, ``ref/``, ``int8/``, ``manifest.json``), so that
``bench_cpu.py --models-dir`` reads them:

* resnet18 and mobilenet_v2: torchvision's, BatchNorm-calibrated as ``torch_models.py`` does (the
  benchmark set's are paddle.vision's, same architectures, other random weights);
* bert_small and mlp: ``shared/bench/make_models.py``'s torch models (copied by prepare.sh as
  ``.devrun/host/bench_set.py``);
* the held-out models named on the command line (``make_real_models.py`` names: torch and
  onnx.helper families);
* int8 QDQ copies (ONNX Runtime's static quantizer) of every float-input model.

ONNX Runtime there (1.30) reads IR 10 at most, and onnx 1.23's helper writes IR 14: models made
with ``onnx.helper`` are written as IR 10 (what they use exists there).

    python3 plugin-cpu/benchmarks/device_host/make_models_there.py /tmp/m tv_resnet50,unet_small
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[2] / ".devrun" / "host")]
os.environ["HF_HUB_OFFLINE"] = "1"
warnings.filterwarnings("ignore")

import onnx.helper  # noqa: E402 - after the path set-up above

IR_THERE = 10
_make_model = onnx.helper.make_model


def _make_model_for_ort_there(*args: Any, **kwargs: Any) -> Any:
    model = _make_model(*args, **kwargs)
    model.ir_version = min(model.ir_version, IR_THERE)
    return model


onnx.helper.make_model = _make_model_for_ort_there  # make_real_models calls helper.make_model

import bench_set  # noqa: E402  (shared/bench/make_models.py)
import make_real_models as real  # noqa: E402
import torch_models  # noqa: E402


def main() -> int:
    out = Path(sys.argv[1]).resolve()
    held = [n for n in (sys.argv[2].split(",") if len(sys.argv) > 2 else []) if n]
    (out / "onnx").mkdir(parents=True, exist_ok=True)
    (out / "ref").mkdir(exist_ok=True)
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)

    manifest: dict[str, Any] = {"seed": 0, "opset": 17, "models": {}, "failed": {}}
    for name in ("resnet18", "mobilenet_v2"):
        torch_models._vision(name, torch_models._tv(name), 224, f"torchvision {name} (the benchmark set's is "
                             "paddle.vision's)", f"torchvision {name}")
        torch_models.export(name, out / "onnx" / f"{name}.onnx", out / "ref" / f"{name}.npz", 17)
        manifest["models"][name] = {"onnx": f"onnx/{name}.onnx", "ref": f"ref/{name}.npz", "ref_max_abs": 1.0}
        log(name)
    for name, made in bench_set.make_torch(str(out), 17, log).items():
        np.savez(out / "ref" / f"{name}.npz", out=made["ref"], **{f"in.{k}": v for k, v in made["inputs"].items()})
        manifest["models"][name] = {"onnx": f"onnx/{name}.onnx", "ref": f"ref/{name}.npz", "ref_max_abs": 1.0}
        log(name)
    (out / "manifest.json").write_text(json.dumps(manifest))
    if held:
        real.generate(out, held, real.Options(17, None, sys.executable), log)
    real.quantize(out, ["resnet18", "mobilenet_v2", *held], log)
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
