"""Hook implementations: what this plugin contributes to opforge."""

from __future__ import annotations

from typing import Any

from opforge.frontend.extensions import OpExtension
from opforge.hookspecs import Register, hookimpl

from opforge_template_extension.op import OPSET, TemplateIdentity

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
    # CPU: a compiled C++ kernel (csrc/template_kernel.cpp) that the CPU executor calls directly,
    # with no Python in the loop; resolved lazily so listing plugins loads no compiled code.
    register("CPU", "Identity", _CompiledCpuKernel(), version=OPSET)
    # GPU: an OpenVINO-format custom kernel (XML + .cl) shipped as package resources; the GPU
    # plugin reads them from the installed package, so no loose files and no import of it here.
    register("GPU", TemplateIdentity, ("opforge_template_extension", "gpu/identity.xml"))
    # VPU: an MVCL custom layer (XML + MYRIAD OpenCL C), for the opforge-vpu device.
    register("VPU", TemplateIdentity, ("opforge_template_extension", "vpu/identity.xml"))


class _CompiledCpuKernel:
    """Hands the CPU plugin the kernel's ABI capsule on first use."""

    @property
    def opforge_cpu_kernel(self) -> Any:
        from opforge_template_extension import _template_kernel  # type: ignore[attr-defined]

        return _template_kernel.kernel()
