"""``opforge batch MODEL INPUT OUTPUT``: predictions for a folder of Parquet or ``.npy`` shards.

The model is converted once here and shipped to the workers as IR bytes; Ray Data reads the
shards, runs :class:`~opforge_ray.OpforgePredictor` on a pool of actors and writes the
predictions, showing its progress bars. Without ``--address`` a local Ray instance is started on
this machine; with it the job runs on that cluster (every node needs opforge-ray and the device
plugins installed, and INPUT/OUTPUT must be paths every node can reach).

Parquet in, Parquet out: one column per model output, plus every input column that is not a
model input (ids, labels) unchanged. ``.npy`` in (one array per shard, rows on the first axis,
for a single-input model), ``.npy`` out: ``OUTPUT/<output name>/<NNNNN>.npy`` shards, in input order.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from opforge.errors import InferenceInputError, OpforgeError

from opforge_ray.batching import BATCHING_MODES

HELP = "batch inference over Parquet or .npy shards with Ray Data (local cluster or --address)"
FORMATS = ("parquet", "npy")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="model file (.onnx, .xml, Paddle...): converted once, here")
    parser.add_argument("input", help="a .parquet or .npy file, or a folder of them")
    parser.add_argument("output", help="output folder (created)")
    parser.add_argument("--address", help="address of a running Ray cluster (default: start one here)")
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local cluster (default: every core)")
    parser.add_argument("--shape", action="append", default=[], metavar="NAME[d0,d1,...]",
                        help="input shape at conversion, ? = dynamic: x[?,3,224,224] runs whole batches")
    parser.add_argument("-d", "--device", default="CPU", help="device per worker: CPU, GPU (Ray-assigned), GPU.1...")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="compile property, e.g. INFERENCE_PRECISION_HINT=f32 (repeatable)")
    parser.add_argument("--concurrency", type=int, help="workers (default: one per CPU, or per GPU)")
    parser.add_argument("--cpus-per-worker", type=float, default=1.0, help="CPUs Ray reserves per worker")
    parser.add_argument("--gpus-per-worker", type=float, default=0.0, help="GPUs Ray reserves per worker")
    parser.add_argument("--batch-size", type=int, default=64, help="rows per batch handed to a worker")
    parser.add_argument("--batching", choices=BATCHING_MODES, default="auto",
                        help="how batches that differ from the model's static batch run (default: auto)")
    parser.add_argument("--cast", action="store_true",
                        help="cast input columns to the model's element types (float64 -> float32...)")
    parser.add_argument("--format", choices=FORMATS, help="output format (default: the input's)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def input_files(path: str) -> tuple[str, list[str]]:
    """``(format, files)`` of INPUT: a ``.parquet``/``.npy`` file or a folder of one kind."""
    p = Path(path)
    if p.is_file():
        fmt = p.suffix.lstrip(".").lower()
        if fmt not in FORMATS:
            raise InferenceInputError(f"input '{path}': expected a .parquet or .npy file, or a folder of them")
        return fmt, [str(p.resolve())]
    if not p.is_dir():
        raise InferenceInputError(f"input '{path}' does not exist")
    found = {fmt: sorted(str(f.resolve()) for f in p.iterdir() if f.is_file() and f.suffix.lower() == f".{fmt}")
             for fmt in FORMATS}
    kinds = [fmt for fmt, files in found.items() if files]
    if len(kinds) != 1:
        what = "both .parquet and .npy files" if kinds else "no .parquet or .npy file"
        raise InferenceInputError(f"input folder '{path}' holds {what}; put one kind of shard in it")
    return kinds[0], found[kinds[0]]


def parse_config(items: list[str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise OpforgeError(f"--config {item!r}: expected KEY=VALUE")
        text = value.strip()
        try:
            config[key.strip().upper()] = json.loads(text)  # numbers and booleans keep their type
        except json.JSONDecodeError:
            config[key.strip().upper()] = text
    return config


def run(args: argparse.Namespace) -> int:
    if not args.address and "ray" not in sys.modules:
        # A cluster started here serves this command only: keep it on the loopback address
        # (Ray's single-machine mode, read when ray is imported) instead of the machine's.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray
    from opforge.cli import parse_input_spec

    from opforge_ray.payload import ModelPayload

    fmt, files = input_files(args.input)
    out_fmt = args.format or fmt
    out_dir = Path(args.output)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise OpforgeError(f"output folder '{out_dir}' exists and is not empty")
    config = parse_config(args.config)

    from opforge.runtime.core import Core

    core = Core()
    shapes = dict(parse_input_spec(spec) for spec in args.shape)
    if shapes:
        from opforge.frontend.convert import convert_model

        model = convert_model(args.model, input=shapes)
    else:
        model = core.read_model(args.model)
    payload = ModelPayload.from_model(model, core=core)
    input_names = [p.any_name for p in model.inputs]
    if fmt == "npy" and len(input_names) != 1:
        raise InferenceInputError(
            f"model '{model.name}' has {len(input_names)} inputs ({', '.join(input_names)}); .npy shards feed "
            "a single-input model: use Parquet with one column per input"
        )

    started_here = False
    if not ray.is_initialized():
        if args.address:
            ray.init(address=args.address, log_to_driver=False)
        else:
            # "local": a new instance even when RAY_ADDRESS or a running cluster would be found
            ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
        started_here = True
    try:
        t0 = time.perf_counter()
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = not args.no_progress
        ctx.execution_options.preserve_order = True  # .npy outputs are matched to inputs by position
        ref = ray.put(payload)
        from opforge_ray.payload import ModelRef

        model_ref = ModelRef(ref, payload.name, payload.nbytes)
        # Shards are read by tasks that reserve no CPU (one per shard; Ray's own readers list
        # files in a task that needs one): the workers hold every CPU they were given, and a
        # read task waiting for one would wait for ever.
        shards = ray.data.from_items([{"path": f} for f in files], override_num_blocks=len(files))
        if fmt == "parquet":
            ds = shards.map_batches(_load_parquet, batch_size=1, num_cpus=0, batch_format="numpy")
        else:
            column = input_names[0]

            def load_npy(batch: Any) -> Any:
                return _load_npy(batch, column)

            ds = shards.map_batches(load_npy, batch_size=1, num_cpus=0, batch_format="numpy")
        concurrency = args.concurrency or _default_concurrency(ray, args)
        from opforge_ray.predictor import OpforgePredictor

        preds = ds.map_batches(
            OpforgePredictor,
            fn_constructor_kwargs={"model": model_ref, "device": args.device, "config": config,
                                   "batching": args.batching, "cast": args.cast},
            batch_size=args.batch_size, compute=ray.data.ActorPoolStrategy(size=concurrency),
            num_cpus=args.cpus_per_worker,
            num_gpus=args.gpus_per_worker or None, batch_format="numpy",
        )
        out_dir.mkdir(parents=True, exist_ok=True)
        if out_fmt == "parquet":
            preds.write_parquet(str(out_dir.resolve()), ray_remote_args={"num_cpus": 0})
            rows = sum(int(r.get("num_rows", 0)) for r in _parquet_rows(out_dir))
        else:
            rows = _write_npy(preds, out_dir)
        seconds = time.perf_counter() - t0
    finally:
        if started_here:
            ray.shutdown()
    summary = {"model": args.model, "input": args.input, "output": str(out_dir), "format": out_fmt,
               "rows": rows, "workers": concurrency, "device": args.device, "seconds": round(seconds, 3),
               "rows_per_second": round(rows / seconds, 2) if seconds > 0 else None}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{rows} rows of {fmt} -> {out_fmt} in {out_dir} with {concurrency} worker(s) on {args.device}: "
              f"{summary['seconds']} s ({summary['rows_per_second']} rows/s)")
    return 0


def _load_parquet(batch: Any) -> Any:
    """One Parquet shard (a batch of one path) -> its table (tensor columns stay tensors)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pa.concat_tables([pq.read_table(str(path)) for path in batch["path"]])


def _load_npy(batch: Any, column: str) -> dict[str, Any]:
    """One ``.npy`` shard (a batch of one path) -> its rows as ``column``."""
    import numpy as np

    arrays = []
    for path in batch["path"]:
        arr = np.load(str(path), allow_pickle=False)
        if arr.ndim == 0:
            raise InferenceInputError(f"shard '{path}' holds a scalar; a shard's first axis must be its rows")
        arrays.append(arr)
    return {column: np.concatenate(arrays)}


def _default_concurrency(ray: Any, args: argparse.Namespace) -> int:
    res = ray.cluster_resources()
    if args.gpus_per_worker:
        return max(1, int(res.get("GPU", 0) // args.gpus_per_worker))
    return max(1, int(res.get("CPU", 1) // max(args.cpus_per_worker, 1e-9)))


def _parquet_rows(out_dir: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return [{"num_rows": pq.ParquetFile(f).metadata.num_rows} for f in sorted(out_dir.glob("*.parquet"))]


def _write_npy(preds: Any, out_dir: Path) -> int:
    """One ``.npy`` per column and block, numbered in input order (the driver writes them: the
    predictions are small next to the inputs, and the numbering needs the global order)."""
    import numpy as np

    rows = 0
    for i, batch in enumerate(preds.iter_batches(batch_size=None, batch_format="numpy")):
        for name, values in batch.items():
            folder = out_dir / name.replace("/", "_")
            folder.mkdir(exist_ok=True)
            np.save(folder / f"{i:05d}.npy", np.asarray(values), allow_pickle=False)
        rows += len(next(iter(batch.values()))) if batch else 0
    return rows
