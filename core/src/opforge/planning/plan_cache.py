"""The plan cache: what a device built per input shapes and value-input values, bounded."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Generic, TypeVar

import numpy as np

P = TypeVar("P")

#: plans a compiled model keeps: one per input shapes (and per value of its value inputs). Past
#: this the least recently used one is dropped, so a model fed ever new shapes or values (a
#: Reshape to a fed shape, text of every length) does not grow without limit
PLAN_CACHE_SIZE = 16


def plan_key(shapes: Sequence[Sequence[int]], values: Mapping[int, np.ndarray] | None = None) -> Hashable:
    """The cache key of the plan for these input shapes and value-input values."""
    key: Hashable = tuple(tuple(int(d) for d in s) for s in shapes)
    if values:
        key = (key, tuple((k, values[k].dtype.str, values[k].tobytes()) for k in sorted(values)))
    return key


class PlanCache(Generic[P]):
    """A thread-safe LRU of plans. ``get`` builds a missing plan under the cache's lock, so two
    requests that need the same new plan build it once."""

    def __init__(self, capacity: int = PLAN_CACHE_SIZE) -> None:
        self.capacity = max(1, int(capacity))
        self._plans: OrderedDict[Hashable, P] = OrderedDict()
        self._lock = threading.Lock()
        #: plans built and dropped so far (for properties and tests)
        self.built = 0
        self.evicted = 0

    def get(self, key: Hashable, build: Callable[[], P]) -> P:
        plan = self._plans.get(key)
        if plan is not None:
            if len(self._plans) > 1:
                with self._lock:
                    if key in self._plans:
                        self._plans.move_to_end(key)
            return plan
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                plan = build()
                self._plans[key] = plan
                self.built += 1
                while len(self._plans) > self.capacity:
                    self._plans.popitem(last=False)
                    self.evicted += 1
            return plan

    def peek(self, key: Hashable) -> P | None:
        return self._plans.get(key)

    def __len__(self) -> int:
        return len(self._plans)

    def items(self) -> list[tuple[Hashable, P]]:
        return list(self._plans.items())

    def values(self) -> list[P]:
        return list(self._plans.values())
