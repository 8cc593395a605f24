"""What an operation is: a type name, an opset version, typed attributes, shape/type inference
and a NumPy reference ``evaluate``.

Operations are classes; a node holds the class plus an instance of its attribute model. The
standard opset lives in :mod:`opforge.opset`, one operation per file; plugins register more
through the ``opforge_register_ops`` hook. Reference ``evaluate`` is the test oracle and the
constant-folding engine: devices never execute through it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import types
import typing
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pydantic
from pydantic import BaseModel, ConfigDict

from opforge.element_type import Type
from opforge.errors import AttributeValidationError, NoReferenceError, ShapeInferenceError
from opforge.shape import PartialShape


class OpAttrs(BaseModel):
    """Base class of every operation's attribute model (a frozen pydantic model).

    Field names are the attribute names of OpenVINO's opset specification (``pads_begin``,
    ``auto_pad``), because IR files use them verbatim.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class NoAttrs(OpAttrs):
    """Attributes of an operation that has none."""


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """The element type and partial shape of one output port."""

    type: Type
    shape: PartialShape

    def __post_init__(self) -> None:
        if not isinstance(self.shape, PartialShape):
            object.__setattr__(self, "shape", PartialShape(self.shape))


class InferContext:
    """What shape/type inference sees of a node: its inputs' types, shapes and constant values."""

    def __init__(
        self,
        node_name: str,
        op: type[Op],
        attrs: OpAttrs,
        input_specs: Sequence[TensorSpec],
        input_values: Sequence[np.ndarray | None],
    ) -> None:
        self.node_name = node_name
        self.op = op
        self.attrs = attrs
        self._specs = list(input_specs)
        self._values = list(input_values)

    @property
    def num_inputs(self) -> int:
        return len(self._specs)

    def input_type(self, i: int) -> Type:
        return self._specs[i].type

    def input_shape(self, i: int) -> PartialShape:
        return self._specs[i].shape

    def input_value(self, i: int) -> np.ndarray | None:
        """The input's value when it is known while building the graph (a constant), else None."""
        return self._values[i] if i < len(self._values) else None

    def error(self, message: str) -> ShapeInferenceError:
        """An error naming this node, to ``raise``."""
        return ShapeInferenceError(f"node '{self.node_name}' ({self.op.type_name}): {message}")


#: the package of the standard opset: an op class defined there is a standard op
OPSET_PACKAGE = "opforge.opset"

#: type names of the nodes that are graph structure, not computation: model inputs, outputs and
#: constants. Devices compile everything else.
STRUCTURAL: frozenset[str] = frozenset({"Parameter", "Constant", "Result"})


class CostClass(enum.Enum):
    """What one output element costs, roughly: what a cost model (HETERO's) needs to know about
    an op beyond its shapes."""

    #: a few arithmetic operations per element (Add, Relu, Convert, comparisons)
    ELEMENTWISE = "elementwise"
    #: one transcendental function or division per element (Exp, Tanh, Gelu, Divide)
    TRANSCENDENTAL = "transcendental"
    #: reads many input elements per output element (ReduceSum, Softmax, MVN, TopK)
    REDUCING = "reducing"
    #: dense multiply-accumulate, costed from its operands (Convolution, MatMul, Einsum)
    COMPUTE = "compute"
    #: copies or rearranges elements without arithmetic (Transpose, Gather, Concat, Pad)
    MOVEMENT = "movement"
    #: no work at run time (Parameter, Constant, Result, ShapeOf)
    STRUCTURAL = "structural"


class Op:
    """Base class of operation definitions. Subclass, set the class attributes, implement
    :meth:`infer` and :meth:`evaluate`.

    ``version`` is the IR ``version`` string: ``"opsetN"`` for the opset that introduced this
    version of a standard operation, or the custom opset name of a plugin (``"template_extension"``).

    The *facts* (``value_inputs`` ... ``cost_class``) tell devices and tools what they cannot
    read from ``infer``: the defaults fit an element-wise op of data inputs, so only ops that
    differ declare them. A plugin's op declares them the same way (docs/plugins.md).
    ``is_standard`` is derived, never declared.
    """

    type_name: ClassVar[str]
    version: ClassVar[str] = "opset1"
    Attrs: ClassVar[type[OpAttrs]] = NoAttrs
    min_inputs: ClassVar[int] = 1
    max_inputs: ClassVar[int | None] = 1  # None: any number

    # --- facts ---------------------------------------------------------------------------------
    #: input ports whose *values* the op reads like attributes: they decide output shapes or how
    #: it computes (target shapes, axes, pads, counts, coefficients). A device that plans on the
    #: host needs them as constants, or reads a model input's value to plan for it.
    value_inputs: ClassVar[tuple[int, ...]] = ()
    #: the value inputs that are scalars (a one-element value is given to them as a 0-d array)
    scalar_inputs: ClassVar[tuple[int, ...]] = ()
    #: the output shape depends on the input *data*, not only on shapes and value inputs
    #: (NonZero, Unique): it is known only after running the op
    data_dependent_shape: ClassVar[bool] = False
    #: every output element is an element of input 0 (or a pad value), placed by the attributes
    #: and value inputs alone: evaluating the op on element indices yields its gather map
    rearranges_input: ClassVar[bool] = False
    #: what one output element costs, for cost models
    cost_class: ClassVar[CostClass] = CostClass.ELEMENTWISE
    #: devices run this op on the host, not as a kernel (:meth:`run_host_stage`): Loop iterates
    #: there (its body runs on the device), ImageDecoder decodes with an image codec
    host_stage: ClassVar[bool] = False
    #: True for the classes of the standard opset (defined in ``opforge.opset`` with an
    #: ``opsetN`` version); set by ``__init_subclass__``, so a plugin's op of the same type name
    #: (``Identity`` of ``template_extension``) is never mistaken for the standard one
    is_standard: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.is_standard = (cls.__module__.startswith(OPSET_PACKAGE + ".")
                           and str(cls.version).startswith("opset"))

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        """Output types and shapes from the inputs'; raise ``ctx.error(...)`` on bad inputs."""
        raise ShapeInferenceError(f"{cls.type_name} has no shape inference")

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """The NumPy reference: outputs from input arrays, with OpenVINO opset semantics."""
        raise NoReferenceError(
            f"{cls.type_name}-{cls.version} has no reference implementation (Op.evaluate is not defined), "
            "so it cannot be constant-folded or run by the reference evaluator; implement evaluate()"
        )

    @classmethod
    def run_host_stage(cls, attrs: Any, inputs: list[np.ndarray], run_subgraph: Any, where: str) -> list[np.ndarray]:
        """Run a ``host_stage`` op for a device: ``run_subgraph(model, arrays) -> arrays`` runs a
        sub-graph (a Loop body) on that device; ``where`` names the device and node in errors.
        The default is the reference (:meth:`evaluate`)."""
        return cls.evaluate(attrs, inputs)

    # --- helpers used by the graph and the IR ------------------------------------------------
    @classmethod
    def key(cls) -> tuple[str, str]:
        return (cls.type_name, cls.version)

    @classmethod
    def make_attrs(cls, node_name: str, values: dict[str, Any]) -> OpAttrs:
        """Validate attribute values, with an error that names the node and the attribute."""
        try:
            return cls.Attrs(**values)
        except pydantic.ValidationError as err:
            problems = []
            for e in err.errors():
                loc = ".".join(str(p) for p in e["loc"]) or "?"
                got = e.get("input")
                got_s = "" if e["type"] == "missing" else f" (got {got!r})"
                problems.append(f"attribute '{loc}': {e['msg']}{got_s}")
            raise AttributeValidationError(
                f"node '{node_name}' ({cls.type_name}-{cls.version}): " + "; ".join(problems)
            ) from None

    @classmethod
    def attrs_to_ir(cls, attrs: OpAttrs) -> dict[str, str]:
        """Attribute values as IR strings (``"1,1"``, ``"true"``, ``"f32"``)."""
        return {name: _to_ir_string(getattr(attrs, name)) for name in type(attrs).model_fields}

    @classmethod
    def attrs_from_ir(cls, node_name: str, data: dict[str, str]) -> OpAttrs:
        """Attributes from IR strings, converted by each field's annotation."""
        fields = cls.Attrs.model_fields
        hints = _attr_hints(cls.Attrs)
        values: dict[str, Any] = {}
        for name, text in data.items():
            if name not in fields:
                raise AttributeValidationError(
                    f"node '{node_name}' ({cls.type_name}-{cls.version}): unknown attribute '{name}'; "
                    f"known: {', '.join(fields) or 'none'}"
                )
            try:
                values[name] = _from_ir_string(text, hints.get(name, str))
            except (ValueError, TypeError) as err:
                raise AttributeValidationError(
                    f"node '{node_name}' ({cls.type_name}-{cls.version}): attribute '{name}': "
                    f"cannot parse {text!r}: {err}"
                ) from None
        return cls.make_attrs(node_name, values)


@functools.cache
def _attr_hints(attrs_cls: type[OpAttrs]) -> dict[str, Any]:
    # get_type_hints re-evaluates string annotations on every call; IR reading calls this per
    # layer, so resolve each attribute class once.
    return typing.get_type_hints(attrs_cls)


def _to_ir_string(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Type):
        return v.ir
    if isinstance(v, PartialShape):
        return "..." if v.rank is None else ",".join("?" if d is None else str(d) for d in v.dims)
    if isinstance(v, float):
        if not math.isfinite(v):
            # OpenVINO's IR writer spells these "inf", "-inf" and "nan" (a Clip with only a max
            # becomes Clamp min=-inf); float() reads them back.
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        return repr(v) if v != int(v) or abs(v) >= 1e16 else str(v)
    if isinstance(v, (list, tuple)):
        return ",".join(_to_ir_string(x) for x in v)
    if v is None:
        return ""
    return str(v)


def _from_ir_string(text: str, annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or origin is types.UnionType:
        non_none = [a for a in args if a is not type(None)]
        if text == "" and type(None) in args:
            return None
        return _from_ir_string(text, non_none[0])
    if origin in (list, tuple, Sequence):
        inner = args[0] if args else str
        t = text.strip()
        if not t:
            return []
        return [_from_ir_string(p.strip(), inner) for p in t.split(",")]
    if origin is typing.Literal:
        return text
    if annotation is bool:
        low = text.strip().lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise ValueError("expected 'true' or 'false'")
    if annotation is int:
        return int(text)
    if annotation is float:
        return float(text)
    if annotation is Type:
        return Type.parse(text)
    if annotation is PartialShape:
        return PartialShape.parse(text)
    return text
