"""Inference results addressable by index, by tensor name and by output port (like OpenVINO's
``OVDict``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from opforge.graph import Output


class Results(Mapping[Output, np.ndarray]):
    """``results[0]``, ``results["logits"]`` and ``results[compiled.output(0)]`` all work."""

    def __init__(self, ports: Sequence[Output], arrays: Sequence[np.ndarray]) -> None:
        self._ports = list(ports)
        self._arrays = list(arrays)

    def _index(self, key: object) -> int:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            k = int(key)
            if -len(self._arrays) <= k < len(self._arrays):
                return k % len(self._arrays)
            raise KeyError(f"output index {k} out of range: the model has {len(self._arrays)} output(s)")
        if isinstance(key, Output):
            for i, p in enumerate(self._ports):
                if p == key:
                    return i
            key = key.any_name
        if isinstance(key, str):
            for i, p in enumerate(self._ports):
                if key in p.names or p.any_name == key:
                    return i
            for i, p in enumerate(self._ports):
                if p.node.name == key:
                    return i
        raise KeyError(
            f"no output {key!r}; outputs: " + ", ".join(repr(p.any_name) for p in self._ports)
        )

    def __getitem__(self, key: object) -> np.ndarray:
        return self._arrays[self._index(key)]

    def __iter__(self) -> Iterator[Output]:
        return iter(self._ports)

    def __len__(self) -> int:
        return len(self._arrays)

    def __contains__(self, key: object) -> bool:
        try:
            self._index(key)
        except KeyError:
            return False
        return True

    def to_tuple(self) -> tuple[np.ndarray, ...]:
        return tuple(self._arrays)

    def to_dict(self) -> dict[str, np.ndarray]:
        """By tensor name."""
        return {p.any_name: a for p, a in zip(self._ports, self._arrays)}

    def names(self) -> list[str]:
        return [p.any_name for p in self._ports]

    def __repr__(self) -> str:
        items = ", ".join(f"{p.any_name}: {a.dtype}{list(a.shape)}" for p, a in zip(self._ports, self._arrays))
        return f"<Results {items}>"
