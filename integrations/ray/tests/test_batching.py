"""BatchRunner and placement without Ray: columns in and out, the three batching modes against
a serial loop, and every way a batch can be wrong."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from opforge.errors import DeviceUnavailableError, InferenceInputError, InputTypeError, ModelValidationError
from opforge.runtime.core import Core
from opforge_ray import BatchRunner, ModelPayload, OpforgePredictor, place
from opforge_ray_test_models import CLASSES, conv_net, images

ONE_THREAD = {"INFERENCE_NUM_THREADS": 1}


def runner(model: bytes, **kwargs: object) -> BatchRunner:
    core = Core()
    return BatchRunner(core, core.read_model(model), "CPU", ONE_THREAD, **kwargs)  # type: ignore[arg-type]


def serial(model: bytes, x: np.ndarray) -> dict[str, np.ndarray]:
    """One call per row, on a batch-1 model: what the batched runs must reproduce."""
    r = runner(model)
    rows = [r({"image": x[i:i + 1]}) for i in range(len(x))]
    return {k: np.concatenate([row[k] for row in rows]) for k in ("logits", "probs")}


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return images(10)


@pytest.fixture(scope="module")
def want(x: np.ndarray) -> dict[str, np.ndarray]:
    return serial(conv_net(1), x)


def test_split_is_bitwise_serial_and_columns_pass_through(x: np.ndarray, want: dict[str, np.ndarray]) -> None:
    ids = np.arange(100, 110)
    labels = np.array([f"l{i}" for i in range(10)])
    out = runner(conv_net(1))({"image": x, "id": ids, "label": labels})
    assert list(out) == ["id", "label", "logits", "probs"]  # the input column is dropped
    assert out["id"] is ids and out["label"] is labels
    assert out["logits"].shape == (10, CLASSES) and out["logits"].dtype == np.float32
    np.testing.assert_array_equal(out["logits"], want["logits"])
    np.testing.assert_array_equal(out["probs"], want["probs"])
    kept = runner(conv_net(1), keep_inputs=True, output_prefix="pred_")({"image": x})
    assert list(kept) == ["image", "pred_logits", "pred_probs"]


def test_a_static_batch_of_four_pads_the_last_chunk(x: np.ndarray, want: dict[str, np.ndarray]) -> None:
    r = runner(conv_net(4, flatten=False))
    assert r.batch == 4
    out = r({"image": x})  # chunks of 4, 4, 2 (+2 padding rows, dropped)
    np.testing.assert_array_equal(out["logits"], serial(conv_net(1, flatten=False), x)["logits"])
    assert r({"image": x[:4]})["logits"].shape == (4, CLASSES)


def test_a_dynamic_batch_runs_whole_batches_within_1e5(x: np.ndarray, want: dict[str, np.ndarray]) -> None:
    r = runner(conv_net("N"))
    assert r.batch is None
    np.testing.assert_allclose(r({"image": x})["logits"], want["logits"], rtol=0, atol=1e-5)
    split = runner(conv_net("N"), batching="split")({"image": x})
    np.testing.assert_array_equal(split["logits"], want["logits"])


def test_reshape_rebatches_a_static_model_and_keeps_a_few_variants(x: np.ndarray) -> None:
    model = conv_net(1, flatten=False)
    ref = serial(model, x)
    r = runner(model, batching="reshape")
    np.testing.assert_allclose(r({"image": x})["logits"], ref["logits"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(r({"image": x[:3]})["logits"], ref["logits"][:3], rtol=0, atol=1e-5)
    assert list(r._variants) == [10, 3]


def test_reshape_refuses_a_model_that_hard_codes_its_batch(x: np.ndarray) -> None:
    # Flatten of a static [1, 8, 1, 1] converts to a Reshape to the constant [1, 8].
    r = runner(conv_net(1), batching="reshape")
    with pytest.raises(ModelValidationError, match=r"model 'conv_net' cannot be re-batched from 1 to 10 rows "
                                                   r"\(.*Reshape.*\); use batching='split'"):
        r({"image": x})


def test_reshape_refuses_a_variant_whose_rows_differ(x: np.ndarray) -> None:
    class Lying(BatchRunner):
        """A re-batched variant that reverses its rows: validates, runs, and is wrong."""

        def _call(self, compiled, feed, rows):  # type: ignore[no-untyped-def]
            out = super()._call(compiled, feed, rows)
            return {k: v[::-1] for k, v in out.items()} if compiled is not self.compiled else out

    core = Core()
    r = Lying(core, core.read_model(conv_net(1, flatten=False)), "CPU", ONE_THREAD, batching="reshape")
    with pytest.raises(ModelValidationError, match="changes output 'logits' of row 0"):
        r({"image": x})


def test_bad_batches_are_clear_errors(x: np.ndarray) -> None:
    r = runner(conv_net(1))
    with pytest.raises(InferenceInputError, match=r"needs column\(s\) 'image' \(its input names\); the batch "
                                                  r"has 'img', 'id'"):
        r({"img": x, "id": np.arange(10)})
    with pytest.raises(InputTypeError, match="Input 'image' has wrong element type: got float64, expected float32"):
        r({"image": x.astype(np.float64)})
    with pytest.raises(InferenceInputError, match=r"column 'image' has rows of shape \(2, 8, 8\); model "
                                                  r"'conv_net' expects \(3, 8, 8\)"):
        r({"image": x[:, :2]})
    with pytest.raises(InferenceInputError, match="output 'logits' would overwrite the batch's column"):
        r({"image": x, "logits": np.zeros(10)})
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = x[0], x[1, :2]
    with pytest.raises(InferenceInputError, match="column 'image' holds Python objects"):
        r({"image": ragged})
    with pytest.raises(InputTypeError, match="column 'image' of complex64 cannot be cast"):
        runner(conv_net(1), cast=True)({"image": x.astype(np.complex64)})


def test_cast_and_object_columns_of_equal_rows(x: np.ndarray, want: dict[str, np.ndarray]) -> None:
    r = runner(conv_net(1), cast=True)
    np.testing.assert_array_equal(r({"image": x.astype(np.float64)})["logits"], want["logits"])
    rows = np.empty(10, dtype=object)  # what a Parquet list column becomes
    for i in range(10):
        rows[i] = x[i]
    np.testing.assert_array_equal(r({"image": rows})["logits"], want["logits"])
    assert r({"image": x[:0]})["logits"].shape == (0, CLASSES)


def test_the_payload_is_ir_bytes_that_survive_pickling(x: np.ndarray, want: dict[str, np.ndarray]) -> None:
    payload = ModelPayload.from_model(conv_net(1))
    assert payload.xml.startswith(b"<?xml") and payload.nbytes == len(payload.xml) + len(payload.weights)
    again = pickle.loads(pickle.dumps(payload))
    pred = OpforgePredictor(again, config=ONE_THREAD)
    assert pred.input_names == ["image"] and pred.output_names == ["logits", "probs"]
    np.testing.assert_array_equal(pred({"image": x})["logits"], want["logits"])
    dynamic = ModelPayload.from_model(conv_net(1), input={"image": [-1, 3, 8, 8]})
    assert OpforgePredictor(dynamic).runner.batch is None


def test_placement_from_the_resources_ray_assigned() -> None:
    p = place("CPU", None, {"CPU": 2.0}, {})
    assert (p.device, p.config) == ("CPU", {"INFERENCE_NUM_THREADS": 2})
    assert place("cpu", None, {"CPU": 0.5}, {}).config == {"INFERENCE_NUM_THREADS": 1}
    assert place("CPU", {"INFERENCE_NUM_THREADS": 3}, {"CPU": 1.0}, {}).config == {"INFERENCE_NUM_THREADS": 3}
    assert place("CPU", None, {}, {}).config == {}
    ray_env = {"CUDA_VISIBLE_DEVICES": "3"}
    assert place("GPU", None, {"GPU": 1.0}, {"GPU": ["3"]}, ray_env).device == "GPU.0"
    assert place("GPU", None, {"GPU": 1.0}, {"GPU": ["3"]},
                 {**ray_env, "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1"}).device == "GPU.3"
    assert place("VPU", None, {"VPU": 1.0}, {"VPU": ["1"]}, {}).device == "VPU.1"
    assert place("GPU.1", None, {}, {}).device == "GPU.1"
    assert place("HETERO:GPU,CPU", None, {"CPU": 1.0}, {}).device == "HETERO:GPU,CPU"
    with pytest.raises(DeviceUnavailableError, match=r"device 'GPU': Ray assigned this worker no GPU; request one "
                                                     r"\(num_gpus=1"):
        place("GPU", None, {"CPU": 1.0}, {}, {})
