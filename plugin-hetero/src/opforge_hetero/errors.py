"""Errors of the HETERO device; each derives from the opforge hierarchy so ``except OpforgeError``
catches them."""

from __future__ import annotations

from opforge.errors import DeviceError, ModelValidationError, PluginLoadError


class AffinityError(ModelValidationError):
    """A node's manual affinity (``node.rt_info["affinity"]``) names a device outside the HETERO
    list, or a device that cannot run the node."""


class PartitionError(DeviceError):
    """A partition policy returned an assignment HETERO cannot execute (a node left out, or put on
    a device that cannot run it)."""


class PolicyLoadError(PluginLoadError):
    """A partition policy could not be found or loaded."""
