"""Per-layer profile of opforge CPU against ONNX Runtime (and OpenVINO by node type), f32.

bench_cpu.py ``--profile`` and bench_hotspots.py ``--profile`` rank node *types*; ONNX Runtime
fuses Conv + activation (+ Add) into one NCHWc Conv, so a type ranking does not say where a model
loses to it. This script profiles both engines on one model and charges each executed step to the
ONNX node it comes from, then sums the steps into groups (the first ``--depth`` components of the
node's "/"-path, e.g. ``/layers/layers.8/layers.8.1`` for one MNASNet block), so the same layers of
both engines meet in one row:

- opforge: ``ENABLE_PROFILING``; an executed step is named after the last operation it fused,
  ``<onnx node>/<our op type>``; its exec type (the oneDNN implementation or our kernel) is shown;
- ONNX Runtime: ``SessionOptions.enable_profiling``; each ``<node>_kernel_time`` event's ``dur``
  (us); NCHWc nodes are named ``<output tensor>_nchwc`` and are charged to the tensor's producer,
  its reorders (``ReorderInput`` / ``ReorderOutput``) to the node that reads / writes them;
- OpenVINO (``--openvino``): per node type only, as bench_cpu.py ``--profile``.

Each engine runs ``--runs`` profiled runs after 3 warm-up runs; a step's time is its median over
the runs (at 2 threads a step's time includes its wait for the workers, as in the engines' own
profilers). Totals are the sums of those medians, so they read below the wall-clock latency.

    python plugin-cpu/benchmarks/bench_node_compare.py tv_mnasnet1_0 --models-dir /tmp/real-models-2 --threads 1 2
    python plugin-cpu/benchmarks/bench_node_compare.py mobilenet_v2 --depth 3 --steps
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cpu import host_header, models_in, profile_openvino, top_node_types
from engine_process import EngineProcess, interleaved_medians_remote

T = TypeVar("T")


def in_child(fn: Callable[..., T], *args: Any) -> T:
    """fn(*args) in a fresh (spawned) process: each profile runs in its own, so no engine's
    thread pool or earlier thread count is left in the process of another's (bench_cpu.py times
    each engine in its own process for the same reason). On the Zen 5 VM, 2-thread profiles still
    read as slow as 1-thread ones in some minutes, for both engines alike (the VM's second vCPU
    busy elsewhere): compare the engines' 2-thread sums of one run only, and check with --wall."""
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def wall_medians(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int) -> dict[str, float]:
    """Unprofiled latency (ms) of opforge f32 and ONNX Runtime, each in its own process, in
    alternating rounds of 4 runs: what the profiles' sums leave out (the steps' dispatch, the
    waits between them) is the difference."""
    procs = {"opforge": EngineProcess("opforge"), "onnxruntime": EngineProcess("onnxruntime")}
    try:
        procs["opforge"].prepare(path, feeds, threads, "f32")
        procs["onnxruntime"].prepare(path, feeds, threads)
        return interleaved_medians_remote(procs, runs, max(1, runs // 4))
    finally:
        for proc in procs.values():
            proc.close()


def onnx_index(path: Path) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(output tensor -> producing node, node -> op type, node names in graph order) of a model."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    producer: dict[str, str] = {}
    op_type: dict[str, str] = {}
    order: list[str] = []
    for i, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{i}"
        order.append(name)
        op_type[name] = node.op_type
        for out in node.output:
            producer[out] = name
    return producer, op_type, order


def onnx_node_of(step: str, producer: dict[str, str], op_type: dict[str, str]) -> str:
    """The ONNX node an engine's step name comes from (the step name itself when none matches)."""
    if step in op_type:
        return step
    # ONNX Runtime: "<output tensor>_nchwc" for its NCHWc nodes
    for tensor in (step.removesuffix("_nchwc"), step):
        if tensor in producer:
            return producer[tensor]
    # opforge "<onnx node>/<our op type>", ONNX Runtime's fusions "<onnx node>/QuickGeluFusion/":
    # the longest "/"-prefix that is a node
    head = step.rstrip("/")
    while "/" in head:
        head = head.rsplit("/", 1)[0]
        if head in op_type:
            return head
    return step


def group_of(node: str, depth: int) -> str:
    parts = node.split("/")
    # "/a/b/c" splits into ["", "a", "b", "c"]: keep the leading "" plus depth components
    return "/".join(parts[: depth + 1]) if node.startswith("/") else "/".join(parts[:depth])


def profile_opforge_steps(path: Path, feeds: dict[str, np.ndarray], threads: int,
                          runs: int) -> list[tuple[str, str, str, float]]:
    """(step name, our op type, exec type, median ms) of opforge f32's executed steps."""
    import opforge

    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    for _ in range(3):
        req.infer(feeds)
    times: dict[str, list[float]] = defaultdict(list)
    info: dict[str, tuple[str, str]] = {}
    order: list[str] = []
    for _ in range(runs):
        req.infer(feeds)
        for r in req.get_profiling_info():
            if r.status != "EXECUTED":
                continue
            if r.node_name not in info:
                info[r.node_name] = (r.node_type, r.exec_type)
                order.append(r.node_name)
            times[r.node_name].append(r.real_time_ms)
    return [(n, *info[n], statistics.median(times[n])) for n in order]


def profile_ort_steps(path: Path, feeds: dict[str, np.ndarray], threads: int,
                      runs: int) -> list[tuple[str, str, float]]:
    """(node name, op type, median ms) of ONNX Runtime's kernels (its own profiler's ``dur``)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    with tempfile.TemporaryDirectory() as tmp:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "ort")
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        for _ in range(3 + runs):
            sess.run(None, feeds)
        events = json.loads(Path(sess.end_profiling()).read_text())
    kernel = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    # the first 3 runs' events are the warm-up (an event list is in run order)
    per_run = len(kernel) // (3 + runs)
    times: dict[str, list[float]] = defaultdict(list)
    kinds: dict[str, str] = {}
    order: list[str] = []
    for e in kernel[3 * per_run:]:
        name = e["name"][: -len("_kernel_time")]
        if name not in kinds:
            kinds[name] = e["args"].get("op_name", "?")
            order.append(name)
        times[name].append(e["dur"] / 1e3)
    return [(n, kinds[n], statistics.median(times[n])) for n in order]


def charge_reorders(steps: list[tuple[str, str, float]], producer: dict[str, str],
                    op_type: dict[str, str]) -> list[tuple[str, str, float]]:
    """ONNX Runtime's ReorderInput / ReorderOutput steps, charged to the next / previous step's node."""
    reorder = ("ReorderInput", "ReorderOutput")
    nodes = [onnx_node_of(n, producer, op_type) for n, _, _ in steps]
    out: list[tuple[str, str, float]] = []
    for i, (_, kind, ms) in enumerate(steps):
        node = nodes[i]
        # the nearest step that is not a reorder, after (ReorderInput) or before (ReorderOutput)
        near = range(i + 1, len(steps)) if kind == "ReorderInput" else range(i - 1, -1, -1)
        if kind in reorder:
            node = next((nodes[j] for j in near if steps[j][1] not in reorder), node)
        out.append((node, kind, ms))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="onnx/<model>.onnx of --models-dir")
    ap.add_argument("--models-dir", type=Path, default=Path("/tmp/bench-models"))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=20, help="profiled runs per engine (default 20)")
    ap.add_argument("--depth", type=int, default=3, help="path components a group keeps (default 3)")
    ap.add_argument("--steps", action="store_true", help="also print opforge's steps with their exec types")
    ap.add_argument("--openvino", action="store_true", help="also OpenVINO f32's top node types")
    ap.add_argument("--wall", type=int, default=0, metavar="RUNS",
                    help="also time RUNS unprofiled runs of each engine (own processes, rounds of 4)")
    args = ap.parse_args(argv)

    found = models_in(args.models_dir)
    if args.model not in found:
        ap.error(f"no {args.model} in {args.models_dir}")
    path, feeds = found[args.model]
    producer, op_type, order = onnx_index(path)
    rank = {n: i for i, n in enumerate(order)}
    print(host_header())
    for threads in args.threads:
        of_steps = in_child(profile_opforge_steps, path, feeds, threads, args.runs)
        ort_steps = charge_reorders(in_child(profile_ort_steps, path, feeds, threads, args.runs), producer, op_type)
        of_group: dict[str, float] = defaultdict(float)
        ort_group: dict[str, float] = defaultdict(float)
        of_kinds: dict[str, set[str]] = defaultdict(set)
        first: dict[str, int] = {}
        for name, kind, exec_type, ms in of_steps:
            node = onnx_node_of(name, producer, op_type)
            g = group_of(node, args.depth)
            of_group[g] += ms
            of_kinds[g].add(f"{kind}:{exec_type}")
            first[g] = min(first.get(g, 1 << 30), rank.get(node, 1 << 30))
        for node, _, ms in ort_steps:
            g = group_of(node, args.depth)
            ort_group[g] += ms
            first[g] = min(first.get(g, 1 << 30), rank.get(node, 1 << 30))
        of_total, ort_total = sum(of_group.values()), sum(ort_group.values())
        print(f"\n# {args.model} f32, {threads} thread(s), {args.runs} profiled runs: opforge {of_total:.3f} ms, "
              f"ONNX Runtime {ort_total:.3f} ms (sums of per-step medians)")
        if args.wall:
            wall = wall_medians(path, feeds, threads, args.wall)
            of_wall, ort_wall = wall["opforge"], wall["onnxruntime"]
            print(f"# unprofiled, {args.wall} runs: opforge {of_wall:.3f} ms, ONNX Runtime {ort_wall:.3f} ms "
                  f"(ratio {of_wall / ort_wall:.3f}); outside the steps: opforge {of_wall - of_total:+.3f}, "
                  f"ONNX Runtime {ort_wall - ort_total:+.3f}")
        print(f"{'group':58s} {'opforge':>8s} {'ORT':>8s} {'diff':>8s}  opforge steps")
        for g in sorted(set(of_group) | set(ort_group), key=lambda k: (first.get(k, 1 << 30), k)):
            a, b = of_group.get(g, 0.0), ort_group.get(g, 0.0)
            print(f"{g[-58:]:58s} {a:8.3f} {b:8.3f} {a - b:+8.3f}  {', '.join(sorted(of_kinds.get(g, set())))}")
        worst = sorted(set(of_group) | set(ort_group), key=lambda k: -(of_group.get(k, 0.0) - ort_group.get(k, 0.0)))
        print("most behind: " + ", ".join(f"{g} {of_group.get(g, 0.0) - ort_group.get(g, 0.0):+.3f}" for g in worst[:8]))
        by_kind: dict[str, float] = defaultdict(float)
        for _, kind, exec_type, ms in of_steps:
            by_kind[f"{kind} {exec_type}"] += ms
        print("opforge by exec type: " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])))
        ort_kind: dict[str, float] = defaultdict(float)
        for _, kind, ms in ort_steps:
            ort_kind[kind] += ms
        print("ONNX Runtime by op: " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(ort_kind.items(), key=lambda kv: -kv[1])))
        if args.openvino:
            rows = in_child(profile_openvino, path, feeds, threads)
            print("OpenVINO f32: " + top_node_types(rows, 8))
        if args.steps:
            for name, kind, exec_type, ms in of_steps:
                print(f"  {ms:8.4f}  {kind:18s} {exec_type:28s} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
