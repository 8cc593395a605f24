"""Typed device properties: each device declares the keys it accepts, with a type and a default.

Unknown keys and badly typed values are errors that list what the device does accept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from opforge.errors import PropertyError


@dataclasses.dataclass(frozen=True)
class PropertySpec:
    """One property: its type (``int``, ``str``, ``bool``, ``float``, ``dict``), allowed values,
    default, and whether it can be set (read-only properties are reported, not set)."""

    name: str
    type: type
    default: Any = None
    choices: Sequence[Any] | None = None
    mutable: bool = True
    doc: str = ""
    minimum: float | None = None

    def convert(self, device: str, value: Any) -> Any:
        """Validate and normalise ``value`` (``"4"`` -> 4, ``"YES"`` -> True, case of choices)."""
        v = value
        try:
            if self.type is bool and isinstance(v, str):
                low = v.strip().lower()
                if low not in ("yes", "no", "true", "false", "1", "0"):
                    raise ValueError(v)
                v = low in ("yes", "true", "1")
            elif self.type is int and not isinstance(v, bool):
                v = int(v)
            elif self.type is float:
                v = float(v)
            elif self.type is str:
                v = str(getattr(v, "value", v)) if not isinstance(v, str) else v
            elif self.type is dict and not isinstance(v, Mapping):
                raise TypeError(type(v).__name__)
        except (TypeError, ValueError):
            raise PropertyError(
                f"property '{self.name}' of device {device} expects {self.type.__name__}, got {value!r}"
            ) from None
        if self.type is bool and not isinstance(v, bool):
            raise PropertyError(f"property '{self.name}' of device {device} expects a bool, got {value!r}")
        if self.choices is not None:
            match = [c for c in self.choices if str(c).upper() == str(v).upper()]
            if not match:
                raise PropertyError(
                    f"property '{self.name}' of device {device} must be one of "
                    f"{', '.join(map(str, self.choices))}; got {value!r}"
                )
            v = match[0]
        if self.minimum is not None and isinstance(v, (int, float)) and v < self.minimum:
            raise PropertyError(
                f"property '{self.name}' of device {device} must be >= {self.minimum}, got {value!r}"
            )
        return v


#: properties every device understands (a device may add its own)
COMMON_PROPERTIES: tuple[PropertySpec, ...] = (
    PropertySpec("PERFORMANCE_HINT", str, "LATENCY", choices=("LATENCY", "THROUGHPUT"),
                 doc="optimise for one request at a time, or for many in parallel"),
    PropertySpec("INFERENCE_NUM_THREADS", int, 0, minimum=0, doc="threads per request; 0 = all cores"),
    PropertySpec("NUM_STREAMS", int, 1, minimum=0, doc="requests that may run concurrently"),
    PropertySpec("INFERENCE_PRECISION_HINT", str, "f32", choices=("f32", "f16", "bf16"),
                 doc="precision of the arithmetic"),
    PropertySpec("ENABLE_PROFILING", bool, False, doc="collect per-layer performance counters"),
    PropertySpec("CACHE_DIR", str, "",
                 doc="folder of the compile cache: a second compile of the same model loads from it"),
)

#: properties of the Core itself (``core.set_property({...})``), for every device at once; a
#: device's own value of the same property wins
CORE_PROPERTIES: tuple[PropertySpec, ...] = (
    PropertySpec("CACHE_DIR", str, "",
                 doc="folder of the compile cache for every device (a device's own CACHE_DIR wins)"),
)


class PropertyTable:
    """The declared properties of one device and their current values."""

    def __init__(self, device: str, specs: Sequence[PropertySpec]) -> None:
        self.device = device
        self.specs = {s.name: s for s in specs}
        self.values: dict[str, Any] = {s.name: s.default for s in specs}
        #: the properties someone set (``set``), as opposed to the device's defaults: exported
        #: blobs keep those and let the others take the importing host's defaults
        self.explicit: set[str] = set()

    def spec(self, name: str) -> PropertySpec:
        key = name.upper() if name.upper() in self.specs else name
        if key not in self.specs:
            raise PropertyError(
                f"device {self.device} has no property '{name}'; supported: {', '.join(sorted(self.specs))}"
            )
        return self.specs[key]

    def set(self, props: Mapping[str, Any]) -> None:
        # Validate everything before changing anything: a bad key must not half-apply a config.
        converted = {}
        for k, v in props.items():
            s = self.spec(str(k))
            if not s.mutable:
                raise PropertyError(f"property '{s.name}' of device {self.device} is read-only")
            converted[s.name] = s.convert(self.device, v)
        self.values.update(converted)
        self.explicit.update(converted)

    def get(self, name: str) -> Any:
        return self.values[self.spec(name).name]

    def merged(self, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
        """Current values with per-call ``overrides`` applied (validated), without storing them."""
        return self.merged_with_explicit(overrides)[0]

    def merged_with_explicit(self, overrides: Mapping[str, Any] | None) -> tuple[dict[str, Any], frozenset[str]]:
        """:meth:`merged`, and the names of the properties in it that were set (on this table or
        in ``overrides``) rather than left at their defaults."""
        table = PropertyTable(self.device, list(self.specs.values()))
        table.values = dict(self.values)
        table.explicit = set(self.explicit)
        if overrides:
            table.set(overrides)
        return table.values, frozenset(table.explicit)
