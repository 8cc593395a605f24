"""Hook implementations: what this plugin contributes to opforge."""

from __future__ import annotations

from opforge.hookspecs import Register, hookimpl

from opforge_template_extension.op import TemplateIdentity


@hookimpl
def opforge_register_ops(register: Register) -> None:
    register(TemplateIdentity)
