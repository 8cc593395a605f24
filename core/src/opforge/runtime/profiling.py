"""One per-layer profiling record for every device (``InferRequest.get_profiling_info``).

Devices return :class:`ProfilingInfo` rows from ``Executable.performance_counters``; a device that
still returns plain mappings is converted here, and one that returns something unusable gets an
error naming it instead of a report that silently lacks columns. Device-specific facts (the GPU
kernel, the CPU's fused nodes, HETERO's sub-graph and transfer sizes) go into ``extra``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from opforge.errors import KernelError

#: what happened to a node: it ran, it was fused into another row, or it was never scheduled
Status = Literal["EXECUTED", "OPTIMIZED_OUT", "NOT_RUN"]
STATUSES: tuple[str, ...] = ("EXECUTED", "OPTIMIZED_OUT", "NOT_RUN")


@dataclasses.dataclass(frozen=True)
class ProfilingInfo:
    """One row of per-layer counters, the same columns on every device.

    ``node_name``/``node_type``: the node (or sub-graph) that ran; ``exec_type``: the
    implementation that ran it (a oneDNN primitive, ``ocl:<kernel>``, the device of a HETERO
    sub-graph); ``real_time_ms``: wall/device time of the last inference, milliseconds.
    """

    node_name: str
    node_type: str
    exec_type: str
    real_time_ms: float
    status: Status = "EXECUTED"
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    #: the columns every device provides, in report order
    COLUMNS = ("node_name", "node_type", "exec_type", "real_time_ms", "status")

    def __getitem__(self, key: str) -> Any:
        # Rows used to be dicts; reading them by key (``row["real_time_ms"]``, ``row["kernel"]``)
        # keeps working for the columns and for the device's extras.
        if key in self.COLUMNS:
            return getattr(self, key)
        if key in self.extra:
            return self.extra[key]
        raise KeyError(f"profiling record has no field {key!r}; fields: "
                       f"{', '.join([*self.COLUMNS, *self.extra])}")

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def to_dict(self) -> dict[str, Any]:
        """The columns plus the extras, flat (for JSON reports)."""
        return {**dict(self.extra), **{c: getattr(self, c) for c in self.COLUMNS}}

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any], device: str) -> ProfilingInfo:
        """A row from a mapping with the five columns (anything else goes to ``extra``)."""
        missing = [c for c in cls.COLUMNS if c not in row]
        if missing:
            raise KernelError(
                f"device {device} returned a profiling row without {', '.join(missing)}: {dict(row)!r}; "
                f"every row needs {', '.join(cls.COLUMNS)} (see opforge.runtime.profiling.ProfilingInfo)")
        status = str(row["status"]).upper()
        if status not in STATUSES:
            raise KernelError(f"device {device} returned profiling status {row['status']!r} for node "
                              f"'{row['node_name']}'; expected one of {', '.join(STATUSES)}")
        try:
            ms = float(row["real_time_ms"])
        except (TypeError, ValueError):
            raise KernelError(f"device {device} returned real_time_ms={row['real_time_ms']!r} for node "
                              f"'{row['node_name']}'; expected a number of milliseconds") from None
        extra = {k: v for k, v in row.items() if k not in cls.COLUMNS and k != "extra"}
        extra.update(row.get("extra") or {})
        return cls(str(row["node_name"]), str(row["node_type"]), str(row["exec_type"]), ms,
                   status, extra)  # type: ignore[arg-type]


def normalize(rows: Iterable[Any], device: str) -> list[ProfilingInfo]:
    """``rows`` from a device as :class:`ProfilingInfo`; errors name the device and the row."""
    out: list[ProfilingInfo] = []
    for row in rows:
        if isinstance(row, ProfilingInfo):
            out.append(row)
        elif isinstance(row, Mapping):
            out.append(ProfilingInfo.from_mapping(row, device))
        else:
            raise KernelError(f"device {device} returned a profiling row of type {type(row).__name__}; "
                              "expected opforge.runtime.profiling.ProfilingInfo")
    return out
