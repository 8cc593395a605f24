"""Latency statistics of a benchmark run, in milliseconds."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from opforge.errors import OpforgeError


@dataclasses.dataclass(frozen=True)
class LatencyStats:
    """median/average/min/max and the 90th/99th percentiles of per-inference latencies (ms)."""

    median: float
    average: float
    min: float
    max: float
    p90: float
    p99: float
    count: int

    @classmethod
    def of(cls, latencies_ms: Sequence[float]) -> LatencyStats:
        if not latencies_ms:
            raise OpforgeError("no inference finished: nothing to report (raise -niter or -t)")
        a = np.asarray(latencies_ms, dtype=np.float64)
        # numpy's default (linear) percentile: the median equals statistics.median, the bench
        # scripts' statistic, so the two agree exactly on the same samples.
        return cls(median=float(np.median(a)), average=float(a.mean()), min=float(a.min()),
                   max=float(a.max()), p90=float(np.percentile(a, 90)), p99=float(np.percentile(a, 99)),
                   count=int(a.size))

    def to_dict(self) -> dict[str, float | int]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in dataclasses.asdict(self).items()}
