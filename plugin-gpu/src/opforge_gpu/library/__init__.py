"""The built-in kernel library: for each standard op type, a check (can the GPU run this node?)
and a lowering (the launches that compute it). The OpenCL code lives in ``opforge_gpu/kernels``.

Kernels are looked up by op type for the standard opset only (``Op.is_standard``): a custom op
that happens to share a name (``Identity`` of ``template_extension``) never runs a built-in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from opforge.graph import Node

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

SupportFn = Callable[[Node], "str | None"]
LowerFn = Callable[[Node, "Lowering", "Epilogue | None"], None]

_REGISTRY: dict[str, tuple[SupportFn, LowerFn]] = {}


def kernel(*type_names: str, supports: SupportFn) -> Callable[[LowerFn], LowerFn]:
    """Register a lowering (and its support check) for op types."""
    def deco(fn: LowerFn) -> LowerFn:
        for t in type_names:
            _REGISTRY[t] = (supports, fn)
        return fn
    return deco


def _load() -> dict[str, tuple[SupportFn, LowerFn]]:
    # Imported here, not at the top: the modules register into _REGISTRY as they import (and any
    # one of them may already have been imported on its own). Every module of this package is
    # scanned, so adding a kernel is adding a module.
    import importlib
    import pkgutil

    for m in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{m.name}")
    return _REGISTRY


class BuiltinKernels:
    """The :class:`~opforge_gpu.lowering.KernelImpl` of every built-in kernel."""

    origin = "builtin"

    def supports(self, node: Node) -> str | None:
        if not node.op.is_standard:
            return f"no built-in kernel for custom opset '{node.version}'"
        entry = _load().get(node.type_name)
        if entry is None:
            return "no GPU kernel for this operation"
        try:
            return entry[0](node)
        except Exception as err:  # noqa: BLE001 - a check must answer, never raise
            return f"cannot be checked: {type(err).__name__}: {err}"

    def lower(self, node: Node, lw: Lowering, epilogue: Epilogue | None = None) -> None:
        _load()[node.type_name][1](node, lw, epilogue)


def builtin_op_types() -> list[str]:
    """Op types with a built-in GPU kernel."""
    return sorted(_load())
