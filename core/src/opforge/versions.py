"""Versions of opforge and of the installed opforge plugins: ``opforge --version``, and the
version stamp of exported blobs and cache entries (a compiled model is only reused by the same
versions that made it)."""

from __future__ import annotations

import importlib.metadata as md
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opforge.plugins.manager import PluginSystem


def opforge_version() -> str:
    from opforge import __version__

    return __version__


def installed_plugins() -> list[tuple[str, str, str]]:
    """``(distribution, version, entry point)`` of every installed plugin, from package metadata
    only: listing versions must work even when a plugin is too broken to import."""
    from opforge.plugins.manager import ENTRY_POINT_GROUP

    rows = set()
    for ep in md.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else "?"
        version = ep.dist.version if ep.dist is not None else "?"
        rows.add((dist, version, ep.name))
    return sorted(rows)


def version_report() -> str:
    """The text of ``opforge --version``."""
    lines = [f"opforge {opforge_version()}"]
    for dist, version, ep in installed_plugins():
        lines.append(f"  {dist} {version}" + ("" if dist.replace("-", "_") == ep.replace("-", "_") else f" (plugin '{ep}')"))
    if len(lines) == 1:
        lines.append("  no plugins installed")
    return "\n".join(lines)


def loaded_versions(plugins: PluginSystem) -> dict[str, str]:
    """``{name: version}`` of opforge and of every plugin loaded into ``plugins`` (a plugin added
    from a file has no version: it is named with ``unversioned``)."""
    out = {"opforge": opforge_version()}
    for name, rec in sorted(plugins.records.items()):
        if rec.status != "loaded" or rec.info.builtin:
            continue
        out[rec.info.distribution or name] = rec.info.version or "unversioned"
    return out
