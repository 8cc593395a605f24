"""Hook implementations: what this plugin contributes to opforge."""

from __future__ import annotations

from opforge.frontend.extensions import OpExtension
from opforge.hookspecs import Register, hookimpl

from opforge_template_extension.op import TemplateIdentity

#: the ONNX domain models put this op in: a custom domain, so it never shadows ONNX's Identity
ONNX_DOMAIN = "org.opforge.template"


@hookimpl
def opforge_register_ops(register: Register) -> None:
    register(TemplateIdentity)


@hookimpl
def opforge_register_conversion_extensions(register: Register) -> None:
    # One framework op -> one op: the ONNX attribute "scale" maps to the op's "scale" by name.
    register(OpExtension(TemplateIdentity, "Identity", framework="onnx", domain=ONNX_DOMAIN))
