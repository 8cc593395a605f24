"""The compile-time check for oneDNN reference implementations.

oneDNN 3.2 cannot be told to refuse its reference (scalar C++) implementations: a descriptor no
optimised kernel accepts (a post-op, a layout, a data type the ISA lacks) silently gets "ref:any",
5-30x slower. Stop 12 found two such MatMuls only because real models ran slow. Every program now
records each oneDNN primitive its kernels created and the implementation it got
(``Program.primitives()``, csrc/core/primitive_log.hpp); this module picks the heavy ones
(convolution, deconvolution, matmul, inner product, pooling) on a reference implementation and
warns once per compiled program, naming the node, its shapes and types and the implementation.
The same list is the compiled model's ``ONEDNN_REFERENCE_PRIMITIVES`` property.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any


class OneDNNReferenceWarning(UserWarning):
    """A heavy oneDNN primitive of a compiled model runs oneDNN's reference implementation: the
    model works, but that node is likely many times slower than it should be."""


def describe(row: Mapping[str, Any]) -> str:
    """One primitive as a line: ``node 'mm' (MatMul): matmul on ref:any, src f32[1,4,64],
    weights f32[64,64], dst f32[1,4,64]``."""
    parts = [f"{name} {row[name]}" for name in ("src", "weights", "dst") if row.get(name)]
    return f"node '{row['node']}' ({row['node_type']}): {row['kind']} on {row['impl']}" + (
        ", " + ", ".join(parts) if parts else "")


def reference_primitives(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The heavy primitives on a reference implementation, among a program's ``primitives()``."""
    return [dict(r) for r in rows if r["reference"] and r["heavy"]]


def warn_reference_primitives(rows: list[dict[str, Any]], isa: str, stacklevel: int = 2) -> None:
    """One :class:`OneDNNReferenceWarning` for a program's reference primitives (none when empty)."""
    if not rows:
        return
    lines = "\n  ".join(describe(r) for r in rows)
    warnings.warn(
        f"device CPU: {len(rows)} oneDNN primitive(s) of this model run oneDNN's reference "
        f"implementation on this host (ISA {isa}), typically 5-30x slower than its optimised kernels "
        f"(see plugin-cpu/docs/kernel-library.md, 'Reference implementations'):\n  {lines}",
        OneDNNReferenceWarning, stacklevel=stacklevel)
