"""Registries of what plugins provide, with conflict detection that names both plugins."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

from opforge.errors import PluginConflictError, UnsupportedOpError
from opforge.op import Op

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class PluginInfo:
    """Who registered something: the plugin name, and its distribution and version if installed."""

    name: str
    distribution: str | None = None
    version: str | None = None
    builtin: bool = False

    def __str__(self) -> str:
        if self.distribution:
            label = f"{self.distribution} {self.version or '?'}"
            return label if self.distribution == self.name else f"{label} (plugin '{self.name}')"
        return f"{self.name} (built-in)" if self.builtin else f"'{self.name}'"


USER = PluginInfo("user extension")


@dataclasses.dataclass(frozen=True)
class Registration(Generic[T]):
    key: Hashable
    value: T
    plugin: PluginInfo
    priority: int = 0


class Registry(Generic[T]):
    """Values by key. Two registrations of one key at the same priority are a conflict: the key
    stays unusable (lookups raise a :class:`PluginConflictError` naming both plugins) while
    everything else works. A higher ``priority`` wins without a conflict."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[Hashable, list[Registration[T]]] = {}

    def add(self, key: Hashable, value: T, plugin: PluginInfo, priority: int = 0) -> None:
        self._entries.setdefault(key, []).append(Registration(key, value, plugin, priority))

    def remove_plugin(self, plugin: PluginInfo) -> None:
        for key in list(self._entries):
            kept = [r for r in self._entries[key] if r.plugin != plugin]
            if kept:
                self._entries[key] = kept
            else:
                del self._entries[key]

    def copy(self) -> Registry[T]:
        new: Registry[T] = type(self)(self.kind)  # type: ignore[call-arg]
        new._entries = {k: list(v) for k, v in self._entries.items()}
        return new

    def _winner(self, key: Hashable) -> Registration[T]:
        regs = self._entries[key]
        best = max(r.priority for r in regs)
        top = [r for r in regs if r.priority == best]
        if len(top) > 1:
            raise self.conflict_error(key, top)
        return top[0]

    def conflict_error(self, key: Hashable, regs: list[Registration[T]]) -> PluginConflictError:
        # Sorted, so the message is identical whatever order the plugins were installed in.
        names = sorted(str(r.plugin) for r in regs)
        if len(set(names)) == 1:
            return PluginConflictError(
                f"{self.kind} {_key_str(key)} is registered {len(regs)} times by plugin {names[0]}; "
                "register each key once."
            )
        return PluginConflictError(
            f"{self.kind} {_key_str(key)} is registered by more than one plugin: "
            + " and ".join(names)
            + ". Uninstall one of them, or disable one with OPFORGE_LOAD_PLUGINS, or register "
            "with a higher priority= to override deliberately."
        )

    def conflicts(self) -> list[PluginConflictError]:
        out = []
        for key in sorted(self._entries, key=_key_str):
            regs = self._entries[key]
            best = max(r.priority for r in regs)
            top = [r for r in regs if r.priority == best]
            if len(top) > 1:
                out.append(self.conflict_error(key, top))
        return out

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def lookup(self, key: Hashable) -> T | None:
        if key not in self._entries:
            return None
        return self._winner(key).value

    def registration(self, key: Hashable) -> Registration[T] | None:
        if key not in self._entries:
            return None
        return self._winner(key)

    def keys(self) -> list[Hashable]:
        return sorted(self._entries, key=_key_str)

    def items(self) -> Iterator[tuple[Hashable, T]]:
        """Usable (non-conflicting) entries, sorted by key."""
        for key in self.keys():
            try:
                yield key, self._winner(key).value
            except PluginConflictError:
                continue

    def provided_by(self, plugin: PluginInfo) -> list[Hashable]:
        return [k for k in self.keys() if any(r.plugin == plugin for r in self._entries[k])]

    def __len__(self) -> int:
        return len(self._entries)


def _key_str(key: Hashable) -> str:
    if isinstance(key, tuple):
        return "/".join(str(k) for k in key if k not in (None, ""))
    return str(key)


def _opset_number(version: str) -> int | None:
    m = re.fullmatch(r"opset(\d+)", version)
    return int(m.group(1)) if m else None


class OpRegistry(Registry[type[Op]]):
    """Operations by ``(type_name, version)``."""

    def __init__(self, kind: str = "operation") -> None:
        super().__init__(kind)

    def _op_keys(self) -> list[tuple[str, str]]:
        return [k for k in self._entries if isinstance(k, tuple)]

    def versions(self, type_name: str) -> list[str]:
        return sorted(
            (str(k[1]) for k in self._op_keys() if k[0] == type_name),
            key=lambda v: (_opset_number(v) is None, _opset_number(v) or 0, v),
        )

    def get(self, type_name: str, version: str | None = None) -> type[Op]:
        """The op class; ``version=None`` means the newest standard version.

        A standard ``opsetN`` that has no exact entry resolves to the newest registered version
        introduced at or before opset N (IR files name the opset a layer was written from)."""
        if version is not None and (type_name, version) in self._entries:
            return self._winner((type_name, version)).value
        versions = self.versions(type_name)
        if not versions:
            raise UnsupportedOpError(
                f"no operation '{type_name}' is registered"
                + (f" (opset '{version}')" if version else "")
                + ". Is the plugin that provides it installed? `opforge plugins` lists what is."
            )
        standard = [v for v in versions if _opset_number(v) is not None]
        if version is None:
            pick = standard[-1] if standard else versions[-1]
            return self._winner((type_name, pick)).value
        n = _opset_number(version)
        if n is None or not standard:
            opsets = sorted({k[1] for k in self._op_keys() if _opset_number(k[1]) is None})
            raise UnsupportedOpError(
                f"operation '{type_name}' of opset '{version}' is not registered "
                f"(registered versions of '{type_name}': {', '.join(versions)}; custom opsets "
                f"installed: {', '.join(opsets) or 'none'}). Install the plugin that provides "
                f"opset '{version}'."
            )
        older = [v for v in standard if (_opset_number(v) or 0) <= n]
        pick = older[-1] if older else standard[0]
        return self._winner((type_name, pick)).value

    def all_ops(self) -> list[type[Op]]:
        return [v for _, v in self.items()]
