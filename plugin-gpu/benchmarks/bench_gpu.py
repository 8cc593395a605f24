#!/usr/bin/env python3
"""Benchmark: a resnet18 built with the opforge Python API, on opforge's GPU device, against the
same network in PyTorch CUDA (f32, TF32 off) when torch with CUDA is importable.

Self-contained: needs opforge, opforge_gpu (found from this checkout when not installed), numpy,
pyopencl; no ONNX. Weights are seeded and copied into the torch module, so the outputs are
compared too. Prints median latencies (ms) at batch 1 and 32 and the opforge/torch ratios.

    python plugin-gpu/benchmarks/bench_gpu.py [--batches 1,32] [--iters 50] [--json out.json]

On a machine whose NVIDIA OpenCL driver has no ICD file (see shared/gpu/README.md), the script
writes one to a temporary folder and points OCL_ICD_VENDORS at it before OpenCL loads.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]


def _setup_paths() -> None:
    try:
        import opforge  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(REPO / "core" / "src"))
    try:
        import opforge_gpu  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(REPO / "plugin-gpu" / "src"))


def _setup_nvidia_icd() -> str | None:
    """Point the ICD loader at NVIDIA's OpenCL library when no ICD file names it."""
    if os.environ.get("OCL_ICD_VENDORS"):
        return None
    vendors = Path("/etc/OpenCL/vendors")
    if vendors.is_dir() and any("nvidia" in p.read_text(errors="ignore").lower() for p in vendors.glob("*.icd")):
        return None
    libs = sorted(glob.glob("/usr/lib/libnvidia-opencl.so*") + glob.glob("/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so*")
                  + glob.glob("/usr/local/nvidia/lib64/libnvidia-opencl.so*"))
    if not libs:
        return None
    d = Path(tempfile.mkdtemp(prefix="opforge-icd-"))
    (d / "nvidia.icd").write_text(libs[0] + "\n")
    os.environ["OCL_ICD_VENDORS"] = str(d)
    return libs[0]


# --------------------------------------------------------------------------- the network
LAYERS = [(64, 1), (128, 2), (256, 2), (512, 2)]


def make_weights(seed: int = 0) -> dict[str, np.ndarray]:
    """resnet18 parameters under torchvision's names (He-initialised convs, BN with varied stats)."""
    rng = np.random.default_rng(seed)
    w: dict[str, np.ndarray] = {}

    def conv(name: str, cout: int, cin: int, k: int) -> None:
        w[name + ".weight"] = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)

    def bn(name: str, c: int) -> None:
        w[name + ".weight"] = rng.uniform(0.5, 1.0, c).astype(np.float32)
        w[name + ".bias"] = (rng.standard_normal(c) * 0.1).astype(np.float32)
        w[name + ".running_mean"] = (rng.standard_normal(c) * 0.1).astype(np.float32)
        w[name + ".running_var"] = rng.uniform(0.5, 1.5, c).astype(np.float32)

    conv("conv1", 64, 3, 7)
    bn("bn1", 64)
    cin = 64
    for li, (c, stride) in enumerate(LAYERS, start=1):
        for bi in range(2):
            p = f"layer{li}.{bi}"
            s = stride if bi == 0 else 1
            conv(p + ".conv1", c, cin, 3)
            bn(p + ".bn1", c)
            conv(p + ".conv2", c, c, 3)
            bn(p + ".bn2", c)
            if bi == 0 and (s != 1 or cin != c):
                conv(p + ".downsample.0", c, cin, 1)
                bn(p + ".downsample.1", c)
            cin = c
    w["fc.weight"] = (rng.standard_normal((1000, 512)) * np.sqrt(1.0 / 512)).astype(np.float32)
    w["fc.bias"] = (rng.standard_normal(1000) * 0.01).astype(np.float32)
    return w


def build_opforge(w: dict[str, np.ndarray], batch: int) -> Any:
    import opforge
    from opforge.graph import Model

    def const(a: np.ndarray) -> Any:
        return opforge.op("Constant", value=a)

    def conv_bn(x: Any, cname: str, bname: str, stride: int, pad: int, relu: bool) -> Any:
        y = opforge.op("Convolution", x, const(w[cname + ".weight"]), strides=[stride, stride],
                       pads_begin=[pad, pad], pads_end=[pad, pad], dilations=[1, 1], name=cname)
        y = opforge.op("BatchNormInference", y, const(w[bname + ".weight"]), const(w[bname + ".bias"]),
                       const(w[bname + ".running_mean"]), const(w[bname + ".running_var"]), epsilon=1e-5,
                       name=bname)
        return opforge.op("Relu", y, name=bname + ".relu") if relu else y

    x = opforge.op("Parameter", element_type="f32", shape=[batch, 3, 224, 224], name="x")
    x.output(0).set_names(["x"])
    y = conv_bn(x, "conv1", "bn1", 2, 3, True)
    y = opforge.op("MaxPool", y, kernel=[3, 3], strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
                   dilations=[1, 1], name="maxpool").output(0)
    cin = 64
    for li, (c, stride) in enumerate(LAYERS, start=1):
        for bi in range(2):
            p = f"layer{li}.{bi}"
            s = stride if bi == 0 else 1
            h = conv_bn(y, p + ".conv1", p + ".bn1", s, 1, True)
            h = conv_bn(h, p + ".conv2", p + ".bn2", 1, 1, False)
            short = y
            if bi == 0 and (s != 1 or cin != c):
                short = conv_bn(y, p + ".downsample.0", p + ".downsample.1", s, 0, False)
            y = opforge.op("Relu", opforge.op("Add", h, short, name=p + ".add"), name=p + ".relu")
            cin = c
    y = opforge.op("ReduceMean", y, const(np.array([2, 3], np.int64)), keep_dims=False, name="avgpool")
    y = opforge.op("MatMul", y, const(w["fc.weight"]), transpose_a=False, transpose_b=True, name="fc")
    y = opforge.op("Add", y, const(w["fc.bias"]), name="fc.bias")
    y.output(0).set_names(["logits"])
    return Model([y], [x], name=f"resnet18_b{batch}")


def build_torch(w: dict[str, np.ndarray]) -> Any:
    import torch

    try:
        import torchvision

        net = torchvision.models.resnet18(weights=None)
        source = "torchvision.models.resnet18"
    except Exception:  # noqa: BLE001 - any torchvision problem: fall back to the same network by hand
        net = _torch_resnet18()
        source = "equivalent nn.Module"
    state = {k: torch.from_numpy(v) for k, v in w.items()}
    missing = [k for k in net.state_dict() if k not in state and not k.endswith("num_batches_tracked")]
    if missing:
        raise SystemExit(f"weights missing for the torch model: {missing[:5]}")
    net.load_state_dict(state, strict=False)
    return net.eval(), source


def _torch_resnet18() -> Any:
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, cin: int, c: int, s: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, c, 3, s, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = (nn.Sequential(nn.Conv2d(cin, c, 1, s, bias=False), nn.BatchNorm2d(c))
                               if s != 1 or cin != c else None)

        def forward(self, x: Any) -> Any:
            h = self.relu(self.bn1(self.conv1(x)))
            h = self.bn2(self.conv2(h))
            return self.relu(h + (self.downsample(x) if self.downsample is not None else x))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            cin = 64
            for li, (c, s) in enumerate(LAYERS, start=1):
                setattr(self, f"layer{li}", nn.Sequential(Block(cin, c, s), Block(c, c, 1)))
                cin = c
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, 1000)

        def forward(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            for li in range(1, 5):
                x = getattr(self, f"layer{li}")(x)
            return self.fc(self.avgpool(x).flatten(1))

    return Net()


# --------------------------------------------------------------------------- timing
def median_ms(fn: Any, iters: int, warmup: int) -> tuple[float, list[float]]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--device", default="GPU", help="opforge device (GPU, GPU.1, ...)")
    ap.add_argument("--precision", default="f32", choices=("f32", "f16"))
    ap.add_argument("--image", type=int, default=224, help="input size (smaller for a quick check on PoCL)")
    ap.add_argument("--json", default="", help="also write the results here")
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()

    icd = _setup_nvidia_icd()
    _setup_paths()
    import opforge

    core = opforge.Core()
    if "GPU" not in core.device_plugins():
        core.add_extension("opforge_gpu.plugin")  # running from a checkout: no entry point installed
    core.set_property("GPU", {"INFERENCE_PRECISION_HINT": args.precision})
    print(f"opforge device: {args.device} = {core.get_property(args.device, 'FULL_DEVICE_NAME')}"
          + (f" (ICD written for {icd})" if icd else ""), flush=True)
    w = make_weights()
    results: dict[str, Any] = {"device": core.get_property(args.device, "FULL_DEVICE_NAME"), "runs": []}

    torch_net = None
    torch = None
    if not args.no_torch:
        try:
            import torch as _torch

            if _torch.cuda.is_available():
                torch = _torch
                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
                torch.backends.cudnn.benchmark = True
                torch_net, source = build_torch(w)
                torch_net = torch_net.cuda()
                print(f"torch {torch.__version__} ({source}) on {torch.cuda.get_device_name(0)}, TF32 off", flush=True)
                results["torch"] = {"version": torch.__version__, "model": source,
                                    "gpu": torch.cuda.get_device_name(0)}
            else:
                print("torch has no CUDA device: opforge only", flush=True)
        except ImportError:
            print("torch not importable: opforge only", flush=True)

    for batch in [int(b) for b in args.batches.split(",")]:
        rng = np.random.default_rng(batch)
        x = rng.standard_normal((batch, 3, args.image, args.image)).astype(np.float32)
        model = build_opforge(w, batch)
        if args.image != 224:
            model.reshape({0: [batch, 3, args.image, args.image]})
        t0 = time.perf_counter()
        compiled = core.compile_model(model, args.device)
        compile_s = time.perf_counter() - t0
        req = compiled.create_infer_request()
        ours = req.infer({"x": x})[0].copy()
        ms, _ = median_ms(lambda req=req, x=x: req.infer({"x": x}), args.iters, args.warmup)
        run: dict[str, Any] = {"batch": batch, "opforge_ms": ms, "compile_s": compile_s}
        line = f"batch {batch:3d}: opforge {ms:8.3f} ms (host->host, compile {compile_s:.1f} s)"
        # device time alone, from OpenCL profiling events
        prof = core.compile_model(model, args.device, {"ENABLE_PROFILING": True})
        preq = prof.create_infer_request()
        preq.infer({"x": x})
        dev_ms = []
        for _ in range(max(3, args.iters // 5)):
            preq.infer({"x": x})
            dev_ms.append(sum(c.real_time_ms for c in preq.get_profiling_info())
                          if hasattr(preq, "get_profiling_info") else 0.0)
        run["opforge_kernels_ms"] = statistics.median(dev_ms)
        by_type: dict[str, float] = {}
        for c in preq.get_profiling_info():
            by_type[c["exec_type"]] = by_type.get(c.exec_type, 0.0) + c.real_time_ms
        run["kernel_ms_by_type"] = dict(sorted(by_type.items(), key=lambda kv: -kv[1]))
        line += f", kernels {run['opforge_kernels_ms']:.3f} ms"
        if torch is not None and torch_net is not None:
            xt_host = torch.from_numpy(x)
            xt = xt_host.cuda()
            with torch.no_grad():
                ref = torch_net(xt).cpu().numpy()

                def t_dev(xt: Any = xt) -> None:
                    torch_net(xt)
                    torch.cuda.synchronize()

                def t_host(xt_host: Any = xt_host) -> None:
                    torch_net(xt_host.cuda()).cpu()

                tms, _ = median_ms(t_dev, args.iters, args.warmup)
                hms, _ = median_ms(t_host, args.iters, args.warmup)
            err = float(np.abs(ours - ref).max())
            scale = float(np.abs(ref).max())
            run.update(torch_ms=tms, torch_host_ms=hms, ratio=ms / tms, ratio_host=ms / hms,
                       max_abs_diff=err, ref_max_abs=scale)
            line += (f" | torch {tms:8.3f} ms (input on GPU), {hms:8.3f} ms (host->host) | ratio "
                     f"{ms / tms:5.2f}x / {ms / hms:5.2f}x | max|diff| {err:.2e} (ref max {scale:.2f})")
        print(line, flush=True)
        print("    kernel time by kernel: " + ", ".join(f"{k} {v:.3f} ms" for k, v in run["kernel_ms_by_type"].items()),
              flush=True)
        results["runs"].append(run)
        del compiled, prof
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
