"""Generate a held-out set of real models for the CPU benchmark: random weights, seeded, nothing
downloaded, none of them in ``shared/bench`` (the set the CPU device was tuned on).

Three routes:

* PaddlePaddle: ``paddle.vision.models`` CNNs and ``paddle.nn`` GRU / bidirectional LSTM /
  TransformerEncoder text models -> ``paddle.jit.save`` (PIR ``.json``) -> ``paddle2onnx``. The CNNs
  get a data-free BatchNorm calibration (one train-mode pass over seeded N(0,1) images with momentum
  0) so activations stay O(1) instead of exploding or vanishing through random-init BN.
* ``onnx.helper``, where no exporter is installed (torch is not): a small UNet (Conv, ConvTranspose,
  Concat, bilinear Resize), a ViT-Tiny (patch Conv, attention with Softmax, LayerNormalization, erf
  GELU), an EfficientNet-B0-like stack (depthwise Conv, SiLU as Sigmoid*x, squeeze-excitation), a
  GPT-2-like decoder (fused QKV + Split, causal mask, tanh GELU with Pow 3) and a T5-like encoder
  (RMSNorm with Pow 2, position bias, gated GELU).
* torch (the second, wider held-out set, ``--family torch``, written to ``/tmp/real-models-2``):
  torchvision, timm and Hugging Face models with seeded random weights (``weights=None``, HF models
  from a config, never from the hub) -> ``torch.onnx.export``; the models and the export live in
  ``torch_models.py``, run with ``--torch-python`` (or $TORCH_PYTHON), a Python with torch, since
  torch is not a project dependency (setup in ``torch_models.py``'s docstring).
* torch, the third held-out set (stop 25, ``--family torch3``, written to ``/tmp/real-models-3``):
  15 more torchvision/timm/Hugging Face architectures in none of the sets tuned on before
  (segmentation with bilinear Resize, fused MBConv, ghost modules, PoolFormer, LeViT, MLP-Mixer,
  MobileBERT, SqueezeBERT's grouped Conv1d, DeBERTa-v2's relative attention, Wav2Vec2, CLIP text,
  the real T5 encoder, SegFormer), same route as the second set.

Layout (the one of ``shared/bench/make_models.py``, so ``bench_cpu.py --models-dir`` reads both)::

    onnx/<m>.onnx     ref/<m>.npz (inputs "in.<name>", source output "out")     manifest.json
    int8/<m>.onnx     with --int8: QDQ copies (ONNX Runtime's static quantizer, per-channel s8
                      weights, u8 activations); token-id models too: the ids stay int64 and the
                      calibration feeds draw them from the vocabulary of the embedding they index,
                      with all-ones attention masks (``calibration_batches``)
    int8dyn/<m>.onnx  with --int8dyn: ``quantize_dynamic(weight_type=QInt8)`` copies (ONNX Runtime's
                      documented int8 recipe for transformers: DynamicQuantizeLinear + MatMulInteger)
                      of the models with more weight MatMul/Gemm than Conv nodes

``--quantize-only [NAME ...]`` makes nothing and writes the --int8 / --int8dyn copies of models
already in a folder (e.g. bert_small of ``/tmp/bench-models``, which shared/bench/make_int8.py
skips), keeping the int8 copies already there.

paddle2onnx is not a project dependency: it is imported when it is importable, otherwise run with
``--paddle2onnx-python`` (or $PADDLE2ONNX_PYTHON), a Python that has it, e.g. a venv under /tmp::

    python3.11 -m venv /tmp/p2o-venv
    echo "$PWD/.venv/lib/python3.11/site-packages" > /tmp/p2o-venv/lib/python3.11/site-packages/opforge.pth
    /tmp/p2o-venv/bin/pip install --no-deps paddle2onnx==2.0.1 onnxoptimizer==0.3.13 polygraphy

Without it the paddle models are skipped (said on stderr) and the onnx.helper ones are still made.

    python plugin-cpu/benchmarks/make_real_models.py --out /tmp/real-models [--only vit_tiny unet_small]
        [--list] [--int8] [--paddle2onnx-python /tmp/p2o-venv/bin/python]
    python plugin-cpu/benchmarks/make_real_models.py --family torch --out /tmp/real-models-2 --int8
        --torch-python /tmp/torch-venv/bin/python
    python plugin-cpu/benchmarks/make_real_models.py --family torch3 --int8 --int8dyn
        --torch-python /tmp/torch-venv/bin/python          # -> /tmp/real-models-3
    python plugin-cpu/benchmarks/make_real_models.py --out /tmp/bench-models --quantize-only bert_small
        --int8 --int8dyn
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

SEED = 0
OPSET = 17
#: each family's held-out set (the last --family given picks the folder when --out is not)
DEFAULT_OUT = {"paddle": Path("/tmp/real-models"), "onnx": Path("/tmp/real-models"),
               "torch": Path("/tmp/real-models-2"), "torch3": Path("/tmp/real-models-3")}


@dataclasses.dataclass
class Built:
    """What a builder made: the ONNX file, its inputs and the source framework's output."""

    onnx: Path
    inputs: dict[str, np.ndarray]
    ref: np.ndarray | None  # None: the ONNX file is the source, ONNX Runtime gives the reference
    route: str


@dataclasses.dataclass(frozen=True)
class Spec:
    name: str
    family: str  # "paddle" (needs paddle2onnx), "onnx" (onnx.helper) or "torch" (needs --torch-python)
    about: str
    build: Callable[[Path, Options], Built]


@dataclasses.dataclass(frozen=True)
class Options:
    opset: int
    paddle2onnx_python: str | None
    torch_python: str | None = None


#: every model this script can make, filled by the @model decorator below
MODELS: dict[str, Spec] = {}


def model(name: str, family: str, about: str) -> Callable[[Callable[[Path, Options], Built]],
                                                          Callable[[Path, Options], Built]]:
    def register(fn: Callable[[Path, Options], Built]) -> Callable[[Path, Options], Built]:
        MODELS[name] = Spec(name, family, about, fn)
        return fn
    return register


# ------------------------------------------------------------------------------ onnx.helper models
class GraphBuilder:
    """Nodes and seeded initializers of one ONNX graph, with generated unique names."""

    def __init__(self, seed: int = SEED) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = collections.Counter[str]()

    def _name(self, prefix: str) -> str:
        self.count[prefix] += 1
        return f"{prefix}_{self.count[prefix]}"

    def const(self, arr: Any, dtype: Any = np.float32) -> str:
        from onnx import numpy_helper

        name = self._name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(arr, dtype), name))
        return name

    def weight(self, *shape: int, fan_in: int | None = None, gain: float = 2.0) -> str:
        """He-style init (variance ``gain / fan_in``) so activations stay O(1) through depth."""
        fan = fan_in if fan_in is not None else int(np.prod(shape[1:]))
        return self.const(self.rng.standard_normal(shape) * (gain / fan) ** 0.5)

    def bias(self, n: int) -> str:
        return self.const(self.rng.uniform(-0.05, 0.05, n))

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, **attrs: Any) -> Any:
        from onnx import helper

        outs = [self._name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def save(self, path: Path, graph_name: str, inputs: list[Any], output: str, opset: int) -> None:
        import onnx
        from onnx import TensorProto, helper

        # the graph output is called "y": rename the tensor wherever it is produced or consumed
        for node in self.nodes:
            for ports in (node.input, node.output):
                for i, t in enumerate(ports):
                    if t == output:
                        ports[i] = "y"
        graph = helper.make_graph(self.nodes, graph_name, inputs,
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="opforge make_real_models.py")
        # shape inference fills in the output's shape (and the checker needs one)
        m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        del m.graph.value_info[:]  # keep the file as exporters write it: no intermediate shapes
        onnx.checker.check_model(m, full_check=True)
        onnx.save(m, str(path))

    # common blocks -------------------------------------------------------------------------
    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1, gain: float = 2.0) -> str:
        w = self.weight(cout, cin // group, k, k, gain=gain)
        return self.op("Conv", [x, w, self.bias(cout)], kernel_shape=[k, k], strides=[stride, stride],
                       pads=[k // 2] * 4, group=group)

    def silu(self, x: str) -> str:
        return self.op("Mul", [x, self.op("Sigmoid", [x])])

    def dense(self, x: str, cin: int, cout: int, gain: float = 1.0) -> str:
        """x @ W + b as torch exports nn.Linear on 3-D input."""
        return self.op("Add", [self.op("MatMul", [x, self.weight(cin, cout, fan_in=cin, gain=gain)]),
                               self.bias(cout)])

    def layer_norm(self, x: str, width: int, eps: float = 1e-5) -> str:
        return self.op("LayerNormalization", [x, self.const(np.ones(width)), self.const(np.zeros(width))],
                       axis=-1, epsilon=eps)

    def gelu_erf(self, x: str) -> str:
        e = self.op("Erf", [self.op("Div", [x, self.const(2.0 ** 0.5)])])
        return self.op("Mul", [self.op("Mul", [x, self.op("Add", [e, self.const(1.0)])]), self.const(0.5)])

    def gelu_tanh(self, x: str) -> str:
        """GPT-2's / T5's "gelu_new": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
        cube = self.op("Mul", [self.op("Pow", [x, self.const(3.0)]), self.const(0.044715)])
        t = self.op("Tanh", [self.op("Mul", [self.op("Add", [x, cube]), self.const((2 / np.pi) ** 0.5)])])
        return self.op("Mul", [self.op("Mul", [x, self.const(0.5)]), self.op("Add", [t, self.const(1.0)])])

    def attention(self, q: str, k: str, v: str, seq: int, heads: int, dim: int, scale: bool,
                  bias: str | None) -> str:
        """Multi-head attention on [1, seq, dim] q/k/v, back to [1, seq, dim]."""
        split = self.const([1, seq, heads, dim // heads], np.int64)
        qh, kh, vh = (self.op("Transpose", [self.op("Reshape", [t, split])], perm=[0, 2, 1, 3]) for t in (q, k, v))
        s = self.op("MatMul", [qh, self.op("Transpose", [kh], perm=[0, 1, 3, 2])])
        if scale:
            s = self.op("Div", [s, self.const(float(dim // heads) ** 0.5)])
        if bias is not None:
            s = self.op("Add", [s, bias])
        ctx = self.op("MatMul", [self.op("Softmax", [s], axis=-1), vh])
        return self.op("Reshape", [self.op("Transpose", [ctx], perm=[0, 2, 1, 3]),
                                   self.const([1, seq, dim], np.int64)])

    def embed(self, ids: str, vocab: int, seq: int, width: int, positions: bool) -> str:
        x = self.op("Gather", [self.const(self.rng.standard_normal((vocab, width)) * 0.5), ids])
        if positions:
            x = self.op("Add", [x, self.const(self.rng.standard_normal((1, seq, width)) * 0.1)])
        return x


def _image(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(SEED + 1).standard_normal(shape).astype(np.float32)


def _ids(seq: int, vocab: int) -> np.ndarray:
    return np.random.default_rng(SEED + 1).integers(0, vocab, (1, seq)).astype(np.int64)


def _image_input(name: str, shape: tuple[int, ...]) -> Any:
    from onnx import TensorProto, helper

    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _ids_input(name: str, seq: int) -> Any:
    from onnx import TensorProto, helper

    return helper.make_tensor_value_info(name, TensorProto.INT64, [1, seq])


@model("unet_small", "onnx", "UNet, 4 levels 16-128 ch + 256 bottleneck on 1x3x256x256: Conv/Relu, MaxPool, "
       "ConvTranspose (2 levels) and bilinear Resize + 1x1 Conv (2 levels), skip Concat")
def make_unet_small(out: Path, opts: Options) -> Built:
    shape = (1, 3, 256, 256)
    g = GraphBuilder()

    def double_conv(x: str, cin: int, cout: int) -> str:
        x = g.op("Relu", [g.conv(x, cin, cout, 3)])
        return g.op("Relu", [g.conv(x, cout, cout, 3)])

    x, cin, skips = "x", 3, []
    for c in (16, 32, 64, 128):
        x = double_conv(x, cin, c)
        skips.append((x, c))
        x, cin = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2]), c
    x, cin = double_conv(x, cin, 256), 256
    for level, (skip, c) in enumerate(reversed(skips)):
        if level % 2 == 0:  # learnt upsampling
            w = g.weight(cin, c, 2, 2, fan_in=cin)
            x = g.op("ConvTranspose", [x, w, g.bias(c)], kernel_shape=[2, 2], strides=[2, 2])
        else:  # bilinear upsampling, then a 1x1 conv to halve the channels
            x = g.op("Resize", [x, "", g.const([1.0, 1.0, 2.0, 2.0])], mode="linear",
                     coordinate_transformation_mode="half_pixel")
            x = g.conv(x, cin, c, 1)
        x = double_conv(g.op("Concat", [x, skip], axis=1), 2 * c, c)
        cin = c
    y = g.conv(x, cin, 2, 1, gain=1.0)
    path = out / "unet_small.onnx"
    g.save(path, "unet_small", [_image_input("x", shape)], y, opts.opset)
    return Built(path, {"x": _image(shape)}, None, "onnx.helper")


@model("vit_tiny", "onnx", "ViT-Tiny/16 on 1x3x224x224: patch Conv, cls token Concat, 12 blocks of "
       "LayerNormalization + 3-head attention (Softmax) + erf-GELU MLP, head Gemm")
def make_vit_tiny(out: Path, opts: Options) -> Built:
    shape, dim, heads, depth, tokens = (1, 3, 224, 224), 192, 3, 12, 197
    g = GraphBuilder()
    p = g.op("Conv", ["x", g.weight(dim, 3, 16, 16), g.bias(dim)], kernel_shape=[16, 16], strides=[16, 16])
    p = g.op("Transpose", [g.op("Reshape", [p, g.const([1, dim, tokens - 1], np.int64)])], perm=[0, 2, 1])
    x = g.op("Concat", [g.const(g.rng.standard_normal((1, 1, dim)) * 0.02), p], axis=1)
    x = g.op("Add", [x, g.const(g.rng.standard_normal((1, tokens, dim)) * 0.02)])
    for _ in range(depth):
        h = g.layer_norm(x, dim, 1e-6)
        q, k, v = (g.dense(h, dim, dim) for _ in range(3))
        x = g.op("Add", [x, g.dense(g.attention(q, k, v, tokens, heads, dim, True, None), dim, dim)])
        h = g.gelu_erf(g.dense(g.layer_norm(x, dim, 1e-6), dim, 4 * dim))
        x = g.op("Add", [x, g.dense(h, 4 * dim, dim)])
    cls = g.op("Gather", [g.layer_norm(x, dim, 1e-6), g.const(0, np.int64)], axis=1)
    y = g.op("Gemm", [cls, g.weight(1000, dim, fan_in=dim, gain=1.0), g.bias(1000)], transB=1)
    path = out / "vit_tiny.onnx"
    g.save(path, "vit_tiny", [_image_input("x", shape)], y, opts.opset)
    return Built(path, {"x": _image(shape)}, None, "onnx.helper")


@model("efficientnet_b0_like", "onnx", "EfficientNet-B0 layout on 1x3x224x224: 16 MBConv blocks (1x1 "
       "expand, depthwise 3x3/5x5, squeeze-excitation, 1x1 project, residual), SiLU as Sigmoid*x, BN folded")
def make_efficientnet_b0_like(out: Path, opts: Options) -> Built:
    shape = (1, 3, 224, 224)
    g = GraphBuilder()
    x, cin = g.silu(g.conv("x", 3, 32, 3, 2)), 32
    # (expansion, channels, repeats, first stride, kernel) of EfficientNet-B0
    for t, c, n, s, k in ((1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5), (6, 80, 3, 2, 3),
                          (6, 112, 3, 1, 5), (6, 192, 4, 2, 5), (6, 320, 1, 1, 3)):
        for i in range(n):
            stride, hid = (s if i == 0 else 1), cin * t
            y = g.silu(g.conv(x, cin, hid, 1)) if t != 1 else x
            y = g.silu(g.conv(y, hid, hid, k, stride, group=hid))
            squeezed = max(1, cin // 4)
            se = g.silu(g.conv(g.op("GlobalAveragePool", [y]), hid, squeezed, 1))
            se = g.op("Sigmoid", [g.conv(se, squeezed, hid, 1, gain=1.0)])
            y = g.conv(g.op("Mul", [y, se]), hid, c, 1, gain=1.0)
            if stride == 1 and cin == c:
                y = g.op("Add", [y, x])
            x, cin = y, c
    x = g.silu(g.conv(x, cin, 1280, 1))
    f = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    y = g.op("Gemm", [f, g.weight(1000, 1280, fan_in=1280, gain=1.0), g.bias(1000)], transB=1)
    path = out / "efficientnet_b0_like.onnx"
    g.save(path, "efficientnet_b0_like", [_image_input("x", shape)], y, opts.opset)
    return Built(path, {"x": _image(shape)}, None, "onnx.helper")


@model("gpt2_like", "onnx", "GPT-2-style decoder, 4 layers, hidden 384, 6 heads, seq 128: pre-LN, fused "
       "QKV MatMul + Split, causal additive mask, tanh GELU (Pow 3)")
def make_gpt2_like(out: Path, opts: Options) -> Built:
    seq, dim, heads, layers, vocab = 128, 384, 6, 4, 8000
    g = GraphBuilder()
    x = g.embed("input_ids", vocab, seq, dim, positions=True)
    causal = g.const(np.triu(np.full((seq, seq), -1e4, np.float32), 1)[None, None])
    split = g.const([dim, dim, dim], np.int64)
    for _ in range(layers):
        q, k, v = g.op("Split", [g.dense(g.layer_norm(x, dim), dim, 3 * dim), split], n_out=3, axis=-1)
        x = g.op("Add", [x, g.dense(g.attention(q, k, v, seq, heads, dim, True, causal), dim, dim)])
        h = g.gelu_tanh(g.dense(g.layer_norm(x, dim), dim, 4 * dim))
        x = g.op("Add", [x, g.dense(h, 4 * dim, dim)])
    y = g.layer_norm(x, dim)
    path = out / "gpt2_like.onnx"
    g.save(path, "gpt2_like", [_ids_input("input_ids", seq)], y, opts.opset)
    return Built(path, {"input_ids": _ids(seq, vocab)}, None, "onnx.helper")


@model("t5_like", "onnx", "T5 v1.1-style encoder, 4 layers, d_model 256, 4 heads, seq 128: RMSNorm (Pow 2, "
       "ReduceMean, Sqrt, Div), unscaled attention + position bias, gated tanh-GELU FFN 1024")
def make_t5_like(out: Path, opts: Options) -> Built:
    seq, dim, heads, layers, ff, vocab = 128, 256, 4, 4, 1024, 8000
    g = GraphBuilder()

    def rms_norm(x: str) -> str:
        var = g.op("ReduceMean", [g.op("Pow", [x, g.const(2.0)])], axes=[-1], keepdims=1)
        h = g.op("Div", [x, g.op("Sqrt", [g.op("Add", [var, g.const(1e-6)])])])
        return g.op("Mul", [h, g.const(np.ones(dim))])

    def proj(x: str, cin: int, cout: int) -> str:  # T5 linears have no bias
        return g.op("MatMul", [x, g.weight(cin, cout, fan_in=cin, gain=1.0)])

    x = g.embed("input_ids", vocab, seq, dim, positions=False)
    pos_bias = g.const(g.rng.standard_normal((1, heads, seq, seq)) * 0.5)
    for _ in range(layers):
        h = rms_norm(x)
        q, k, v = (proj(h, dim, dim) for _ in range(3))
        x = g.op("Add", [x, proj(g.attention(q, k, v, seq, heads, dim, False, pos_bias), dim, dim)])
        h = rms_norm(x)
        h = g.op("Mul", [g.gelu_tanh(proj(h, dim, ff)), proj(h, dim, ff)])
        x = g.op("Add", [x, proj(h, ff, dim)])
    y = rms_norm(x)
    path = out / "t5_like.onnx"
    g.save(path, "t5_like", [_ids_input("input_ids", seq)], y, opts.opset)
    return Built(path, {"input_ids": _ids(seq, vocab)}, None, "onnx.helper")


# ------------------------------------------------------------------------------ paddle models
_P2O_SNIPPET = (
    "import sys, paddle2onnx\n"
    "paddle2onnx.export(sys.argv[1], sys.argv[2], sys.argv[3], opset_version=int(sys.argv[4]),"
    " enable_onnx_checker=True)\n"
)


def _paddle2onnx(model_file: Path, params: Path, onnx_path: Path, opts: Options) -> str:
    """Convert with paddle2onnx in this process when it imports, else in ``--paddle2onnx-python``."""
    try:
        import paddle2onnx
    except ImportError:
        if not opts.paddle2onnx_python:
            raise RuntimeError("paddle2onnx is not importable here; give --paddle2onnx-python (or "
                               "$PADDLE2ONNX_PYTHON), a Python that has it (see this script's docstring)") from None
        cmd = [opts.paddle2onnx_python, "-c", _P2O_SNIPPET, str(model_file), str(params), str(onnx_path),
               str(opts.opset)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not onnx_path.exists():
            raise RuntimeError(f"paddle2onnx ({opts.paddle2onnx_python}) failed on {model_file}: "
                               f"{(done.stderr or done.stdout)[-1500:]}") from None
        ver = subprocess.run([opts.paddle2onnx_python, "-c", "import paddle2onnx; print(paddle2onnx.__version__)"],
                             capture_output=True, text=True, check=False).stdout.strip()
        return f"paddle2onnx {ver}"
    paddle2onnx.export(str(model_file), str(params), str(onnx_path), opset_version=opts.opset,
                       enable_onnx_checker=True)
    return f"paddle2onnx {paddle2onnx.__version__}"


def _export_paddle(net: Any, name: str, inputs: dict[str, np.ndarray], out: Path, opts: Options,
                   what: str) -> Built:
    import paddle

    net.eval()
    with paddle.no_grad():
        ref = net(*(paddle.to_tensor(v) for v in inputs.values())).numpy()
    spec = [paddle.static.InputSpec(list(v.shape), v.dtype.name, k) for k, v in inputs.items()]  # type: ignore[arg-type]
    onnx_path = out / f"{name}.onnx"
    with tempfile.TemporaryDirectory(prefix=f"opforge-{name}-") as tmp:
        prefix = Path(tmp) / name
        paddle.jit.save(net, str(prefix), input_spec=spec)
        # paddle 3.x writes the PIR program as <prefix>.json (+ .pdiparams)
        tool = _paddle2onnx(prefix.with_suffix(".json"), prefix.with_suffix(".pdiparams"), onnx_path, opts)
    return Built(onnx_path, inputs, ref, f"{what} -> paddle {paddle.__version__} jit.save (PIR .json) -> {tool}")


def _calibrate_batch_norm(net: Any, shape: tuple[int, ...]) -> None:
    """Running stats := the batch stats of 8 seeded N(0,1) images, so random-init BN keeps
    activations O(1) (raw init makes some networks' logits explode or vanish)."""
    import paddle

    bns = [m for m in net.sublayers() if isinstance(m, paddle.nn.layer.norm._BatchNormBase)]
    saved = [m._momentum for m in bns]
    for m in bns:
        m._momentum = 0.0
    net.train()
    calib = np.random.default_rng(SEED + 2).standard_normal((8, *shape[1:])).astype(np.float32)
    with paddle.no_grad():
        net(paddle.to_tensor(calib))
    for m, mom in zip(bns, saved):
        m._momentum = mom
    net.eval()


def _first_output(net: Any) -> Any:
    """googlenet returns (logits, aux1, aux2); inference uses the logits only."""
    import paddle

    class FirstOutput(paddle.nn.Layer):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: Any) -> Any:
            return self.inner(x)[0]

    return FirstOutput(net)


def _vision(arch: str, size: int, about: str) -> None:
    def build(out: Path, opts: Options) -> Built:
        import paddle
        from paddle.vision import models

        paddle.seed(SEED)
        net = getattr(models, arch)(pretrained=False)
        shape = (1, 3, size, size)
        _calibrate_batch_norm(net, shape)
        if arch == "googlenet":
            net = _first_output(net)
        return _export_paddle(net, arch, {"x": _image(shape)}, out, opts,
                              f"paddle.vision.models.{arch}(pretrained=False), BN calibrated")

    model(arch, "paddle", about)(build)


_vision("mobilenet_v3_small", 224, "MobileNetV3-Small: hardswish, SE with hardsigmoid, depthwise")
_vision("mobilenet_v3_large", 224, "MobileNetV3-Large: hardswish, SE with hardsigmoid, depthwise")
_vision("shufflenet_v2_x1_0", 224, "ShuffleNetV2 1.0x: channel shuffle (Reshape/Transpose), Split, depthwise")
_vision("shufflenet_v2_swish", 224, "ShuffleNetV2 1.0x with swish activations")
_vision("squeezenet1_1", 224, "SqueezeNet 1.1: fire modules (1x1/3x3 Concat)")
_vision("densenet121", 224, "DenseNet-121: BN-ReLU-Conv, dense Concat, AvgPool transitions")
_vision("googlenet", 224, "GoogLeNet (Inception v1) logits only: 4-branch inception Concat, LRN-free")
_vision("inception_v3", 299, "Inception v3 on 299x299: factorised 1x7/7x1 convolutions, AvgPool branches")
_vision("resnext50_32x4d", 224, "ResNeXt-50 32x4d: grouped 3x3 convolutions (32 groups)")
_vision("vgg11", 224, "VGG-11 (no BN): 3x3 convs to 512 ch, 3 large FC layers (102M weights)")


@model("gru2_text", "paddle", "text classifier: Embedding 5000x128 -> 2-layer GRU hidden 256 over 128 "
       "steps -> last step Linear (exported as two ONNX GRU nodes)")
def make_gru2_text(out: Path, opts: Options) -> Built:
    import paddle

    class GRUText(paddle.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.emb = paddle.nn.Embedding(5000, 128)
            self.rnn = paddle.nn.GRU(128, 256, num_layers=2)
            self.fc = paddle.nn.Linear(256, 4)

        def forward(self, ids: Any) -> Any:
            y, _ = self.rnn(self.emb(ids))
            return self.fc(y[:, -1])

    paddle.seed(SEED)
    return _export_paddle(GRUText(), "gru2_text", {"ids": _ids(128, 5000)}, out, opts,
                          "paddle.nn Embedding + GRU(num_layers=2) + Linear")


@model("bilstm_text", "paddle", "text classifier: Embedding 5000x128 -> bidirectional LSTM hidden 256 over "
       "128 steps -> mean over time -> Linear (one bidirectional ONNX LSTM node)")
def make_bilstm_text(out: Path, opts: Options) -> Built:
    import paddle

    class BiLSTMText(paddle.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.emb = paddle.nn.Embedding(5000, 128)
            self.rnn = paddle.nn.LSTM(128, 256, direction="bidirect")
            self.fc = paddle.nn.Linear(512, 4)

        def forward(self, ids: Any) -> Any:
            y, _ = self.rnn(self.emb(ids))
            return self.fc(y.mean(axis=1))

    paddle.seed(SEED)
    return _export_paddle(BiLSTMText(), "bilstm_text", {"ids": _ids(128, 5000)}, out, opts,
                          "paddle.nn Embedding + LSTM(direction='bidirect') + Linear")


@model("paddle_transformer", "paddle", "paddle.nn.TransformerEncoder: 4 post-LN layers, d_model 256, 4 heads, "
       "FFN 1024 erf GELU, seq 128, Embedding input")
def make_paddle_transformer(out: Path, opts: Options) -> Built:
    import paddle

    class Encoder(paddle.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.emb = paddle.nn.Embedding(5000, 256)
            layer = paddle.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, activation="gelu")
            self.enc = paddle.nn.TransformerEncoder(layer, 4)

        def forward(self, ids: Any) -> Any:
            return self.enc(self.emb(ids))

    paddle.seed(SEED)
    return _export_paddle(Encoder(), "paddle_transformer", {"ids": _ids(128, 5000)}, out, opts,
                          "paddle.nn Embedding + TransformerEncoder(4 x TransformerEncoderLayer)")


# ------------------------------------------------------------------------------ torch models
sys.path.insert(0, str(Path(__file__).resolve().parent))  # torch_models: the list only, no torch import
import torch_models  # noqa: E402


def _torch(spec: torch_models.TorchSpec) -> None:
    def build(out: Path, opts: Options) -> Built:
        python = opts.torch_python or sys.executable
        onnx_path = out / f"{spec.name}.onnx"
        with tempfile.TemporaryDirectory(prefix=f"opforge-{spec.name}-") as tmp:
            npz = Path(tmp) / "io.npz"
            cmd = [python, torch_models.__file__, spec.name, str(onnx_path), str(npz), str(opts.opset)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False,
                                  env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
            if done.returncode != 0 or not npz.exists():
                raise RuntimeError(f"torch export ({python}) failed on {spec.name}: "
                                   f"{(done.stderr or done.stdout)[-1500:]}")
            with np.load(npz) as data:
                inputs = {k.removeprefix("in."): data[k] for k in data.files if k.startswith("in.")}
                ref = data["out"]
        route = json.loads(done.stdout.strip().splitlines()[-1])["route"]
        return Built(onnx_path, inputs, ref, route)

    model(spec.name, spec.family, spec.about)(build)


for _spec in torch_models.TORCH_MODELS.values():
    _torch(_spec)


# ------------------------------------------------------------------------------ driver
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _describe(path: Path) -> dict[str, Any]:
    import onnx

    m = onnx.load(str(path))
    ops = collections.Counter(n.op_type for n in m.graph.node)
    weights = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
    weights += sum(int(np.prod(a.t.dims)) for n in m.graph.node if n.op_type == "Constant"
                   for a in n.attribute if a.name == "value")
    return {"ops": dict(ops.most_common()), "n_nodes": len(m.graph.node), "n_weight_elements": weights}


def _onnxruntime(path: Path, inputs: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return np.asarray(ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, inputs)[0])


def _fresh_names(family: str) -> contextlib.AbstractContextManager[Any]:
    """Paddle names parameters from a process-wide counter (linear_17.b_0); a fresh counter per
    model makes a model's file the same whichever models were built before it."""
    if family != "paddle":
        return contextlib.nullcontext()
    import paddle

    return paddle.utils.unique_name.guard()  # type: ignore[no-any-return]


def generate(out: Path, names: list[str], opts: Options, log: Callable[[str], None]) -> dict[str, Any]:
    """Build ``names`` into ``out`` and return the manifest (also written as manifest.json).
    A model that fails to build is reported in the manifest's ``failed`` and on the log, not raised."""
    (out / "onnx").mkdir(parents=True, exist_ok=True)
    (out / "ref").mkdir(exist_ok=True)
    manifest_path = out / "manifest.json"
    manifest: dict[str, Any] = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest.update(seed=SEED, opset=opts.opset)
    manifest.setdefault("models", {})
    manifest["failed"] = {}
    for name in names:
        spec = MODELS[name]
        t0 = time.perf_counter()
        try:
            with _fresh_names(spec.family):
                built = spec.build(out / "onnx", opts)
            y = _onnxruntime(built.onnx, built.inputs)
        except Exception as err:  # noqa: BLE001 - one model that cannot be built must not stop the others
            manifest["failed"][name] = f"{type(err).__name__}: {err}"
            log(f"{name}: NOT BUILT: {type(err).__name__}: {str(err)[:400]}")
            continue
        ref = built.ref if built.ref is not None else y
        ref_path = out / "ref" / f"{name}.npz"
        arrays: dict[str, Any] = {f"in.{k}": v for k, v in built.inputs.items()}
        np.savez(ref_path, out=ref, **arrays)
        diff = float(np.max(np.abs(y.astype(np.float64) - ref))) if y.shape == ref.shape else float("inf")
        entry = {"family": spec.family, "about": spec.about, "route": built.route,
                 "onnx": str(built.onnx.relative_to(out)), "onnx_sha256": _sha256(built.onnx),
                 "ref": str(ref_path.relative_to(out)),
                 "inputs": {k: [list(v.shape), str(v.dtype)] for k, v in built.inputs.items()},
                 "output_shape": list(ref.shape), "ref_max_abs": float(np.max(np.abs(ref))),
                 "ort_vs_source_max_abs_diff": diff, **_describe(built.onnx)}
        manifest["models"][name] = entry
        log(f"{name}: {entry['n_nodes']} nodes, {entry['n_weight_elements'] / 1e6:.1f}M weights, "
            f"out {tuple(ref.shape)} max|out| {entry['ref_max_abs']:.3g}, ORT vs source {diff:.1e} "
            f"({time.perf_counter() - t0:.1f}s)")
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def _vocab_sizes(path: Path) -> dict[str, int]:
    """Graph input -> the row count of the embedding table it indexes (a Gather whose data is an
    initializer and whose indices are that input), for the integer inputs that feed one."""
    import onnx

    g = onnx.load(str(path), load_external_data=False).graph
    tables = {t.name: int(t.dims[0]) for t in g.initializer if t.dims}
    inputs = {i.name for i in g.input}
    return {n.input[1]: tables[n.input[0]] for n in g.node
            if n.op_type == "Gather" and len(n.input) == 2 and n.input[1] in inputs and n.input[0] in tables}


def calibration_batches(path: Path, inputs: dict[str, np.ndarray], count: int = 8) -> list[dict[str, np.ndarray]]:
    """``count`` seeded calibration feeds shaped like ``inputs``: float inputs N(0,1); an integer
    input named like a mask all ones (every token attended, as the reference feeds); token ids
    uniform over the vocabulary of the embedding table they index; any other integer input (no
    table found) its reference value, unchanged. Integer inputs stay integers: only the
    activations after the embedding are calibrated."""
    rng = np.random.default_rng(SEED + 3)
    vocab = _vocab_sizes(path)
    batches = []
    for _ in range(count):
        feed = {}
        for k, v in inputs.items():
            if np.issubdtype(v.dtype, np.floating):
                feed[k] = rng.standard_normal(v.shape).astype(v.dtype)
            elif "mask" in k.lower():
                feed[k] = np.ones(v.shape, v.dtype)
            elif k in vocab:
                feed[k] = rng.integers(0, vocab[k], v.shape).astype(v.dtype)
            else:
                feed[k] = v.copy()
        batches.append(feed)
    return batches


def _weight_matmuls_and_convs(path: Path) -> tuple[int, int]:
    """(MatMul/Gemm nodes with an initializer as B, Conv nodes) of a model."""
    import onnx

    g = onnx.load(str(path), load_external_data=False).graph
    consts = {t.name for t in g.initializer} | {o for n in g.node if n.op_type == "Constant" for o in n.output}
    mm = sum(1 for n in g.node if n.op_type in ("MatMul", "Gemm") and len(n.input) > 1 and n.input[1] in consts)
    return mm, sum(1 for n in g.node if n.op_type == "Conv")


def quantize(out: Path, names: list[str], log: Callable[[str], None], overwrite: bool = True) -> dict[str, Any]:
    """QDQ int8 copies ``int8/<m>.onnx`` of the models in ``out`` (ONNX Runtime's static
    quantizer: per-channel s8 weights, u8 activations, MinMax over 8 seeded calibration feeds from
    ``calibration_batches``: N(0,1) images, token ids over the vocabulary with an all-ones mask;
    the layout of shared/bench/make_int8.py). Recorded in the manifest's ``int8`` entry of each
    model with ORT int8 vs the f32 reference; a model the quantizer rejects is logged and left out.
    ``overwrite=False`` keeps an int8 copy that is already there (another tool's)."""
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Calibration(CalibrationDataReader):  # type: ignore[misc]  # untyped base class
        def __init__(self, batches: list[dict[str, np.ndarray]]) -> None:
            self.batches = iter(batches)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    (out / "int8").mkdir(exist_ok=True)
    ort.set_default_logger_severity(3)  # the quantizer's per-tensor warnings
    for name in names:
        entry = manifest["models"].get(name)
        if entry is None:
            continue
        data = np.load(out / entry["ref"])
        inputs = {k.removeprefix("in."): data[k] for k in data.files if k.startswith("in.")}
        t0 = time.perf_counter()
        dst = out / "int8" / f"{name}.onnx"
        if dst.exists() and not overwrite:
            log(f"{name}: int8 copy kept ({dst} exists)")
            continue
        ids = [k for k, v in inputs.items() if not np.issubdtype(v.dtype, np.floating)]
        calibration = calibration_batches(out / entry["onnx"], inputs)
        with tempfile.TemporaryDirectory(prefix=f"opforge-q-{name}-") as tmp:
            pre = Path(tmp) / "pre.onnx"
            try:
                # static shapes: ONNX shape inference suffices (symbolic would need sympy)
                quant_pre_process(str(out / entry["onnx"]), str(pre), skip_symbolic_shape=True)
                quantize_static(str(pre), str(dst), Calibration(calibration), quant_format=QuantFormat.QDQ,
                                per_channel=True, activation_type=QuantType.QUInt8,
                                weight_type=QuantType.QInt8)
            except Exception as err:  # noqa: BLE001 - one model the quantizer rejects must not stop the others
                log(f"{name}: int8 NOT MADE: {type(err).__name__}: {str(err)[:300]}")
                continue
        y = _onnxruntime(dst, inputs)
        diff = float(np.max(np.abs(y.astype(np.float64) - data["out"])))
        feeds = ("8 seeded N(0,1) inputs" if not ids else
                 f"8 seeded feeds ({', '.join(ids)}: ids uniform over the embedding's vocabulary, masks all ones)")
        entry["int8"] = {"onnx": str(dst.relative_to(out)), "onnx_sha256": _sha256(dst),
                         "route": "onnxruntime.quantization quantize_static QDQ, per-channel s8 weights, "
                                  f"u8 activations, MinMax over {feeds}",
                         "ort_int8_vs_f32_ref_max_abs_diff": diff}
        log(f"{name}: int8 QDQ, ORT int8 vs f32 reference {diff:.2e} (max|ref| {np.max(np.abs(data['out'])):.3g}) "
            f"({time.perf_counter() - t0:.1f}s)")
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return dict(manifest)


def quantize_dynamic(out: Path, names: list[str], log: Callable[[str], None]) -> dict[str, Any]:
    """``int8dyn/<m>.onnx``: ONNX Runtime's *dynamic* quantization, its documented int8 recipe for
    transformers (``quantize_dynamic(weight_type=QInt8)``, every default op type: MatMul with a
    constant weight -> DynamicQuantizeLinear + MatMulInteger + scale Mul, Conv -> ConvInteger,
    embedding Gather -> a dequantized s8 table), of the models in ``out`` that are mostly MatMul:
    more MatMul/Gemm nodes with a constant weight than Conv nodes (transformers, MLP mixers; CNNs
    are left to the static ``int8`` copies). No calibration: activation scales are computed at run
    time. Recorded in the manifest's ``int8dyn`` entry with ORT int8dyn vs the f32 reference."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic as ort_quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    (out / "int8dyn").mkdir(exist_ok=True)
    ort.set_default_logger_severity(3)
    for name in names:
        entry = manifest["models"].get(name)
        if entry is None:
            continue
        src = out / entry["onnx"]
        matmuls, convs = _weight_matmuls_and_convs(src)
        if matmuls <= convs:
            continue  # a CNN: its int8 is the static QDQ copy
        data = np.load(out / entry["ref"])
        inputs = {k.removeprefix("in."): data[k] for k in data.files if k.startswith("in.")}
        t0 = time.perf_counter()
        dst = out / "int8dyn" / f"{name}.onnx"
        with tempfile.TemporaryDirectory(prefix=f"opforge-qd-{name}-") as tmp:
            pre = Path(tmp) / "pre.onnx"
            try:
                quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)
                ort_quantize_dynamic(str(pre), str(dst), weight_type=QuantType.QInt8)
            except Exception as err:  # noqa: BLE001 - one model the quantizer rejects must not stop the others
                log(f"{name}: int8dyn NOT MADE: {type(err).__name__}: {str(err)[:300]}")
                continue
        y = _onnxruntime(dst, inputs)
        diff = float(np.max(np.abs(y.astype(np.float64) - data["out"])))
        entry["int8dyn"] = {"onnx": str(dst.relative_to(out)), "onnx_sha256": _sha256(dst),
                            "route": "onnxruntime.quantization quantize_dynamic(weight_type=QInt8), default op "
                                     f"types ({matmuls} weight MatMul/Gemm, {convs} Conv in the f32 model)",
                            "ort_int8dyn_vs_f32_ref_max_abs_diff": diff}
        log(f"{name}: int8dyn, ORT int8dyn vs f32 reference {diff:.2e} (max|ref| {np.max(np.abs(data['out'])):.3g}) "
            f"({time.perf_counter() - t0:.1f}s)")
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return dict(manifest)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="where to write (default: the family's folder, "
                    f"{', '.join(f'{k}: {v}' for k, v in DEFAULT_OUT.items())})")
    ap.add_argument("--only", nargs="+", choices=sorted(MODELS), metavar="MODEL", help="models to make")
    ap.add_argument("--family", nargs="+", choices=["paddle", "onnx", "torch", "torch3"], default=["paddle", "onnx"],
                    help="which routes to make without --only: paddle and onnx are the first held-out set "
                         "(/tmp/real-models), torch the second, wider one (/tmp/real-models-2), torch3 the "
                         "third (/tmp/real-models-3, stop 25)")
    ap.add_argument("--list", action="store_true", help="print the models and exit")
    ap.add_argument("--opset", type=int, default=OPSET)
    ap.add_argument("--int8", action="store_true", help="also write QDQ int8 copies (int8/<m>.onnx), made "
                    "with ONNX Runtime's static quantizer (token-id models calibrated on seeded ids)")
    ap.add_argument("--int8dyn", action="store_true", help="also write int8dyn/<m>.onnx, ONNX Runtime's "
                    "quantize_dynamic(weight_type=QInt8) copies of the models that are mostly MatMul")
    ap.add_argument("--quantize-only", nargs="*", metavar="NAME",
                    help="make nothing: write the --int8 / --int8dyn copies of models already in --out's "
                         "manifest.json (all, or the NAMEs; any make_models.py folder, e.g. /tmp/bench-models), "
                         "keeping int8 copies that are already there")
    ap.add_argument("--paddle2onnx-python", default=os.environ.get("PADDLE2ONNX_PYTHON"),
                    help="a Python with paddle2onnx, used when this one cannot import it")
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON"),
                    help="a Python with torch, torchvision, timm, transformers and onnx (torch_models.py)")
    args = ap.parse_args()
    if args.list:
        for spec in MODELS.values():
            print(f"{spec.name:<24}{spec.family:<8}{spec.about}")
        return 0
    os.environ.setdefault("GLOG_minloglevel", "2")  # paddle's INFO lines
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)

    # without --out: the folder of the --only models' family (when they share one), else --family's
    only_families = {MODELS[n].family for n in args.only or []}
    family = only_families.pop() if len(only_families) == 1 else args.family[-1]
    out = (args.out or DEFAULT_OUT[family]).resolve()
    if args.quantize_only is not None:
        names = args.quantize_only or sorted(json.loads((out / "manifest.json").read_text())["models"])
        if args.int8:
            quantize(out, names, log, overwrite=False)
        if args.int8dyn:
            quantize_dynamic(out, names, log)
        log(f"quantized {', '.join(names)} in {out}")
        return 0
    opts = Options(args.opset, args.paddle2onnx_python, args.torch_python)
    names = args.only or [name for name, spec in MODELS.items() if spec.family in args.family]
    manifest = generate(out, names, opts, log)
    if args.int8:
        quantize(out, names, log)
    if args.int8dyn:
        quantize_dynamic(out, names, log)
    log(f"{len(manifest['models'])} models in {out}; not built: {sorted(manifest['failed']) or 'none'}")
    return 1 if manifest["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
