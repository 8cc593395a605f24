"""The Core / CompiledModel / InferRequest / AsyncInferQueue API, on the test TEMPLATE device."""

from __future__ import annotations

import threading

import numpy as np
import opforge
import pytest
from opforge import Model
from opforge.errors import (
    DeviceNotFoundError,
    DeviceUnavailableError,
    InferenceInputError,
    InputTypeError,
    PropertyError,
    RequestBusyError,
    UnsupportedOpError,
)
from opforge.reference import evaluate_model

X = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)


def test_available_devices_lists_only_available_ones(core: opforge.Core) -> None:
    assert core.available_devices == ["TEMPLATE"]
    assert core.unavailable_devices() == {"BROKEN": "no BROKEN hardware found (test device)"}


def test_device_names_are_case_insensitive(core: opforge.Core, relu_add_model: Model) -> None:
    compiled = core.compile_model(relu_add_model, "template")
    assert compiled.device == "TEMPLATE"


def test_unknown_device_lists_available_and_unavailable_with_reasons(core: opforge.Core, relu_add_model: Model) -> None:
    with pytest.raises(DeviceNotFoundError, match=r"'TEMPLTE' is not installed.*Available devices: TEMPLATE.*"
                       r"BROKEN \(no BROKEN hardware found.*Did you mean 'TEMPLATE'"):
        core.compile_model(relu_add_model, "TEMPLTE")


def test_unavailable_device_says_why(core: opforge.Core, relu_add_model: Model) -> None:
    with pytest.raises(DeviceUnavailableError, match="BROKEN is installed but unavailable here: no BROKEN hardware"):
        core.compile_model(relu_add_model, "BROKEN")


def test_malformed_device_names(core: opforge.Core, relu_add_model: Model) -> None:
    for bad in ("", "HETERO:", "CPU,,GPU", "GPU.x"):
        with pytest.raises(DeviceNotFoundError):
            core.compile_model(relu_add_model, bad)
    with pytest.raises(DeviceNotFoundError, match=r"TEMPLATE\.3' does not exist"):
        core.compile_model(relu_add_model, "TEMPLATE.3")


def test_infer_list_dict_and_results_by_index_name_port(core: opforge.Core, relu_add_model: Model) -> None:
    compiled = core.compile_model(relu_add_model, "TEMPLATE")
    want = evaluate_model(relu_add_model, [X])[0]
    by_list = compiled([X])
    by_dict = compiled({"x": X})
    by_port = compiled({compiled.input(0): X})
    for res in (by_list, by_dict, by_port):
        np.testing.assert_array_equal(res[0], want)
        np.testing.assert_array_equal(res["y"], want)
        np.testing.assert_array_equal(res[compiled.output(0)], want)
        np.testing.assert_array_equal(res[-1], want)
    assert by_list.names() == ["y"]
    assert list(by_list.to_dict()) == ["y"]


def test_wrong_shape_type_and_names_are_clear_errors(core: opforge.Core, relu_add_model: Model) -> None:
    compiled = core.compile_model(relu_add_model, "TEMPLATE")
    with pytest.raises(InferenceInputError, match=r"Input 'x' has wrong shape: got \(2, 4\), expected \(2, 3\)"):
        compiled([np.zeros((2, 4), np.float32)])
    with pytest.raises(InputTypeError, match="Input 'x' has wrong element type: got float64, expected float32"):
        compiled([X.astype(np.float64)])
    with pytest.raises(InferenceInputError, match="has no input 'z'; inputs: 'x'"):
        compiled({"z": X})
    with pytest.raises(InferenceInputError, match=r"has 1 input\(s\) \('x'\), got 2"):
        compiled([X, X])
    with pytest.raises(InputTypeError, match="must be a NumPy array, got object"):
        compiled([object()])
    with pytest.raises(KeyError, match="no output 'nope'"):
        compiled([X])["nope"]


def test_inputs_are_never_mutated(core: opforge.Core, relu_add_model: Model) -> None:
    x = X.copy()
    core.compile_model(relu_add_model, "TEMPLATE")([x])
    np.testing.assert_array_equal(x, X)


def test_properties_are_typed_and_unknown_keys_rejected(core: opforge.Core) -> None:
    core.set_property("TEMPLATE", {"INFERENCE_NUM_THREADS": "2", "PERFORMANCE_HINT": "throughput"})
    assert core.get_property("TEMPLATE", "INFERENCE_NUM_THREADS") == 2
    assert core.get_property("TEMPLATE", "PERFORMANCE_HINT") == "THROUGHPUT"
    with pytest.raises(PropertyError, match=r"device TEMPLATE has no property 'NUM_THREADZ'; supported: .*INFERENCE_NUM_THREADS"):
        core.set_property("TEMPLATE", {"NUM_THREADZ": 1})
    with pytest.raises(PropertyError, match="expects int, got 'many'"):
        core.set_property("TEMPLATE", {"INFERENCE_NUM_THREADS": "many"})
    with pytest.raises(PropertyError, match="must be one of LATENCY, THROUGHPUT"):
        core.set_property("TEMPLATE", {"PERFORMANCE_HINT": "FAST"})
    # a bad key leaves the earlier, valid settings alone
    with pytest.raises(PropertyError):
        core.set_property("TEMPLATE", {"INFERENCE_NUM_THREADS": 1, "BOGUS": 1})
    assert core.get_property("TEMPLATE", "INFERENCE_NUM_THREADS") == 2
    assert "INFERENCE_NUM_THREADS" in core.get_property("TEMPLATE", "SUPPORTED_PROPERTIES")
    assert core.get_property("TEMPLATE", "AVAILABLE_DEVICES") == ["TEMPLATE"]


def test_compile_config_overrides_core_properties_for_that_model(core: opforge.Core, relu_add_model: Model) -> None:
    core.set_property("TEMPLATE", {"NUM_STREAMS": 2})
    compiled = core.compile_model(relu_add_model, "TEMPLATE", {"NUM_STREAMS": 3})
    assert compiled.get_property("NUM_STREAMS") == 3
    assert compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 3
    assert core.get_property("TEMPLATE", "NUM_STREAMS") == 2
    assert compiled.get_property("EXECUTION_DEVICES") == ["TEMPLATE"]
    with pytest.raises(PropertyError, match="no property 'NOPE'"):
        compiled.get_property("NOPE")


def test_query_model_reports_exactly_the_nodes_with_kernels(core: opforge.Core) -> None:
    x = opforge.op("Parameter", element_type="f32", shape=[4], name="x")
    y = opforge.op("Relu", opforge.op("Multiply", x, x, name="mul"), name="relu")
    model = Model([y], [x])
    supported = core.query_model(model, "TEMPLATE")
    assert "relu" in supported and "x" in supported
    assert "mul" not in supported
    with pytest.raises(UnsupportedOpError, match="no kernel for: Multiply-opset1"):
        core.compile_model(model, "TEMPLATE")


def test_custom_op_kernel_from_a_plugin_runs(core: opforge.Core) -> None:
    from opforge_template_extension import TemplateIdentity

    x = opforge.op("Parameter", element_type="f32", shape=[3], name="x")
    y = opforge.Node.create(TemplateIdentity, [x], {"scale": 2.0}, name="ident")
    out = core.compile_model(Model([y], [x]), "TEMPLATE")([np.arange(3, dtype=np.float32)])
    np.testing.assert_array_equal(out[0], [0.0, 2.0, 4.0])


def test_infer_request_tensors_and_async(core: opforge.Core, relu_add_model: Model) -> None:
    compiled = core.compile_model(relu_add_model, "TEMPLATE")
    req = compiled.create_infer_request()
    with pytest.raises(InferenceInputError, match="missing input"):
        req.infer()
    req.set_tensor("x", X)
    res = req.infer()
    np.testing.assert_array_equal(req.get_tensor("y"), res[0])
    np.testing.assert_array_equal(req.get_output_tensor(0), res[0])
    seen = []
    req.set_callback(seen.append)
    req.start_async({"x": X * 2}, userdata="tag")
    req.wait()
    assert seen == ["tag"]
    np.testing.assert_array_equal(req.results[0], evaluate_model(relu_add_model, [X * 2])[0])


def test_busy_request_is_an_error_not_mixed_outputs(core: opforge.Core, relu_add_model: Model) -> None:
    compiled = core.compile_model(relu_add_model, "TEMPLATE", {"TEMPLATE_DELAY_S": 0.3})
    req = compiled.create_infer_request()
    req.start_async([X])
    with pytest.raises(RequestBusyError, match="already running"):
        req.infer([X])
    with pytest.raises(RequestBusyError):
        req.start_async([X])
    req.wait()
    assert req.wait_for(10)


def test_async_infer_queue_runs_requests_concurrently(core: opforge.Core, relu_add_model: Model) -> None:
    compiled = core.compile_model(relu_add_model, "TEMPLATE", {"TEMPLATE_DELAY_S": 0.05})
    queue = opforge.AsyncInferQueue(compiled, 4)
    results: dict[int, np.ndarray] = {}
    lock = threading.Lock()

    def done(request: opforge.InferRequest, i: int) -> None:
        with lock:
            results[i] = request.results[0].copy()

    queue.set_callback(done)
    for i in range(12):
        queue.start_async([X * i], userdata=i)
    queue.wait_all()
    assert sorted(results) == list(range(12))
    for i, r in results.items():
        np.testing.assert_array_equal(r, evaluate_model(relu_add_model, [X * i])[0])
    assert compiled._executable.max_active > 1  # type: ignore[attr-defined]
    assert len(queue) == 4


def test_async_queue_reraises_job_errors(core: opforge.Core, relu_add_model: Model) -> None:
    queue = opforge.AsyncInferQueue(core.compile_model(relu_add_model, "TEMPLATE"), 2)
    queue.start_async([np.zeros((9,), np.float32)])
    with pytest.raises(InferenceInputError, match="wrong shape"):
        queue.wait_all()


def test_compiled_model_is_callable_from_many_threads(core: opforge.Core, relu_add_model: Model) -> None:
    compiled = core.compile_model(relu_add_model, "TEMPLATE")
    want = {i: evaluate_model(relu_add_model, [X * i])[0] for i in range(8)}
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            for _ in range(50):
                np.testing.assert_array_equal(compiled([X * i])[0], want[i])
        except BaseException as err:  # noqa: BLE001 - collected and re-raised below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_compile_does_not_change_the_callers_model(core: opforge.Core, relu_add_model: Model) -> None:
    before = [(n.name, n.type_name) for n in relu_add_model.get_ordered_ops()]
    compiled = core.compile_model(relu_add_model, "TEMPLATE")
    assert compiled.get_runtime_model() is not relu_add_model
    assert [(n.name, n.type_name) for n in relu_add_model.get_ordered_ops()] == before


def test_no_frontend_for_a_format_names_the_installed_ones(core: opforge.Core, tmp_path: object) -> None:
    import pathlib

    p = pathlib.Path(str(tmp_path)) / "model.weird"
    p.write_bytes(b"\x00\x01 not a model")
    with pytest.raises(opforge.errors.ModelFormatError, match=r"no installed frontend can read .*model.weird"):
        core.read_model(p)


def test_constants_a_device_released_are_refused_not_read_as_zeros(tmp_path: object) -> None:
    import pathlib

    from opforge.errors import KernelError, ModelValidationError
    from opforge.graph import WEIGHTS_RELEASED

    x = opforge.op("Parameter", element_type="f32", shape=[3], name="x")
    w = opforge.op("Constant", value=np.ones(3, np.float32), name="w")
    model = Model([opforge.op("Add", x, w)], [x])
    w.rt_info[WEIGHTS_RELEASED] = "device TEST"
    assert w.constant_value() is None  # shape inference and folding see an unknown value
    with pytest.raises(KernelError, match="constant 'w' was released by device TEST"):
        evaluate_model(model, [X[0]])
    with pytest.raises(ModelValidationError, match="constant 'w' was released by device TEST"):
        opforge.save_model(model, pathlib.Path(str(tmp_path)) / "m.xml")
