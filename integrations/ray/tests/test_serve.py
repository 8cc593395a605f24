"""The Serve deployment on the shared two-node cluster, HTTP on 127.0.0.1: 200 concurrent
requests (JSON, .npy and .npz, 1 to 3 rows each) answered with the outputs of direct calls."""

from __future__ import annotations

import asyncio
import io
import json
import socket
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from opforge_ray import ModelPayload, OpforgePredictor, put_model
from opforge_ray_test_models import conv_net, images

pytest.importorskip("ray.serve", reason="ray[serve] is not installed (pip install 'ray[data,serve]')")
aiohttp = pytest.importorskip("aiohttp", reason="aiohttp (installed with ray[serve]) is missing")

# one xdist worker runs every test of the shared cluster (see conftest.cluster)
pytestmark = pytest.mark.xdist_group("ray_cluster")

REQUESTS = 200


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def url(cluster: Any) -> Iterator[str]:
    from opforge_ray.serve import deployment
    from ray import serve

    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(deployment(put_model(conv_net(1)), max_batch_size=16, batch_wait_timeout_s=0.01),
              name="opforge_test", route_prefix="/m")
    try:
        yield f"http://127.0.0.1:{port}/m"
    finally:
        serve.shutdown()


async def post(session: Any, url: str, rows: np.ndarray, kind: str) -> tuple[int, Any]:
    if kind == "json":
        body, ctype = json.dumps({"inputs": {"image": rows.tolist()}}).encode(), "application/json"
    else:
        buf = io.BytesIO()
        np.save(buf, rows) if kind == "npy" else np.savez(buf, image=rows)
        body, ctype = buf.getvalue(), f"application/x-{kind}"
    async with session.post(url, data=body, headers={"Content-Type": ctype}) as resp:
        data = await resp.read()
        if resp.status != 200:
            return resp.status, json.loads(data)
        if kind == "json":
            return 200, np.asarray(json.loads(data)["outputs"]["logits"], np.float32)
        if kind == "npy":
            return 200, np.load(io.BytesIO(data))
        with np.load(io.BytesIO(data)) as npz:
            return 200, npz["logits"]


async def fire(url: str, requests: list[tuple[np.ndarray, str]]) -> list[tuple[int, Any]]:
    limit = aiohttp.TCPConnector(limit=REQUESTS)  # all of them in flight at once
    async with aiohttp.ClientSession(connector=limit, timeout=aiohttp.ClientTimeout(total=240)) as session:
        return await asyncio.gather(*(post(session, url, rows, kind) for rows, kind in requests))


def test_200_concurrent_requests_equal_direct_calls(url: str) -> None:
    rng = np.random.default_rng(7)
    x = images(REQUESTS * 3, seed=5)
    kinds = ["json", "npy", "npz"]
    requests = [(x[3 * i:3 * i + int(rng.integers(1, 4))], kinds[i % 3]) for i in range(REQUESTS)]
    answers = asyncio.run(fire(url, requests))
    direct = OpforgePredictor(ModelPayload.from_model(conv_net(1)), config={"INFERENCE_NUM_THREADS": 1})
    for (rows, kind), (status, got) in zip(requests, answers):
        assert status == 200, (kind, got)
        np.testing.assert_array_equal(got, direct({"image": rows})["logits"])  # bitwise: split per row


def test_health_metadata_and_a_bad_request(url: str) -> None:
    import urllib.error
    import urllib.request

    status, _ = asyncio.run(fire(url, [(images(1), "npy")]))[0]  # at least one request served
    assert status == 200

    with urllib.request.urlopen(f"{url}/health", timeout=60) as resp:
        health = json.loads(resp.read())
    assert (resp.status, health["status"], health["device"]) == (200, "ok", "CPU")
    with urllib.request.urlopen(url, timeout=60) as resp:
        meta = json.loads(resp.read())
    assert meta["inputs"] == {"image": "f32[1,3,8,8]"} and meta["placement"].startswith("CPU with 1 thread")
    assert meta["requests"] >= 1 and 1 <= meta["batches"] <= meta["requests"]
    bad = urllib.request.Request(url, data=json.dumps({"inputs": {"image": [[1.0, 2.0]]}}).encode(),
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(bad, timeout=60)
    assert err.value.code == 400
    assert "column 'image' has rows of shape (2,); model 'conv_net' expects (3, 8, 8)" in json.loads(err.value.read())["error"]
