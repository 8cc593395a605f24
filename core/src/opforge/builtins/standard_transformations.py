"""Registers the built-in transformations (constant folding, dead-code elimination)."""

from __future__ import annotations

from opforge.hookspecs import Register, hookimpl
from opforge.transformations.constant_folding import ConstantFolding
from opforge.transformations.dead_code import DeadCodeElimination


@hookimpl
def opforge_register_transformations(register: Register) -> None:
    register(ConstantFolding())
    register(DeadCodeElimination())
