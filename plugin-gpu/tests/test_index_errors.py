"""Indices fed at run time that are out of range: every kernel reading or writing through them
stays in bounds and the inference raises KernelError naming the node, the index and the valid
range (the request's error buffer, ``index_error.cl``). Indices in range, negative ones included,
still match the reference, and a request keeps working after an error."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import opforge
import pytest
from gpu_util import check, const, param, rand
from opforge.errors import KernelError
from opforge.graph import Model


def _expect_error(compiled: Callable[..., object], feeds: list[np.ndarray], node: str, *parts: str) -> None:
    with pytest.raises(KernelError) as info:
        compiled(feeds)
    msg = str(info.value)
    assert f"node '{node}'" in msg, msg
    for p in parts:
        assert p in msg, msg


@pytest.mark.parametrize("itype", ["i32", "i64"])
def test_gather(core: opforge.Core, itype: str) -> None:
    x = param([4, 3])
    i = param([2], itype, "i")
    y = opforge.op("Gather", x, i, const(0, np.int64), name="g")
    m = Model([y], [x, i])
    compiled = core.compile_model(m, "GPU")
    data = rand([4, 3])
    idt = np.int32 if itype == "i32" else np.int64
    check(core, m, [data, np.array([3, -4], idt)])
    _expect_error(compiled, [data, np.array([0, 4], idt)], "g", "index 4 ", "axis 0 of size 4", "-4..3")
    _expect_error(compiled, [data, np.array([-5, 0], idt)], "g", "index -5 ", "-4..3")
    # the error buffer is cleared: the same request works again
    np.testing.assert_array_equal(compiled([data, np.array([1, -1], idt)])[0], data[[1, -1]])


def test_gather_inner_axis_with_batch_dims(core: opforge.Core) -> None:
    x = param([2, 3, 5])
    i = param([2, 4], "i64", "i")
    y = opforge.op("Gather", x, i, const(2, np.int64), batch_dims=1, name="gb")
    m = Model([y], [x, i])
    data = rand([2, 3, 5])
    good = np.array([[0, 4, -5, 2], [-1, 3, 1, 0]], np.int64)
    check(core, m, [data, good])
    bad = good.copy()
    bad[1, 2] = 5
    _expect_error(core.compile_model(m, "GPU"), [data, bad], "gb", "index 5 ", "axis 2 of size 5")


def test_huge_index_value_is_reported_whole(core: opforge.Core) -> None:
    x = param([4])
    i = param([1], "i64", "i")
    m = Model([opforge.op("Gather", x, i, const(0, np.int64), name="gh")], [x, i])
    _expect_error(core.compile_model(m, "GPU"), [rand([4]), np.array([-(2**40) - 3], np.int64)], "gh",
                  f"index {-(2**40) - 3} ")


def test_gather_elements(core: opforge.Core) -> None:
    x = param([3, 4])
    i = param([3, 2], "i64", "i")
    m = Model([opforge.op("GatherElements", x, i, axis=1, name="ge")], [x, i])
    data = rand([3, 4])
    good = np.array([[0, 3], [2, -1], [-4, 1]], np.int64)
    check(core, m, [data, good])
    compiled = core.compile_model(m, "GPU")
    _expect_error(compiled, [data, np.where(good == 2, 4, good)], "ge", "index 4 ", "axis 1 of size 4")
    _expect_error(compiled, [data, np.where(good == 2, -5, good)], "ge", "index -5 ", "-4..3")


def test_gather_nd(core: opforge.Core) -> None:
    x = param([2, 3, 4])
    i = param([2, 2, 1], "i32", "i")
    m = Model([opforge.op("GatherND", x, i, batch_dims=1, name="gn")], [x, i])
    data = rand([2, 3, 4])
    good = np.array([[[0], [2]], [[-3], [1]]], np.int32)
    check(core, m, [data, good])
    bad = good.copy()
    bad[1, 0, 0] = 3
    _expect_error(core.compile_model(m, "GPU"), [data, bad], "gn", "index 3 ", "data dimension 1 of size 3",
                  "-3..2")


@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_scatter_elements(core: opforge.Core, reduction: str) -> None:
    x = param([3, 4])
    i = param([2, 4], "i64", "i")
    upd = param([2, 4], name="u")
    y = opforge.op("ScatterElementsUpdate", x, i, upd, const(0, np.int64), reduction=reduction,
                   use_init_val=True, name="se")
    m = Model([y], [x, i, upd])
    data, u = rand([3, 4]), rand([2, 4], seed=3)
    good = np.array([[0, 1, 2, 0], [-3, 2, -1, 0]], np.int64)
    check(core, m, [data, good, u])
    bad = good.copy()
    bad[1, 3] = 3
    compiled = core.compile_model(m, "GPU")
    _expect_error(compiled, [data, bad, u], "se", "index 3 ", "axis 0 of size 3", "-3..2")
    bad[1, 3] = -4
    _expect_error(compiled, [data, bad, u], "se", "index -4 ")


def test_scatter_nd(core: opforge.Core) -> None:
    x = param([4, 3])
    i = param([3, 1], "i64", "i")
    upd = param([3, 3], name="u")
    m = Model([opforge.op("ScatterNDUpdate", x, i, upd, name="sn")], [x, i, upd])
    data, u = rand([4, 3]), rand([3, 3], seed=2)
    check(core, m, [data, np.array([[1], [-1], [0]], np.int64), u])
    _expect_error(core.compile_model(m, "GPU"), [data, np.array([[1], [4], [0]], np.int64), u], "sn",
                  "index 4 ", "data dimension 0 of size 4", "-4..3")


def test_reverse_sequence_lengths(core: opforge.Core) -> None:
    x = param([4, 3, 2])
    lens = param([3], "i32", "lens")
    m = Model([opforge.op("ReverseSequence", x, lens, batch_axis=1, seq_axis=0, name="rs")], [x, lens])
    data = rand([4, 3, 2])
    check(core, m, [data, np.array([4, 0, 2], np.int32)])
    compiled = core.compile_model(m, "GPU")
    _expect_error(compiled, [data, np.array([4, 5, 2], np.int32)], "rs", "seq_lengths[1] = 5", "0..4")
    _expect_error(compiled, [data, np.array([-1, 1, 2], np.int32)], "rs", "seq_lengths[0] = -1")


def test_one_hot_out_of_range_is_not_an_error(core: opforge.Core) -> None:
    # OneHot defines indices outside 0..depth-1 (a row of off values): no error
    idx = param([3], "i64", "idx")
    y = opforge.op("OneHot", idx, const(3, np.int64), const(1.0), const(0.0), axis=-1)
    check(core, Model([y], [idx]), [np.array([0, 7, -9], np.int64)])


def test_models_without_index_kernels_have_no_error_buffer(core: opforge.Core) -> None:
    # a model without index kernels gets no error buffer at all
    x = param([2, 3])
    m = Model([opforge.op("Relu", x)], [x])
    compiled = core.compile_model(m, "GPU")
    plan = next(iter(compiled._executable.plans.values()))  # type: ignore[attr-defined]
    assert not plan.checks
