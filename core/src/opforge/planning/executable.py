""":class:`PlannedExecutable`: the executable every device builds on (the device front half)."""

from __future__ import annotations

import abc
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

import numpy as np

from opforge.graph import Model
from opforge.planning.plan_cache import PLAN_CACHE_SIZE, PlanCache, plan_key
from opforge.planning.specialize import specialize
from opforge.planning.staging import StagedExecutable, split_point
from opforge.planning.values import read_value_inputs, value_inputs
from opforge.runtime.device import Executable
from opforge.transformations.base import Transformation

P = TypeVar("P")
S = TypeVar("S")


class PlanStates(Generic[P, S]):
    """Per-request memory of each plan the request ran (a device's buffers, bound kernels),
    bounded like the plan cache: the least recently used is dropped. A plan dropped from the
    cache and built again gets a new state (the old one belonged to the old plan)."""

    def __init__(self, capacity: int = PLAN_CACHE_SIZE) -> None:
        self.capacity = max(1, int(capacity))
        self._states: OrderedDict[Hashable, tuple[P, S]] = OrderedDict()
        #: the key of the last plan run (profiling reports that one)
        self.last: Hashable | None = None

    def get(self, key: Hashable, plan: P, create: Callable[[P], S]) -> S:
        got = self._states.get(key)
        if got is None or got[0] is not plan:
            got = self._states[key] = (plan, create(plan))
            while len(self._states) > self.capacity:
                self._states.popitem(last=False)
        elif len(self._states) > 1:
            self._states.move_to_end(key)
        self.last = key
        return got[1]

    def last_entry(self) -> tuple[P, S] | None:
        return self._states.get(self.last) if self.last is not None else None

    def plan_keys(self) -> list[Hashable]:
        """The keys of the plans this request holds a state for, least recently used first."""
        return list(self._states)

    def __len__(self) -> int:
        return len(self._states)


class PlannedExecutable(Executable, Generic[P]):
    """A model compiled for a device that plans per input shapes and value-input values.

    The front half is here: which inputs are value inputs, specialization with the device's
    passes (``planning_passes``), the bounded plan cache, and staging around data-dependent
    shapes (a staged key's plan is a :class:`~opforge.planning.StagedExecutable` whose stages are
    executables of the device, made by :meth:`compile_stage`). A device implements:

    - :meth:`build_plan`: a specialized, static model -> the device's plan (its program);
    - :meth:`compile_stage`: a stage's model -> an executable of the device with the same settings;
    - ``infer``/``create_state``: running a plan with a request's memory (:meth:`plan_for`
      gives the plan; a :class:`StagedExecutable` plan runs with ``plan.infer``).
    """

    #: shown in errors ("CPU", "GPU.0")
    device_name: str = "?"

    def __init__(self, model: Model, cache_size: int = PLAN_CACHE_SIZE) -> None:
        self.model = model
        #: inputs whose values (not only shapes) select the plan (see :mod:`opforge.planning.values`)
        self.value_inputs: list[int] = value_inputs(model)
        self.plans: PlanCache[P | StagedExecutable] = PlanCache(cache_size)

    # --- what a device implements ------------------------------------------------------------
    def planning_passes(self) -> Sequence[Transformation]:
        """The device's graph passes, run on every specialized model (fusions, rewrites)."""
        return ()

    @abc.abstractmethod
    def build_plan(self, model: Model) -> P:
        """The device's plan for ``model``: specialized (static shapes, folded, passes run) and
        without a split point, or a model of one data-dependent node (see
        :func:`~opforge.planning.lone_data_dependent_node`)."""

    @abc.abstractmethod
    def compile_stage(self, model: Model) -> Executable:
        """An executable of this device, with this one's settings, for a stage of a staged model."""

    # --- the front half ----------------------------------------------------------------------
    def static_at_compile(self) -> bool:
        """Whether one plan serves every inference (static inputs, no value inputs): such a
        model is planned when compiled, so its errors come at compile time."""
        return not self.value_inputs and all(p.output(0).partial_shape.is_static for p in self.model.parameters)

    def plan_now(self) -> None:
        """Build the one plan of a static model (see :meth:`static_at_compile`)."""
        shapes = tuple(p.output(0).partial_shape.to_tuple() for p in self.model.parameters)
        self.plans.get(plan_key(shapes), lambda: self._plan(shapes, {}))

    def plan_for(self, inputs: Sequence[np.ndarray]) -> tuple[Hashable, P | StagedExecutable]:
        """The cache key and the plan for these inputs (built on first use)."""
        shapes = tuple(tuple(int(d) for d in np.shape(a)) for a in inputs)
        values = read_value_inputs(self.model, self.value_inputs, inputs, self.device_name) \
            if self.value_inputs else {}
        key = plan_key(shapes, values)
        return key, self.plans.get(key, lambda: self._plan(shapes, values))

    def specialize(self, shapes: Sequence[Sequence[int]], values: dict[int, np.ndarray]) -> Model:
        return specialize(self.model, shapes, values, self.planning_passes())

    def _plan(self, shapes: Sequence[Sequence[int]], values: dict[int, np.ndarray]) -> P | StagedExecutable:
        m = self.specialize(shapes, values)
        point = split_point(m)
        if point is not None:
            return StagedExecutable(m, point, self.compile_stage, self.device_name)
        return self.build_plan(m)
