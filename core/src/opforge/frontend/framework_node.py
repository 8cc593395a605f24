"""A framework op kept as it is: a placeholder, or a framework-fallback node the framework runs.

Two kinds of ``FrameworkNode``:

* a **placeholder** (``payload == ""``): converting with ``allow_unsupported=True`` keeps ops no
  extension converts, so the rest of the model can be inspected. Outputs have dynamic type and
  shape; it cannot run, and the error says which extension is missing.
* a **framework-fallback node** (``payload`` set): an op listed in a ``CustomLayersMapping.xml``
  (see :mod:`opforge.frontend.custom_layers`). ``payload`` is the framework's own serialized node
  (an ONNX one-node model, a Paddle op description); the framework computes its output types and
  shapes and runs it at inference, on the CPU device (a Python kernel), like the Model
  Optimizer's "Caffe fallback". The framework runtime is a frontend's optional extra, found
  through the frontend's ``fallback_runtime()``.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any

import numpy as np

from opforge.element_type import Type
from opforge.errors import ShapeInferenceError, UnsupportedOpError
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape

if TYPE_CHECKING:
    from opforge.frontend.node_context import NodeContext
    from opforge.graph import Node


class FrameworkNodeAttrs(OpAttrs):
    framework: str
    op_type: str
    domain: str = ""
    num_outputs: int = 1
    #: the framework attributes as decoded by the frontend, kept for inspection
    attributes: dict[str, Any] = {}
    #: the framework's serialized node (base64), which its runtime runs; "" for a placeholder
    payload: str = ""
    #: whether the framework attributes were carried into ``payload`` (hasParam="true")
    has_param: bool = True
    #: output types and shapes the framework computed at conversion (``f32[2,8];i64[?]``), used
    #: when the framework runtime is not installed where the model is read back
    output_specs: str = ""


class FallbackRuntime(abc.ABC):
    """What a frontend provides (``Frontend.fallback_runtime()``) to run its framework's nodes."""

    #: the frontend name, ``FrameworkNodeAttrs.framework``
    framework: str = ""
    #: the pip requirement that installs the framework runtime, named in errors
    extra: str = ""

    @abc.abstractmethod
    def payload(self, ctx: NodeContext, has_param: bool) -> tuple[str, int]:
        """``(serialized node, number of outputs)`` of the node ``ctx`` describes, its attributes
        kept only when ``has_param``."""

    @abc.abstractmethod
    def infer(self, node_name: str, attrs: FrameworkNodeAttrs, specs: list[TensorSpec],
              values: list[np.ndarray | None]) -> list[TensorSpec]:
        """Output types and shapes from the framework, given the inputs' specs and any constant
        values. Raises :class:`UnsupportedOpError` naming :attr:`extra` when the runtime is missing."""

    @abc.abstractmethod
    def run(self, attrs: FrameworkNodeAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """Run the node through the framework; raises :class:`~opforge.errors.KernelError` on failure."""

    def missing(self, err: BaseException, what: str) -> UnsupportedOpError:
        """The error for a framework runtime that is not installed."""
        return UnsupportedOpError(
            f"{what} needs the {self.framework} framework runtime, which is not installed ({err}); "
            f"install it with: pip install '{self.extra}'"
        )


def fallback_runtime(framework: str) -> FallbackRuntime:
    """The runtime of ``framework``'s fallback nodes, from the installed frontend of that name."""
    from opforge.plugins.manager import default_plugins

    fe = default_plugins().frontends.lookup(framework)
    get = getattr(fe, "fallback_runtime", None)
    runtime = get() if callable(get) else None
    if not isinstance(runtime, FallbackRuntime):
        have = "is not installed" if fe is None else "cannot run framework-fallback nodes"
        raise UnsupportedOpError(
            f"framework-fallback node of framework '{framework}': the '{framework}' frontend {have}; "
            "a CustomLayersMapping.xml fallback needs a frontend that provides fallback_runtime()"
        )
    return runtime


def encode_specs(specs: list[TensorSpec]) -> str:
    return ";".join(f"{s.type.ir}{s.shape}" for s in specs)


def decode_specs(text: str) -> list[TensorSpec]:
    out = []
    for part in text.split(";"):
        ty, _, shape = part.partition("[")
        out.append(TensorSpec(Type.parse(ty), PartialShape.parse("[" + shape)))
    return out


class FrameworkNode(Op):
    type_name = "FrameworkNode"
    version = "extension"
    Attrs = FrameworkNodeAttrs
    min_inputs = 0
    max_inputs = None

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: FrameworkNodeAttrs = ctx.attrs  # type: ignore[assignment]
        if not a.payload:
            return [TensorSpec(Type.dynamic, PartialShape.dynamic()) for _ in range(max(a.num_outputs, 1))]
        specs = [TensorSpec(ctx.input_type(i), ctx.input_shape(i)) for i in range(ctx.num_inputs)]
        values = [ctx.input_value(i) for i in range(ctx.num_inputs)]
        try:
            out = fallback_runtime(a.framework).infer(ctx.node_name, a, specs, values)
        except UnsupportedOpError:
            if not a.output_specs:
                raise
            # Read back where the framework is not installed: the specs it computed at conversion
            # hold as long as the inputs are those it saw (running still needs the framework).
            out = decode_specs(a.output_specs)
        if len(out) != a.num_outputs:
            raise ShapeInferenceError(
                f"node '{ctx.node_name}' (framework-fallback {a.framework} op '{a.op_type}'): the framework "
                f"gives {len(out)} outputs, the node declares {a.num_outputs}"
            )
        return out

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: FrameworkNodeAttrs = attrs
        dom = f"{a.domain}::" if a.domain else ""
        if not a.payload:
            raise UnsupportedOpError(
                f"{a.framework} op '{dom}{a.op_type}' was kept as a placeholder (allow_unsupported) and cannot "
                "run; convert again with an extension for it (OpExtension or ConversionExtension) or list it "
                "in a CustomLayersMapping.xml to run it through the framework"
            )
        return fallback_runtime(a.framework).run(a, list(inputs))

    @classmethod
    def attrs_to_ir(cls, attrs: OpAttrs) -> dict[str, str]:
        a: FrameworkNodeAttrs = attrs  # type: ignore[assignment]
        out = {"framework": a.framework, "op_type": a.op_type, "domain": a.domain,
               "num_outputs": str(a.num_outputs)}
        if a.payload:
            out |= {"payload": a.payload, "has_param": "true" if a.has_param else "false",
                    "output_specs": a.output_specs}
        return out


class FrameworkNodeKernel:
    """The CPU device's kernel for FrameworkNode: fallback nodes run through their framework;
    placeholders are refused in ``query_model`` (``unsupported_reason``), so HETERO never places
    them."""

    def __call__(self, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return FrameworkNode.evaluate(attrs, inputs)

    def unsupported_reason(self, node: Node) -> str:
        a: FrameworkNodeAttrs = node.attrs  # type: ignore[assignment]
        if a.payload:
            return ""
        return (f"placeholder of unconverted {a.framework} op '{a.op_type}' (allow_unsupported); "
                "it has no implementation")
