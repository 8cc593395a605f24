"""The helpers behind the op conformance suite (``tests/ops``): known-failure lists, strict
expected failures, case models, the comparison and its messages, catalogue coverage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from opforge.testing.cases import OpCase, all_cases, case, op_class, uncovered_ops, unknown_ops
from opforge.testing.conformance import REFERENCE, compare, run_case
from opforge.testing.known_failures import known_reason, read_known_failures, stale_patterns, strict_xfail
from opforge.testing.models import SPECIAL_FLOATS, build, const, fixed, input_values, special_pairs, tensor


def test_known_failure_lists_parse_and_match_whole_ids(tmp_path: Path) -> None:
    p = tmp_path / "DEV.txt"
    p.write_text("# comment\n\nRelu-opset1:f32.* | NaN dropped\nExp-opset1:x | overflow\n")
    entries = read_known_failures(p)
    assert known_reason(entries, "Relu-opset1:f32_special") == "NaN dropped"
    assert known_reason(entries, "Exp-opset1:x_more") is None  # the whole id must match
    assert stale_patterns(entries, ["Relu-opset1:f32[2]"]) == ["Exp-opset1:x"]


@pytest.mark.parametrize(("line", "why"), [("Relu-opset1:f32", "expected '<regex> | <reason>'"),
                                           ("Relu | ", "expected '<regex> | <reason>'"),
                                           ("Relu[ | reason", "bad regex")])
def test_malformed_known_failure_lines_name_file_and_line(tmp_path: Path, line: str, why: str) -> None:
    p = tmp_path / "DEV.txt"
    p.write_text(f"# header\n{line}\n")
    with pytest.raises(ValueError, match=rf"DEV.txt:2: {why}"):
        read_known_failures(p)


def test_strict_xfail_fails_when_the_case_passes() -> None:
    with pytest.raises(AssertionError, match="known failure now passes"):
        strict_xfail(lambda: None, "reason")()
    with pytest.raises(pytest.xfail.Exception, match=r"reason \[ValueError: boom\]"):
        strict_xfail(lambda: (_ for _ in ()).throw(ValueError("boom")), "reason")()


def test_flaky_known_failures_may_pass() -> None:
    assert strict_xfail(lambda: None, "flaky: reads uninitialised memory")() is None
    with pytest.raises(pytest.xfail.Exception, match="flaky: reads"):
        strict_xfail(lambda: (_ for _ in ()).throw(AssertionError("garbage")), "flaky: reads uninitialised memory")()


def test_build_makes_one_node_with_named_parameters_and_constants() -> None:
    model, feeds = build(op_class("Add"), [tensor(2, 3), const([1.0, 2.0, 3.0], "f32")], seed=5)
    kinds = sorted(n.type_name for n in model.get_ordered_ops())
    assert kinds == ["Add", "Constant", "Parameter", "Result"]
    assert [list(p.output(0).names) for p in model.parameters] == [["in0"]]
    assert len(feeds) == 1 and feeds[0].shape == (2, 3) and feeds[0].dtype == np.float32
    again = input_values([tensor(2, 3)], 5)[0]
    np.testing.assert_array_equal(feeds[0], again)  # seeded: the same values every run


def test_special_pairs_cover_every_pair() -> None:
    a, b = special_pairs()
    n = len(SPECIAL_FLOATS)
    assert a.shape == b.shape == (n, n)
    pairs = {(repr(x), repr(y)) for x, y in zip(np.ravel(a.value), np.ravel(b.value))}
    assert len(pairs) == n * n


def test_version_must_be_named_when_an_op_has_several() -> None:
    with pytest.raises(LookupError, match=r"ScatterNDUpdate.*opset15.*opset4"):
        case("ScatterNDUpdate", tensor(2))
    assert case("ScatterNDUpdate", tensor(2), version="opset4").version == "opset4"


def _c(**kw: object) -> OpCase:
    return case("Relu", tensor(4), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("got", "want", "message"), [
    ([np.array([np.nan, 1], np.float32)], [np.array([0, 1], np.float32)], r"NaN mismatch at 1/2 elements, first at \(0,\)"),
    ([np.array([np.inf], np.float32)], [np.array([-np.inf], np.float32)], "infinity mismatch"),
    ([np.array([1.0, 2.5], np.float32)], [np.array([1.0, 2.0], np.float32)],
     r"1/2 elements differ beyond rtol=1e-05 atol=1e-06, max \|diff\| 0.5, first at \(1,\)"),
    ([np.array([1, 2], np.int32)], [np.array([1, 3], np.int32)], r"1/2 elements differ, first at \(1,\)"),
    ([np.array([1], np.int64)], [np.array([1], np.int32)], "element type int64, expected int32"),
    ([np.zeros((2, 1), np.float32)], [np.zeros((2,), np.float32)], r"shape \(2, 1\), expected \(2,\)"),
    ([], [np.zeros(1)], "0 outputs, the reference has 1"),
])
def test_compare_says_what_differs(got: list[np.ndarray], want: list[np.ndarray], message: str) -> None:
    with pytest.raises(AssertionError, match=rf"Relu-opset1:f32\[4\] on DEV: .*{message}"):
        compare(_c(), "DEV", got, want)


def test_compare_accepts_equal_nans_infinities_and_tolerance() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    compare(_c(), "DEV", [x + np.array([0, 0, 0, 1e-7], np.float32)], [x])


def test_reference_is_checked_against_a_case_expectation() -> None:
    wrong = _c(label="f32_wrong_expectation", expect=lambda xs: [xs[0] * 2])
    with pytest.raises(AssertionError, match="the reference vs the case's IEEE expectation"):
        run_case(wrong, REFERENCE)
    run_case(case("Relu", fixed([np.nan, -1.0, 2.0]), label="f32_nan", expect=lambda xs: [np.array(
        [np.nan, 0.0, 2.0], np.float32)]), REFERENCE)


def test_catalogue_ids_are_unique_and_every_op_is_covered() -> None:
    cases = all_cases()
    assert len({c.id for c in cases}) == len(cases)
    assert not unknown_ops(cases)
    assert "Relu-opset1" in uncovered_ops([c for c in cases if c.op != "Relu"])
