"""The hooks HETERO defines for other plugins. The core adds them to its plugin manager
(pluggy's ``add_hookspecs``) because :mod:`opforge_hetero.plugin` names this module in
``OPFORGE_HOOKSPECS``; docs/plugins.md documents them with the core's hooks."""

from __future__ import annotations

from typing import Any

from opforge.hookspecs import hookspec


@hookspec(firstresult=True)
def opforge_select_partition_policy(name: str, devices: list[str]) -> Any:
    """Return the HETERO partition policy called ``name``, or None to let the next plugin answer.
    Stops at the first non-None result (newest registered plugin first).

    Asked when a model is compiled for ``HETERO:...`` with ``PARTITION_POLICY=name`` (default
    ``"greedy"``), before HETERO's built-in ``greedy``/``cost`` policies, so a plugin can replace
    even the default. A policy is any object with
    ``assign(model, supported_by_device, devices, ctx) -> {node name: device | Decision}``
    (see ``opforge_hetero.policy.PartitionPolicy``). This hook is the only way to add a policy.

    :param name: the requested policy, lower-cased
    :param devices: the HETERO device list, highest priority first
    """
