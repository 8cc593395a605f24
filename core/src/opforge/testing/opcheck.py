"""``opforge opcheck``: every op a target provides, checked on every available device against the
op's own definition.

For each op and each available device that has a kernel for it, a series of cases runs, each a
one-node model: f32 and f16 over ranks 0 to 6 and a dynamic-shape model run at two shapes, then
every other element type the op accepts. Each case checks

* the shapes and types the kernel produced against the op's shape inference (and the reference's);
* the values against the op's NumPy reference (``Op.evaluate``), exactly for integers and within
  the type's rounding for floats;
* from the device's profiling records, that the node ran on the kernel the plugin registered for
  that device (``abi:...`` or ``python`` on CPU, ``ocl:<entry>`` on GPU), not on anything else;

with attribute values other than the defaults wherever the op accepts them, so that attributes
are seen to reach the kernel. Separately, each op's attributes must survive an IR file round trip.

The device cases run in a child process per device (:mod:`opforge.testing.opcheck_worker`): a
kernel that crashes the process is reported with the device, element type and shape it crashed
on, and the remaining cases go on in a fresh process.

In a plugin's tests, one line: ``check_op("acme::SoftClip")`` (raises ``AssertionError`` listing
every failure).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import typing
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.errors import OpcheckError, OpforgeError
from opforge.op import Op

#: the shape used for each rank (odd sizes, so vectorised loops meet their tails)
SHAPES: dict[int, tuple[int, ...]] = {
    0: (), 1: (7,), 2: (3, 5), 3: (2, 3, 5), 4: (2, 3, 4, 5), 5: (2, 3, 2, 3, 5), 6: (2, 1, 3, 2, 3, 5),
}
#: the shapes a dynamic-shape model (every dim dynamic, rank 4) is run at, one after the other
DYNAMIC_SHAPES = ((2, 3, 4, 5), (1, 2, 3, 7))
#: rank of the shape the element types other than f32/f16 are checked at
OTHER_TYPES_RANK = 3
#: (rtol, atol) per float type; integers and booleans must be equal
TOLERANCE = {Type.f64: (1e-9, 1e-12), Type.f32: (1e-5, 1e-6), Type.f16: (2e-3, 1e-3), Type.bf16: (2e-2, 1e-2)}
#: meta devices run other devices' kernels: checking those devices is what counts
_META = ("HETERO", "AUTO", "MULTI", "BATCH")


@dataclasses.dataclass
class CaseResult:
    op: str  # "opset::Type"
    device: str  # a device name, or "IR" for the round trip
    dtype: str
    shape: str  # "[2,3,5]", "[?,?,?,?] at [2,3,4,5] then [1,2,3,7]"
    status: str  # passed | failed | crashed | skipped
    message: str = ""
    exec_type: str = ""

    @property
    def label(self) -> str:
        return f"{self.op} on {self.device}, {self.dtype} {self.shape}"


@dataclasses.dataclass
class OpcheckReport:
    target: str
    ops: list[str]
    devices: list[str]
    results: list[CaseResult]
    notes: list[str]
    seconds: float = 0.0

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if r.status in ("failed", "crashed")]

    @property
    def ok(self) -> bool:
        return not self.failures

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.results:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def as_json(self) -> dict[str, Any]:
        return {"target": self.target, "ok": self.ok, "ops": self.ops, "devices": self.devices,
                "counts": self.counts(), "notes": self.notes, "seconds": round(self.seconds, 2),
                "results": [dataclasses.asdict(r) for r in self.results]}

    def summary(self) -> str:
        lines = [f"opcheck {self.target}: {len(self.ops)} op(s) x device(s) {', '.join(self.devices) or 'none'}: "
                 + ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items()))]
        lines += [f"  note: {n}" for n in self.notes]
        for r in self.failures:
            lines.append(f"  {r.status.upper()}: {r.label}: {r.message}")
        skipped: dict[tuple[str, str], list[str]] = {}
        for r in self.results:
            if r.status == "skipped":
                skipped.setdefault((f"{r.op} on {r.device}", r.message), []).append(f"{r.dtype} {r.shape}")
        for (where, why), which in skipped.items():
            lines.append(f"  skipped: {where}: {', '.join(which)}: {why}")
        return "\n".join(lines)


# ============================================================================ targets
def op_label(op: type[Op]) -> str:
    return f"{op.version}::{op.type_name}"


def resolve_target(target: str | type[Op], plugins: Any = None) -> list[type[Op]]:
    """The ops ``target`` names: an Op class, ``opset::Type``, a plugin (entry-point) name, or a
    distribution name."""
    from opforge.plugins import default_plugins

    ps = plugins or default_plugins()
    if isinstance(target, type) and issubclass(target, Op):
        return [target]
    if not isinstance(target, str) or not target:
        raise OpcheckError(f"opcheck: target must be a distribution, a plugin name or opset::Type, got {target!r}")
    if "::" in target:
        opset, _, type_name = target.partition("::")
        op = ps.ops.lookup((type_name, opset))
        if op is None:
            have = sorted(f"{k[1]}::{k[0]}" for k in ps.ops.keys()  # noqa: SIM118 - a Registry
                          if isinstance(k, tuple) and (o := ps.ops.lookup(k)) is not None and not o.is_standard)
            raise OpcheckError(f"opcheck: no installed plugin provides the op {target}; custom ops installed: "
                               f"{', '.join(have) or 'none'}")
        return [op]

    def canon(n: str) -> str:
        return n.lower().replace("_", "-").replace(".", "-")

    names = [name for name, rec in ps.records.items()
             if name == target or (rec.info.distribution and canon(rec.info.distribution) == canon(target))]
    if not names:
        raise OpcheckError(
            f"opcheck: '{target}' is neither an installed plugin, a distribution nor an op (opset::Type); "
            f"plugins: {', '.join(sorted(ps.records)) or 'none'}"
        )
    for name in names:
        rec = ps.records[name]
        if rec.status != "loaded":
            raise OpcheckError(f"opcheck: plugin {rec.info} is {rec.status}: {rec.error}")
    ops: list[type[Op]] = []
    for name in names:
        for key in ps.ops.provided_by(ps.records[name].info):
            op = ps.ops.lookup(key)
            if op is not None and op not in ops:
                ops.append(op)
    if not ops:
        raise OpcheckError(f"opcheck: plugin(s) {', '.join(names)} of '{target}' provide no op to check")
    return ops


# ============================================================================ building cases
def make_node(op: type[Op], dtype: Type, shape: tuple[int, ...] | None, attrs: dict[str, Any],
              rank: int = 4) -> Any:
    """A Parameter per input (``shape`` None: ``rank`` dynamic dims) and one ``op`` node."""
    from opforge.graph import Node

    dims = [-1] * rank if shape is None else list(shape)
    params = []
    for i in range(op.min_inputs):
        p = Node.create("Parameter", [], {"element_type": dtype.ir, "shape": dims}, f"in{i}")
        p.output(0).set_names([f"in{i}"])
        params.append(p)
    node = Node.create(op, params, attrs, "node_under_check")
    return node, params


def other_attrs(op: type[Op]) -> dict[str, Any]:
    """Values other than the defaults for every attribute opcheck knows how to vary (by its
    annotation: bool, int, float, str, list[int], list[float])."""
    out: dict[str, Any] = {}
    defaults = op.Attrs()
    hints = typing.get_type_hints(op.Attrs)
    for name in type(defaults).model_fields:
        v = getattr(defaults, name)
        hint = hints.get(name)
        inner = typing.get_args(hint)[0] if typing.get_origin(hint) is list and typing.get_args(hint) else None
        if hint is bool:
            out[name] = not v
        elif hint is int:
            out[name] = v + 1
        elif hint is float:
            out[name] = v + 0.5
        elif hint is str:
            out[name] = (v or "value") + "_2"
        elif inner is float:
            out[name] = [*v, 0.25] if v else [0.5, 1.5]
        elif inner is int:
            out[name] = [*v, 3] if v else [1, 2]
    return out


def accepted_attrs(op: type[Op], dtype: Type) -> dict[str, Any] | None:
    """Non-default attributes if the op accepts them for ``dtype`` (first all together, else
    the defaults); None if the op does not accept ``dtype`` at all."""
    for attrs in (other_attrs(op), {}):
        try:
            make_node(op, dtype, SHAPES[2], attrs)
        except OpforgeError:
            continue
        return attrs
    return None


def supported_types(op: type[Op]) -> list[Type]:
    """The element types the op's shape inference accepts (asked, not declared)."""
    return [t for t in Type if t is not Type.dynamic and accepted_attrs(op, t) is not None]


def why_no_types(op: type[Op]) -> str:
    """Why the op takes not even f32 with default attributes: the error building it gives."""
    try:
        make_node(op, Type.f32, SHAPES[2], {})
    except OpforgeError as err:
        return f"{type(err).__name__}: {err}"
    return "f32 is accepted"


def plan_cases(op: type[Op]) -> list[dict[str, Any]]:
    types = supported_types(op)
    cases: list[dict[str, Any]] = []
    for t in (Type.f32, Type.f16):
        if t in types:
            cases += [{"dtype": t.value, "shape": list(SHAPES[r])} for r in sorted(SHAPES)]
            cases.append({"dtype": t.value, "shape": None, "run_shapes": [list(s) for s in DYNAMIC_SHAPES]})
    for t in types:
        if t not in (Type.f32, Type.f16):
            cases.append({"dtype": t.value, "shape": list(SHAPES[OTHER_TYPES_RANK])})
    for c in cases:
        c["attrs"] = accepted_attrs(op, Type(c["dtype"]))
    return cases


def shape_label(case: dict[str, Any]) -> str:
    if case["shape"] is None:
        runs = " then ".join("[" + ",".join(map(str, s)) + "]" for s in case["run_shapes"])
        return f"[?,?,?,?] at {runs}"
    return "[" + ",".join(map(str, case["shape"])) + "]"


# ============================================================================ the IR round trip
def check_ir_round_trip(op: type[Op], core: Any = None) -> CaseResult:
    """Attributes (non-default where accepted) through save_model / read_model, and the same
    reference outputs from the model read back."""
    from opforge.graph import Model
    from opforge.ir.writer import save_model
    from opforge.reference import evaluate_model
    from opforge.runtime.core import Core

    dtype = Type.f32 if accepted_attrs(op, Type.f32) is not None else next(iter(supported_types(op)), Type.f32)
    attrs = accepted_attrs(op, dtype)
    label = op_label(op)
    if attrs is None:
        return CaseResult(label, "IR", dtype.value, "", "failed",
                          f"the op accepts no element type at all (f32: {why_no_types(op)})")
    node, params = make_node(op, dtype, SHAPES[3], attrs)
    for j, out in enumerate(node.outputs()):
        out.set_names([f"out{j}"])
    model = Model(node.outputs(), params, name="opcheck")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            save_model(model, Path(tmp) / "m.xml")
            back = (core or Core()).read_model(Path(tmp) / "m.xml")
        except OpforgeError as err:
            return CaseResult(label, "IR", dtype.value, "[2,3,5]", "failed", f"IR round trip failed: {err}")
    got = next((n for n in back.get_ordered_ops() if n.op is op), None)
    if got is None:
        return CaseResult(label, "IR", dtype.value, "[2,3,5]", "failed",
                          "the model read back from IR has no node of the op")
    if got.attrs != node.attrs:
        return CaseResult(label, "IR", dtype.value, "[2,3,5]", "failed",
                          f"attributes changed through IR: wrote {node.attrs!r}, read {got.attrs!r}")
    xs = random_inputs(op.min_inputs, dtype, SHAPES[3], 0)
    for a, b in zip(evaluate_model(model, xs), evaluate_model(back, xs)):
        if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            return CaseResult(label, "IR", dtype.value, "[2,3,5]", "failed",
                              "the model read back from IR computes other values")
    return CaseResult(label, "IR", dtype.value, "[2,3,5]", "passed", f"attributes {dict(attrs) or 'defaults'}")


def random_inputs(n: int, dtype: Type, shape: tuple[int, ...] | list[int], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        if dtype is Type.boolean:
            a = rng.integers(0, 2, size=shape).astype(bool)
        elif dtype.is_float:
            a = (rng.standard_normal(size=shape) * 3).astype(dtype.np)
        elif dtype.is_signed:
            a = rng.integers(-100, 100, size=shape).astype(dtype.np)
        else:
            a = rng.integers(0, 200, size=shape).astype(dtype.np)
        out.append(np.asarray(a))
    return out


# ============================================================================ running a device
def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _crash_summary(stderr: str) -> str:
    """The useful part of a dead child's stderr: faulthandler's fatal error line and the innermost
    frames of the crashing thread, else the last lines (a traceback's end)."""
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    fatal = [i for i, ln in enumerate(lines) if ln.startswith("Fatal Python error")]
    if fatal:
        start = fatal[0]
        frames = [ln for ln in lines[start + 1:] if ln.startswith("File ")][:3]
        return " | ".join([lines[start], *frames])
    return " | ".join(lines[-4:]) or "no output"


def run_device(op: type[Op], device: str, cases: list[dict[str, Any]], timeout: float,
               extensions: list[str] | None = None) -> list[CaseResult]:
    """Run ``cases`` on ``device`` in child processes; a crash costs the case it happened in."""
    label = op_label(op)
    results: list[CaseResult] = []
    todo = list(range(len(cases)))
    while todo:
        with tempfile.TemporaryDirectory() as tmp:
            job = Path(tmp) / "job.json"
            out = Path(tmp) / "results.jsonl"
            job.write_text(json.dumps({"op": label, "device": device, "cases": [cases[i] for i in todo],
                                       "ids": todo, "extensions": list(extensions or [])}))
            env = dict(os.environ, PYTHONFAULTHANDLER="1")
            try:
                proc = subprocess.run([sys.executable, "-m", "opforge.testing.opcheck_worker", str(job), str(out)],
                                      capture_output=True, text=True, timeout=timeout, env=env, check=False)
                code, stderr = proc.returncode, proc.stderr
            except subprocess.TimeoutExpired as err:
                code, stderr = None, (err.stderr.decode(errors="replace") if isinstance(err.stderr, bytes)
                                      else (err.stderr or ""))
            started: int | None = None
            done: set[int] = set()
            for line in out.read_text().splitlines() if out.exists() else []:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:  # the process died while writing this line
                    continue
                if "start" in rec:
                    started = rec["start"]
                else:
                    done.add(rec["id"])
                    results.append(CaseResult(label, device, rec["dtype"], rec["shape"], rec["status"],
                                              rec["message"], rec.get("exec_type", "")))
        if code == 0 and set(todo) <= done:
            break
        tail = _crash_summary(stderr)
        in_flight = started if started is not None and started not in done else None
        if code is None:
            why = f"timed out after {timeout:.0f} s"
        elif code < 0:
            why = f"the process died of {_signal_name(code)}"
        else:
            why = f"the process exited with status {code}"
        if in_flight is None:
            # died outside a case (importing the plugins, starting the device): nothing further can run
            results += [CaseResult(label, device, cases[i]["dtype"], shape_label(cases[i]), "crashed",
                                   f"{why} before this case ran: {tail}") for i in todo if i not in done]
            break
        c = cases[in_flight]
        results.append(CaseResult(label, device, c["dtype"], shape_label(c), "crashed",
                                  f"{why} while running this case: {tail}"))
        todo = [i for i in todo if i not in done and i != in_flight]
    return results


def check_devices(core: Any, ops: list[type[Op]], devices: list[str] | None) -> tuple[list[str], list[str]]:
    """The devices to check (available, not meta), and notes on the ones left out."""
    notes: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        available = [d for d in core.available_devices if d.split(".")[0].split(":")[0] not in _META]
        unavailable = core.unavailable_devices()
    if devices:
        chosen: list[str] = []
        for d in devices:
            # "GPU" names every available GPU (GPU.0, GPU.1), "GPU.1" just that one
            match = [a for a in available if a == d or a.split(".")[0] == d.upper()]
            if not match:
                raise OpcheckError(f"opcheck: device {d} is not available here; available: "
                                   f"{', '.join(available) or 'none'}")
            chosen += [m for m in match if m not in chosen]
        return chosen, notes
    for d, why in unavailable.items():
        notes.append(f"{d} not checked: unavailable ({why})")
    registered = {k[0] for k in core.plugins.kernels.keys() if isinstance(k, tuple)}  # noqa: SIM118
    for d in sorted(registered - {a.split(".")[0] for a in available} - set(unavailable)):
        kinds = [op_label(o) for o in ops if core.plugins.kernels.lookup((d, o.type_name, o.version)) is not None]
        if kinds:
            notes.append(f"{d} not checked: kernels are registered for {', '.join(kinds)} but no {d} device "
                         "is installed")
    return available, notes


def run_opcheck(target: str | type[Op], devices: list[str] | None = None, *, timeout: float = 600.0,
                extensions: list[str] | None = None) -> OpcheckReport:
    """Check every op of ``target`` on ``devices`` (default: every available device).

    ``extensions``: modules or ``.py`` files of hook implementations to load first, as
    ``Core.add_extension`` does (for a plugin that is not installed); the child processes load
    them too, so an op class must come from an installed plugin or one of these."""
    from opforge.runtime.core import Core

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        core = Core()
    for ext in extensions or []:
        core.add_extension(ext)
    ops = resolve_target(target, core.plugins)
    devs, notes = check_devices(core, ops, devices)
    results: list[CaseResult] = []
    for op in ops:
        results.append(check_ir_round_trip(op, core))
        cases = plan_cases(op)
        if not cases:
            results.append(CaseResult(op_label(op), "-", "-", "-", "failed",
                                      "shape inference accepts no element type, nothing can be checked (f32: "
                                      f"{why_no_types(op)})"))
            continue
        for d in devs:
            base = d.split(".")[0]
            try:
                kernel = core.plugins.kernels.lookup((base, op.type_name, op.version))
                if kernel is None:
                    kernel = core.plugins.kernels.lookup((base, op.type_name, None))
            except OpforgeError as err:  # two plugins register this kernel: the device cannot use either
                results.append(CaseResult(op_label(op), d, "-", "-", "failed", str(err)))
                continue
            if kernel is None:
                notes.append(f"{op_label(op)} not checked on {d}: no plugin registers a kernel for it there")
                continue
            results += run_device(op, d, cases, timeout, extensions)
    name = target if isinstance(target, str) else op_label(target)
    return OpcheckReport(name, [op_label(o) for o in ops], devs, results, notes, time.perf_counter() - t0)


def check_op(target: str | type[Op], devices: list[str] | None = None, *, timeout: float = 600.0,
             extensions: list[str] | None = None) -> OpcheckReport:
    """``run_opcheck`` for tests: raises ``AssertionError`` with every failure, else returns the report."""
    report = run_opcheck(target, devices, timeout=timeout, extensions=extensions)
    if not report.ok:
        raise AssertionError(report.summary())
    return report
