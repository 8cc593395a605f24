"""Third-party kernels: NumPy callables (the slow path) and compiled kernels through the C ABI."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import types
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import opforge_cpu
import pytest
from cpu_testing import load_module, make_plugins, param, rand
from opforge.errors import KernelError, PluginValidationError, UnsupportedOpError
from opforge.graph import Model

pytest.importorskip("opforge_template_extension")
from opforge_template_extension.op import OPSET, TemplateIdentity

# the template extension's kernel source: the example every third party copies
EXAMPLE = (Path(__file__).resolve().parents[2] / "plugins" / "template-extension" / "csrc" / "template_kernel.cpp")


def plugin(kernel: Any) -> types.SimpleNamespace:
    class P:
        @opforge.hookimpl
        def opforge_register_ops(self, register: Any) -> None:
            register(TemplateIdentity)

        @opforge.hookimpl
        def opforge_register_kernels(self, register: Any) -> None:
            register("CPU", "Identity", kernel, version=OPSET)

    return P()  # type: ignore[return-value]


def identity_model(scale: float = 2.0) -> Model:
    x = param("x", [2, 8])
    y = opforge.Node.create(TemplateIdentity, [x], {"scale": scale}, name="ident")
    z = opforge.op("Relu", opforge.op("Add", y, x, name="add"), name="relu")
    return Model([z], [x], name="custom")


@pytest.fixture(scope="module")
def compiled_kernel(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    if shutil.which("c++") is None:
        pytest.skip("no C++ compiler")
    import pybind11

    out = tmp_path_factory.mktemp("kernel") / f"_template_kernel{sysconfig.get_config_var('EXT_SUFFIX')}"
    cmd = ["c++", "-O2", "-shared", "-fPIC", "-std=c++17", f"-I{pybind11.get_include()}",
           f"-I{sysconfig.get_paths()['include']}", f"-I{opforge_cpu.get_include()}", str(EXAMPLE), "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    return load_module(out, "_template_kernel")


def test_python_kernel_slow_path() -> None:
    calls = []

    def kernel(attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        calls.append(1)
        return [inputs[0] * np.float32(attrs.scale)]

    core = opforge.Core(make_plugins((plugin(kernel), "ext")))
    model = identity_model(3.0)
    compiled = core.compile_model(model, "CPU")
    x = rand((2, 8))
    np.testing.assert_allclose(compiled([x])[0], np.maximum(x * 3 + x, 0), rtol=1e-6)
    assert len(calls) == 1
    assert compiled._executable.python_kernel_calls() == 1
    assert core.query_model(model, "CPU").keys() == {n.name for n in model.get_ordered_ops()}


def test_python_kernel_that_raises_names_node() -> None:
    def kernel(attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        raise ValueError("boom")

    core = opforge.Core(make_plugins((plugin(kernel), "ext")))
    compiled = core.compile_model(identity_model(), "CPU")
    with pytest.raises(KernelError, match=r"node 'ident' \(Identity\).*boom"):
        compiled([rand((2, 8))])


def test_python_kernel_wrong_output_shape() -> None:
    core = opforge.Core(make_plugins((plugin(lambda a, x: [x[0][:1]]), "ext")))
    compiled = core.compile_model(identity_model(), "CPU")
    with pytest.raises(KernelError, match="shape \\(1, 8\\), inferred \\(2, 8\\)"):
        compiled([rand((2, 8))])


def test_compiled_kernel_runs_inside_the_cpp_loop(compiled_kernel: types.ModuleType) -> None:
    core = opforge.Core(make_plugins((plugin(compiled_kernel.kernel()), "ext")))
    model = identity_model(2.0)
    compiled = core.compile_model(model, "CPU")
    compiled_kernel.reset_calls()
    x = rand((2, 8))
    audit: list[str] = []

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event in ("call", "c_call"):
            audit.append(getattr(arg, "__name__", frame.f_code.co_name))

    req = compiled.create_infer_request()
    for _ in range(5):
        out = req.infer([x])[0]
    np.testing.assert_allclose(out, np.maximum(2 * x + x, 0), rtol=1e-6)
    assert compiled_kernel.calls() == 5
    assert compiled._executable.python_kernel_calls() == 0
    # While the executor runs, no Python function of the plugin is entered.
    sys.setprofile(profiler)
    try:
        req.infer([x])
    finally:
        sys.setprofile(None)
    assert compiled_kernel.calls() == 6
    assert "kernel" not in audit and "calls" not in audit


def test_compiled_kernel_create_error_is_reported(compiled_kernel: types.ModuleType) -> None:
    core = opforge.Core(make_plugins((plugin(compiled_kernel.kernel()), "ext")))
    x = param("x", [3], "i32")
    y = opforge.Node.create(TemplateIdentity, [x], {"scale": 1.0}, name="ident")
    out = core.compile_model(Model([y], [x]), "CPU")([np.arange(3, dtype=np.int32)])[0]
    np.testing.assert_array_equal(out, np.arange(3))


def test_abi_mismatch_is_refused(compiled_kernel: types.ModuleType, tmp_path: Path) -> None:
    # A descriptor whose first field (the ABI version) says 999: built from a patched copy.
    src = EXAMPLE.read_text().replace("OPFORGE_CPU_KERNEL_ABI_VERSION, sizeof", "999u, sizeof")
    src = src.replace("PYBIND11_MODULE(_template_kernel", "PYBIND11_MODULE(_bad_kernel")
    path = tmp_path / "bad.cpp"
    path.write_text(src)
    import pybind11

    out = tmp_path / f"_bad_kernel{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run(["c++", "-O1", "-shared", "-fPIC", "-std=c++17", f"-I{pybind11.get_include()}",
                    f"-I{sysconfig.get_paths()['include']}", f"-I{opforge_cpu.get_include()}", str(path), "-o",
                    str(out)], check=True, capture_output=True)
    spec = importlib.util.spec_from_file_location("_bad_kernel", out)
    assert spec is not None and spec.loader is not None
    bad = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bad)
    core = opforge.Core(make_plugins((plugin(bad.kernel()), "ext")))
    with pytest.raises(PluginValidationError, match=r"test-ext 0\.0.*ABI 999.*ABI 1"):
        core.compile_model(identity_model(), "CPU")


# The child of test_python_references_are_taken_under_the_gil: compiles and runs (and drops) the
# custom-kernel programs whose C++ side holds Python references (a NumPy kernel, its attributes,
# a kernel capsule), also on the error paths, from two threads at once, then collects.
_GIL_CHILD = r"""
import gc, sys, threading
import numpy as np
import opforge
from cpu_testing import load_module, make_plugins, param
from opforge.errors import OpforgeError
from opforge.graph import Model
from opforge_template_extension.op import TemplateIdentity
from test_cpu_custom_kernels import plugin

ext = load_module(__import__("pathlib").Path(sys.argv[1]), "_template_kernel")

def model(scale, dtype="f32"):
    x = param("x", [2, 8], dtype)
    y = opforge.Node.create(TemplateIdentity, [x], {"scale": scale}, name="ident")
    return Model([opforge.op("Relu", y, name="relu")], [x], name="gil")

def work(errors):
    x = np.arange(16, dtype=np.float32).reshape(2, 8) - 8
    try:
        for _ in range(3):
            for kernel, scale, dtype, fails in [
                (lambda a, xs: [xs[0] * np.float32(a.scale)], 2.0, "f32", False),
                (lambda a, xs: [xs[0][:1]], 2.0, "f32", True),        # wrong output shape
                (ext.kernel(), 2.0, "f32", False),
                (ext.kernel(), 2.0, "i32", True),                      # create() refuses
            ]:
                core = opforge.Core(make_plugins((plugin(kernel), "ext")))
                try:
                    compiled = core.compile_model(model(scale, dtype), "CPU", {"INFERENCE_NUM_THREADS": 2})
                    xi = x.astype({"f32": np.float32, "i32": np.int32}[dtype])
                    out = compiled([xi])[0]
                    np.testing.assert_allclose(out, np.maximum(xi * scale, 0))
                except OpforgeError:
                    if not fails:
                        raise
                else:
                    if fails:
                        raise AssertionError("expected a failure")
                del core
                gc.collect()
    except BaseException as e:  # reported by the parent
        errors.append(repr(e))

errors = []
threads = [threading.Thread(target=work, args=(errors,)) for _ in range(2)]
for t in threads:
    t.start()
work(errors)
for t in threads:
    t.join()
gc.collect()
print("errors:", errors)
sys.exit(1 if errors else 0)
"""


def test_python_references_are_taken_under_the_gil(compiled_kernel: types.ModuleType) -> None:
    # The C++ program keeps references to a NumPy kernel, its attributes and a kernel capsule,
    # and the compile (Program::finalize) runs without the GIL: every copy and release of those
    # references must happen under it (a Python refcount changed without the GIL races with
    # other threads, and a release that frees without a thread state crashes on Python 3.12).
    # _core is built with pybind11's GIL assertion on every reference change (module.cpp), which
    # aborts the process on a violation: hence the child.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    res = subprocess.run([sys.executable, "-X", "faulthandler", "-c", _GIL_CHILD, str(compiled_kernel.__file__)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    assert "errors: []" in res.stdout


# The child of test_inference_in_a_daemon_thread_at_exit: daemon threads in a loop of inferences
# (a built-in model on 1 and 2 threads, a NumPy kernel, a compiled kernel) and compiles while
# the interpreter exits; and one that drops a NumPy-kernel program (releasing its references
# with the GIL held) after _core's exit hook ran.
_EXIT_CHILD = r"""
import atexit, gc, sys, threading, time
drop_now = threading.Event()
dropped = threading.Event()

def late_exit_hook():
    # Registered before opforge_cpu._core's own hook, so it runs after it.
    drop_now.set()
    dropped.wait(5)
    time.sleep(0.1)

atexit.register(late_exit_hook)
import numpy as np
import opforge
from cpu_testing import load_module, make_plugins, param
from opforge.graph import Model
from opforge_template_extension.op import TemplateIdentity
from test_cpu_custom_kernels import plugin

ext = load_module(__import__("pathlib").Path(sys.argv[1]), "_template_kernel")

def builtin():
    x = param("x", [64, 256])
    return Model([opforge.op("Relu", opforge.op("Add", x, x, name="add"), name="relu")], [x])

def custom():
    x = param("x", [64, 256])
    y = opforge.Node.create(TemplateIdentity, [x], {"scale": 2.0}, name="ident")
    return Model([opforge.op("Relu", y, name="relu")], [x])

x = np.ones((64, 256), np.float32)
jobs = [(make_plugins(), builtin, 1), (make_plugins(), builtin, 2),
        (make_plugins((plugin(lambda a, xs: [xs[0] * np.float32(a.scale)]), "ext")), custom, 2),
        (make_plugins((plugin(ext.kernel()), "ext")), custom, 2)]
started = []

def infer_forever(plugins, make, threads):
    m = opforge.Core(plugins).compile_model(make(), "CPU", {"INFERENCE_NUM_THREADS": threads})
    r = m.create_infer_request()
    started.append(1)
    while True:
        r.infer([x])

def compile_forever(plugins, make, threads):
    while True:
        opforge.Core(plugins).compile_model(make(), "CPU", {"INFERENCE_NUM_THREADS": threads})

def drop_at_exit(plugins, make, threads):
    m = opforge.Core(plugins).compile_model(make(), "CPU", {"INFERENCE_NUM_THREADS": threads})
    m([x])
    drop_now.wait()
    del m
    gc.collect()
    dropped.set()

for job in jobs:
    threading.Thread(target=infer_forever, args=job, daemon=True).start()
threading.Thread(target=compile_forever, args=jobs[1], daemon=True).start()
threading.Thread(target=drop_at_exit, args=jobs[2], daemon=True).start()
while len(started) < len(jobs):
    time.sleep(0.01)
time.sleep(0.1)
print("exiting", flush=True)
"""


@pytest.mark.parametrize("attempt", range(3))
def test_inference_in_a_daemon_thread_at_exit(compiled_kernel: types.ModuleType, attempt: int) -> None:
    # At interpreter exit a daemon thread that re-takes the GIL after a C++ call is ended by
    # CPython <= 3.13 with pthread_exit; from pybind11's gil_scoped_release destructor (noexcept)
    # that unwind was std::terminate: "terminate called without an active exception", SIGABRT,
    # every time a request ran in a daemon thread when the process exited. Now such a thread
    # parks instead (module.cpp take_gil), as CPython 3.14 does itself; but never one that holds
    # the GIL (the dropping thread here hung the exit so: the timeout below).
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    try:
        res = subprocess.run([sys.executable, "-c", _EXIT_CHILD, str(compiled_kernel.__file__)],
                             capture_output=True, text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"the child hung at exit: {e.stdout!r} {e.stderr!r}") from None
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    assert "exiting" in res.stdout and "terminate" not in res.stderr


def test_op_without_kernel_is_not_supported() -> None:
    class OpsOnly:
        @opforge.hookimpl
        def opforge_register_ops(self, register: Any) -> None:
            register(TemplateIdentity)

    core = opforge.Core(make_plugins((OpsOnly(), "ext")))
    model = identity_model()
    assert "ident" not in core.query_model(model, "CPU")
    with pytest.raises(UnsupportedOpError, match="ident"):
        core.compile_model(model, "CPU")
