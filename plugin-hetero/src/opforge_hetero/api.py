"""Placement without compiling: what ``opforge query`` and the dump tools use."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from opforge.errors import DeviceNotFoundError
from opforge.graph import Model
from opforge.runtime.core import Core
from opforge.runtime.device import CompileContext
from opforge.runtime.device_name import parse_device_name
from opforge.runtime.properties import PropertyTable

from opforge_hetero.device import HETERO_PROPERTIES, plan
from opforge_hetero.placement import Placement


def explain(core: Core, model: Model, device: str, config: Mapping[str, Any] | None = None) -> Placement:
    """Where each node of ``model`` would run on ``device`` and why, without compiling anything.

    ``device`` is a HETERO name (``"HETERO:GPU,CPU"``) or a single device (``"GPU"``: the report
    then lists what that device cannot run). ``config`` takes HETERO's properties.
    """
    parsed = parse_device_name(device)
    single = not parsed.targets and parsed.base != "HETERO"
    name = f"HETERO:{parsed.full}" if single else parsed.full
    table = PropertyTable("HETERO", HETERO_PROPERTIES)
    # Start from what core.set_property("HETERO", ...) stored, as compile_model would; a Core
    # without a registered HETERO device keeps the defaults.
    with contextlib.suppress(DeviceNotFoundError):
        table.values = {s.name: core.get_property("HETERO", s.name) for s in HETERO_PROPERTIES}
    merged, explicit = table.merged_with_explicit(config)
    ctx = CompileContext(device_name=name, config=merged, plugins=core.plugins, core=core, explicit=explicit)
    placement = plan(model, ctx, strict=False).placement
    if single:
        placement.device_name = parsed.full
    return placement
