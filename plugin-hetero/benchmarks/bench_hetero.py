"""HETERO benchmarks.

1. Overhead: a ResNet-18-shaped model split in two (first half on one device, second half on the
   other, by manual affinity), HETERO latency against running the same two compiled sub-graphs
   directly one after the other with the NumPy hand-off done by hand. Target: <= 5 %.
2. Policies: a model whose activation the first device lacks after every block, so the greedy
   policy ping-pongs; the cost-aware policy against it, for a cheap and an expensive link.

Real devices are used when two are installed and available (e.g. GPU and CPU); otherwise two
emulated devices stand in, and the output says so. The emulated devices compute with the NumPy
references and add a modelled delay: ACCEL is 10x faster per FLOP but pays for every tensor it
receives or returns (like a discrete card behind a bus); HOST pays nothing for transfers.

    .venv/bin/python plugin-hetero/benchmarks/bench_hetero.py [--repeat 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import opforge
import opforge_hetero.plugin
from opforge.graph import Model, Node, Value
from opforge.op import STRUCTURAL
from opforge.plugins import PluginInfo, PluginSystem
from opforge.runtime import CompileContext, Device, Executable, PropertySpec
from opforge.runtime.properties import COMMON_PROPERTIES
from opforge_hetero import HeteroFallbackWarning
from opforge_hetero.cost import node_flops
from opforge_hetero.partition import Source


# ============================================================================ emulated devices
class EmulatedExecutable(Executable):
    """Runs NumPy references, then sleeps for what the modelled device would have taken."""

    def __init__(self, model: Model, gflops: float, link_gbps: float) -> None:
        self.order = model.get_ordered_ops()
        self.params = [p.id for p in model.parameters]
        self.results = [r.id for r in model.results]
        self.flops = sum(node_flops(n) for n in self.order if n.type_name not in STRUCTURAL)
        self.gflops = gflops
        self.link_gbps = link_gbps

    def infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        t0 = time.perf_counter()
        values: dict[int, list[np.ndarray]] = dict(zip(self.params, ([a] for a in inputs)))
        for n in self.order:
            if n.id in values:
                continue
            ins = [values[i.node.id][i.index] for i in n.inputs]
            values[n.id] = ins[:1] if n.type_name == "Result" else list(n.op.evaluate(n.attrs, ins))
        outs = [values[r][0] for r in self.results]
        modelled = self.flops / (self.gflops * 1e9)
        if self.link_gbps > 0:
            moved = sum(a.nbytes for a in inputs) + sum(a.nbytes for a in outs)
            modelled += moved / (self.link_gbps * 1e9) + 20e-6 * (len(inputs) + len(outs))
        # The emulated device takes max(modelled, real) time: with speeds chosen so the modelled
        # time dominates, timings reflect the modelled hardware, not NumPy on a shared machine.
        rest = modelled - (time.perf_counter() - t0)
        if rest > 0:
            time.sleep(rest)
        return outs


class EmulatedDevice(Device):
    property_specs = (*COMMON_PROPERTIES, PropertySpec("EMU_GFLOPS", float, 10.0, minimum=1e-6),
                      PropertySpec("EMU_LINK_GBPS", float, 0.0, minimum=0))

    def __init__(self, name: str, missing: frozenset[str]) -> None:
        super().__init__(name)
        self.missing = missing

    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        return {n.name: self.name for n in model.get_ordered_ops() if n.type_name not in self.missing}

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        return EmulatedExecutable(model, float(ctx.config["EMU_GFLOPS"]), float(ctx.config["EMU_LINK_GBPS"]))


class EmulatedPlugin:
    @opforge.hookimpl
    def opforge_register_devices(self, register: Any) -> None:
        register("ACCEL", lambda: EmulatedDevice("ACCEL", frozenset({"Swish"})))
        register("HOST", lambda: EmulatedDevice("HOST", frozenset()))


#: slow enough that the modelled time dominates the NumPy work (see EmulatedExecutable)
EMU_SPEEDS = {"ACCEL": 4.0, "HOST": 0.4}
EMU_LINK_GBPS = 0.25
EMULATED_CONFIG = {"DEVICE_PROPERTIES": {"ACCEL": {"EMU_GFLOPS": EMU_SPEEDS["ACCEL"], "EMU_LINK_GBPS": EMU_LINK_GBPS},
                                         "HOST": {"EMU_GFLOPS": EMU_SPEEDS["HOST"]}}}


# ============================================================================ models
_names: dict[str, int] = {}


def _name(prefix: str) -> str:
    _names[prefix] = _names.get(prefix, 0) + 1
    return f"{prefix}{_names[prefix]}"


def conv(x: Value, cin: int, cout: int, k: int, stride: int, rng: np.random.Generator) -> Node:
    w = opforge.op("Constant", value=(rng.standard_normal((cout, cin, k, k)) * (2 / (cin * k * k)) ** 0.5
                                      ).astype(np.float32), name=_name("w"))
    pad = k // 2
    c = opforge.op("Convolution", x, w, strides=[stride, stride], pads_begin=[pad, pad], pads_end=[pad, pad],
                   dilations=[1, 1], name=_name("conv"))
    b = opforge.op("Constant", value=np.zeros((1, cout, 1, 1), np.float32), name=_name("b"))
    return opforge.op("Add", c, b, name=_name("bias"))


def resnet18_like(size: int, activation: str = "Relu", seed: int = 0) -> Model:
    """ResNet-18's layer structure (7x7 stem, max-pool, 4 stages of 2 basic blocks, global pool,
    fully connected) with random weights; ``activation`` after every block's first conv."""
    rng = np.random.default_rng(seed)
    _names.clear()
    x = opforge.op("Parameter", element_type="f32", shape=[1, 3, size, size], name="input")
    x.output(0).set_names(["input"])
    h: Value = opforge.op("Relu", conv(x, 3, 64, 7, 2, rng), name="stem_relu")
    h = opforge.op("MaxPool", h, strides=[2, 2], kernel=[3, 3], pads_begin=[1, 1], pads_end=[1, 1],
                   dilations=[1, 1], name="pool").output(0)  # output 1 holds the indices
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            stride = 2 if (block == 0 and stage > 0) else 1
            a = opforge.op(activation, conv(h, cin, cout, 3, stride, rng), name=f"s{stage}b{block}_act")
            a = conv(a, cout, cout, 3, 1, rng)
            skip = h if (stride == 1 and cin == cout) else conv(h, cin, cout, 1, stride, rng)
            h = opforge.op("Relu", opforge.op("Add", a, skip, name=f"s{stage}b{block}_add"), name=f"s{stage}b{block}_out")
            cin = cout
    axes = opforge.op("Constant", value=np.array([2, 3], np.int64), name="axes")
    pooled = opforge.op("ReduceMean", h, axes, keep_dims=False, name="gap")
    fc = opforge.op("Constant", value=(rng.standard_normal((512, 1000)) * 0.02).astype(np.float32), name="fc_w")
    logits = opforge.op("MatMul", pooled, fc, name="fc")
    logits.output(0).set_names(["logits"])
    return Model([logits], [x], name=f"resnet18_like_{activation.lower()}")


def mobilenet_like(size: int, activation: str = "Swish", seed: int = 0) -> Model:
    """MobileNetV2/V3's inverted residual blocks: 1x1 expand, ``activation``, 3x3 depthwise,
    ``activation``, 1x1 project (+ skip). Little compute per byte of activation: where the
    first device lacks ``activation``, transfers are what greedy placement pays for."""
    rng = np.random.default_rng(seed)
    _names.clear()
    x = opforge.op("Parameter", element_type="f32", shape=[1, 3, size, size], name="input")
    x.output(0).set_names(["input"])
    h: Value = opforge.op("Relu", conv(x, 3, 16, 3, 2, rng), name="stem_relu")
    cin = 16
    for i, (cout, stride) in enumerate(((16, 1), (24, 2), (24, 1), (32, 2), (32, 1), (64, 2))):
        mid = cin * 4
        e = opforge.op(activation, conv(h, cin, mid, 1, 1, rng), name=f"b{i}_act1")
        w = opforge.op("Constant", value=(rng.standard_normal((mid, 1, 1, 3, 3)) * 0.3).astype(np.float32),
                       name=_name("dw_w"))
        d = opforge.op("GroupConvolution", e, w, strides=[stride, stride], pads_begin=[1, 1], pads_end=[1, 1],
                       dilations=[1, 1], name=f"b{i}_dw")
        d = opforge.op(activation, d, name=f"b{i}_act2")
        p = conv(d, mid, cout, 1, 1, rng)
        h = opforge.op("Add", p, h, name=f"b{i}_add") if (stride == 1 and cin == cout) else p
        cin = cout
    axes = opforge.op("Constant", value=np.array([2, 3], np.int64), name="axes")
    pooled = opforge.op("ReduceMean", h, axes, keep_dims=False, name="gap")
    fc = opforge.op("Constant", value=(rng.standard_normal((cin, 100)) * 0.1).astype(np.float32), name="fc_w")
    logits = opforge.op("MatMul", pooled, fc, name="fc")
    logits.output(0).set_names(["logits"])
    return Model([logits], [x], name=f"mobilenet_like_{activation.lower()}")


def split_in_two(model: Model, first: str, second: str) -> None:
    """Affinity: everything up to the end of stage 2 on ``first``, the rest on ``second``."""
    order = model.get_ordered_ops()
    cut = next(i for i, n in enumerate(order) if n.name == "s1b1_out")
    for i, n in enumerate(order):
        n.rt_info["affinity"] = first if i <= cut else second


# ============================================================================ measuring
def timed(fns: Sequence[Callable[[], Any]], repeat: int) -> list[dict[str, float]]:
    """Min and median ms of each function, run interleaved so that load from other processes on
    a shared machine hits all of them alike."""
    for fn in fns:
        fn()
        fn()  # warm-up: thread pools, caches
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    return [{"min_ms": round(min(t) * 1e3, 3), "median_ms": round(statistics.median(t) * 1e3, 3)} for t in times]


def direct_runner(compiled: opforge.CompiledModel, x: np.ndarray) -> Callable[[], Any]:
    """Run HETERO's own compiled sub-graphs directly, in order, handing arrays over by hand."""
    exe = compiled._executable
    reqs = [s.compiled.create_infer_request() for s in exe.subgraphs]

    def value(src: Source, outs: list[list[np.ndarray]]) -> np.ndarray:
        if src.kind == "input":
            return x
        if src.kind == "const":
            return np.asarray(src.value)
        return outs[src.index][src.port]

    def run() -> list[np.ndarray]:
        outs: list[list[np.ndarray]] = []
        for s, req in zip(exe.subgraphs, reqs):
            outs.append(list(req.infer([value(src, outs) for src in s.inputs]).to_tuple()))
        return [value(src, outs) for src in exe.outputs]

    return run


def bench_overhead(core: opforge.Core, devices: tuple[str, str], size: int, repeat: int,
                   config: dict[str, Any]) -> dict[str, Any]:
    model = resnet18_like(size)
    split_in_two(model, *devices)
    x = np.random.default_rng(1).standard_normal((1, 3, size, size)).astype(np.float32)
    rows: dict[str, Any] = {}
    for mode in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HeteroFallbackWarning)
            compiled = core.compile_model(model, f"HETERO:{devices[0]},{devices[1]}", {**config, "HETERO_ASYNC": mode})
        assert_same = direct_runner(compiled, x)()
        np.testing.assert_allclose(compiled([x])[0], assert_same[0], rtol=1e-4, atol=1e-4)
        hetero, direct = timed([lambda c=compiled: c([x]), direct_runner(compiled, x)], repeat)
        rows["async" if mode else "sync"] = {
            "submodels": compiled.get_property("HETERO_NUMBER_OF_SUBMODELS"),
            "transfers": compiled.get_property("HETERO_NUMBER_OF_TRANSFERS"),
            "hetero": hetero, "direct": direct,
            "overhead_pct_min": round((hetero["min_ms"] - direct["min_ms"]) / direct["min_ms"] * 100, 2),
            "overhead_pct_median": round((hetero["median_ms"] - direct["median_ms"]) / direct["median_ms"] * 100, 2),
        }
    return rows


def bench_policies(core: opforge.Core, devices: tuple[str, str], size: int, repeat: int,
                   device_config: Callable[[float], dict[str, Any]], activation: str,
                   speeds: dict[str, float], links: dict[str, float]) -> dict[str, Any]:
    """Greedy against cost on models with ``activation`` (missing on the first device) in every
    block, for each link speed; ``device_config(gbps)`` gives the HETERO config of the devices
    for that link (the emulated ACCEL then really pays that bandwidth)."""
    x = np.random.default_rng(2).standard_normal((1, 3, size, size)).astype(np.float32)
    out: dict[str, Any] = {}
    ref: dict[str, np.ndarray] = {}
    builders: tuple[tuple[str, Callable[[int, str], Model]], ...] = (
        ("resnet18-like", resnet18_like), ("mobilenet-like", mobilenet_like))
    for label, builder in builders:
        model = builder(size, activation)
        for link_label, gbps in links.items():
            config = {**device_config(gbps), "HETERO_TRANSFER_GBPS": gbps, "HETERO_TRANSFER_LATENCY_US": 20.0,
                      "HETERO_DEVICE_GFLOPS": {d: speeds[d] for d in devices}}
            row: dict[str, Any] = {}
            compiled_by: dict[str, opforge.CompiledModel] = {}
            for policy in ("greedy", "cost"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", HeteroFallbackWarning)
                    compiled = core.compile_model(model, f"HETERO:{devices[0]},{devices[1]}",
                                                  {**config, "PARTITION_POLICY": policy})
                y = compiled([x])[0]
                np.testing.assert_allclose(y, ref.setdefault(label, y), rtol=1e-4, atol=1e-4)
                p = compiled.get_property("HETERO_PLACEMENT")
                compiled_by[policy] = compiled
                row[policy] = {"submodels": len(p.subgraphs), "transfers": len(p.transfers),
                               "transfer_kib": round(p.transfer_bytes() / 1024, 1), "per_device": p.counts()}
            t_greedy, t_cost = timed([lambda c=compiled_by["greedy"]: c([x]),
                                      lambda c=compiled_by["cost"]: c([x])], repeat)
            row["greedy"].update(t_greedy)
            row["cost"].update(t_cost)
            row["cost_speedup"] = round(t_greedy["min_ms"] / t_cost["min_ms"], 3)
            out[f"{label}, {link_label}"] = row
    return out


def emulated_link(gbps: float) -> dict[str, Any]:
    return {"DEVICE_PROPERTIES": {"ACCEL": {"EMU_GFLOPS": EMU_SPEEDS["ACCEL"], "EMU_LINK_GBPS": gbps},
                                  "HOST": {"EMU_GFLOPS": EMU_SPEEDS["HOST"]}}}


def real_devices(core: opforge.Core) -> list[str]:
    return [d for d in core.available_devices if d.split(".")[0] != "HETERO"]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--size", type=int, default=0, help="input height/width (default 224 real, 64 emulated)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--emulated", action="store_true", help="use the emulated devices even if real ones exist")
    args = ap.parse_args(argv)
    report: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # broken unrelated plugins must not clutter the table
        core = opforge.Core()
        found = real_devices(core)
    if len(found) >= 2 and not args.emulated:
        # The accelerator first, the CPU as the fallback, as one would write HETERO:GPU,CPU.
        cpu = next((d for d in found if d.split(".")[0] == "CPU"), found[-1])
        devices = (next(d for d in found if d != cpu), cpu)
        config: dict[str, Any] = {}
        size = args.size or 224
        report["devices"] = f"real: {devices[0]}, {devices[1]}"
    else:
        why = f"only {', '.join(found) or 'no device'} available" if not args.emulated else "--emulated"
        core, devices, config, size = _emulated(size=args.size or 64)
        report["devices"] = f"emulated ACCEL, HOST ({why}; two real devices are needed)"
    # Greedy vs cost needs an op the first device lacks; only the emulated pair guarantees one.
    policy_core, policy_devices, _, policy_size = _emulated(size=args.size or 64)
    report["policy_devices"] = ("emulated ACCEL (no Swish kernel, 10x faster, pays for transfers), "
                                "HOST (runs everything)")
    print(f"devices: {report['devices']}; policies on {report['policy_devices']}")
    report["overhead"] = bench_overhead(core, devices, size, args.repeat, config)
    for mode, row in report["overhead"].items():
        h, d = row["hetero"], row["direct"]
        print(f"overhead ({mode:5}) resnet18-like {size}x{size} split in two ({row['submodels']} sub-graphs, "
              f"{row['transfers']} transfer): HETERO min {h['min_ms']:.2f} / median {h['median_ms']:.2f} ms, "
              f"sub-graphs run directly min {d['min_ms']:.2f} / median {d['median_ms']:.2f} ms -> "
              f"{row['overhead_pct_min']:+.2f} % (min), {row['overhead_pct_median']:+.2f} % (median)")
    report["policies"] = bench_policies(policy_core, policy_devices, policy_size, args.repeat, emulated_link,
                                        "Swish", EMU_SPEEDS, {"link 2 GB/s": 2.0, "link 0.25 GB/s": EMU_LINK_GBPS})
    for label, row in report["policies"].items():
        g, c = row["greedy"], row["cost"]
        print(f"policies, {label}, Swish missing on {policy_devices[0]}: greedy {g['min_ms']:.1f} ms "
              f"({g['submodels']} sub-graphs, {g['transfers']} transfers, {g['transfer_kib']} KiB) vs cost "
              f"{c['min_ms']:.1f} ms ({c['submodels']} sub-graphs, {c['transfers']} transfers, {c['transfer_kib']} KiB)"
              f" -> cost {row['cost_speedup']:.2f}x; cost placed {c['per_device']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    return 0


def _emulated(size: int) -> tuple[opforge.Core, tuple[str, str], dict[str, Any], int]:
    ps = PluginSystem(autoload=False)
    ps.register_module(EmulatedPlugin(), PluginInfo("emulated_devices", "bench", "0"))
    ps.register_module(opforge_hetero.plugin, PluginInfo("hetero", "opforge-hetero", "0.1.0"))
    return opforge.Core(ps), ("ACCEL", "HOST"), dict(EMULATED_CONFIG), size


if __name__ == "__main__":
    sys.exit(main())
