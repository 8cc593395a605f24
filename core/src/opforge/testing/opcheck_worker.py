"""The child process of ``opforge opcheck``: runs one device's cases of one op.

``python -m opforge.testing.opcheck_worker JOB.json RESULTS.jsonl``. Before each case it appends
``{"start": id}`` to the results file (flushed to disk), after it the result; so when a kernel
kills this process, the parent knows which case did it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import warnings
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from opforge.element_type import Type
from opforge.errors import OpforgeError, UnsupportedOpError
from opforge.op import Op
from opforge.testing.opcheck import TOLERANCE, make_node, random_inputs, shape_label

NODE = "node_under_check"


def _write(f: TextIO, rec: dict[str, Any]) -> None:
    f.write(json.dumps(rec) + "\n")
    f.flush()
    os.fsync(f.fileno())


def expected_exec_type(core: Any, op: type[Op], device: str) -> tuple[str, str]:
    """(``exact`` or ``prefix``, value) the profiling record's exec_type must match to prove the
    kernel the plugins registered for this op and device ran."""
    base = device.split(".")[0]
    kernel = core.plugins.kernels.lookup((base, op.type_name, op.version))
    if kernel is None:
        kernel = core.plugins.kernels.lookup((base, op.type_name, None))
    if kernel is None:
        return ("none", "")
    if base == "CPU":
        cap = getattr(kernel, "opforge_cpu_kernel", kernel)
        if type(cap).__name__ == "PyCapsule":
            return ("prefix", "abi:")
        return ("exact", "python")
    if base in ("GPU", "VPU"):  # OpenCL devices: an XML naming the kernel's entry point
        if isinstance(kernel, tuple) and len(kernel) == 2:
            pkg, rel = kernel
            xml = resources.files(pkg).joinpath(*str(rel).split("/")).read_text(encoding="utf-8")
            for m in re.finditer(r"<CustomLayer\b[^>]*\bname=\"([^\"]+)\"(.*?)</CustomLayer>", xml, re.S):
                entry = re.search(r"<Kernel\b[^>]*\bentry=\"([^\"]+)\"", m.group(2))
                if m.group(1) == op.type_name and entry:
                    return ("exact", f"ocl:{entry.group(1)}")
        return ("prefix", "ocl:")
    return ("any", "")


def _exec_types(rows: list[Any]) -> list[str]:
    """exec_type of every profiling record of the node (a device may run several launches for
    one node: conversions around a kernel that takes another element type)."""
    out = []
    for row in rows:
        name = _get(row, "node_name") or _get(row, "node")
        if name == NODE:
            out.append(str(_get(row, "exec_type") or ""))
    return out


def _get(row: Any, key: str) -> Any:
    try:
        return row[key]
    except (KeyError, TypeError):
        return getattr(row, key, None)


def _precision(core: Any, device: str) -> str:
    try:
        return str(core.get_property(device, "INFERENCE_PRECISION_HINT")).lower()
    except OpforgeError:
        return ""


def compare(j: int, got: np.ndarray, want: np.ndarray, dtype: Type) -> str | None:
    if got.shape != want.shape:
        return f"output {j}: shape {list(got.shape)}, the reference's is {list(want.shape)}"
    if dtype.is_float:
        rtol, atol = TOLERANCE.get(dtype, (1e-5, 1e-6))
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        bad = ~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    else:
        g, w = got, want
        bad = g != w
    if not np.any(bad):
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    return (f"output {j}: {int(np.sum(bad))} of {bad.size} values differ from the reference; first at {list(idx)}: "
            f"got {np.asarray(g[idx]).item()!r}, expected {np.asarray(w[idx]).item()!r}")


def run_case(core: Any, op: type[Op], device: str, case: dict[str, Any]) -> dict[str, Any]:
    from opforge.graph import Model

    dtype = Type(case["dtype"])
    attrs = case["attrs"] or {}
    static = case["shape"] is not None
    runs = [case["shape"]] if static else case["run_shapes"]
    node, params = make_node(op, dtype, tuple(case["shape"]) if static else None, attrs)
    for j, out in enumerate(node.outputs()):
        out.set_names([f"out{j}"])
    model = Model(node.outputs(), params, name="opcheck")
    result: dict[str, Any] = {"dtype": dtype.value, "shape": shape_label(case), "status": "passed", "message": ""}
    how, want_exec = expected_exec_type(core, op, device)
    if how == "none":
        return {**result, "status": "skipped", "message": f"no kernel is registered for this op on {device}"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        supported = core.query_model(model, device)
        if NODE not in supported:
            why = f"{device} does not support the node (query_model)"
            # f32 is the type every kernel must take; other types may be outside what a device offers
            return {**result, "status": "failed" if dtype is Type.f32 else "skipped", "message": why}
        try:
            # a kernel is checked in the f32 every kernel must take: a device computing in bf16
            # by default (CPU on a bf16 host) would be judged by its bf16 MatMuls instead
            config: dict[str, Any] = {"ENABLE_PROFILING": True}
            if _precision(core, device) == "bf16":
                config["INFERENCE_PRECISION_HINT"] = "f32"
            compiled = core.compile_model(model, device, config)
        except UnsupportedOpError as err:
            # a clear refusal at compile time; a device or kernel may take a subset of the types
            # the op accepts, but every kernel must take f32
            if dtype is Type.f32:
                raise
            return {**result, "status": "skipped", "message": f"refused: {err}"}
    request = compiled.create_infer_request()
    # a device that computes in FP16 by default (VPU) is held to the f16 tolerance for every float type
    tol_type = Type.f16 if dtype.is_float and _precision(core, device) == "f16" else dtype
    problems: list[str] = []
    exec_type = ""
    for k, run_shape in enumerate(runs):
        at = "" if static else f" (run at {run_shape})"
        xs = random_inputs(op.min_inputs, dtype, tuple(run_shape), k)
        res = request.infer(xs)
        got = [np.asarray(res[f"out{j}"]) for j in range(len(node.outputs()))]
        concrete, _ = make_node(op, dtype, tuple(run_shape), attrs)
        want = op.evaluate(concrete.attrs, [x.copy() for x in xs])
        for j, spec in enumerate(concrete.output_specs):
            if spec.shape.is_static and tuple(got[j].shape) != spec.shape.to_tuple():
                problems.append(f"output {j}{at}: the kernel produced shape {list(got[j].shape)}, shape inference "
                                f"says {list(spec.shape.to_tuple())}")
                continue
            if got[j].dtype != spec.type.np:
                problems.append(f"output {j}{at}: the kernel produced {got[j].dtype}, shape inference says "
                                f"{spec.type}")
                continue
            bad = compare(j, got[j], np.asarray(want[j]), tol_type)
            if bad:
                problems.append(bad + at)
        ran = _exec_types(request.get_profiling_info())
        mine = [e for e in ran if (how == "exact" and e == want_exec) or (how == "prefix" and e.startswith(want_exec))
                or (how == "any" and e)]
        exec_type = mine[0] if mine else ", ".join(ran)
        if not ran:
            problems.append(f"no profiling record for the node on {device}: cannot prove its kernel ran")
        elif not mine:
            problems.append(f"the node ran as {', '.join(repr(e) for e in ran)}, not on the plugin's kernel "
                            f"('{want_exec}{'...' if how == 'prefix' else ''}')")
    if problems:
        result.update(status="failed", message="; ".join(dict.fromkeys(problems)))
    else:
        result["message"] = f"attributes {attrs or 'defaults'}"
    result["exec_type"] = exec_type
    return result


def main(argv: list[str]) -> int:
    from opforge.runtime.core import Core
    from opforge.testing.opcheck import resolve_target

    job = json.loads(Path(argv[0]).read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        core = Core()
        for ext in job.get("extensions", []):
            core.add_extension(ext)
    op = resolve_target(job["op"], core.plugins)[0]
    device = job["device"]
    with open(argv[1], "a", encoding="utf-8") as f:
        for case_id, case in zip(job["ids"], job["cases"]):
            _write(f, {"start": case_id})
            try:
                rec = run_case(core, op, device, case)
            except OpforgeError as err:
                rec = {"dtype": case["dtype"], "shape": shape_label(case), "status": "failed",
                       "message": f"{type(err).__name__}: {err}"}
            except Exception as err:  # noqa: BLE001 - a plugin's kernel may raise anything; report it as this case's
                rec = {"dtype": case["dtype"], "shape": shape_label(case), "status": "failed",
                       "message": f"unexpected {type(err).__name__}: {err}"}
            _write(f, {"id": case_id, **rec})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
