"""Regenerate the committed seed corpora under corpus/ (only the Paddle ones: paddle takes seconds
to import, so its small models are saved once; ONNX, IR and the other seeds are generated at run
time by the targets themselves).

    .venv/bin/python tests/fuzz/make_seeds.py

Each seed is one fuzz input: the program file and its .pdiparams joined by harness.join_parts.
The networks are tiny (a few hundred weights) and seeded, so the files stay a few KiB.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("GLOG_minloglevel", "2")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from opforge_fuzz.harness import join_parts  # noqa: E402


def _nets(paddle: Any) -> dict[str, tuple[Any, list[Any]]]:
    nn = paddle.nn

    class ConvNet(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2D(2, 3, 3, padding=1)
            self.bn = nn.BatchNorm2D(3)
            self.fc = nn.Linear(12, 2)

        def forward(self, x: Any) -> Any:
            y = paddle.nn.functional.relu(self.bn(self.conv(x)))
            y = paddle.nn.functional.max_pool2d(y, 2)
            return paddle.nn.functional.softmax(self.fc(paddle.flatten(y, 1)), axis=-1)

    class MixNet(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.ln = nn.LayerNorm(4)

        def forward(self, ids: Any, x: Any) -> Any:
            e = self.ln(self.emb(ids))
            s = paddle.concat([e, x.unsqueeze(1).tile([1, 3, 1])], axis=-1)
            return paddle.mean(s.reshape([-1, 8]).transpose([1, 0]), axis=0)

    spec = paddle.static.InputSpec
    return {
        "conv": (ConvNet(), [spec([1, 2, 4, 4], "float32", "x")]),
        "mix": (MixNet(), [spec([None, 3], "int64", "ids"), spec([None, 4], "float32", "x")]),
    }


def main() -> None:
    import paddle

    paddle.seed(0)
    out_pir = HERE / "corpus" / "paddle_pir"
    out_legacy = HERE / "corpus" / "paddle_legacy"
    for d in (out_pir, out_legacy):
        d.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (net, specs) in _nets(paddle).items():
            net.eval()
            pir_prefix = Path(tmp) / f"{name}_pir"
            paddle.jit.save(net, str(pir_prefix), input_spec=specs)
            with paddle.pir_utils.OldIrGuard():
                legacy_prefix = Path(tmp) / f"{name}_legacy"
                paddle.jit.save(net, str(legacy_prefix), input_spec=specs)
            for prefix, suffix, dest in ((pir_prefix, ".json", out_pir), (legacy_prefix, ".pdmodel", out_legacy)):
                data = join_parts(prefix.with_suffix(suffix).read_bytes(), prefix.with_suffix(".pdiparams").read_bytes())
                (dest / f"{name}.seed").write_bytes(data)
                print(dest / f"{name}.seed", len(data), "bytes")


if __name__ == "__main__":
    main()
