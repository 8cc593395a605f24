"""NonMaxSuppression-9: per batch and class, greedily keeps the highest-scoring boxes and drops
those that overlap a kept box by more than ``iou_threshold`` (or, with ``soft_nms_sigma > 0``,
decays their scores by ``exp(-iou^2 / (2 sigma))``, Soft-NMS with a Gaussian penalty).

Inputs: ``boxes`` [num_batches, num_boxes, 4], ``scores`` [num_batches, num_classes, num_boxes]
and optional scalars ``max_output_boxes_per_class`` (default 0: nothing is selected),
``iou_threshold`` (0), ``score_threshold`` (0: only boxes scoring above it are candidates) and
``soft_nms_sigma`` (0). ``box_encoding`` is ``corner`` ([y1, x1, y2, x2], either corner order) or
``center`` ([x_c, y_c, w, h]).

Outputs: ``selected_indices`` [n, 3] (batch, class, box), ``selected_scores`` [n, 3] (batch,
class, score) and ``valid_outputs`` [1] = n. ``n`` is the number of boxes actually selected,
so the first two outputs have a dynamic first dimension. Order: by batch, then class, then
descending score; with ``sort_result_descending`` all selections sort by score across batches
and classes (stable).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import check_rank, lower_enum
from opforge.shape import PartialShape


class NonMaxSuppressionAttrs(OpAttrs):
    box_encoding: Literal["corner", "center"] = "corner"
    sort_result_descending: bool = True
    output_type: Type = Type.i64

    _enums = field_validator("box_encoding", mode="before")(lower_enum)

    @field_validator("output_type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Type:
        t = Type.parse(v)
        if t not in (Type.i32, Type.i64):
            raise ValueError(f"must be i32 or i64, got {t.ir}")
        return t


def _corners(boxes: np.ndarray, encoding: str) -> np.ndarray:
    """[..., 4] boxes as (y_min, x_min, y_max, x_max)."""
    b = boxes.astype(np.float64)
    if encoding == "center":
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=-1)
    y1, x1, y2, x2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)], axis=-1)


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    ih = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0, None)
    iw = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0, None)
    inter = ih * iw
    union = area + areas - inter
    with np.errstate(all="ignore"):
        iou = np.where((area > 0) & (areas > 0) & (union > 0), inter / union, 0.0)
    return iou


class NonMaxSuppression(Op):
    type_name = "NonMaxSuppression"
    data_dependent_shape = True
    version = "opset9"
    Attrs = NonMaxSuppressionAttrs
    min_inputs = 2
    max_inputs = 6

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: NonMaxSuppressionAttrs = ctx.attrs  # type: ignore[assignment]
        tb, ts = ctx.input_type(0), ctx.input_type(1)
        for i, t in ((0, tb), (1, ts)):
            if t is not Type.dynamic and not t.is_float:
                raise ctx.error(f"input {i} has element type {t}, expected a floating-point type")
        check_rank(ctx, 0, "boxes", [3])
        check_rank(ctx, 1, "scores", [3])
        for i in range(2, ctx.num_inputs):
            s = ctx.input_shape(i)
            if (s.rank is not None and s.rank > 1) or (s.rank == 1 and s.dims[0] not in (None, 1)):
                raise ctx.error(f"input {i} has shape {s}, expected a scalar")
        if ctx.num_inputs > 2:
            tm = ctx.input_type(2)
            if tm is not Type.dynamic and not tm.is_integral:
                raise ctx.error(f"input 2 (max_output_boxes_per_class) has element type {tm}, expected an integer type")
        bs, ss = ctx.input_shape(0), ctx.input_shape(1)
        if bs.rank is not None and bs.dims[2] not in (None, 4):
            raise ctx.error(f"input 0 (boxes) has shape {bs}, its last dimension must be 4")
        if bs.rank is not None and ss.rank is not None:
            for k, (x, y) in enumerate(((bs.dims[0], ss.dims[0]), (bs.dims[1], ss.dims[2]))):
                if x is not None and y is not None and x != y:
                    what = "num_batches" if k == 0 else "num_boxes"
                    raise ctx.error(f"boxes {bs} and scores {ss} disagree on {what}")
        ft = ts if ts is not Type.dynamic else Type.f32
        sel = PartialShape([None, 3])
        return [TensorSpec(a.output_type, sel), TensorSpec(ft, sel), TensorSpec(a.output_type, PartialShape([1]))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: NonMaxSuppressionAttrs = attrs
        boxes, scores = inputs[0], inputs[1]

        def scalar(i: int, default: float) -> float:
            return float(np.asarray(inputs[i]).reshape(-1)[0]) if len(inputs) > i and np.asarray(inputs[i]).size else default

        max_out = max(int(scalar(2, 0)), 0)
        iou_thr, score_thr, sigma = scalar(3, 0.0), scalar(4, 0.0), scalar(5, 0.0)
        corners = _corners(boxes, a.box_encoding)
        nb, nc, _ = scores.shape
        found: list[tuple[int, int, int, float]] = []
        for b in range(nb):
            for c in range(nc):
                sc = scores[b, c].astype(np.float64).copy()
                alive = sc > score_thr
                picked = 0
                while picked < max_out and alive.any():
                    cand = np.flatnonzero(alive)
                    best = cand[np.argmax(sc[cand])]  # first index among equal scores
                    found.append((b, c, int(best), float(sc[best])))
                    picked += 1
                    alive[best] = False
                    rest = np.flatnonzero(alive)
                    if rest.size == 0:
                        break
                    iou = _iou(corners[b, best], corners[b, rest])
                    if sigma > 0:
                        sc[rest] *= np.exp(-(iou * iou) / (2 * sigma))
                        alive[rest] = sc[rest] > score_thr
                    else:
                        alive[rest[iou > iou_thr]] = False
        if a.sort_result_descending:
            found.sort(key=lambda f: -f[3])
        it = a.output_type.np
        idx = np.array([[f[0], f[1], f[2]] for f in found], dtype=it).reshape(-1, 3)
        sel = np.array([[f[0], f[1], f[3]] for f in found], dtype=scores.dtype).reshape(-1, 3)
        return [idx, sel, np.array([len(found)], dtype=it)]
