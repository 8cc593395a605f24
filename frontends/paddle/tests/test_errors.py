"""Bad Paddle inputs (reliability.md §9.B): malformed programs, damaged .pdiparams, parameters
that do not belong to the program. Every error names the file and the op or variable."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge.errors import ExternalDataError, ModelFormatError, UnsupportedOpError
from opforge.frontend.convert import convert_model
from paddle_test_utils import SEED, legacy_model

RNG = np.random.default_rng(SEED)


@pytest.fixture()
def small(paddle: Any, tmp_path: Path) -> Path:
    """x @ w + b with w [4, 3] and b [3]: parameters 'b' (12 bytes) then 'w' (48 bytes)."""

    def body(b: Any, d: dict[str, Any]) -> list[Any]:
        mm = b.op("matmul_v2", {"X": d["x"], "Y": b.param("w", RNG.standard_normal((4, 3)).astype(np.float32))},
                  {"trans_x": False, "trans_y": False})
        return [b.op("elementwise_add", {"X": mm, "Y": b.param("b", np.ones(3, np.float32))}, {"axis": -1})]

    path, _, _ = legacy_model(paddle, tmp_path / "small", {"x": np.ones((2, 4), np.float32)}, body)
    convert_model(path)  # the intact model converts
    return path


def _params(path: Path) -> bytearray:
    return bytearray(path.with_suffix(".pdiparams").read_bytes())


def _header(data: bytearray, at: int = 0) -> dict[str, int]:
    """Byte offsets inside the tensor record starting at ``at`` (no LoD levels)."""
    desc_size = struct.unpack_from("<i", data, at + 16)[0]
    return {"version": at, "lod": at + 4, "dense_version": at + 12, "desc_size": at + 16,
            "data": at + 20 + desc_size, "end": at + 20 + desc_size + 4 * 3}


@pytest.mark.parametrize("content", [b"", b"\x00" * 3, bytes(range(256)) * 4, b"\x89PNG\r\n\x1a\n" + b"\x00" * 64])
def test_garbage_pdmodel(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "bad.pdmodel"
    p.write_bytes(content)
    with pytest.raises(ModelFormatError, match=r"bad\.pdmodel"):
        convert_model(p)


def test_truncated_pdmodel(small: Path) -> None:
    data = small.read_bytes()
    small.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFormatError, match=small.name):
        convert_model(small)


def test_pdiparams_passed_as_model(small: Path) -> None:
    with pytest.raises(ModelFormatError, match="parameters file"):
        convert_model(small.with_suffix(".pdiparams"))


def test_json_that_is_not_pir(tmp_path: Path) -> None:
    p = tmp_path / "m.json"
    p.write_text('{"base_code": {"magic": "onnx"}}')
    with pytest.raises(ModelFormatError, match="magic"):
        convert_model(p, framework="paddle")
    p.write_text('{"base_code": {"magic": "pir", "version": 4}, "program": {"regions": []}}')
    with pytest.raises(ModelFormatError, match=r"m\.json.*regions"):
        convert_model(p)


def test_missing_pdiparams(small: Path) -> None:
    small.with_suffix(".pdiparams").unlink()
    with pytest.raises(ModelFormatError, match=r"parameters file .*small\.pdiparams' does not exist"):
        convert_model(small)


def test_truncated_mid_tensor(small: Path) -> None:
    data = _params(small)
    h = _header(data)
    cut = h["end"] + 30  # inside the data of the second tensor ('w')
    small.with_suffix(".pdiparams").write_bytes(bytes(data[:cut]))
    with pytest.raises(ExternalDataError, match=r"parameter 'w' at byte offset \d+: tensor data of shape \[4, 3\]"):
        convert_model(small)


def test_desc_size_beyond_file(small: Path) -> None:
    data = _params(small)
    struct.pack_into("<i", data, _header(data)["desc_size"], 1 << 30)
    small.with_suffix(".pdiparams").write_bytes(bytes(data))
    with pytest.raises(ExternalDataError, match=r"parameter 'b' at byte offset 20: the tensor description needs 1073741824"):
        convert_model(small)


@pytest.mark.parametrize("field", ["version", "dense_version"])
def test_unknown_version(small: Path, field: str) -> None:
    data = _params(small)
    struct.pack_into("<I", data, _header(data)[field], 7)
    small.with_suffix(".pdiparams").write_bytes(bytes(data))
    with pytest.raises(ExternalDataError, match=r"parameter 'b' at byte offset \d+: unknown .*version 7"):
        convert_model(small)


def test_huge_lod_level(small: Path) -> None:
    data = _params(small)
    struct.pack_into("<Q", data, _header(data)["lod"], 2**62)
    small.with_suffix(".pdiparams").write_bytes(bytes(data))
    with pytest.raises(ExternalDataError, match=r"parameter 'b' at byte offset 4: LoD level count"):
        convert_model(small)


def test_extra_tensor(small: Path) -> None:
    data = _params(small)
    small.with_suffix(".pdiparams").write_bytes(bytes(data) + bytes(data[: _header(data)["end"]]))
    with pytest.raises(ModelFormatError, match="more tensors than the program"):
        convert_model(small)


def test_fewer_tensors(small: Path) -> None:
    data = _params(small)
    small.with_suffix(".pdiparams").write_bytes(bytes(data[: _header(data)["end"]]))
    with pytest.raises(ModelFormatError, match=r"first missing: 'w'"):
        convert_model(small)


def test_params_of_another_program(small: Path) -> None:
    """Swap the two tensors: 'b' now holds a [4, 3] tensor -- the first mismatching variable is named."""
    data = _params(small)
    h = _header(data)
    first, second = bytes(data[: h["end"]]), bytes(data[h["end"]:])
    small.with_suffix(".pdiparams").write_bytes(second + first)
    with pytest.raises(ModelFormatError, match=r"parameter 'b' is stored with shape \[4, 3\] but the program declares \[3\]"):
        convert_model(small)


def test_weights_given_explicitly(small: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere.bin"
    small.with_suffix(".pdiparams").rename(moved)
    model = convert_model(small, weights=moved)
    assert model.rt_info["paddle_format"] == "legacy"
    model = convert_model(small.read_bytes(), weights=moved.read_bytes())
    assert len(model.outputs) == 1


def test_control_flow_is_reported_as_unsupported(paddle: Any, tmp_path: Path) -> None:
    """A data-dependent branch becomes pd_op.if in PIR: the unsupported-op error names it."""
    class Branchy(paddle.nn.Layer):
        def forward(self, x: Any) -> Any:
            if x.sum() > 0:
                y = x * 2
            else:
                y = x - 1
            return y

    paddle.jit.save(Branchy(), str(tmp_path / "cf"), input_spec=[paddle.static.InputSpec([2, 3], "float32", "x")])
    with pytest.raises(UnsupportedOpError, match=r"pd_op\.if: 1 node"):
        convert_model(tmp_path / "cf.json")
