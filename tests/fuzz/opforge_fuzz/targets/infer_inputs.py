"""Input binding and ``Results``: arbitrary Python values (arrays of every dtype, order and stride,
nested lists, scalars, None, strings, dicts keyed by name/index/port/nonsense) fed to compiled
models on the REFERENCE and CPU devices, then the results looked up every way.

The bytes drive the choices (a small decoder, like libFuzzer's FuzzedDataProvider), so atheris'
coverage feedback and byte mutations apply directly. Oracles beyond "no bare exception":

* the models compute y = x + 0 / y = x / y = not(not(x)), so an accepted input must come back
  unchanged: a value that was altered on the way in (a lossy cast of a Python list, NaN turned
  into INT64_MIN) is a silent wrong answer;
* the caller's arrays are never modified;
* ``Results`` raises only ``KeyError`` (the Mapping contract) for a key that names no output.
"""

from __future__ import annotations

import functools
import random
import struct
from typing import Any

import numpy as np
from onnx import TensorProto, helper

from opforge_fuzz.harness import OracleFailure
from opforge_fuzz.mutate import mutate_bytes
from opforge_fuzz.targets import _common

NAME = "infer_inputs"

_DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.int8, np.uint8, np.uint64, np.bool_,
           np.complex64, object, np.str_, np.dtype(">f4"), np.dtype(">i8")]
_FLOATS = [0.0, -0.0, 1.5, -2.9, 1.7, float("nan"), float("inf"), float("-inf"), 1e300, 255.0, 256.0, 3e9]
_INTS = [0, 1, -1, 2, 255, 256, 300, -129, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**64]


def _onnx_models() -> list[bytes]:
    f, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    add_zero = helper.make_graph(
        [helper.make_node("Add", ["x", "zero"], ["y"], name="add0")], "f32_static",
        [helper.make_tensor_value_info("x", f, [2, 3])], [helper.make_tensor_value_info("y", f, [2, 3])],
        [helper.make_tensor("zero", f, [], [0.0])])
    dyn = helper.make_graph(
        [helper.make_node("Add", ["a", "zero"], ["y"], name="add0"),
         helper.make_node("Not", ["m"], ["nm"], name="not1"), helper.make_node("Not", ["nm"], ["z"], name="not2")],
        "two_inputs",
        [helper.make_tensor_value_info("a", i64, ["N", 2]), helper.make_tensor_value_info("m", b, ["K"])],
        [helper.make_tensor_value_info("y", i64, ["N", 2]), helper.make_tensor_value_info("z", b, ["K"])],
        [helper.make_tensor("zero", i64, [], [0])])
    u8 = helper.make_graph(
        [helper.make_node("Identity", ["q"], ["r"], name="ident")], "u8_identity",
        [helper.make_tensor_value_info("q", TensorProto.UINT8, ["L"])],
        [helper.make_tensor_value_info("r", TensorProto.UINT8, ["L"])])
    out = []
    for g in (add_zero, dyn, u8):
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        out.append(m.SerializeToString())
    return out


class _Reference:
    """The NumPy reference evaluator behind the CompiledModel calls this target makes (the
    reference is not a Core device; it binds inputs with the same runtime.inputs code)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.inputs = model.inputs
        self.outputs = model.outputs

    def __call__(self, inputs: Any) -> Any:
        from opforge.reference import evaluate_model
        from opforge.runtime.results import Results

        return Results(self.model.outputs, evaluate_model(self.model, inputs))

    def create_infer_request(self) -> _Reference:
        return self

    infer = __call__


@functools.lru_cache(maxsize=1)
def _compiled() -> list[Any]:
    """(device, compiled model) pairs, compiled once per fuzzing process: the reference, and the
    CPU device when it is installed here."""
    core = _common.core()
    out: list[Any] = []
    for data in _onnx_models():
        model = core.read_model(data)
        out.append(("REFERENCE", _Reference(model)))
        if "CPU" in core.available_devices:
            out.append(("CPU", core.compile_model(model, "CPU")))
    return out


class _Reader:
    """Decisions from the fuzz bytes (zeros once they run out, so every input is complete)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def pick(self, seq: Any) -> Any:
        return seq[self.byte() % len(seq)]

    def small(self, n: int) -> int:
        return self.byte() % n


def _array(r: _Reader) -> np.ndarray:
    dtype = np.dtype(r.pick(_DTYPES))
    rank = r.small(4)
    shape = tuple(r.small(5) for _ in range(rank))
    count = int(np.prod(shape)) if shape else 1
    values: list[Any] = [r.pick(_FLOATS) if r.small(2) else r.pick(_INTS) for _ in range(count)]
    if dtype.kind == "O":
        pool: list[Any] = [None, "x", 1, 2.5, b"b", [1]]
        arr = np.empty(shape, dtype=object)
        for idx in np.ndindex(*shape):
            arr[idx] = r.pick(pool)
        return arr
    if dtype.kind == "U":
        return np.array([str(v) for v in values], dtype=dtype).reshape(shape)
    with np.errstate(all="ignore"):
        try:
            arr = np.array(values, dtype=np.float64).astype(dtype).reshape(shape)
        except (OverflowError, ValueError):
            arr = np.zeros(shape, dtype=dtype)
    layout = r.small(6)
    if layout == 1 and arr.ndim >= 1:  # negative strides
        arr = arr[::-1]
    elif layout == 2 and arr.ndim >= 2:  # non-contiguous
        arr = np.asfortranarray(arr).T.T if r.small(2) else arr.T
    elif layout == 3:
        arr.flags.writeable = False
    elif layout == 4 and arr.ndim >= 1:  # a strided view of a bigger buffer
        big = np.repeat(arr, 2, axis=0)
        arr = big[::2]
    return arr


def _nested(r: _Reader, depth: int = 0) -> Any:
    kind = r.small(8)
    if depth > 3 or kind < 3:
        return r.pick(_FLOATS + _INTS + [True, False])
    if kind == 3:
        return r.pick([None, "1.0", b"\x00", complex(1, 2), object()])
    n = r.small(4)
    items = [_nested(r, depth + 1) for _ in range(n)]
    if kind == 4:  # a rectangular list of one kind of scalar, in the shape of one of the inputs
        s = r.pick(_FLOATS + _INTS + [True, False])
        rows, cols = r.pick([(2, 3), (1, 2), (3, 2), (0, 2), (None, 4), (None, 1)])
        return [s] * cols if rows is None else [[s] * cols for _ in range(rows)]
    return tuple(items) if kind == 5 else items


def _value(r: _Reader) -> Any:
    kind = r.small(10)
    if kind < 5:
        return _array(r)
    if kind < 8:
        return _nested(r)
    if kind == 8:
        return np.float32(r.pick(_FLOATS)) if r.small(2) else np.int64(r.pick(_INTS[:7]))
    return r.pick([None, "x", b"", 3, 2.5, {"a": 1}, np.ma.masked_array([1.0, 2.0], mask=[0, 1])])


def _inputs(r: _Reader, compiled: Any) -> Any:
    ports = list(compiled.inputs)
    form = r.small(5)
    if form == 0:
        return _value(r)  # a bare value (meant for a one-input model)
    if form == 1:
        return [_value(r) for _ in range(r.pick([len(ports), len(ports), 0, len(ports) + 1]))]
    keys: list[Any] = []
    for k, p in enumerate(ports):
        keys.append(r.pick([p.any_name, k, p, p.node.name, p.any_name]))
    if r.small(4) == 0:
        keys.append(r.pick(["nope", len(ports), -1, None, 1.0, ("x",), b"x"]))
    if r.small(4) == 0 and keys:
        keys.pop(r.small(len(keys)))
    return {k: _value(r) for k in keys}


def _check_same(port: Any, given: Any, got: np.ndarray, device: str) -> None:
    """An accepted input comes back unchanged (the models are identities)."""
    want = port.element_type.np
    with np.errstate(all="ignore"):
        try:
            original = np.asarray(given)
        except (ValueError, TypeError):
            return
    if original.dtype.kind in "OUSV" or original.shape != got.shape:
        return
    with np.errstate(all="ignore"):
        as_want = original.astype(want)
        back = as_want.astype(original.dtype)
    if original.dtype.kind == "f" and np.dtype(want).kind == "f":
        # A float literal rounds to the nearest float32, as in any language (runtime/inputs.py
        # documents it); only an overflow to infinity loses the value.
        lossless = not bool((np.isfinite(original) & ~np.isfinite(as_want)).any())
    elif original.dtype.kind in "fc":
        lossless = bool(np.array_equal(back, original, equal_nan=True))
    else:
        lossless = bool(np.array_equal(back, original))
    if not lossless:
        raise OracleFailure(
            f"{device}: input '{port.any_name}' of element type {port.element_type} accepted the value "
            f"{original.tolist()!r:.200} ({original.dtype}), which that type cannot hold exactly; it ran as "
            f"{got.tolist()!r:.200} (a silent lossy conversion)"
        )
    exact = np.array_equal(got, as_want, equal_nan=got.dtype.kind in "fc")
    if not exact:
        raise OracleFailure(f"{device}: input '{port.any_name}' {as_want.tolist()!r:.200} came back as "
                            f"{got.tolist()!r:.200} through an identity model")


def fuzz_one(data: bytes) -> None:
    r = _Reader(data)
    device, compiled = r.pick(_compiled())
    inputs = _inputs(r, compiled)
    arrays = [v for v in (inputs.values() if isinstance(inputs, dict) else
                          inputs if isinstance(inputs, list) else [inputs]) if isinstance(v, np.ndarray)]
    before = [a.copy() for a in arrays]
    if r.small(2):
        results = compiled(inputs)
    else:
        results = compiled.create_infer_request().infer(inputs)
    for a, b in zip(arrays, before):
        if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            raise OracleFailure(f"{device}: infer modified the caller's input array")
    # Which given value fed which port: rebuild the binding the way the user meant it.
    ports = list(compiled.inputs)
    given: list[Any] = []
    if isinstance(inputs, dict):
        for k, p in enumerate(ports):
            match = [v for key, v in inputs.items()
                     if key is p or key == k or (isinstance(key, str) and key in (p.any_name, p.node.name))]
            given.append(match[0] if len(match) == 1 else None)
    elif isinstance(inputs, list):
        given = list(inputs)
    else:
        given = [inputs]
    outputs = list(compiled.outputs)
    for k, (p, g) in enumerate(zip(ports, given)):
        if g is not None and k < len(outputs):
            _check_same(p, g, np.asarray(results[k]), device)
    _lookups(results, outputs, r)


def _lookups(results: Any, outputs: list[Any], r: _Reader) -> None:
    n = len(results)
    if n != len(outputs):
        raise OracleFailure(f"Results holds {n} arrays for a model with {len(outputs)} outputs")
    for k, p in enumerate(outputs):
        a = results[k]
        if results[p] is not a or results[p.any_name] is not a or results[k - n] is not a:
            raise OracleFailure(f"Results lookups of output {k} by index, port and name disagree")
        if p not in results or p.any_name not in results:
            raise OracleFailure(f"output {k} ('{p.any_name}') is not 'in' its own Results")
    for key in (n, -n - 1, "no such output", r.pick([None, 1.5, b"y", (0,), True, np.int64(n + 3)])):
        try:
            results[key]
        except KeyError:
            continue
        if key is True and n > 1:
            continue
        if not (isinstance(key, (bool, np.bool_)) or key is None):
            raise OracleFailure(f"Results[{key!r}] returned an array though no output has that key")
    results.to_dict()
    results.to_tuple()
    repr(results)


def setup() -> None:
    _compiled()  # compile (and import the device plugins) before the per-input clock starts


def seeds() -> list[bytes]:
    rng = random.Random(7)
    return [bytes(rng.randrange(256) for _ in range(rng.randint(4, 40))) for _ in range(24)] + \
        [struct.pack("<8B", *([k] * 8)) for k in range(6)] + _common.committed_seeds(NAME)


def mutate(data: bytes, rng: random.Random, pool: list[bytes] | None = None) -> bytes:
    return mutate_bytes(data, rng, max_size=256)
