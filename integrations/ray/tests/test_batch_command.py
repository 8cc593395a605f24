"""``opforge batch``: Parquet shards through the shared two-node cluster (in process), ``.npy``
shards from a second driver with ``--address``, and a local cluster the command starts itself
(``ray.init(num_cpus=2)``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge.cli import main
from opforge_ray import ModelPayload, OpforgePredictor
from opforge_ray_test_models import conv_net, images

pytest.importorskip("ray", reason="ray is not installed (pip install 'ray[data,serve]')")

# one xdist worker runs every test of the shared cluster (see conftest.cluster)
pytestmark = pytest.mark.xdist_group("ray_cluster")

ROWS = 96


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "conv_net.onnx"
    path.write_bytes(conv_net(1))
    return path


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return images(ROWS, seed=3)


@pytest.fixture(scope="module")
def want(x: np.ndarray) -> np.ndarray:
    pred = OpforgePredictor(ModelPayload.from_model(conv_net(1)), config={"INFERENCE_NUM_THREADS": 1})
    return np.concatenate([pred({"image": x[i:i + 1]})["logits"] for i in range(ROWS)])


def npy_shards(folder: Path, x: np.ndarray) -> Path:
    folder.mkdir()
    for i, part in enumerate(np.array_split(x, 3)):
        np.save(folder / f"part-{i}.npy", part)
    return folder


def opforge_batch(*args: str) -> subprocess.CompletedProcess[str]:
    """``opforge batch`` as a separate process (a second Ray driver)."""
    code = "import sys; from opforge.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "batch", *args], capture_output=True, text=True,
                          timeout=240, check=False, env=dict(os.environ))


def read_npy(folder: Path) -> np.ndarray:
    return np.concatenate([np.load(f) for f in sorted(folder.glob("*.npy"))])


def test_parquet_shards_in_predictions_out(cluster: Any, model: Path, x: np.ndarray, want: np.ndarray,
                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq
    import ray

    rows = [{"id": i, "label": f"c{i % 4}", "image": x[i]} for i in range(ROWS)]
    ray.data.from_items(rows, override_num_blocks=3).write_parquet(str(tmp_path / "in"))
    assert len(list((tmp_path / "in").glob("*.parquet"))) == 3
    out = tmp_path / "out"
    assert main(["batch", str(model), str(tmp_path / "in"), str(out), "--batch-size", "16", "--no-progress",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["rows"], summary["format"], summary["workers"]) == (ROWS, "parquet", 2)
    table = pq.read_table(out).to_pydict()
    assert sorted(table) == ["id", "label", "logits", "probs"]  # the image column is not written back
    order = np.argsort(table["id"])
    np.testing.assert_array_equal(np.asarray(table["id"])[order], np.arange(ROWS))
    assert [table["label"][i] for i in order] == [f"c{i % 4}" for i in range(ROWS)]
    np.testing.assert_array_equal(np.asarray(table["logits"], np.float32)[order], want)


def test_npy_shards_on_an_existing_cluster_by_address(cluster: Any, model: Path, x: np.ndarray,
                                                      want: np.ndarray, tmp_path: Path) -> None:
    proc = opforge_batch(str(model), str(npy_shards(tmp_path / "in", x)), str(tmp_path / "out"),
                         "--address", cluster.address, "--shape", "image[?,3,8,8]", "--batch-size", "20")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"{ROWS} rows of npy -> npy" in proc.stdout
    # whole batches of a dynamic-batch model: within 1e-5 of the serial outputs, in input order
    np.testing.assert_allclose(read_npy(tmp_path / "out" / "logits"), want, rtol=0, atol=1e-5)
    assert read_npy(tmp_path / "out" / "probs").shape == (ROWS, 5)


@pytest.mark.slow  # a second Ray instance: ~15 s on a quiet 2-core machine, ~40 s on a busy one
def test_a_local_cluster_started_by_the_command(model: Path, x: np.ndarray, want: np.ndarray,
                                                tmp_path: Path) -> None:
    proc = opforge_batch(str(model), str(npy_shards(tmp_path / "in", x)), str(tmp_path / "out"),
                         "--num-cpus", "2", "--batch-size", "32")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "with 2 worker(s) on CPU" in proc.stdout
    np.testing.assert_array_equal(read_npy(tmp_path / "out" / "logits"), want)


def test_bad_arguments_are_clear_errors(model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / "a.npy").write_bytes(b"")
    (tmp_path / "mixed" / "b.parquet").write_bytes(b"")
    assert main(["batch", str(model), str(tmp_path / "mixed"), str(tmp_path / "out")]) == 2
    assert ("holds both .parquet and .npy files; put one kind of shard in it"
            in capsys.readouterr().err)
    assert main(["batch", str(model), str(tmp_path / "nothing"), str(tmp_path / "out")]) == 2
    assert f"input '{tmp_path / 'nothing'}' does not exist" in capsys.readouterr().err
    assert main(["batch", str(model), str(tmp_path / "mixed" / "a.npy"), str(tmp_path / "out"),
                 "--config", "NOEQUALS"]) == 2
    assert "--config 'NOEQUALS': expected KEY=VALUE" in capsys.readouterr().err
