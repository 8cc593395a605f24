"""Paddle model and parameters files that are FIFOs, devices or directories are refused at once
(naming the path), never opened for a read that blocks; sizes are checked against the limits."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge import Core
from opforge.errors import ModelFormatError, ResourceLimitError
from opforge.frontend.convert import convert_model
from paddle_test_utils import legacy_model

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def outcome(fn: Callable[[], Any], timeout: float = 10.0) -> BaseException | None:
    """What ``fn`` raised, run in a daemon thread so that a hang fails instead of blocking."""
    box: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            box.append(None)
        except BaseException as err:  # noqa: BLE001 - the test inspects it
            box.append(err)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert box, f"the read blocked for {timeout} s"
    return box[0]


@needs_fifo
@pytest.mark.parametrize("name", ["m.json", "m.pdmodel"])
def test_fifo_program_file(tmp_path: Path, name: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    for read in (lambda: Core().read_model(fifo), lambda: convert_model(str(fifo), framework="paddle")):
        err = outcome(read)
        assert isinstance(err, ModelFormatError), err
        assert f"'{fifo}' is not a regular file but a FIFO" in str(err)


@pytest.fixture()
def small(paddle: Any, tmp_path: Path) -> Path:
    def body(b: Any, d: dict[str, Any]) -> list[Any]:
        return [b.op("elementwise_add", {"X": d["x"], "Y": b.param("w", np.ones(4, np.float32))}, {"axis": -1})]

    path, _, _ = legacy_model(paddle, tmp_path / "small", {"x": np.ones((2, 4), np.float32)}, body)
    return path


@needs_fifo
def test_fifo_parameters_file(small: Path) -> None:
    params = small.with_suffix(".pdiparams")
    params.unlink()
    os.mkfifo(params)
    err = outcome(lambda: convert_model(str(small)))
    assert isinstance(err, ModelFormatError), err
    assert f"Paddle parameters file '{params}' is not a regular file but a FIFO" in str(err)


def test_directory_parameters_file(small: Path) -> None:
    params = small.with_suffix(".pdiparams")
    params.unlink()
    params.mkdir()
    with pytest.raises(ModelFormatError, match=r"small\.pdiparams' is not a regular file but a directory"):
        convert_model(str(small))
    shutil.rmtree(params)


def test_parameters_file_over_the_weights_limit(small: Path) -> None:
    core = Core()
    core.set_property({"MAX_WEIGHTS_BYTES": 8})
    with pytest.raises(ResourceLimitError, match=r"Paddle parameters file '.*small\.pdiparams' needs \d+ bytes, over "
                                                 r"the limit MAX_WEIGHTS_BYTES=8"):
        core.read_model(small)
    assert Core().read_model(small) is not None


def test_op_count_limit(small: Path) -> None:
    core = Core()
    core.set_property({"MAX_NODES": 0})
    with pytest.raises(ResourceLimitError, match=r"small\.pdmodel: op count \d+ exceeds the limit MAX_NODES=0"):
        core.read_model(small)
