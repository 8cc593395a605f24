"""Hook implementations: what this plugin contributes to opforge."""

from __future__ import annotations

from opforge.frontend.extensions import OpExtension
from opforge.hookspecs import Register, hookimpl

from opforge_template_extension.op import TemplateIdentity

#: the ONNX domain models put this op in: a custom domain, so it never shadows ONNX's Identity
ONNX_DOMAIN = "org.opforge.template"
#: the op type a Paddle program names it by (Paddle custom ops have no domains)
PADDLE_OP = "template_identity"


@hookimpl
def opforge_register_ops(register: Register) -> None:
    register(TemplateIdentity)


@hookimpl
def opforge_register_conversion_extensions(register: Register) -> None:
    # One framework op -> one op: the ONNX attribute "scale" maps to the op's "scale" by name.
    register(OpExtension(TemplateIdentity, "Identity", framework="onnx", domain=ONNX_DOMAIN))
    # Paddle ports are named, not ordered: say which named input/output maps to port 0.
    register(OpExtension(TemplateIdentity, PADDLE_OP, framework="paddle", inputs=["X"], outputs=["Out"]))


@hookimpl
def opforge_register_kernels(register: Register) -> None:
    # GPU: an OpenVINO-format custom kernel (XML + .cl) shipped as package resources; the GPU
    # plugin reads them from the installed package, so no loose files and no import of it here.
    register("GPU", TemplateIdentity, ("opforge_template_extension", "gpu/identity.xml"))
