"""One named-port ``OpExtension`` for a custom op serves both Paddle formats: the legacy
ProgramDesc keeps the op's port names (``X`` -> ``Out``), PIR names a custom op's ports by
position (``in0`` -> ``out0``), and the extension's k-th named port is taken as the k-th one."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge.errors import OpforgeError
from opforge.frontend.convert import convert_model
from opforge.frontend.extensions import OpExtension, UnmappedAttributeWarning
from opforge.reference import evaluate_model
from paddle_test_utils import SEED, assert_close, legacy_model, rename_legacy_op, rename_pir_op, save_both

X = np.random.default_rng(SEED).standard_normal((2, 6, 4)).astype(np.float32)


def named_port_extension() -> OpExtension:
    return OpExtension("Relu", "my_relu", framework="paddle", inputs=["X"], outputs=["Out"])


def test_same_named_port_extension_for_legacy_and_pir(paddle: Any, tmp_path: Path) -> None:
    class Net(paddle.nn.Layer):
        def forward(self, x: Any) -> Any:
            return paddle.nn.functional.relu(x) * 2.0

    net = Net()
    with paddle.no_grad():
        ref = [net(paddle.to_tensor(X)).numpy()]
    paths = save_both(paddle, net, [paddle.static.InputSpec(list(X.shape), "float32", "x")], tmp_path / "c")
    pir = rename_pir_op(paths["pir"], "1.relu", "3.my_relu")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnmappedAttributeWarning)
        model = convert_model(pir, extension=named_port_extension())
    assert_close(evaluate_model(model, [X]), ref, "PIR custom op through a named-port OpExtension")

    def body(b: Any, d: dict[str, Any]) -> list[Any]:
        return [b.op("relu", {"X": d["x"]})]

    legacy, inputs, legacy_ref = legacy_model(paddle, tmp_path / "legacy", {"x": X}, body)
    rename_legacy_op(legacy, "relu", "my_relu")
    model = convert_model(legacy, extension=named_port_extension())
    assert_close(evaluate_model(model, inputs), legacy_ref, "legacy custom op through the same OpExtension")


def test_pir_ports_stay_named_when_the_extension_names_them(paddle: Any, tmp_path: Path) -> None:
    class Net(paddle.nn.Layer):
        def forward(self, x: Any) -> Any:
            return paddle.nn.functional.relu(x)

    paths = save_both(paddle, Net(), [paddle.static.InputSpec(list(X.shape), "float32", "x")], tmp_path / "n")
    pir = rename_pir_op(paths["pir"], "1.relu", "3.my_relu")
    # an extension that names the positional ports itself still works
    model = convert_model(pir, extension=OpExtension("Relu", "my_relu", framework="paddle", inputs=["in0"],
                                                     outputs=["out0"]))
    np.testing.assert_allclose(evaluate_model(model, [X])[0], np.maximum(X, 0), rtol=1e-6)
    # more named inputs than the node has: an error, not a shifted input
    with pytest.raises(OpforgeError, match=r"Add.*got 1 inputs, expected 2"):
        convert_model(pir, extension=OpExtension("Add", "my_relu", framework="paddle", inputs=["X", "Y"],
                                                 outputs=["Out"]))
