"""A one-line progress bar on stderr, drawn only where someone is watching (a terminal) or asked
for: a log file or a pipe must not fill with carriage returns."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """Progress towards an iteration count or a duration, whichever ends the run first."""

    WIDTH = 30

    def __init__(self, enabled: bool, total_iterations: int | None, total_seconds: float | None,
                 stream: TextIO | None = None, min_interval_s: float = 0.1) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.total_iterations = total_iterations
        self.total_seconds = total_seconds
        self.min_interval_s = min_interval_s
        self._t0 = time.perf_counter()
        self._last_draw = 0.0
        self._last_len = 0
        self.draws = 0

    @staticmethod
    def wanted(force: bool, stream: TextIO | None = None) -> bool:
        s = stream if stream is not None else sys.stderr
        return force or bool(getattr(s, "isatty", lambda: False)())

    def fraction(self, iterations: int) -> float:
        parts = []
        if self.total_iterations:
            parts.append(iterations / self.total_iterations)
        if self.total_seconds:
            parts.append((time.perf_counter() - self._t0) / self.total_seconds)
        return min(1.0, max(parts)) if parts else 0.0

    def update(self, iterations: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last_draw < self.min_interval_s:
            return
        self._last_draw = now
        f = self.fraction(iterations)
        filled = round(f * self.WIDTH)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        text = f"[{bar}] {f * 100:5.1f}%  {iterations} iterations  {now - self._t0:6.1f} s"
        # padded to the last line's length: a shorter line must not leave the end of a longer one
        self.stream.write("\r" + text.ljust(self._last_len))
        self._last_len = len(text)
        self.stream.flush()
        self.draws += 1

    def close(self, iterations: int) -> None:
        if not self.enabled:
            return
        self.update(iterations, force=True)
        self.stream.write("\n")
        self.stream.flush()
