"""What an operation is: a type name, an opset version, typed attributes, shape/type inference
and a NumPy reference ``evaluate``.

Operations are classes; a node holds the class plus an instance of its attribute model. The
standard opset lives in :mod:`opforge.opset`, one operation per file; plugins register more
through the ``opforge_register_ops`` hook. Reference ``evaluate`` is the test oracle and the
constant-folding engine: devices never execute through it.
"""

from __future__ import annotations

import dataclasses
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


class Op:
    """Base class of operation definitions. Subclass, set the class attributes, implement
    :meth:`infer` and :meth:`evaluate`.

    ``version`` is the IR ``version`` string: ``"opsetN"`` for the opset that introduced this
    version of a standard operation, or the custom opset name of a plugin (``"template_extension"``).
    """

    type_name: ClassVar[str]
    version: ClassVar[str] = "opset1"
    Attrs: ClassVar[type[OpAttrs]] = NoAttrs
    min_inputs: ClassVar[int] = 1
    max_inputs: ClassVar[int | None] = 1  # None: any number

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
