"""The timing protocol of the benchmarks (benchmarks/engine_process.py, bench_cpu.py): engines
alternate in rounds, and each round of an engine starts with untimed runs, so the run that
finds the vCPUs halted after the pause between engines is not in the median. Checked with fake
engines whose latencies are scripted; nothing is timed for real here."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(autouse=True)
def _no_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH_DIR))
    import engine_process

    monkeypatch.setattr(engine_process, "SETTLE_S", 0.0)


class ColdFirstEngine:
    """Stands in for an EngineProcess: the first run of every call is 'cold' (10 ms), the others
    warm (1 ms); it records how many runs each call asked for."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def run(self, n: int) -> list[float]:
        self.calls.append(n)
        return [10.0] + [1.0] * (n - 1) if n else []


def test_each_round_starts_with_an_untimed_run() -> None:
    import engine_process

    a, b = ColdFirstEngine(), ColdFirstEngine()
    med = engine_process.interleaved_medians_remote({"a": a, "b": b}, runs=8, rounds=4, warmup=5)
    # 5 warm-up runs, then 4 rounds of 1 untimed + 2 timed runs, each engine in turn
    assert a.calls == [5, 3, 3, 3, 3] and b.calls == a.calls
    assert med == {"a": 1.0, "b": 1.0}


def test_round_warmup_zero_times_the_cold_run() -> None:
    import engine_process

    a = ColdFirstEngine()
    med = engine_process.interleaved_medians_remote({"a": a}, runs=8, rounds=4, round_warmup=0)
    assert a.calls == [5, 2, 2, 2, 2]
    # every round's first run is cold: with 2 runs a round, half the samples
    assert med == {"a": 5.5}


def test_local_interleaver_discards_the_same_runs() -> None:
    sys.modules.pop("bench_cpu", None)
    import bench_cpu

    latencies = iter([0.0] * 100)
    seen: list[str] = []

    def engine(name: str) -> Callable[[], None]:  # an engine's infer(), recording that it ran
        def infer() -> None:
            seen.append(name)
            next(latencies)
        return infer

    bench_cpu.interleaved_medians({"x": engine("x"), "y": engine("y")}, runs=6, rounds=3, warmup=2)
    # 2 warm-up runs each, then 3 rounds of (1 untimed + 2 timed) for x, then for y
    assert seen == ["x"] * 2 + ["y"] * 2 + (["x"] * 3 + ["y"] * 3) * 3
