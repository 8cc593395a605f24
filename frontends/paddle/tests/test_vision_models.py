"""Every paddle.vision classification network (pretrained=False, seeded, BN-calibrated) converts
from both formats paddle 3.x writes and matches paddle's own inference output (1e-4 relative)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from paddle_test_utils import SEED, as_list, calibrate_bn, check_model, save_both

# (constructor, input size, kwargs). Small inputs keep the NumPy reference fast; alexnet and
# googlenet have fully-connected layers sized for 224x224 and inception_v3 needs >= 75x75.
FAST = [
    ("resnet18", 64, {}),
    ("mobilenet_v1", 64, {"scale": 0.25}),
    ("mobilenet_v2", 64, {"scale": 0.35}),
    ("mobilenet_v3_small", 64, {"scale": 0.5}),
    ("squeezenet1_1", 64, {}),
    ("shufflenet_v2_x0_25", 64, {}),
    ("shufflenet_v2_swish", 64, {}),
    ("vgg11", 32, {"num_classes": 10}),
]
SLOW = [
    ("resnet34", 64, {}), ("resnet50", 64, {}), ("resnet101", 64, {}), ("resnet152", 64, {}),
    ("resnext50_32x4d", 64, {}), ("wide_resnet50_2", 64, {}),
    ("mobilenet_v1", 64, {}), ("mobilenet_v2", 64, {}),
    ("mobilenet_v3_small", 64, {}), ("mobilenet_v3_large", 64, {}),
    ("vgg11", 64, {}), ("vgg13", 64, {}), ("vgg16", 64, {"batch_norm": True}), ("vgg19", 64, {}),
    ("alexnet", 224, {}), ("squeezenet1_0", 64, {}),
    ("shufflenet_v2_x0_5", 64, {}), ("shufflenet_v2_x1_0", 64, {}), ("shufflenet_v2_x2_0", 64, {}),
    ("densenet121", 64, {}), ("googlenet", 224, {}), ("inception_v3", 96, {}),
    # the rest of paddle.vision.models' classification networks: deeper or wider variants of the
    # families above, and LeNet (MNIST-shaped input)
    ("LeNet", 28, {}), ("densenet161", 64, {}), ("densenet169", 64, {}), ("densenet201", 64, {}),
    ("densenet264", 64, {}), ("resnext50_64x4d", 64, {}), ("resnext101_32x4d", 64, {}),
    ("resnext101_64x4d", 64, {}), ("resnext152_32x4d", 64, {}), ("resnext152_64x4d", 64, {}),
    ("wide_resnet101_2", 64, {}), ("shufflenet_v2_x0_33", 64, {}), ("shufflenet_v2_x1_5", 64, {}),
]


#: Networks whose f32 rounding noise exceeds 1e-4 of the output: with this calibration both paddle's
#: f32 run and opforge's differ from paddle's float64 run of the same network by 1.1e-4 / 1.6e-4
#: (resnet101, measured), so they can only agree with each other to a few 1e-4. resnet152 is deeper
#: still: opforge's CPU device (oneDNN's blocked convolutions sum in another order) lands 5.1e-4
#: from paddle where the NumPy reference lands under 5e-4.
#: The 101/152-layer ResNeXt and wide variants measure the same way (reference vs paddle: 1.2e-4 to
#: 1.8e-4 at 101 layers, 3.8e-4 at 152).
REL = {"resnet101": 5e-4, "resnet152": 1e-3, "resnext101_32x4d": 5e-4, "resnext101_64x4d": 5e-4,
       "wide_resnet101_2": 5e-4, "resnext152_32x4d": 1e-3, "resnext152_64x4d": 1e-3}


def _id(case: tuple[str, int, dict[str, Any]]) -> str:
    name, size, kw = case
    return name + "".join(f"-{k}{v}" for k, v in kw.items()) + f"-{size}"


def _saved(paddle: Any, tmp_path: Path, name: str, size: int, kw: dict[str, Any]) -> tuple[dict[str, Path], np.ndarray, list[np.ndarray]]:
    from paddle.vision import models

    paddle.seed(SEED)
    # LeNet is a class with no pretrained weights, built for 1-channel MNIST images
    net = models.LeNet(**kw) if name == "LeNet" else getattr(models, name)(pretrained=False, **kw)
    shape = [1, 1 if name == "LeNet" else 3, size, size]
    calibrate_bn(paddle, net, shape)
    x = np.random.default_rng(SEED).standard_normal(shape).astype(np.float32)
    with paddle.no_grad():
        ref = as_list(net(paddle.to_tensor(x)))
    paths = save_both(paddle, net, [paddle.static.InputSpec(shape, "float32", "x")], tmp_path / name)
    return paths, x, ref


def _check(paddle: Any, tmp_path: Path, case: tuple[str, int, dict[str, Any]]) -> None:
    name, size, kw = case
    paths, x, ref = _saved(paddle, tmp_path, name, size, kw)
    for fmt, path in paths.items():
        model = check_model(path, [x], ref, REL.get(name, 1e-4))
        assert model.rt_info["paddle_format"] == fmt


@pytest.mark.parametrize("case", FAST, ids=_id)
def test_vision_model(paddle: Any, tmp_path: Path, case: tuple[str, int, dict[str, Any]]) -> None:
    _check(paddle, tmp_path, case)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW, ids=_id)
def test_vision_model_full_size(paddle: Any, tmp_path: Path, case: tuple[str, int, dict[str, Any]]) -> None:
    _check(paddle, tmp_path, case)
