"""The op-level case catalogue: one module per op family, each with a ``CASES`` list of
:class:`OpCase`. The catalogue is derived by scanning this package (adding a family is adding a
module), and every standard op must have at least one case
(:func:`uncovered_ops`; the conformance suite fails when one has none).

A case is a fact table: op type and version, attributes, inputs (:class:`~opforge.testing.models.Input`)
and the tolerance a device's float outputs must meet against the op's NumPy reference
(``Op.evaluate``). ``expect`` may add an independent expectation (IEEE results for special
values) that the reference itself is checked against.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import numpy as np

from opforge.op import Op
from opforge.testing.models import Input

#: ops every case's model contains anyway (a model's inputs and outputs), so they need no case
IMPLICIT = frozenset({"Parameter", "Result"})


@dataclasses.dataclass(frozen=True)
class OpCase:
    op: str
    version: str
    label: str
    inputs: tuple[Input, ...]
    attrs: Mapping[str, Any]
    rtol: float = 1e-5
    atol: float = 1e-6
    #: an expectation independent of ``Op.evaluate``: outputs from the input arrays
    expect: Callable[[list[np.ndarray]], list[np.ndarray]] | None = dataclasses.field(default=None, compare=False)
    #: the model's Parameters have dynamic dimensions (the device specializes when it runs)
    dynamic: bool = False

    @property
    def id(self) -> str:
        """``Type-version:label``, unique in the catalogue; the known-failure lists match it."""
        return f"{self.op}-{self.version}:{self.label}"

    def op_class(self) -> type[Op]:
        return op_class(self.op, self.version)


@lru_cache(maxsize=1)
def _standard_ops() -> dict[tuple[str, str], type[Op]]:
    from opforge.opset import all_ops

    return {o.key(): o for o in all_ops()}


def op_class(type_name: str, version: str | None = None) -> type[Op]:
    """The standard op class ``type_name`` (of ``version``; may be left out when there is one)."""
    found = [o for k, o in _standard_ops().items() if k[0] == type_name and (version is None or k[1] == version)]
    if len(found) != 1:
        versions = sorted(k[1] for k in _standard_ops() if k[0] == type_name)
        raise LookupError(f"op {type_name} {version or ''}: standard versions are {versions or 'none'}; "
                          "name the version when there are several")
    return found[0]


def case(op: str, *inputs: Input, label: str | None = None, version: str | None = None,
         rtol: float = 1e-5, atol: float = 1e-6,
         expect: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None, dynamic: bool = False,
         **attrs: Any) -> OpCase:
    """One case; the label defaults to the inputs' element types and shapes. ``version`` may be
    left out when the op has one version (it is looked up then; a named version is checked when
    the case runs, and by :func:`unknown_ops`)."""
    text = label if label is not None else "_".join(i.describe() for i in inputs) or "none"
    if dynamic and label is None:
        text += "_dynamic"
    return OpCase(op, version or op_class(op).version, text, tuple(inputs), MappingProxyType(dict(attrs)), rtol,
                  atol, expect, dynamic)


def family_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


@lru_cache(maxsize=1)
def all_cases() -> tuple[OpCase, ...]:
    """Every case of every family module, in module order; ids must be unique."""
    out: list[OpCase] = []
    seen: dict[str, str] = {}
    for name in family_modules():
        mod = importlib.import_module(f"{__name__}.{name}")
        for c in getattr(mod, "CASES", []):
            if c.id in seen:
                raise ValueError(f"case id {c.id} appears twice (in {seen[c.id]} and {name}); give one a label")
            seen[c.id] = name
            out.append(c)
    return tuple(out)


def uncovered_ops(cases: Sequence[OpCase] | None = None) -> list[str]:
    """``Type-version`` of every standard op (but :data:`IMPLICIT`) that has no case."""
    have = {(c.op, c.version) for c in (all_cases() if cases is None else cases)}
    return [f"{t}-{v}" for (t, v) in sorted(_standard_ops()) if t not in IMPLICIT and (t, v) not in have]


def unknown_ops(cases: Sequence[OpCase] | None = None) -> list[str]:
    """Case ids whose op is no standard op (renamed, removed, or a version that does not exist)."""
    return [c.id for c in (all_cases() if cases is None else cases) if (c.op, c.version) not in _standard_ops()]
