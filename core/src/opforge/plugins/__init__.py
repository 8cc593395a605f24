"""Plugin discovery, loading and registries."""

from opforge.plugins.manager import (
    BUILTIN_PLUGINS,
    ENTRY_POINT_GROUP,
    PluginRecord,
    PluginSystem,
    PluginWarning,
    default_plugins,
    reset_default_plugins,
)
from opforge.plugins.registry import OpRegistry, PluginInfo, Registry

__all__ = [
    "BUILTIN_PLUGINS", "ENTRY_POINT_GROUP", "OpRegistry", "PluginInfo", "PluginRecord", "PluginSystem",
    "PluginWarning", "Registry", "default_plugins", "reset_default_plugins",
]
