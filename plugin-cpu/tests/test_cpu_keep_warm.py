"""The SCHED_IDLE spinners that keep the vCPUs of a multi-threaded inference awake
(csrc/core/keep_warm.hpp): started by a 2-thread run only, idle-class, asleep once the inference
and its 2 ms tail are over, and without effect on the results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
sys.path.insert(0, str(Path(__file__).parent))
from onnx_graph import OnnxGraph  # noqa: E402

SCHED_IDLE = 5

CHILD = r"""
import json, os, sys, time
import numpy as np, opforge

def threads():
    # (tid, scheduling policy, CPU ticks) of every thread of this process
    out = []
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = open(f"/proc/self/task/{tid}/stat").read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        out.append((int(tid), int(fields[38]), int(fields[11]) + int(fields[12])))
    return out

core = opforge.Core()
cm = core.compile_model(core.read_model(sys.argv[1]), "CPU", {"INFERENCE_NUM_THREADS": int(sys.argv[2])})
x = np.load(sys.argv[3])
req = cm.create_infer_request()
outs = [np.asarray(req.infer({"x": x})[0])]
for _ in range(20):
    req.infer({"x": x})
outs.append(np.asarray(req.infer({"x": x})[0]))
np.save(sys.argv[4], outs[0])
time.sleep(0.2)  # past the tail: the spinners must be asleep now
idle_before = {t: ticks for t, pol, ticks in threads() if pol == 5}
time.sleep(0.5)
idle_after = {t: ticks for t, pol, ticks in threads() if pol == 5}
spun = sum(idle_after.get(t, 0) - v for t, v in idle_before.items())
print(json.dumps({"idle_threads": len(idle_before), "ticks_while_idle": spun,
                  "repeat_equal": bool(np.array_equal(outs[0], outs[1]))}))
"""


def conv_model(path: Path) -> Path:
    g = OnnxGraph(seed=3)
    w = g.rng.standard_normal((32, 16, 3, 3)) * 0.1
    h = g.node("Conv", ["x", g.const(w), g.const(np.zeros(32))], pads=[1, 1, 1, 1])
    y = g.node("Relu", [h])
    return g.save(path, (1, 16, 40, 40), [y])  # type: ignore[no-any-return]


def run_child(tmp_path: Path, threads: int, env: dict[str, str]) -> tuple[dict[str, object], np.ndarray]:
    model = conv_model(tmp_path / "m.onnx")
    x = np.random.default_rng(0).standard_normal((1, 16, 40, 40)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out_path = tmp_path / f"y{threads}{len(env)}.npy"
    res = subprocess.run([sys.executable, "-c", CHILD, str(model), str(threads), str(tmp_path / "x.npy"), str(out_path)],
                         env=dict(os.environ, **env), capture_output=True, text=True, timeout=180, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1]), np.load(out_path)


def test_two_threads_start_idle_class_spinners_that_sleep_when_idle(tmp_path: Path) -> None:
    info, _ = run_child(tmp_path, 2, {})
    assert info["idle_threads"] >= 1, info
    # asleep after the tail: at most a tick or two of scheduler accounting noise in 0.5 s
    assert int(info["ticks_while_idle"]) <= 2, info  # type: ignore[call-overload]
    assert info["repeat_equal"], info


def test_one_thread_and_the_switch_start_none(tmp_path: Path) -> None:
    one, _ = run_child(tmp_path, 1, {})
    off, _ = run_child(tmp_path, 2, {"OPFORGE_CPU_KEEP_WARM": "0"})
    assert one["idle_threads"] == 0, one
    assert off["idle_threads"] == 0, off


#: three cold starts (the spinners asleep before each run), then the cold-start wait counters
#: and the build's threading runtime (keep_warm.cpp, "Why the TBB build waits")
COLD_CHILD = r"""
import json, sys, time
import numpy as np, opforge
from opforge_cpu._loader import load_core

core = opforge.Core()
cm = core.compile_model(core.read_model(sys.argv[1]), "CPU", {"INFERENCE_NUM_THREADS": 2})
x = np.load(sys.argv[2])
req = cm.create_infer_request()
outs = []
for _ in range(3):
    time.sleep(0.05)  # past the 2 ms tail: the spinners sleep, the other vCPU may halt
    outs.append(np.asarray(req.infer({"x": x})[0]).copy())
c = load_core()
print(json.dumps({"runtime": c.threading_runtime(), **c.keep_warm_waits(),
                  "equal": all(bool(np.array_equal(outs[0], o)) for o in outs)}))
"""


def cold_starts(tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    model = conv_model(tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((1, 16, 40, 40)).astype(np.float32))
    res = subprocess.run([sys.executable, "-c", COLD_CHILD, str(model), str(tmp_path / "x.npy")],
                         env=dict(os.environ, **env), capture_output=True, text=True, timeout=180, check=True)
    info: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return info


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs a second CPU for a spinner to wait for")
def test_tbb_build_waits_for_a_spinner_on_another_cpu_at_a_cold_start(tmp_path: Path) -> None:
    on = cold_starts(tmp_path, {})
    off = cold_starts(tmp_path, {"OPFORGE_CPU_KEEP_WARM_WAIT": "0"})
    assert on["equal"] and off["equal"], (on, off)
    assert off["checked"] == 0 and off["waited"] == 0 and off["timed_out"] == 0, off
    if on["runtime"] == "tbb":
        # every cold start looked for a spinner awake on another CPU. Whether it then had to
        # wait depends on that CPU, not on us: a spinner starved by another process (a parallel
        # test worker) is still awake, and its vCPU is not halted, so no wait is needed; a woken
        # one behind another process's thread times out (100 us). On an idle 2-vCPU VM most
        # cold starts wait (stop 27's CI run: 2 of 3 on an Intel host, with 2 timed out), so
        # the count of waits is not something to assert on.
        assert on["checked"] >= 3, on
        assert on["waited"] <= on["checked"], on
        assert on["timed_out"] <= on["waited"], on
    else:
        # the OpenMP build does not wait: its workers are placed again at every region
        assert on["checked"] == 0 and on["waited"] == 0 and on["timed_out"] == 0, on


def test_results_do_not_depend_on_the_spinners(tmp_path: Path) -> None:
    _, on = run_child(tmp_path, 2, {})
    _, off = run_child(tmp_path, 2, {"OPFORGE_CPU_KEEP_WARM": "0"})
    np.testing.assert_array_equal(on, off)
