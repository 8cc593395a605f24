"""Bad input gets a clear error, never a crash or a silent wrong answer: across frontends and
devices (reliability research, section 9)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import opforge
import pytest
from opforge.errors import InferenceInputError, InputTypeError, ModelFormatError, OpforgeError
from opforge.samples import SAMPLE_ONNX


@pytest.mark.parametrize("suffix", [".onnx", ".xml", ".pdmodel", ".json", ".bin", ""])
@pytest.mark.parametrize("content", [b"", b"\x00" * 64, bytes(range(256)) * 4, b"\x89PNG\r\n\x1a\n" + b"\x00" * 40])
def test_garbage_files_give_model_format_errors_naming_the_file(tmp_path: Path, suffix: str, content: bytes) -> None:
    p = tmp_path / f"model{suffix}"
    p.write_bytes(content)
    with pytest.raises(ModelFormatError) as info:
        opforge.Core().read_model(p)
    assert "model" in str(info.value)


def test_truncated_onnx_is_a_format_error(tmp_path: Path) -> None:
    data = SAMPLE_ONNX.read_bytes()
    for cut in (10, len(data) // 2, len(data) - 7):
        p = tmp_path / f"cut{cut}.onnx"
        p.write_bytes(data[:cut])
        with pytest.raises(ModelFormatError, match=f"cut{cut}.onnx"):
            opforge.Core().read_model(p)


def test_bad_inputs_on_every_device(device: str) -> None:
    core = opforge.Core()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = core.compile_model(core.read_model(SAMPLE_ONNX), device)
    good = np.zeros((1, 3, 32, 32), np.float32)
    with pytest.raises(InferenceInputError, match=r"Input 'image' has wrong shape: got \(1, 3, 32\), expected \(1, 3, 32, 32\)"):
        compiled([good[..., 0]])
    with pytest.raises(InputTypeError, match="got float64, expected float32"):
        compiled([good.astype(np.float64)])
    with pytest.raises(InferenceInputError, match="no input 'nope'"):
        compiled({"nope": good})
    # special values and odd memory layouts: no crash, same answer as a clean contiguous copy
    odd = np.random.default_rng(0).standard_normal((1, 3, 64, 32)).astype(np.float32)[:, :, ::2, :]
    np.testing.assert_allclose(compiled([odd])[0], compiled([np.ascontiguousarray(odd)])[0], rtol=1e-6)
    special = good.copy()
    special[0, 0, 0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    out = compiled([special])[0]
    assert out.shape == (1, 10)
    # the request still works after the errors
    np.testing.assert_allclose(compiled([good])[0], compiled([good])[0])


def test_unknown_device_lists_what_is_available() -> None:
    with pytest.raises(OpforgeError, match="Available devices"):
        opforge.Core().compile_model(opforge.Core().read_model(SAMPLE_ONNX), "NPU")


def _onnx_bytes(nodes: list, inputs: list, outputs: list, inits: list | None = None, opset: int = 17) -> bytes:
    from onnx import helper

    g = helper.make_graph(nodes, "g", inputs, outputs, inits or [])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return m.SerializeToString()


def test_initializer_whose_raw_data_does_not_fit_its_dims_is_refused() -> None:
    from onnx import TensorProto, helper

    # built by hand: onnx.helper itself refuses the mismatch this test needs
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1000, 1000], raw_data=b"\x00" * 16)
    data = _onnx_bytes([helper.make_node("Add", ["x", "w"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1000, 1000])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1000, 1000])], [w])
    with pytest.raises(ModelFormatError, match="'w'"):
        opforge.Core().read_model(data)


def test_a_long_chain_converts_without_recursion_errors() -> None:
    from onnx import TensorProto, helper

    n = 20_000
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"]) for i in range(n)]
    data = _onnx_bytes(nodes, [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [4])],
                       [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [4])])
    model = opforge.Core().read_model(data)
    assert len(model.get_ordered_ops()) == n + 2


def test_out_of_range_gather_indices_are_an_error_on_every_device(device: str) -> None:
    from onnx import TensorProto, helper

    data = _onnx_bytes([helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3]),
                        helper.make_tensor_value_info("i", TensorProto.INT64, [2])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    core = opforge.Core()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = core.compile_model(core.read_model(data), device)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(compiled([x, np.array([3, -4])])[0], x[[3, 0]])
    with pytest.raises(OpforgeError, match=r"(?i)index|indices|range"):
        compiled([x, np.array([0, 4])])
    with pytest.raises(OpforgeError, match=r"(?i)index|indices|range"):
        compiled([x, np.array([-5, 0])])
