"""A Ray Serve deployment of an opforge model: dynamic batching, JSON or NumPy over HTTP, health.

::

    from ray import serve
    from opforge_ray import put_model
    from opforge_ray.serve import deployment

    serve.start(http_options={"host": "127.0.0.1", "port": 8000})
    serve.run(deployment(put_model("model.onnx"), max_batch_size=16), route_prefix="/classify")

HTTP interface (every request carries whole rows: the batch dimension is included):

``POST <route>`` with ``Content-Type: application/json``
    body ``{"inputs": {"image": [[[...]]]}}``; answer ``{"model": ..., "outputs": {"logits": [...]}}``.
    JSON numbers are converted to each input's element type.
``POST <route>`` with ``Content-Type: application/x-npy``
    body: one array as ``np.save`` writes it, for a single-input model; answer: the first output
    as ``.npy`` (``?output=NAME`` picks another).
``POST <route>`` with ``Content-Type: application/x-npz``
    body: ``np.savez`` of the inputs by name; answer: ``.npz`` of every output.
``GET <route>/health``
    ``{"status": "ok", ...}``, or status 503 when the model no longer runs.
``GET <route>``
    the model's inputs and outputs, device and counters.

A malformed request gets status 400 with ``{"error": message}`` before it joins a batch, so it
never fails the requests batched with it. Requests arriving within ``batch_wait_timeout_s`` of
each other (up to ``max_batch_size`` of them) are concatenated and run as one batch on a worker
thread, then split back; rows of different shapes (a dynamic model) run as separate groups.
Serve also calls :meth:`OpforgeServer.check_health` periodically and restarts a replica whose
model fails it.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
from opforge.errors import InferenceInputError, OpforgeError
from opforge.runtime.core import Core
from ray import serve
from starlette.requests import Request
from starlette.responses import Response

from opforge_ray.batching import BatchRunner
from opforge_ray.payload import ModelLike, load_model
from opforge_ray.placement import place, worker_resources

NPY = "application/x-npy"
NPZ = "application/x-npz"


class OpforgeServer:
    """The deployment's class (wrapped by :data:`OpforgeDeployment`); usable directly in tests."""

    def __init__(self, model: ModelLike, device: str = "CPU", config: Mapping[str, Any] | None = None, *,
                 batching: str = "auto", max_batch_size: int = 16, batch_wait_timeout_s: float = 0.005) -> None:
        core = Core()
        loaded = load_model(model, core)
        self.placement = place(device, config, *worker_resources())
        self.runner = BatchRunner(core, loaded, self.placement.device, self.placement.config, batching=batching)
        batcher = cast(Any, self._infer_batch)  # serve.batch's wrapper, typed as the plain method
        batcher.set_max_batch_size(max_batch_size)
        batcher.set_batch_wait_timeout_s(batch_wait_timeout_s)
        self.requests = 0
        self.batches = 0
        self._probe: dict[str, np.ndarray] | None = None

    # --- HTTP ----------------------------------------------------------------------------------
    async def __call__(self, request: Request) -> Response:
        if request.method == "GET":
            if request.url.path.rstrip("/").endswith("/health"):
                return self._health()
            return _json(self.metadata())
        if request.method != "POST":
            return _json({"error": f"{request.method} is not supported: POST inputs, GET metadata"}, 405)
        try:
            inputs, fmt = await self._decode(request)
            unknown = sorted(set(inputs) - set(self.runner.input_names))
            if unknown:
                raise InferenceInputError(f"model '{self.runner.model.name}' has no input(s) {', '.join(unknown)}; "
                                          f"its inputs: {', '.join(self.runner.input_names)}")
            arrays, _ = self.runner.prepare(inputs)
        except (OpforgeError, ValueError) as err:
            return _json({"error": str(err)}, 400)
        result = await self._infer_batch(arrays)
        if isinstance(result, Exception):
            return _json({"error": f"{type(result).__name__}: {result}"}, 500)
        self.requests += 1
        if self._probe is None:
            self._probe = {k: v[:1].copy() for k, v in arrays.items()}
        try:
            return self._encode(result, fmt, request.query_params.get("output"))
        except InferenceInputError as err:
            return _json({"error": str(err)}, 400)

    async def _decode(self, request: Request) -> tuple[dict[str, np.ndarray], str]:
        kind = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        body = await request.body()
        if kind == NPY:
            if len(self.runner.input_names) != 1:
                raise InferenceInputError(
                    f"model '{self.runner.model.name}' has inputs {', '.join(self.runner.input_names)}: send them "
                    f"as {NPZ} (np.savez by name) or JSON"
                )
            return {self.runner.input_names[0]: np.load(io.BytesIO(body), allow_pickle=False)}, NPY
        if kind == NPZ:
            with np.load(io.BytesIO(body), allow_pickle=False) as npz:
                return {k: npz[k] for k in npz.files}, NPZ
        if kind != "application/json":
            raise InferenceInputError(f"Content-Type '{kind}' is not supported: use application/json, {NPY} or {NPZ}")
        doc = json.loads(body or b"null")
        if not isinstance(doc, dict) or not isinstance(doc.get("inputs"), dict):
            raise InferenceInputError('a JSON request is {"inputs": {"<input name>": [rows...]}}')
        out = {}
        for name, value in doc["inputs"].items():
            port = self.runner.compiled.input(name) if name in self.runner.input_names else None
            out[name] = np.asarray(value, dtype=port.element_type.np if port is not None else None)
        return out, "application/json"

    def _encode(self, outputs: Mapping[str, np.ndarray], fmt: str, pick: str | None) -> Response:
        if fmt == "application/json":
            doc = {"model": self.runner.model.name, "outputs": {k: v.tolist() for k, v in outputs.items()}}
            return Response(json.dumps(doc), media_type="application/json")
        buf = io.BytesIO()
        if fmt == NPZ:
            np.savez(buf, **outputs)  # type: ignore[arg-type]  # the stub fears a key named allow_pickle
            return Response(buf.getvalue(), media_type=NPZ)
        name = pick or self.runner.output_names[0]
        if name not in outputs:
            raise InferenceInputError(f"?output={name}: model '{self.runner.model.name}' has outputs "
                                      f"{', '.join(self.runner.output_names)}")
        np.save(buf, outputs[name], allow_pickle=False)
        return Response(buf.getvalue(), media_type=NPY)

    # --- batching ------------------------------------------------------------------------------
    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.005)
    async def _infer_batch(self, requests: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray] | Exception]:
        # The model runs on a worker thread so the event loop keeps accepting (and batching) requests.
        return await asyncio.get_running_loop().run_in_executor(None, self.infer_many, requests)

    def infer_many(self, requests: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray] | Exception]:
        """Run validated requests as few batches as their row shapes allow; split the outputs back."""
        self.batches += 1
        results: list[dict[str, np.ndarray] | Exception] = [{} for _ in requests]
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, req in enumerate(requests):
            key = tuple((k, v.shape[1:], v.dtype.str) for k, v in sorted(req.items()))
            groups.setdefault(key, []).append(i)
        for members in groups.values():
            counts = [len(next(iter(requests[i].values()))) for i in members]
            feed = {k: np.concatenate([requests[i][k] for i in members]) for k in requests[members[0]]}
            try:
                outputs = self.runner.run(feed, sum(counts))
            except OpforgeError as err:
                for i in members:
                    results[i] = err
                continue
            bounds = np.cumsum(counts)[:-1]
            pieces = {k: np.split(v, bounds) for k, v in outputs.items()}
            for j, i in enumerate(members):
                results[i] = {k: p[j] for k, p in pieces.items()}
        return results

    # --- health --------------------------------------------------------------------------------
    def check_health(self) -> None:
        """Called by Serve: raises when the model no longer runs (on the first request's first row)."""
        if self._probe is not None:
            self.runner.run(self._probe, 1)

    def _health(self) -> Response:
        try:
            self.check_health()
        except Exception as err:  # noqa: BLE001 - any failure is reported as unhealthy
            return _json({"status": "unhealthy", "error": f"{type(err).__name__}: {err}"}, 503)
        return _json({"status": "ok", "model": self.runner.model.name, "device": self.placement.device})

    def metadata(self) -> dict[str, Any]:
        ports = self.runner.compiled
        return {
            "model": self.runner.model.name,
            "device": self.placement.device,
            "placement": self.placement.reason,
            "inputs": {p.any_name: f"{p.element_type.ir}{p.partial_shape}" for p in ports.inputs},
            "outputs": {p.any_name: f"{p.element_type.ir}{p.partial_shape}" for p in ports.outputs},
            "batching": self.runner.batching,
            "requests": self.requests,
            "batches": self.batches,
        }


def _json(doc: Any, status: int = 200) -> Response:
    return Response(json.dumps(doc), status_code=status, media_type="application/json")


#: the Serve deployment; :func:`deployment` binds it to a model
OpforgeDeployment = serve.deployment(name="opforge")(OpforgeServer)


def deployment(model: ModelLike, device: str = "CPU", config: Mapping[str, Any] | None = None, *,
               batching: str = "auto", max_batch_size: int = 16, batch_wait_timeout_s: float = 0.005,
               name: str = "opforge", num_replicas: int = 1, ray_actor_options: Mapping[str, Any] | None = None,
               health_check_period_s: float = 10.0) -> Any:
    """A Serve application for ``model`` (best a :class:`~opforge_ray.ModelRef` from
    :func:`~opforge_ray.put_model`): pass it to ``serve.run``. Each replica reserves one CPU
    unless ``ray_actor_options`` says otherwise (``{"num_gpus": 1}`` with ``device="GPU"``)."""
    return OpforgeDeployment.options(
        name=name, num_replicas=num_replicas, ray_actor_options=dict(ray_actor_options or {"num_cpus": 1}),
        health_check_period_s=health_check_period_s,
    ).bind(model, device, config, batching=batching, max_batch_size=max_batch_size,
           batch_wait_timeout_s=batch_wait_timeout_s)
