"""The torch route of ``make_real_models.py``: torchvision, timm and Hugging Face models with seeded
random weights, exported with ``torch.onnx.export``. Nothing is downloaded: torchvision/timm models
are built with ``weights=None`` / ``pretrained=False``, Hugging Face models from a config object
(never ``from_pretrained``), with ``HF_HUB_OFFLINE=1``.

torch is not a project dependency. ``make_real_models.py`` imports this module only for the model
list (names and descriptions, no torch import at module level) and runs the export with
``--torch-python``, a Python that has torch, torchvision, timm, transformers and onnx::

    python3.11 -m venv /tmp/torch-venv
    /tmp/torch-venv/bin/pip install torch==2.14.1 torchvision==0.29.1
    /tmp/torch-venv/bin/pip install transformers timm onnx onnxscript

    /tmp/torch-venv/bin/python plugin-cpu/benchmarks/torch_models.py NAME OUT.onnx OUT.npz OPSET

writes the ONNX file and an npz with the inputs (``in.<name>``) and torch's own output (``out``),
then prints one JSON line describing the route (library versions, exporter).

CNNs get the data-free BatchNorm calibration of the paddle route (running statistics := the batch
statistics of 8 seeded N(0,1) images, only the BN layers in train mode), so activations stay O(1).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

SEED = 0


@dataclasses.dataclass(frozen=True)
class TorchSpec:
    name: str
    about: str
    build: Callable[[], tuple[Any, dict[str, np.ndarray], str]]  # (module, inputs, what)
    #: which held-out set: "torch" (the second, /tmp/real-models-2) or "torch3" (the third,
    #: /tmp/real-models-3, stop 25: architectures in none of the sets tuned on before)
    family: str = "torch"


#: every torch model, filled by @torch_model below (the list make_real_models.py registers)
TORCH_MODELS: dict[str, TorchSpec] = {}


def torch_model(name: str, about: str, family: str = "torch") -> Callable[
        [Callable[[], tuple[Any, dict[str, np.ndarray], str]]], Callable[[], tuple[Any, dict[str, np.ndarray], str]]]:
    def register(fn: Callable[[], tuple[Any, dict[str, np.ndarray], str]]) -> Callable[
            [], tuple[Any, dict[str, np.ndarray], str]]:
        TORCH_MODELS[name] = TorchSpec(name, about, fn, family)
        return fn
    return register


def _image(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(SEED + 1).standard_normal(shape).astype(np.float32)


def _ids(seq: int, vocab: int) -> np.ndarray:
    return np.random.default_rng(SEED + 1).integers(0, vocab, (1, seq)).astype(np.int64)


def _calibrate_batch_norm(net: Any, shape: tuple[int, ...]) -> None:
    """Running stats := the batch stats of 8 seeded N(0,1) images (momentum 1), every other layer
    in eval mode so dropout / stochastic depth do not perturb the calibration pass."""
    import torch

    bns = [m for m in net.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    net.eval()
    for m in bns:
        m.reset_running_stats()
        m.momentum = 1.0
        m.train()
    calib = torch.from_numpy(np.random.default_rng(SEED + 2).standard_normal((8, *shape[1:])).astype(np.float32))
    with torch.no_grad():
        net(calib)
    for m in bns:
        m.momentum = 0.1
    net.eval()


def _vision(name: str, factory: Callable[[], Any], size: int, about: str, what: str, family: str = "torch",
            key: str | None = None) -> None:
    """``key``: the model returns a dict (torchvision segmentation: ``{"out": ...}``); export that entry."""
    def build() -> tuple[Any, dict[str, np.ndarray], str]:
        import torch

        torch.manual_seed(SEED)
        net = factory()
        if key is not None:
            net = _FirstTensor.wrap(net, key)
        shape = (1, 3, size, size)
        _calibrate_batch_norm(net, shape)
        return net, {"x": _image(shape)}, f"{what}, BN calibrated"

    torch_model(name, about, family)(build)


def _tv(arch: str, module: str = "", **kwargs: Any) -> Callable[[], Any]:
    """``module``: a torchvision.models submodule ("segmentation"); ``kwargs`` go to the factory."""
    def make() -> Any:
        import torchvision

        where = getattr(torchvision.models, module) if module else torchvision.models
        return getattr(where, arch)(weights=None, **kwargs)
    return make


def _timm(arch: str) -> Callable[[], Any]:
    def make() -> Any:
        import timm
        import torch

        net = timm.create_model(arch, pretrained=False)
        # timm zero-initialises some classifier heads (MLP-Mixer's): the output would be the bias,
        # all zeros, and no engine's accuracy could be checked on it. Redraw such a head.
        head = net.get_classifier()
        if isinstance(head, torch.nn.Linear) and not bool(head.weight.any()):
            torch.nn.init.normal_(head.weight, std=head.in_features ** -0.5)
        return net
    return make


_vision("tv_resnet50", _tv("resnet50"), 224, "torchvision ResNet-50: bottleneck blocks, BN folded, residual Add",
        "torchvision.models.resnet50(weights=None)")
_vision("tv_convnext_tiny", _tv("convnext_tiny"), 224, "torchvision ConvNeXt-Tiny: 7x7 depthwise Conv, "
        "channels-last LayerNorm (Transpose), erf GELU MLP, layer scale",
        "torchvision.models.convnext_tiny(weights=None)")
_vision("tv_regnet_y_800mf", _tv("regnet_y_800mf"), 224, "torchvision RegNetY-800MF: grouped 3x3 Conv "
        "(group width 16), squeeze-excitation", "torchvision.models.regnet_y_800mf(weights=None)")
_vision("tv_mnasnet1_0", _tv("mnasnet1_0"), 224, "torchvision MnasNet 1.0: inverted residuals, 3x3/5x5 "
        "depthwise", "torchvision.models.mnasnet1_0(weights=None)")
_vision("tv_efficientnet_b0", _tv("efficientnet_b0"), 224, "torchvision EfficientNet-B0: MBConv, SiLU, "
        "squeeze-excitation, depthwise 3x3/5x5", "torchvision.models.efficientnet_b0(weights=None)")
_vision("tv_swin_t", _tv("swin_t"), 224, "torchvision Swin-T: shifted-window attention (Roll as "
        "Slice/Concat, window Reshape/Transpose, relative position bias), LayerNorm, erf GELU",
        "torchvision.models.swin_t(weights=None)")
_vision("timm_deit_tiny", _timm("deit_tiny_patch16_224"), 224, "timm DeiT-Tiny/16: ViT encoder, 12 blocks of "
        "192 wide, 3 heads", "timm.create_model('deit_tiny_patch16_224', pretrained=False)")
_vision("timm_mobilevit_xs", _timm("mobilevit_xs"), 256, "timm MobileViT-XS on 256x256: MobileNetV2 blocks + "
        "unfold/fold transformer blocks, SiLU", "timm.create_model('mobilevit_xs', pretrained=False)")
_vision("timm_edgenext_x_small", _timm("edgenext_x_small"), 256, "timm EdgeNeXt-XS on 256x256: depthwise "
        "conv encoders, split depthwise transpose attention (cross-covariance), LayerNorm",
        "timm.create_model('edgenext_x_small', pretrained=False)")


def _hf_config(kind: str, **kwargs: Any) -> Any:
    import transformers

    return getattr(transformers, kind)(**kwargs)


class _FirstTensor:
    """Hugging Face models return ModelOutput objects; the export takes the first tensor."""

    @staticmethod
    def wrap(inner: Any, key: str) -> Any:
        import torch

        class First(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, *xs: Any) -> Any:
                return self.inner(*xs)[key]

        return First()


def _hf(name: str, about: str, config_kind: str, model_kind: str, config: dict[str, Any],
        inputs: Callable[[], dict[str, np.ndarray]], part: str | None = None, family: str = "torch",
        key: str = "last_hidden_state") -> None:
    """``inputs`` in the order of the model's forward() arguments (they are passed positionally);
    ``key``: the output exported (``logits`` for a task head)."""
    def build() -> tuple[Any, dict[str, np.ndarray], str]:
        import torch
        import transformers

        torch.manual_seed(SEED)
        cfg = _hf_config(config_kind, attn_implementation="eager", **config)
        net = getattr(transformers, model_kind)(cfg).eval()
        what = f"transformers.{model_kind}({config_kind}(**{config})){'.' + part if part else ''}"
        if part:  # e.g. the encoder of an encoder-decoder model
            net = getattr(net, part)
        return _FirstTensor.wrap(net, key), inputs(), f"{what} random init, eager attention"

    torch_model(name, about, family)(build)


_hf("hf_distilbert", "Hugging Face DistilBERT, 6 layers, hidden 768, 12 heads, seq 128 (input_ids only)",
    "DistilBertConfig", "DistilBertModel", {"vocab_size": 8000}, lambda: {"input_ids": _ids(128, 8000)})
_hf("hf_roberta_small", "Hugging Face RoBERTa sized down: 4 layers, hidden 512, 8 heads, FFN 2048, seq 128",
    "RobertaConfig", "RobertaModel",
    {"vocab_size": 8000, "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
     "intermediate_size": 2048, "max_position_embeddings": 514}, lambda: {"input_ids": _ids(128, 8000)})
_hf("hf_whisper_tiny_encoder", "Hugging Face Whisper-tiny encoder (4 layers, d 384, 6 heads) on 80x1000 "
    "log-mel frames (10 s): 2 Conv1d + GELU, sinusoidal positions, 500 tokens",
    "WhisperConfig", "WhisperModel",
    {"d_model": 384, "encoder_layers": 4, "encoder_attention_heads": 6, "encoder_ffn_dim": 1536,
     "decoder_layers": 1, "decoder_attention_heads": 6, "decoder_ffn_dim": 1536, "max_source_positions": 500,
     "num_mel_bins": 80},
    lambda: {"input_features": _image((1, 80, 1000))}, part="encoder")
_hf("hf_llama_small", "Hugging Face Llama-style decoder: 4 layers, hidden 512, 8 heads, 2 KV heads (GQA), "
    "SwiGLU 1408, RMSNorm, RoPE, causal mask, seq 128, no KV cache",
    "LlamaConfig", "LlamaModel",
    {"vocab_size": 8000, "hidden_size": 512, "intermediate_size": 1408, "num_hidden_layers": 4,
     "num_attention_heads": 8, "num_key_value_heads": 2, "max_position_embeddings": 256, "use_cache": False},
    lambda: {"input_ids": _ids(128, 8000)})
_hf("hf_gpt_neox_small", "Hugging Face GPT-NeoX-style decoder: 4 layers, hidden 512, 8 heads, partial "
    "rotary (25%), parallel attention + MLP residual, fused QKV, seq 128, attention_mask input (all ones), "
    "no KV cache",
    "GPTNeoXConfig", "GPTNeoXModel",
    {"vocab_size": 8000, "hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 4,
     "num_attention_heads": 8, "max_position_embeddings": 256, "use_cache": False},
    # with a mask, as HF pipelines call it (without one, transformers 5 traces its packed-sequence
    # check through aten::diff, which the TorchScript exporter lacks)
    lambda: {"input_ids": _ids(128, 8000), "attention_mask": np.ones((1, 128), np.int64)})


# ------------------------------------------------------------------------------ the third set (stop 25)
# Architectures in none of the sets tuned on before (benchmark set, sets 1 and 2), picked for ops
# those sets lack; ``make_real_models.py --family torch3`` writes them to /tmp/real-models-3.
def _mask_ids(seq: int, vocab: int) -> dict[str, np.ndarray]:
    """input_ids + an all-ones attention_mask (forward()'s first two arguments), as pipelines call it."""
    return {"input_ids": _ids(seq, vocab), "attention_mask": np.ones((1, seq), np.int64)}


_vision("tv_lraspp_mobilenet_v3", _tv("lraspp_mobilenet_v3_large", "segmentation", weights_backbone=None,
                                      num_classes=21), 320,
        "torchvision LR-ASPP MobileNetV3-Large segmentation on 1x3x320x320: dilated depthwise backbone, "
        "hardswish, SE, AvgPool branch with Sigmoid gate, bilinear Resize (x2) to the input size",
        "torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, "
        "num_classes=21)['out']", family="torch3", key="out")
_vision("tv_regnet_x_400mf", _tv("regnet_x_400mf"), 224, "torchvision RegNetX-400MF: grouped 3x3 Conv "
        "(group width 16) without SE, ReLU", "torchvision.models.regnet_x_400mf(weights=None)", family="torch3")
_vision("tv_efficientnet_v2_s", _tv("efficientnet_v2_s"), 224, "torchvision EfficientNetV2-S at 224: fused "
        "MBConv (full 3x3 Conv expand) stages, then MBConv with SE and depthwise, SiLU",
        "torchvision.models.efficientnet_v2_s(weights=None)", family="torch3")
_vision("timm_ghostnet_100", _timm("ghostnet_100"), 224, "timm GhostNet 1.0: ghost modules (1x1 Conv + cheap "
        "depthwise, Concat + Slice), hard-sigmoid SE, ReLU", "timm.create_model('ghostnet_100', pretrained=False)",
        family="torch3")
_vision("timm_rexnet_100", _timm("rexnet_100"), 224, "timm ReXNet 1.0: inverted residuals whose skip Add "
        "covers only the first channels (Slice + Concat), SiLU, ReLU6, SE",
        "timm.create_model('rexnet_100', pretrained=False)", family="torch3")
_vision("timm_poolformer_s12", _timm("poolformer_s12"), 224, "timm PoolFormer-S12: AvgPool token mixer "
        "(count_include_pad=False) minus input, GroupNorm(1 group) exported as Reshape + InstanceNormalization + "
        "Mul/Add, 1x1 Conv MLP with erf GELU, layer scale", "timm.create_model('poolformer_s12', pretrained=False)", family="torch3")
_vision("timm_levit_128s", _timm("levit_128s"), 224, "timm LeViT-128S: Conv stem with hardswish, attention "
        "on 14x14/7x7 tokens, every Linear followed by BatchNorm1d (MatMul + Flatten + BatchNormalization + "
        "Reshape, not folded by the exporter), learnt attention bias (Gather), subsampling attention", "timm.create_model('levit_128s', pretrained=False)", family="torch3")
_vision("timm_mixer_s16", _timm("mixer_s16_224"), 224, "timm MLP-Mixer S/16: patch Conv, token-mixing MLP "
        "over the transposed 196 tokens and channel MLP, LayerNorm, erf GELU (no attention, no Softmax)",
        "timm.create_model('mixer_s16_224', pretrained=False)", family="torch3")
_hf("hf_mobilebert", "Hugging Face MobileBERT sized down: 6 layers, bottleneck 128 inside 512, 4 heads, 4 stacked "
    "FFNs, NoNorm (Mul + Add instead of LayerNorm), ReLU, trigram embedding (shifted Slice/Pad + Concat into a Linear), seq 128, mask",
    "MobileBertConfig", "MobileBertModel",
    {"vocab_size": 8000, "hidden_size": 512, "num_hidden_layers": 6, "num_attention_heads": 4,
     "intermediate_size": 512, "embedding_size": 128, "true_hidden_size": 128, "intra_bottleneck_size": 128},
    lambda: _mask_ids(128, 8000), family="torch3")
_hf("hf_squeezebert", "Hugging Face SqueezeBERT sized down: 4 layers, hidden 768, 12 heads, every projection a "
    "grouped 1x1 Conv1d (groups 4) on channels-first activations, seq 128",
    "SqueezeBertConfig", "SqueezeBertModel",
    {"vocab_size": 8000, "hidden_size": 768, "num_hidden_layers": 4, "num_attention_heads": 12,
     "intermediate_size": 3072, "embedding_size": 768},
    lambda: _mask_ids(128, 8000), family="torch3")
_hf("hf_deberta_v2", "Hugging Face DeBERTa-v2 sized down: 4 layers, hidden 384, 6 heads, disentangled "
    "relative attention (c2p/p2c GatherElements over log buckets), shared keys, seq 128, mask",
    "DebertaV2Config", "DebertaV2Model",
    {"vocab_size": 8000, "hidden_size": 384, "num_hidden_layers": 4, "num_attention_heads": 6,
     "intermediate_size": 1536, "relative_attention": True, "position_buckets": 64, "max_relative_positions": -1,
     "pos_att_type": ["p2c", "c2p"], "norm_rel_ebd": "layer_norm", "share_att_key": True,
     "max_position_embeddings": 512},
    lambda: _mask_ids(128, 8000), family="torch3")
_hf("hf_wav2vec2", "Hugging Face Wav2Vec2 sized down on 1 s of 16 kHz audio: 7-layer Conv1d feature encoder "
    "(256 ch, GroupNorm on the first), grouped positional Conv1d (kernel 128, 16 groups), 4 post-LN "
    "transformer layers d 384, 49 frames",
    "Wav2Vec2Config", "Wav2Vec2Model",
    {"hidden_size": 384, "num_hidden_layers": 4, "num_attention_heads": 6, "intermediate_size": 1536,
     "conv_dim": [256] * 7, "feat_extract_norm": "group", "do_stable_layer_norm": False},
    lambda: {"input_values": _image((1, 16000))}, family="torch3")
_hf("hf_clip_text", "Hugging Face CLIP text encoder sized down: 4 layers, hidden 384, 6 heads, causal mask, "
    "quick-GELU (x * Sigmoid(1.702 x)), seq 77",
    "CLIPTextConfig", "CLIPTextModel",
    {"vocab_size": 8000, "hidden_size": 384, "intermediate_size": 1536, "num_hidden_layers": 4,
     "num_attention_heads": 6, "max_position_embeddings": 77},
    lambda: {"input_ids": _ids(77, 8000)}, family="torch3")
_hf("hf_t5_encoder", "Hugging Face T5 encoder (real T5, not set 1's onnx.helper stand-in): 4 layers, d 256, "
    "8 heads, gated-GELU FFN 1024, RMSNorm, bucketed relative position bias (Log, Min, Where, Gather), seq 128, mask",
    "T5Config", "T5EncoderModel",
    {"vocab_size": 8000, "d_model": 256, "d_kv": 32, "d_ff": 1024, "num_layers": 4, "num_heads": 8,
     "feed_forward_proj": "gated-gelu"},
    lambda: _mask_ids(128, 8000), family="torch3")
_hf("hf_segformer", "Hugging Face SegFormer-B0 with its all-MLP decode head on 1x3x256x256: overlapping patch "
    "Conv, efficient attention (spatial-reduction Conv on K/V), Mix-FFN depthwise Conv, bilinear Resize of 4 "
    "scales, Concat, BN",
    "SegformerConfig", "SegformerForSemanticSegmentation",
    {"num_channels": 3, "hidden_sizes": [32, 64, 160, 256], "depths": [2, 2, 2, 2],
     "num_attention_heads": [1, 2, 5, 8], "sr_ratios": [8, 4, 2, 1], "decoder_hidden_size": 256, "num_labels": 19},
    lambda: {"pixel_values": _image((1, 3, 256, 256))}, family="torch3", key="logits")


def export(name: str, onnx_path: Path, npz_path: Path, opset: int) -> dict[str, Any]:
    """Build ``name``, run it in torch, export it; returns the route's description."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # belt and braces: nothing here asks the hub for anything
    import torch

    torch.set_num_threads(1)
    net, inputs, what = TORCH_MODELS[name].build()
    net.eval()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    with torch.no_grad():
        ref = net(*args).numpy()
    exporter = "torch.onnx.export(dynamo=False) (TorchScript)"
    try:
        torch.onnx.export(net, args, str(onnx_path), input_names=list(inputs), output_names=["out"],
                          opset_version=opset, do_constant_folding=True, dynamo=False)
    except Exception as err:  # noqa: BLE001 - fall back to the dynamo exporter, say so
        print(f"{name}: TorchScript exporter failed ({type(err).__name__}: {str(err)[:300]}), trying dynamo",
              file=sys.stderr)
        torch.onnx.export(net, args, str(onnx_path), input_names=list(inputs), output_names=["out"],
                          opset_version=opset, dynamo=True, external_data=False)
        exporter = "torch.onnx.export(dynamo=True)"
    arrays: dict[str, Any] = {f"in.{k}": v for k, v in inputs.items()}
    np.savez(npz_path, out=ref, **arrays)
    versions = [f"torch {torch.__version__}"]
    for lib in ("torchvision", "timm", "transformers"):
        if lib in sys.modules:
            versions.append(f"{lib} {sys.modules[lib].__version__}")
    return {"route": f"{what} -> {exporter}, opset {opset} ({', '.join(versions)})"}


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: torch_models.py NAME OUT.onnx OUT.npz OPSET")
    import warnings

    warnings.filterwarnings("ignore")
    info = export(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    print(json.dumps(info))
