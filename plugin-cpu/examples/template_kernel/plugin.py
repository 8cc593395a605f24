"""Hook implementations of the template extension, with its compiled CPU kernel
(replaces plugins/template-extension/src/opforge_template_extension/plugin.py)."""

from __future__ import annotations

from typing import Any

from opforge.hookspecs import Register, hookimpl
from opforge_template_extension.op import OPSET, TemplateIdentity


@hookimpl
def opforge_register_ops(register: Register) -> None:
    register(TemplateIdentity)


@hookimpl
def opforge_register_kernels(register: Register) -> None:
    # Imported lazily: listing plugins must not load compiled code.
    register("CPU", "Identity", _CompiledKernel(), version=OPSET)


class _CompiledKernel:
    """Resolves the capsule on first use, so the module loads only when a model needs it."""

    @property
    def opforge_cpu_kernel(self) -> Any:
        from opforge_template_extension import _template_kernel

        return _template_kernel.kernel()
