"""GRN and NormalizeL2: x divided by the root of a sum of squares (the reduction of
``reduce.cl`` into an f32 temporary, then the broadcasting division of ``elementwise``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.element_type import Type
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.library._support import float_input
from opforge_gpu.storage import float_bits, storage_for

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering


def _normalize(node: Node, lw: Lowering, axes: list[int], final: str) -> None:
    """y = x / final(sum of x**2 over ``axes``): a reduction into an f32 temp, then a division."""
    from opforge_gpu.library.elementwise import run_binary
    from opforge_gpu.library.nn import _contiguous_strides

    x = lw.input(node, 0)
    y = lw.new_output(node)
    rank = len(x.shape)
    f32 = storage_for(Type.f32)
    assert f32 is not None
    out_dims = [1 if d in axes else x.shape[d] for d in range(rank)]
    norm = lw.temp(out_dims, f32)
    defines: dict[str, Any] = {
        "REDUCE": 1, "ACC_T": "float", "REDUCE_INIT": "0.0f",
        "REDUCE_STEP(a, v)": "((a) + (v) * (v))", "REDUCE_FINAL(acc, n)": final,
    }
    defines.update(x.storage.macros("X"))
    defines.update(f32.macros("Y"))
    strides = _contiguous_strides(x.shape)
    block = [int(np.prod(out_dims)), rank, *out_dims, *strides, len(axes), *[x.shape[d] for d in axes],
             *[strides[d] for d in axes]]
    lw.launch("reduce.cl", "reduce", defines, [x, norm, lw.params(block)], [block[0]], [64], node=node)
    run_binary(lw, node, x, norm, y, "((a) / (b))")


def _eps_literal(v: float) -> str:
    return f"as_float({float_bits(v)})"


@kernel("GRN", supports=float_input)
def lower_grn(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    bias = _eps_literal(float(node.attrs.bias))  # type: ignore[attr-defined]
    _normalize(node, lw, [1], f"sqrt((acc) + {bias})")




@kernel("NormalizeL2", supports=float_input)
def lower_normalize_l2(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge_gpu.library.elementwise import run_unary

    a: Any = node.attrs
    rank = len(node.inputs[0].shape)
    v = node.inputs[1].node.constant_value()
    axes = sorted({int(d) % rank for d in np.asarray(v).reshape(-1)}) if rank else []
    if not axes:
        # OpenVINO: every element divided by itself (0 for zeros)
        x = lw.input(node, 0)
        y = lw.new_output(node)
        run_unary(lw, node, x, y, "((x) == 0 ? 0.0f : 1.0f)")
        return
    eps = _eps_literal(float(a.eps))
    final = f"sqrt((acc) + {eps})" if a.eps_mode == "add" else f"sqrt(fmax((acc), {eps}))"
    _normalize(node, lw, axes, final)
