"""PIR-format ops (paddle.jit.save's default), from dygraph layers: the NLP block and ops the
vision networks do not reach. paddle 3.3.1 traces ``paddle.matmul``/``bmm`` into PIR only, so
these models are saved in the PIR format; the legacy forms are in test_ops_legacy.py."""

from __future__ import annotations

from typing import Any

import numpy as np
from paddle_test_utils import SEED, check_model

RNG = np.random.default_rng(SEED)


def _pir_only(paddle: Any, tmp_path: Any, net: Any, specs: list[Any], inputs: list[np.ndarray]) -> None:
    net.eval()
    with paddle.no_grad():
        out = net(*[paddle.to_tensor(x) for x in inputs])
    ref = [np.asarray(o.numpy()) for o in (out if isinstance(out, (list, tuple)) else [out])]
    paddle.jit.save(net, str(tmp_path / "m"), input_spec=specs)
    model = check_model(tmp_path / "m.json", inputs, ref)
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
