"""opforge-hetero: the HETERO device, which splits a model across several devices.

``core.compile_model(model, "HETERO:GPU,CPU")`` runs each operation on the first listed device
that supports it (or where ``node.rt_info["affinity"]`` or a partition policy puts it).
:func:`explain` gives the placement without compiling; :func:`opforge_hetero.dump.dump_partition`
draws it.
"""

from __future__ import annotations

from opforge_hetero.api import explain
from opforge_hetero.device import HETERO_PROPERTIES, HeteroDevice, HeteroFallbackWarning
from opforge_hetero.errors import AffinityError, PartitionError, PolicyLoadError
from opforge_hetero.placement import NodePlacement, Placement, SubgraphInfo, Transfer
from opforge_hetero.policy import (
    CostAwarePolicy,
    Decision,
    GreedyPolicy,
    PartitionPolicy,
    PolicyContext,
    PolicyLoadWarning,
    available_policies,
)

__version__ = "0.1.0"

__all__ = [
    "HETERO_PROPERTIES", "AffinityError", "CostAwarePolicy", "Decision", "GreedyPolicy", "HeteroDevice",
    "HeteroFallbackWarning", "NodePlacement", "PartitionError", "PartitionPolicy", "Placement",
    "PolicyContext", "PolicyLoadError", "PolicyLoadWarning", "SubgraphInfo", "Transfer", "__version__",
    "available_policies", "explain",
]
