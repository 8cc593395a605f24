"""PIR-format ops (paddle.jit.save's default), from dygraph layers: the NLP block and ops the
vision networks do not reach. paddle 3.3.1 traces ``paddle.matmul``/``bmm`` into PIR only, so
these models are saved in the PIR format; the legacy forms are in test_ops_legacy.py."""

from __future__ import annotations

from typing import Any

import numpy as np
from paddle_test_utils import SEED, check_model

RNG = np.random.default_rng(SEED)


def _pir_only(paddle: Any, tmp_path: Any, net: Any, specs: list[Any], inputs: list[np.ndarray],
              cpu: bool = True) -> None:
    net.eval()
    with paddle.no_grad():
        out = net(*[paddle.to_tensor(x) for x in inputs])
    ref = [np.asarray(o.numpy()) for o in (out if isinstance(out, (list, tuple)) else [out])]
    paddle.jit.save(net, str(tmp_path / "m"), input_spec=specs)
    model = check_model(tmp_path / "m.json", inputs, ref, cpu=cpu)
    assert model.rt_info["paddle_format"] == "pir"


def test_nlp_block(paddle: Any, tmp_path: Any) -> None:
    f = paddle.nn.functional

    class Block(paddle.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.emb = paddle.nn.Embedding(50, 16, padding_idx=0)
            self.ln = paddle.nn.LayerNorm(16)
            self.q = paddle.nn.Linear(16, 16)
            self.k = paddle.nn.Linear(16, 16)
            self.drop = paddle.nn.Dropout(0.1)

        def forward(self, ids: Any, mask: Any) -> Any:
            x = self.ln(self.emb(ids))
            q = self.q(x).reshape([1, 8, 2, 8]).transpose([0, 2, 1, 3])
            k = self.k(x).reshape([1, 8, 2, 8]).transpose([0, 2, 1, 3])
            a = f.softmax(paddle.matmul(q, k, transpose_y=True) * 0.35 + mask, axis=-1)
            h = paddle.matmul(a, q).transpose([0, 2, 1, 3]).reshape([1, 8, 16])
            h = f.gelu(self.drop(h)) - x
            h = paddle.scale(h, 2.0, bias=0.5) / 3.0
            c = paddle.concat([h[:, 1:5, :], h[:, :2, :]], axis=1)
            parts = paddle.split(c, [2, 4], axis=1)
            return paddle.tanh(parts[1]), f.sigmoid(paddle.mean(c, axis=-1)), paddle.max(parts[0], axis=1)

    paddle.seed(SEED)
    ids = RNG.integers(0, 50, (1, 8)).astype(np.int64)
    ids[0, 3] = 0  # the padding row
    mask = np.zeros((1, 1, 1, 8), np.float32)
    mask[..., -2:] = -1e4
    specs = [paddle.static.InputSpec([1, 8], "int64", "ids"), paddle.static.InputSpec([1, 1, 1, 8], "float32", "mask")]
    _pir_only(paddle, tmp_path, Block(), specs, [ids, mask])


def test_misc_ops(paddle: Any, tmp_path: Any) -> None:
    f = paddle.nn.functional

    class Misc(paddle.nn.Layer):
        def forward(self, x: Any) -> Any:
            a = f.hardsigmoid(x) + f.leaky_relu(x, 0.2) + f.elu(x) + f.softplus(x)
            b = paddle.clip(x, -0.3, 0.4) * paddle.pow(paddle.abs(x), 2.0)
            s = paddle.stack([a, b], axis=1)
            u = paddle.unsqueeze(paddle.sum(x, axis=[1, 2]), axis=0)
            g = paddle.gather(x, paddle.to_tensor(np.array([2, 0], np.int64)), axis=1)
            m = paddle.maximum(x, paddle.minimum(a, b)) - paddle.floor(x)
            return s, u, g, m, f.log_softmax(x, axis=1), paddle.cast(x * 4.0, "int32")

    _pir_only(paddle, tmp_path, Misc(), [paddle.static.InputSpec([2, 3, 4], "float32", "x")],
              [RNG.standard_normal((2, 3, 4)).astype(np.float32)])


def _net(paddle: Any, fn: Any, layers: list[Any] | None = None) -> Any:
    class Net(paddle.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.layers = paddle.nn.LayerList(layers or [])

        def forward(self, x: Any) -> Any:
            return fn(self.layers, x)

    return Net()


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def test_transposed_convolutions_and_resizing(paddle: Any, tmp_path: Any) -> None:
    """conv2d_transpose (output_padding, output_size), depthwise_conv2d_transpose, and the
    bilinear / nearest / bicubic interpolations by scale and by size, align_corners and not."""
    f = paddle.nn.functional
    paddle.seed(SEED)
    layers = [paddle.nn.Conv2DTranspose(4, 6, 3, stride=2, padding=1, output_padding=1),
              paddle.nn.Conv2DTranspose(4, 4, 3, stride=2, padding=[1, 0], groups=4),
              paddle.nn.Conv2DTranspose(4, 2, 2, stride=2, dilation=1, groups=2)]

    def fn(m: Any, x: Any) -> Any:
        return [m[0](x), m[1](x), m[2](x), f.conv2d_transpose(x, m[0].weight, stride=2, padding=1, output_size=[10, 12]),
                f.interpolate(x, scale_factor=2, mode="bilinear"),
                f.interpolate(x, size=[7, 9], mode="bilinear", align_corners=True),
                f.interpolate(x, size=[7, 9], mode="bilinear", align_mode=1),
                f.interpolate(x, size=[9, 13], mode="nearest"), f.interpolate(x, scale_factor=3, mode="nearest"),
                f.interpolate(x, scale_factor=2, mode="bicubic"),
                f.interpolate(x, size=[8, 8], mode="bicubic", align_corners=True),
                f.interpolate(x[:, :, 0], size=[11], mode="linear", data_format="NCW")]

    _pir_only(paddle, tmp_path, _net(paddle, fn, layers), [paddle.static.InputSpec([2, 4, 5, 6], "float32", "x")],
              [_x(2, 4, 5, 6)], cpu=False)  # the CPU device has no Interpolate kernel yet


def test_activations_norms_and_padding(paddle: Any, tmp_path: Any) -> None:
    f = paddle.nn.functional
    paddle.seed(SEED)
    layers = [paddle.nn.PReLU(4, 0.1), paddle.nn.PReLU(1, 0.3), paddle.nn.InstanceNorm2D(4),
              paddle.nn.GroupNorm(2, 4)]

    def fn(m: Any, x: Any) -> Any:
        return [f.hardswish(x), f.hardsigmoid(x), f.silu(x), f.swish(x), f.leaky_relu(x, 0.1), f.elu(x, 0.5),
                f.gelu(x), f.gelu(x, approximate=True), m[0](x), m[1](x), m[2](x * 3 + 1), m[3](x * 2 - 1),
                f.pad(x, [1, 2, 0, 1], mode="reflect"), f.pad(x, [2, 1, 1, 0], mode="replicate"),
                f.pad(x, [1, 1, 2, 0], value=0.5), paddle.norm(x, p=2, axis=1), paddle.norm(x, p=1, axis=-1),
                paddle.norm(x, p=3, axis=2, keepdim=True), paddle.norm(x, p=float("inf"), axis=1),
                f.normalize(x, axis=1), f.log_softmax(x, axis=1)]

    _pir_only(paddle, tmp_path, _net(paddle, fn, layers), [paddle.static.InputSpec([2, 4, 5, 6], "float32", "x")],
              [_x(2, 4, 5, 6)], cpu=False)  # CPU: no Pad/PRelu/MVN/... kernels yet


def test_indexing_and_shape_ops(paddle: Any, tmp_path: Any) -> None:
    """argmax/argmin, topk, where, cumsum, expand/expand_as/tile, gather_nd, full_like/zeros_like,
    arange, one_hot, flip, roll, index_select, comparisons and logical ops, meshgrid, unstack,
    strided_slice."""
    f = paddle.nn.functional

    def fn(m: Any, x: Any) -> Any:
        idx = paddle.argmax(x, axis=1)
        v, i = paddle.topk(x, 2, axis=1)
        vs, is_ = paddle.topk(x, 3, largest=False)
        mask = paddle.logical_and(x > -0.5, paddle.logical_not(x >= 0.8))
        g1, g2 = paddle.meshgrid(x[0, 0, :, 0], x[0, 0, 0, :])
        return [idx, paddle.argmin(x, axis=-1, keepdim=True), paddle.argmax(x), v, i, vs, is_,
                paddle.where(x > 0, x, x * 2), paddle.cumsum(x, axis=2), paddle.cumsum(x),
                paddle.expand(x[:, :1], [2, 4, 5, 6]), paddle.expand(x[0, :, :1], [3, -1, 5, 6]),
                paddle.expand_as(x[:, :1], x), paddle.tile(x, [1, 2, 1, 1]), paddle.tile(x[0, 0], [2, 1, 3]),
                paddle.gather_nd(x, paddle.to_tensor(np.array([[0, 1], [1, 2]], np.int64))),
                paddle.full_like(x, 2.5), paddle.zeros_like(x), paddle.ones_like(idx),
                paddle.arange(0, 10, 2, dtype="float32"), paddle.arange(5), f.one_hot(idx, 5),
                paddle.flip(x, [1, 2]), paddle.roll(x, 2, axis=3), paddle.roll(x, [1, -2], axis=[1, 2]), paddle.roll(x, 3),
                paddle.index_select(x, paddle.to_tensor(np.array([0, 2], np.int64)), axis=1),
                paddle.cast(mask, "float32"), paddle.cast(paddle.equal(idx, 1), "int32"),
                paddle.cast(paddle.logical_or(x < -1.0, paddle.logical_xor(x > 0, x > 1)), "float32"),
                paddle.cast(idx != 2, "int64"), paddle.cast(x <= 0.1, "float32"),
                g1, g2, paddle.unstack(x, axis=1)[2], x[:, ::2, 1:4:2], x[:, :, ::-1]]

    _pir_only(paddle, tmp_path, _net(paddle, fn), [paddle.static.InputSpec([2, 4, 5, 6], "float32", "x")],
              [_x(2, 4, 5, 6)], cpu=False)  # CPU: no TopK/CumSum/Roll/OneHot/... kernels yet


def test_dynamic_size_ops(paddle: Any, tmp_path: Any) -> None:
    """nonzero and masked_select: outputs whose size depends on the data."""

    def fn(m: Any, x: Any) -> Any:
        return [paddle.nonzero(x > 0.5), paddle.masked_select(x, x > 0)]

    _pir_only(paddle, tmp_path, _net(paddle, fn), [paddle.static.InputSpec([3, 4], "float32", "x")], [_x(3, 4)],
              cpu=False)  # CPU: no NonZero kernel yet
