"""TfIdfVectorizer: n-gram counts of each row of an integer sequence, weighted (ONNX
TfIdfVectorizer-9, integer pools).

Not an OpenVINO operation: opforge's own standard op (listed under opset16, see
:mod:`opforge.opset.bit_cast`). Semantics follow ONNX's reference exactly:

* the pool holds the n-grams of each length back to back (``ngram_counts`` gives where each
  length starts); pool n-gram ``i`` (counting n-grams, not items) is counted into output column
  ``ngram_indexes[i]``; only lengths in ``[min_gram_length, max_gram_length]`` are looked for, and
  an n-gram listed twice counts into the column of its last listing;
* every skip distance ``d`` in ``1 .. max_skip_count + 1`` is tried: the n-gram starting at ``s``
  is ``x[s], x[s + d], ...``; 1-grams are counted at ``d = 1`` only;
* ``TF`` gives the counts, ``IDF`` ``weights[col]`` (1 without weights) where a count is
  positive, ``TFIDF`` ``weights[col] * count`` (the weights are indexed by output column, as in
  the reference).

The output is f32 ``[max(ngram_indexes) + 1]`` for a scalar or 1-D input, ``[B, ...]`` for
``[B, C]``.
"""

from __future__ import annotations

import itertools
from typing import Literal

import numpy as np
from pydantic import model_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape


class TfIdfVectorizerAttrs(OpAttrs):
    mode: Literal["TF", "IDF", "TFIDF"]
    min_gram_length: int
    max_gram_length: int
    max_skip_count: int
    ngram_counts: list[int]
    ngram_indexes: list[int]
    pool_int64s: list[int]
    weights: list[float] = []

    @model_validator(mode="after")
    def _check(self) -> TfIdfVectorizerAttrs:
        if not 1 <= self.min_gram_length <= self.max_gram_length:
            raise ValueError(f"need 1 <= min_gram_length <= max_gram_length, got {self.min_gram_length} "
                             f"and {self.max_gram_length}")
        if self.max_skip_count < 0:
            raise ValueError(f"max_skip_count must be >= 0, got {self.max_skip_count}")
        if not self.ngram_indexes or min(self.ngram_indexes) < 0:
            raise ValueError("ngram_indexes must be non-empty and non-negative")
        starts = self.ngram_counts
        if any(b < a for a, b in itertools.pairwise(starts)) or any(s < 0 or s > len(self.pool_int64s) for s in starts):
            raise ValueError(f"ngram_counts {starts} must be non-decreasing offsets into the pool "
                             f"of {len(self.pool_int64s)} items")
        n_grams = sum(_lengths(self))
        if len(self.ngram_indexes) < n_grams:
            raise ValueError(f"the pool holds {n_grams} n-grams but ngram_indexes has only "
                             f"{len(self.ngram_indexes)} entries")
        if self.weights and len(self.weights) < max(self.ngram_indexes) + 1:
            raise ValueError(f"weights are indexed by output column: need {max(self.ngram_indexes) + 1}, "
                             f"got {len(self.weights)}")
        return self


def _lengths(a: TfIdfVectorizerAttrs) -> list[int]:
    """Number of n-grams of length 1, 2, ... in the pool."""
    ends = [*a.ngram_counts[1:], len(a.pool_int64s)]
    return [(e - s) // (k + 1) for k, (s, e) in enumerate(zip(a.ngram_counts, ends))]


def ngram_table(a: TfIdfVectorizerAttrs) -> dict[tuple[int, ...], int]:
    """Each n-gram looked for (lengths in [min, max]) -> its output column (last listing wins)."""
    table: dict[tuple[int, ...], int] = {}
    gram_id = 0
    for k, (start, count) in enumerate(zip(a.ngram_counts, _lengths(a))):
        n = k + 1
        for j in range(count):
            if a.min_gram_length <= n <= a.max_gram_length:
                table[tuple(a.pool_int64s[start + j * n: start + (j + 1) * n])] = a.ngram_indexes[gram_id]
            gram_id += 1
    return table


def output_size(a: TfIdfVectorizerAttrs) -> int:
    return max(a.ngram_indexes) + 1


class TfIdfVectorizer(Op):
    type_name = "TfIdfVectorizer"
    version = "opset16"
    Attrs = TfIdfVectorizerAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: TfIdfVectorizerAttrs = ctx.attrs  # type: ignore[assignment]
        t = ctx.input_type(0)
        if t not in (Type.i32, Type.i64, Type.dynamic):
            raise ctx.error(f"input must be i32 or i64 (an integer pool), got {t}")
        ps = ctx.input_shape(0)
        size = output_size(a)
        if ps.rank is None:
            return [TensorSpec(Type.f32, PartialShape.dynamic())]
        if ps.rank > 2:
            raise ctx.error(f"input must be [C] or [B, C], got rank {ps.rank}")
        return [TensorSpec(Type.f32, PartialShape([ps.dims[0], size] if ps.rank == 2 else [size]))]

    @classmethod
    def evaluate(cls, attrs: TfIdfVectorizerAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        rows = x.reshape(1, -1) if x.ndim < 2 else x
        size = output_size(attrs)
        table = ngram_table(attrs)
        counts = np.zeros((rows.shape[0], size), np.int64)
        for r, row in enumerate(rows.tolist()):
            for d in range(1, attrs.max_skip_count + 2):
                shortest = max(attrs.min_gram_length, 1 if d == 1 else 2)
                for s in range(len(row)):
                    for n in range(shortest, attrs.max_gram_length + 1):
                        if s + (n - 1) * d >= len(row):
                            break
                        col = table.get(tuple(row[s: s + (n - 1) * d + 1: d]))
                        if col is not None:
                            counts[r, col] += 1
        w = np.asarray(attrs.weights[:size], np.float32) if attrs.weights else np.ones(size, np.float32)
        if attrs.mode == "TF":
            y = counts.astype(np.float32)
        elif attrs.mode == "IDF":
            y = np.where(counts > 0, w, np.float32(0)).astype(np.float32)
        else:
            y = (counts.astype(np.float32) * w if attrs.weights else counts.astype(np.float32))
        return [y.reshape((size,) if x.ndim < 2 else (rows.shape[0], size))]
