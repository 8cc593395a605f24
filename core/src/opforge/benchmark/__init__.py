"""``opforge benchmark``: benchmark_app for opforge (latency and throughput of a compiled model)."""

from opforge.benchmark.runner import BenchmarkReport, BenchmarkSettings, run_benchmark
from opforge.benchmark.stats import LatencyStats

__all__ = ["BenchmarkReport", "BenchmarkSettings", "LatencyStats", "run_benchmark"]
