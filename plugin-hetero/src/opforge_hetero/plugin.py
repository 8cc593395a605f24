"""Hook implementations: the HETERO device."""

from __future__ import annotations

from opforge.hookspecs import Register, hookimpl


@hookimpl
def opforge_register_devices(register: Register) -> None:
    # Imported lazily by the factory: loading plugins must stay cheap.
    def factory() -> object:
        from opforge_hetero.device import HeteroDevice

        return HeteroDevice("HETERO")

    register("HETERO", factory)
