"""Which opforge device a Ray worker uses, from the resources Ray gave it.

``CPU``: the worker runs with ``INFERENCE_NUM_THREADS`` equal to the CPUs Ray assigned it, so two
workers with ``num_cpus=1`` on a 2-core node use one core each instead of fighting over both.

``GPU``/``VPU`` without an index: the accelerator Ray assigned the worker. Ray exports the
assigned GPU ids in ``CUDA_VISIBLE_DEVICES``, which hides every other GPU from the process and
numbers the visible ones from 0; a worker given one GPU therefore uses ``GPU.0`` (the first
visible one), unless ``RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES`` keeps every GPU visible, in
which case the id itself is the index. A VPU (a custom accelerator) is named by its id.
A device with an index (``GPU.1``) or a meta device (``HETERO:GPU,CPU``) is used as given.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from opforge.errors import DeviceUnavailableError


@dataclasses.dataclass(frozen=True)
class Placement:
    device: str
    config: dict[str, Any]
    reason: str


def worker_resources() -> tuple[dict[str, float], dict[str, list[str]]]:
    """``(assigned resources, accelerator ids)`` of the calling Ray worker; empty outside Ray."""
    try:
        import ray
    except ImportError:
        return {}, {}
    if not ray.is_initialized():
        return {}, {}
    ctx = ray.get_runtime_context()
    if ctx.worker.mode != ray.WORKER_MODE:  # the driver has no assigned resources
        return {}, {}
    assigned = {k: float(v) for k, v in ctx.get_assigned_resources().items()}
    ids = {k: [str(i) for i in v] for k, v in ctx.get_accelerator_ids().items() if v}
    return assigned, ids


def place(device: str, config: Mapping[str, Any] | None, assigned: Mapping[str, float],
          accelerator_ids: Mapping[str, list[str]], env: Mapping[str, str] | None = None) -> Placement:
    """The device name and compile config for a worker with these resources."""
    env = os.environ if env is None else env
    cfg = dict(config or {})
    name = device.strip().upper()
    if name == "CPU":
        if "INFERENCE_NUM_THREADS" in cfg:
            return Placement("CPU", cfg, f"CPU with INFERENCE_NUM_THREADS={cfg['INFERENCE_NUM_THREADS']} as configured")
        cpus = assigned.get("CPU", 0.0)
        if cpus <= 0:
            return Placement("CPU", cfg, "CPU with every core (no CPUs assigned by Ray)")
        # A fractional share (num_cpus=0.5) still needs one thread.
        cfg["INFERENCE_NUM_THREADS"] = max(1, int(cpus))
        return Placement("CPU", cfg, f"CPU with {cfg['INFERENCE_NUM_THREADS']} thread(s): Ray assigned {cpus:g} CPU(s)")
    if name in ("GPU", "VPU"):
        ids = list(accelerator_ids.get(name, []))
        if not ids:
            hint = "num_gpus=1" if name == "GPU" else "resources={'VPU': 1} with a VPU accelerator manager"
            raise DeviceUnavailableError(
                f"device '{device}': Ray assigned this worker no {name}; request one ({hint} in "
                f"map_batches or the deployment's ray_actor_options) or name the device with its index, "
                f"e.g. '{name}.0'"
            )
        if name == "GPU" and "CUDA_VISIBLE_DEVICES" in env and not env.get("RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"):
            index = "0"
            why = f"Ray assigned GPU {ids[0]}, visible to this worker as its first GPU"
        else:
            index = ids[0]
            why = f"Ray assigned {name} {ids[0]}"
        return Placement(f"{name}.{index}", cfg, f"{name}.{index}: {why}")
    return Placement(device, cfg, f"{device} as given")
