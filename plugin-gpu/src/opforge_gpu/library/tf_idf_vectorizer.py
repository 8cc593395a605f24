"""TfIdfVectorizer (``kernels/tf_idf_vectorizer.cl``): the n-grams looked for are flattened on
the host, grouped by output column, into a parameter block and an i64 item table."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from opforge.element_type import Type
from opforge.graph import Node

from opforge_gpu.library import kernel

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "tf_idf_vectorizer.cl"
WG = 64
_MODES = {"TF": 0, "IDF": 1, "TFIDF": 2}


def _supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if t not in (Type.i32, Type.i64):
        return f"TfIdfVectorizer of {t} has no GPU kernel (i32/i64 only)"
    if not node.inputs[0].partial_shape.is_static:
        return "input of dynamic shape"
    return None


@kernel("TfIdfVectorizer", supports=_supports)
def lower_tf_idf_vectorizer(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge.opset.tf_idf_vectorizer import TfIdfVectorizerAttrs, ngram_table, output_size

    a: TfIdfVectorizerAttrs = node.attrs  # type: ignore[assignment]
    size = output_size(a)
    by_col: list[list[tuple[int, ...]]] = [[] for _ in range(size)]
    for gram, col in ngram_table(a).items():
        by_col[col].append(gram)
    col_start: list[int] = [0]
    grams: list[int] = []
    items: list[int] = []
    for col_grams in by_col:
        for g in col_grams:
            grams += [len(g), len(items)]
            items += g
        col_start.append(len(grams) // 2)
    xs = node.inputs[0].shape
    rows = xs[0] if len(xs) == 2 else 1
    cols = xs[-1] if xs else 1
    x = lw.input(node, 0)
    y = lw.new_output(node)
    item_t = lw.const_tensor(np.asarray(items or [0], np.int64), Type.i64, exact=True)
    w = np.asarray(a.weights[:size] or [1.0], np.float32)
    w_t = lw.const_tensor(w, Type.f32, exact=True)
    prm = lw.params([rows, cols, size, a.max_skip_count, a.min_gram_length, _MODES[a.mode], int(bool(a.weights)),
                     *col_start, *grams])
    defines = {**lw.storage(node.inputs[0].element_type).macros("X"),
               **lw.storage(Type.f32).macros("Y")}
    lw.launch(FILE, "tf_idf_vectorizer", defines, [x, item_t, w_t, y, prm], [rows * size], [WG], node=node)
