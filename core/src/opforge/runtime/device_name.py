"""Device-name grammar: ``CPU``, ``gpu.1``, ``HETERO:GPU,CPU`` (case-insensitive)."""

from __future__ import annotations

import dataclasses
import re

from opforge.errors import DeviceNotFoundError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[0-9]+)?$")


@dataclasses.dataclass(frozen=True)
class DeviceName:
    """A parsed device name: ``base`` ("GPU"), ``index`` ("1" or None), ``targets`` for meta
    devices (``HETERO:GPU,CPU`` -> ("GPU", "CPU"))."""

    base: str
    index: str | None = None
    targets: tuple[str, ...] = ()

    @property
    def full(self) -> str:
        name = self.base + (f".{self.index}" if self.index is not None else "")
        return name + (":" + ",".join(self.targets) if self.targets else "")

    def __str__(self) -> str:
        return self.full


def parse_device_name(text: str) -> DeviceName:
    if not isinstance(text, str) or not text.strip():
        raise DeviceNotFoundError(f"device name must be a non-empty string, got {text!r}")
    head, sep, rest = text.strip().partition(":")
    if not _NAME.match(head):
        raise DeviceNotFoundError(f"malformed device name {text!r}; expected e.g. 'CPU', 'GPU.1', 'HETERO:GPU,CPU'")
    base, _, index = head.upper().partition(".")
    targets: tuple[str, ...] = ()
    if sep:
        parts = [p.strip().upper() for p in rest.split(",")]
        if not rest.strip() or any(not p or not _NAME.match(p) for p in parts):
            raise DeviceNotFoundError(
                f"malformed device list in {text!r}; expected e.g. '{base}:GPU,CPU'"
            )
        targets = tuple(parts)
    return DeviceName(base, index or None, targets)
