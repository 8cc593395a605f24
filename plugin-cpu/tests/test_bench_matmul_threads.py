"""benchmarks/bench_matmul_threads.py, the MatMul 1-vs-2-thread probe: its models compute the
product NumPy computes (projections with constant weights and a bias, attention products of two
inputs) at both thread counts, every timed row has both thread counts, and the control's verdict
follows its 2/1 ratio. The timing itself is exercised by running the tool (kernel-library.md,
'bf16 transformers at 2 threads')."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from cpu_testing import load_module

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_matmul_threads.py"


def _load() -> ModuleType:
    return load_module(SCRIPT)


@pytest.mark.parametrize("precision, tolerance", [("bf16", 2e-2), ("f32", 1e-5)])
def test_rows_time_the_right_product_at_both_thread_counts(tmp_path: Path, precision: str, tolerance: float) -> None:
    tool = _load()
    # a projection with odd sizes and an attention product of 3 heads
    rows, control = tool.measure(["1,19,40,70", "3,9,16,11"], precision, rounds=2, runs=1, control="1,8,32,16",
                                 workdir=tmp_path)
    assert [r.shape for r in rows] == ["1,19,40,70", "3,9,16,11"]
    for row in [*rows, control]:
        assert len(row.times[1]) == 2 and len(row.times[2]) == 2
        assert all(t > 0 for t in row.times[1] + row.times[2])
        assert set(row.exec_type) == {1, 2} and all(row.exec_type.values())
    # (relative to the largest output: bf16 rounds the operands, f32 must be exact to rounding)
    assert all(0 <= r.error < tolerance for r in rows), [(r.shape, r.error) for r in rows]
    assert control.precision == "f32" and control.error < 1e-5
    lines = tool.report(rows, control)
    assert len(lines) == 1 + len(rows) + 1 + 1  # header, rows, control, verdict
    assert lines[1].split()[0] == "1,19,40,70" and lines[-2].split()[0] == "1,8,32,16"


def test_control_verdict_follows_its_ratio() -> None:
    tool = _load()
    row = tool.Row("1,8,8,8", "bf16", {1: [1.0, 1.0], 2: [0.9, 0.9]}, {1: "x", 2: "x"})
    busy = tool.Row(tool.CONTROL, "f32", {1: [4.0, 4.2], 2: [4.1, 4.0]}, {1: "x", 2: "x"})
    free = tool.Row(tool.CONTROL, "f32", {1: [4.0, 4.2], 2: [2.2, 2.3]}, {1: "x", 2: "x"})
    assert "did not get a CPU" in tool.report([row], busy)[-1]
    assert "had a CPU" in tool.report([row], free)[-1]
    assert row.ratio("median") == pytest.approx(0.9) and free.ratio("min") == pytest.approx(2.2 / 4.0)


@pytest.mark.parametrize("bad", ["1,2,3", "1,2,3,x", "0,2,3,4", "1,-2,3,4"])
def test_bad_shapes_are_refused_with_the_expected_form(bad: str) -> None:
    with pytest.raises(ValueError, match="expected four positive integers B,M,K,N"):
        _load().parse_shape(bad)
