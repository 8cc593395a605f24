"""ScatterNDUpdate-15: ScatterNDUpdate with a ``reduction``: each slice addressed by an index
tuple (the last dimension of ``indices``) is combined with its update, in index order:
``none`` (replace; of repeated indices the last wins), ``sum``, ``sub``, ``prod``, ``min`` or
``max``. For booleans ``sum`` is OR, ``sub`` XOR and ``prod`` AND. Negative indices count from
the end; indices out of range raise.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import lower_enum
from opforge.opset._shape_util import check_indices
from opforge.opset.scatter_nd_update import ScatterNDUpdate, check_scatter_nd_shapes
from opforge.shape import PartialShape


class ScatterNDUpdate15Attrs(OpAttrs):
    reduction: Literal["none", "sum", "sub", "prod", "min", "max"] = "none"

    _enum = field_validator("reduction", mode="before")(lower_enum)


_UFUNCS: dict[str, Any] = {"sum": np.add, "sub": np.subtract, "prod": np.multiply, "min": np.minimum,
                           "max": np.maximum}
_BOOL_UFUNCS: dict[str, Any] = {"sum": np.logical_or, "sub": np.logical_xor, "prod": np.logical_and,
                                "min": np.logical_and, "max": np.logical_or}


class ScatterNDUpdate15(Op):
    type_name = "ScatterNDUpdate"
    cost_class = CostClass.MOVEMENT
    version = "opset15"
    Attrs = ScatterNDUpdate15Attrs
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        # the reduction changes values only: shapes and types are those of version 4
        return ScatterNDUpdate.infer(ctx)

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: ScatterNDUpdate15Attrs = attrs
        if a.reduction == "none":
            return ScatterNDUpdate.evaluate(None, inputs)
        data, indices, updates = inputs
        check_scatter_nd_shapes(PartialShape(data.shape), PartialShape(indices.shape), PartialShape(updates.shape))
        k = indices.shape[-1]
        m = math.prod(indices.shape[:-1])
        out = data.copy()
        if m == 0:
            return [out]
        coords = [
            check_indices(indices[..., j], data.shape[j], f"ScatterNDUpdate index (data dimension {j})").reshape(m)
            for j in range(k)
        ]
        linear = np.ravel_multi_index(coords, data.shape[:k]) if k else np.zeros(m, np.int64)
        rest = math.prod(data.shape[k:])
        flat = out.reshape(math.prod(data.shape[:k]), rest)
        ufunc = (_BOOL_UFUNCS if data.dtype == np.bool_ else _UFUNCS)[a.reduction]
        with np.errstate(all="ignore"):
            ufunc.at(flat, linear, updates.reshape(m, rest))
        return [out]
