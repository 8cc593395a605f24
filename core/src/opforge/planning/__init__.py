"""The device front half: what every device does to a model before its own code generation.

A device compiles a model in two halves. This package is the first, shared by every device:

1. **Value inputs** (:mod:`.values`): which model inputs' *values* decide shapes (a Reshape's
   target fed by a model input, the bounds of a Range). Their values are read on the host and
   the model is planned for them, one plan per value, as for input shapes. One rule, one limit
   (``MAX_VALUE_INPUT_ELEMENTS``).
2. **Specialization** (:mod:`.specialize`): a static-shape copy of the model for the input
   shapes (and value-input values) of one inference, constant folded (shape computations
   included), with the device's own graph passes (:class:`~opforge.transformations.Transformation`,
   most of them :class:`~opforge.transformations.MatcherPass`) run on it.
3. **Plans** (:mod:`.plan_cache`): a bounded LRU of what the device built per key (input shapes,
   value-input values), shared by every request.
4. **Data-dependent shapes** (:mod:`.staging`): one strategy for every device. A model is run in
   stages around the first node whose output shape only the data decides (NonZero, Unique, NMS),
   that runs on the host (Loop, ImageDecoder), or that needs as a value something computed from
   data: the stage before it is a static model, the node's stage a one-node model (or the host),
   and the rest a model planned per shape like any dynamic model.

:class:`~.executable.PlannedExecutable` ties them together; a device subclasses it and writes only
the second half: ``build_plan`` (a static model -> its program: C++ steps, OpenCL launches) and
how a plan runs. See docs/architecture.md ("The device front half").
"""

from opforge.planning.executable import PlannedExecutable, PlanStates
from opforge.planning.plan_cache import PLAN_CACHE_SIZE, PlanCache
from opforge.planning.specialize import specialize
from opforge.planning.staging import StagedExecutable, lone_data_dependent_node, split_point
from opforge.planning.values import (
    MAX_VALUE_INPUT_ELEMENTS,
    known_at_plan,
    read_value_inputs,
    scalar_port,
    shape_nodes,
    value_inputs,
    value_port,
)

__all__ = [
    "MAX_VALUE_INPUT_ELEMENTS", "PLAN_CACHE_SIZE", "PlanCache", "PlanStates", "PlannedExecutable",
    "StagedExecutable", "known_at_plan", "lone_data_dependent_node", "read_value_inputs", "scalar_port",
    "shape_nodes", "specialize", "split_point", "value_inputs", "value_port",
]
