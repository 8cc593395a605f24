"""GatherElements on the CPU (kernels/gather_elements.cpp): rows of the indices' last axis shared
among the threads (stop 25; DeBERTa-v2's relative-position gathers ran on one thread). Every
axis, negative indices, i32/i64 indices, 1/2/4/8-byte elements, a shape whose indices are
shorter than the data along the axis; results equal to ONNX Runtime's and the same at 1 and 2
threads; an index out of range is a clear error, never a read outside the data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import opforge
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

NP_TO_ONNX = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64,
              np.int32: TensorProto.INT32, np.int16: TensorProto.INT16, np.uint8: TensorProto.UINT8}


def model(path: Path, data: np.ndarray, idx: np.ndarray, axis: int) -> Path:
    node = helper.make_node("GatherElements", ["data", "idx"], ["y"], axis=axis)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("data", NP_TO_ONNX[data.dtype.type], data.shape),
         helper.make_tensor_value_info("idx", NP_TO_ONNX[idx.dtype.type], idx.shape)],
        [helper.make_tensor_value_info("y", NP_TO_ONNX[data.dtype.type], idx.shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def run_cpu(path: Path, feeds: dict[str, np.ndarray], threads: int) -> np.ndarray:
    core = opforge.Core()
    cm = core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_NUM_THREADS": threads})
    return np.array(cm.create_infer_request().infer(feeds)[0])


CASES = [  # data shape, indices shape, axis
    ((1, 4, 64, 128), (1, 4, 64, 64), -1),   # DeBERTa's c2p gather, scaled down
    ((1, 4, 128, 64), (1, 4, 64, 64), 2),    # its p2c gather (along the rows)
    ((3, 5, 7), (3, 5, 7), 0),
    ((3, 5, 7), (2, 5, 7), 0),
    ((300, 9), (300, 4), 1),                 # many short rows
    ((70000,), (50000,), 0),                 # one long row
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint8])
@pytest.mark.parametrize("itype", [np.int64, np.int32])
def test_gather_elements_matches_onnxruntime(tmp_path: Path, case: tuple[tuple[int, ...], tuple[int, ...], int],
                                            dtype: type, itype: type) -> None:
    dshape, ishape, axis = case
    rng = np.random.default_rng(sum(dshape))
    data = (rng.standard_normal(dshape) * 50).astype(dtype)
    dim = dshape[axis]
    idx = rng.integers(-dim, dim, size=ishape).astype(itype)  # negative ones count from the end
    path = model(tmp_path / "m.onnx", data, idx, axis)
    feeds = {"data": data, "idx": idx}
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    one, two = run_cpu(path, feeds, 1), run_cpu(path, feeds, 2)
    np.testing.assert_array_equal(one, ref)
    np.testing.assert_array_equal(two, ref)


@pytest.mark.parametrize("bad", [8, -9, 2**40])
def test_gather_elements_index_out_of_range_is_an_error(tmp_path: Path, bad: int) -> None:
    data = np.arange(2 * 3 * 8, dtype=np.float32).reshape(2, 3, 8)
    idx = np.zeros((2, 3, 5), np.int64)
    idx[1, 2, 4] = bad
    path = model(tmp_path / "m.onnx", data, idx, -1)
    for threads in (1, 2):
        with pytest.raises(opforge.OpforgeError, match=f"index {bad} is out of range for an axis of size 8"):
            run_cpu(path, {"data": data, "idx": idx}, threads)
