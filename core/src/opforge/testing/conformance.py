"""Run one catalogue case (:mod:`opforge.testing.cases`) on a device and compare it with the
op's NumPy reference: same number of outputs, same element types and shapes, integers and
booleans equal, floats within the case's tolerance with NaN where the reference has NaN and the
same infinities. ``query_model`` must agree with ``compile_model``. A device whose ``INFERENCE_PRECISION_HINT``
is below f32 is held to :data:`PRECISION_TOLERANCE` at least. On :data:`REFERENCE` the reference itself is checked, against the case's
independent ``expect`` (IEEE results for special values) where the case has one; its output
types and shapes are checked against shape inference by :func:`opforge.reference.evaluate_node`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from opforge.errors import OpforgeError, UnsupportedOpError
from opforge.graph import Model
from opforge.reference import evaluate_model
from opforge.testing.cases import OpCase
from opforge.testing.models import build, seed_of

#: the pseudo-device that runs the reference evaluator
REFERENCE = "REFERENCE"
#: the node under test in every case model (see :func:`opforge.testing.models.build`)
NODE = "node"


#: (rtol, atol) at least, for float outputs of a device whose INFERENCE_PRECISION_HINT is lower
#: than f32 (it computes f32 models in that precision by design, as OpenVINO's VPU and GPU can)
PRECISION_TOLERANCE = {"f16": (1e-2, 1e-2), "bf16": (5e-2, 5e-2)}


class CaseUnsupported(OpforgeError):
    """The device's ``query_model`` does not claim the case's node: there is nothing to check."""


def case_model(case: OpCase) -> tuple[Model, list[np.ndarray]]:
    """The case's model and feeds; the seed depends only on the case id."""
    return build(case.op_class(), case.inputs, case.attrs, seed_of(case.id), dynamic=case.dynamic)


def supported(core: Any, model: Model, device: str) -> bool:
    """Whether ``device``'s ``query_model`` claims the node under test."""
    return NODE in core.query_model(model, device)


def run_case(case: OpCase, device: str, core: Any = None) -> list[np.ndarray]:
    """Check ``case`` on ``device`` (or :data:`REFERENCE`); raises ``AssertionError`` naming the
    case, device, output and what differs, :class:`CaseUnsupported` when the device does not
    claim the op. Returns the device's outputs."""
    model, feeds = case_model(case)
    want = evaluate_model(model, feeds)
    if device == REFERENCE:
        if case.expect is not None:
            with np.errstate(all="ignore"):
                ideal = case.expect([f.copy() for f in feeds])
            compare(case, "the reference vs the case's IEEE expectation", want, ideal)
        return want
    if core is None:
        from opforge.runtime.core import Core

        core = Core()
    # query_model and compile_model must agree: a claimed node compiles, an unclaimed one is
    # refused with UnsupportedOpError (then there is nothing to check)
    claimed = supported(core, model, device)
    try:
        compiled = core.compile_model(model, device)
    except UnsupportedOpError as err:
        if not claimed:
            raise CaseUnsupported(f"{case.id}: {device} does not support {case.op}-{case.version}: {err}") from None
        raise AssertionError(f"{case.id} on {device}: query_model claims the node but compile_model refuses it: "
                             f"{err}") from err
    got = list(compiled(feeds).to_tuple())
    compare(_at_precision(case, _precision(core, device)), device, got, want)
    if not claimed:
        raise AssertionError(f"{case.id} on {device}: the node compiles and computes the right values, but "
                             "query_model does not claim it")
    return got


def _precision(core: Any, device: str) -> str:
    try:
        return str(core.get_property(device, "INFERENCE_PRECISION_HINT"))
    except OpforgeError:  # a device without the property computes in the model's precision
        return "f32"


def _at_precision(case: OpCase, precision: str) -> OpCase:
    """``case`` with its tolerance widened to what ``precision`` can meet."""
    rtol, atol = PRECISION_TOLERANCE.get(precision, (0.0, 0.0))
    if rtol <= case.rtol and atol <= case.atol:
        return case
    return dataclasses.replace(case, rtol=max(rtol, case.rtol), atol=max(atol, case.atol))


def compare(case: OpCase, where: str, got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> None:
    problems: list[str] = []
    if len(got) != len(want):
        raise AssertionError(f"{case.id} on {where}: {len(got)} outputs, the reference has {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype != w.dtype:
            problems.append(f"output {i}: element type {g.dtype}, expected {w.dtype}")
            continue
        if g.shape != w.shape:
            problems.append(f"output {i}: shape {g.shape}, expected {w.shape}")
            continue
        msg = _value_difference(g, w, case.rtol, case.atol)
        if msg:
            problems.append(f"output {i}: {msg}")
    if problems:
        raise AssertionError(f"{case.id} on {where}: " + "; ".join(problems))


def _value_difference(g: np.ndarray, w: np.ndarray, rtol: float, atol: float) -> str:
    """'' when equal (within tolerance for floats), else what differs, with the first position."""
    if w.dtype.kind not in "fc":
        bad = g != w
        if not bad.any():
            return ""
        at = tuple(int(k) for k in np.argwhere(bad)[0])
        return f"{int(bad.sum())}/{w.size} elements differ, first at {at}: got {g[at]!r}, expected {w[at]!r}"
    gf, wf = g.astype(np.float64), w.astype(np.float64)
    nan_g, nan_w = np.isnan(gf), np.isnan(wf)
    if (nan_g != nan_w).any():
        at = tuple(int(k) for k in np.argwhere(nan_g != nan_w)[0])
        return (f"NaN mismatch at {int((nan_g != nan_w).sum())}/{w.size} elements, first at {at}: "
                f"got {g[at]!r}, expected {w[at]!r}")
    inf_w = np.isinf(wf)
    if (np.isinf(gf) != inf_w).any() or (gf[inf_w] != wf[inf_w]).any():
        bad = (np.isinf(gf) != inf_w) | (inf_w & (gf != wf))
        at = tuple(int(k) for k in np.argwhere(bad)[0])
        return f"infinity mismatch at {int(bad.sum())}/{w.size} elements, first at {at}: got {g[at]!r}, expected {w[at]!r}"
    finite = ~(nan_w | inf_w)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf at places checked above
        diff = np.abs(gf - wf)
    bad = finite & (diff > atol + rtol * np.abs(wf))
    if not bad.any():
        return ""
    at = tuple(int(k) for k in np.argwhere(bad)[0])
    return (f"{int(bad.sum())}/{w.size} elements differ beyond rtol={rtol:g} atol={atol:g}, max |diff| "
            f"{float(diff[finite].max()):.3g}, first at {at}: got {g[at]!r}, expected {w[at]!r}")
