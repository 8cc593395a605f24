"""One compiled model shared by many threads, each with its own requests: results equal the
serial run on every device (OpenVINO's CoreThreadingTests, in small)."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import opforge
from opforge.samples import SAMPLE_ONNX


def test_many_threads_share_one_compiled_model(device: str) -> None:
    core = opforge.Core()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = core.compile_model(core.read_model(SAMPLE_ONNX), device)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(8)]
    serial = [compiled([x])[0].copy() for x in inputs]
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            req = compiled.create_infer_request()
            for i in range(10):
                j = (k + i) % len(inputs)
                np.testing.assert_array_equal(req.infer([inputs[j]])[0], serial[j])
        except BaseException as err:  # noqa: BLE001 - re-raised in the main thread
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[0]


def test_async_queue_on_every_device(device: str) -> None:
    core = opforge.Core()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = core.compile_model(core.read_model(SAMPLE_ONNX), device)
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(6)]
    want = [compiled([x])[0].copy() for x in inputs]
    got: dict[int, np.ndarray] = {}
    queue = opforge.AsyncInferQueue(compiled, 3)
    queue.set_callback(lambda req, i: got.__setitem__(i, req.results[0].copy()))
    for i, x in enumerate(inputs):
        queue.start_async([x], userdata=i)
    queue.wait_all()
    for i in range(len(inputs)):
        np.testing.assert_array_equal(got[i], want[i])
