"""Helpers shared by the opset tests: one-op opforge graphs (built from the op classes of
Parameter, Constant and Result, so the tests do not depend on every other op module importing),
reference evaluation that checks every output against its inferred element type and shape, and
OpenVINO as the oracle: its CPU plugin (in f32), its own reference (``Node.evaluate`` and
constant folding), and loading the IR attributes opforge writes.

The test modules import it as ``from .oracle import ...`` (this folder is a package)."""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import numpy as np
import pytest
from opforge.element_type import PRECISION_NAMES, Type
from opforge.graph import Model, Node, Output
from opforge.op import Op
from opforge.opset.constant import Constant
from opforge.opset.parameter import Parameter
from opforge.opset.result import Result
from opforge.reference import evaluate_model
from opforge.shape import PartialShape

OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


# --- opforge one-op graphs -------------------------------------------------------------------
def param(t: str | Type, shape: Any) -> Node:
    """A Parameter of element type ``t``; ``shape`` is a PartialShape, a list of dimensions
    (None for a dynamic one), or None for a dynamic rank."""
    return Node.create(Parameter, [], {"element_type": t, "shape": PartialShape(shape)})


def const(value: Any, dtype: Any = None) -> Node:
    return Node.create(Constant, [], {"value": np.asarray(value, dtype=dtype)})


def make(op: type[Op] | str, *inputs: Node | Output, **attrs: Any) -> Node:
    return Node.create(op, list(inputs), attrs)


def shapes(node: Node) -> list[PartialShape]:
    return [s.shape for s in node.output_specs]


def i64(*v: Any) -> np.ndarray:
    return np.array(v, dtype=np.int64)


def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def model_of(node: Node) -> Model:
    return Model([Node.create(Result, [out]) for out in node.outputs()])


def evaluate(node: Node, feeds: Sequence[np.ndarray] = ()) -> list[np.ndarray]:
    """Evaluate a one-op model; every output must have exactly its inferred type and a shape
    compatible with its inferred shape."""
    outs = evaluate_model(model_of(node), list(feeds))
    for out, spec in zip(outs, node.output_specs):
        assert out.dtype == spec.type.np, (out.dtype, spec.type)
        assert spec.shape.compatible(out.shape), (out.shape, spec.shape)
    return outs


def evaluate_op(
    type_name: str, arrays: Sequence[np.ndarray], consts: Iterable[int] = (), **attrs: Any
) -> list[np.ndarray]:
    """:func:`evaluate` the op ``type_name`` on ``arrays``: those listed in ``consts`` become
    Constants, the others Parameters."""
    fixed = set(consts)
    nodes = [
        Node.create(Constant, [], {"value": a}) if i in fixed else param(Type.from_numpy(a.dtype), a.shape)
        for i, a in enumerate(arrays)
    ]
    return evaluate(make(type_name, *nodes, **attrs), [a for i, a in enumerate(arrays) if i not in fixed])


def run(type_name: str, inputs: Sequence[np.ndarray], consts: Iterable[int] = (), **attrs: Any) -> np.ndarray:
    """The one output of :func:`evaluate_op`."""
    (out,) = evaluate_op(type_name, inputs, consts, **attrs)
    return out


# --- comparisons -------------------------------------------------------------------------------
def assert_matches(ours: np.ndarray, theirs: np.ndarray, rtol: float, atol: float) -> None:
    """Floating-point results within the tolerances, any others exactly equal."""
    if np.issubdtype(ours.dtype, np.floating):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(ours, theirs)


def assert_same(
    ours: Sequence[np.ndarray], theirs: Sequence[np.ndarray], rtol: float = 1e-6, atol: float = 1e-7
) -> None:
    """As many outputs, of the same shapes, each :func:`assert_matches` its counterpart."""
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape, (a.shape, b.shape)
        assert_matches(a, b, rtol, atol)


def assert_close(
    got: Sequence[np.ndarray], want: Sequence[np.ndarray], rtol: float = 1e-4, atol: float = 1e-5
) -> None:
    """Looser than :func:`assert_same`: integer and boolean results equal once ``want`` is cast
    to their type, any others compared in float64 within the tolerances."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        if g.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w.astype(g.dtype))
        else:
            np.testing.assert_allclose(
                g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True
            )


# --- OpenVINO --------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def ov_core() -> Any:
    ov = pytest.importorskip("openvino")
    return ov.Core()


def ov_compile(model: Any) -> Any:
    """An OpenVINO model compiled on CPU in f32."""
    return ov_core().compile_model(model, "CPU", OV_CONFIG)


def ov_run(outputs: Any, params: Sequence[Any], feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Compile OpenVINO nodes (a node, or a list of outputs) on CPU in f32 and run them."""
    ov = pytest.importorskip("openvino")
    outs = list(outputs.outputs()) if hasattr(outputs, "outputs") else list(outputs)
    compiled = ov_compile(ov.Model(outs, list(params)))
    result = compiled(list(feeds))
    return [np.asarray(result[o]) for o in compiled.outputs]


def openvino(
    build: Callable[..., Any], arrays: Sequence[np.ndarray], consts: Iterable[int] = ()
) -> list[np.ndarray]:
    """Compile the one-op OpenVINO model ``build(*inputs)`` on CPU and run it (the inputs listed
    in ``consts`` are constants, the others parameters)."""
    ops = pytest.importorskip("openvino.opset13")
    fixed = set(consts)
    copies = [np.array(a) for a in arrays]  # writable copies: opforge Constants freeze their arrays
    nodes = [
        ops.constant(a) if i in fixed else ops.parameter(list(a.shape), a.dtype) for i, a in enumerate(copies)
    ]
    params = [n for i, n in enumerate(nodes) if i not in fixed]
    return ov_run(build(*nodes), params, [a for i, a in enumerate(copies) if i not in fixed])


def openvino_outputs(
    build: Callable[[Any, list[Any]], list[Any]], arrays: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """Compile one OpenVINO model holding every output ``build(opset, parameters)`` returns."""
    ops = pytest.importorskip("openvino.opset13")
    params = [ops.parameter(list(a.shape), a.dtype) for a in arrays]
    return ov_run([o.output(0) for o in build(ops, params)], params, arrays)


def openvino_reference(build: Callable[..., Any], arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run OpenVINO's own reference implementation (``Node.evaluate``) of ``build(*constants)``."""
    ov = pytest.importorskip("openvino")
    ops = pytest.importorskip("openvino.opset13")
    arrays = [np.array(a) for a in arrays]
    node = build(*[ops.constant(a) for a in arrays])
    outs = [
        ov.Tensor(np.zeros(tuple(node.get_output_shape(i)), node.get_output_element_type(i).to_dtype()))
        for i in range(node.get_output_size())
    ]
    assert node.evaluate(outs, [ov.Tensor(a) for a in arrays])
    return [np.array(t.data) for t in outs]


def ov_fold(node: Any) -> list[np.ndarray]:
    """Outputs of an OpenVINO node whose inputs are all constants, computed by OpenVINO's core
    reference implementation (constant folding): the opset semantics, where the CPU plugin
    deviates from them."""
    ov = pytest.importorskip("openvino")
    from openvino import passes

    model = ov.Model(list(node.outputs()), [])
    manager = passes.Manager()
    manager.register_pass(passes.ConstantFolding())
    manager.run_passes(model)
    outs = []
    for r in model.get_results():
        src = r.input_value(0).get_node()
        assert src.get_type_name() == "Constant", f"OpenVINO did not fold {node.get_type_name()}"
        outs.append(np.asarray(src.get_data()))
    return outs


def compare(
    type_name: str,
    build: Callable[..., Any],
    arrays: Sequence[np.ndarray],
    consts: Iterable[int] = (),
    **attrs: Any,
) -> list[np.ndarray]:
    """The reference of ``type_name`` and OpenVINO's CPU device running ``build`` on the same
    inputs :func:`assert_same`; returns the reference's outputs."""
    fixed = set(consts)
    ours = evaluate_op(type_name, arrays, fixed, **attrs)
    assert_same(ours, openvino(build, arrays, fixed))
    return ours


# --- IR ----------------------------------------------------------------------------------------
def openvino_ir_layers(nodes: Sequence[Any], path: Path) -> list[tuple[str, str, dict[str, str]]]:
    """Save OpenVINO nodes (fed by parameters and constants) as IR at ``path`` and read back the
    type, version and ``<data>`` attributes of every layer but the parameters, constants and
    results."""
    ov = pytest.importorskip("openvino")
    params = list(
        {
            id(p): p
            for n in nodes
            for p in (inp.get_source_output().get_node() for inp in n.inputs())
            if p.get_type_name() == "Parameter"
        }.values()
    )
    ov.save_model(ov.Model([o for n in nodes for o in n.outputs()], params), str(path), compress_to_fp16=False)
    layers = []
    for layer in ET.parse(path).getroot().iter("layer"):
        if layer.get("type") in ("Parameter", "Const", "Result"):
            continue
        data = layer.find("data")
        layers.append(
            (str(layer.get("type")), str(layer.get("version")), dict(data.attrib) if data is not None else {})
        )
    return layers


def _dims(shape: PartialShape) -> str:
    return "".join(f"<dim>{-1 if d is None else d}</dim>" for d in shape.dims)


def _port(pid: int, t: Type, shape: PartialShape, precision: bool) -> str:
    prec = f' precision="{PRECISION_NAMES[t]}"' if precision else ""
    return f'<port id="{pid}"{prec}>{_dims(shape)}</port>'


def to_ir(node: Node) -> tuple[str, bytes]:
    """IR v11 XML and weights of a one-op graph (Parameter / Constant inputs, the op, Results),
    with the op's attributes exactly as ``attrs_to_ir`` writes them."""
    layers: list[str] = []
    edges: list[str] = []
    weights = bytearray()
    ids: dict[int, int] = {}
    for i, src in enumerate(node.inputs):
        n = src.node
        if n.id in ids:
            continue
        lid = ids[n.id] = len(layers)
        spec = n.output_specs[0]
        if n.op is Constant:
            data = np.ascontiguousarray(n.attrs.value).tobytes()  # type: ignore[attr-defined]
            shape = ",".join(str(d) for d in spec.shape.dims)
            attrs = (
                f'element_type="{spec.type.ir}" shape="{shape}" offset="{len(weights)}" size="{len(data)}"'
            )
            weights += data
            kind = "Const"
        else:
            shape = ",".join("?" if d is None else str(d) for d in spec.shape.dims)
            attrs = f'shape="{shape}" element_type="{spec.type.ir}"'
            kind = "Parameter"
        layers.append(
            f'<layer id="{lid}" name="in{i}" type="{kind}" version="opset1"><data {attrs}/>'
            f"<output>{_port(0, spec.type, spec.shape, True)}</output></layer>"
        )
    op_id = len(layers)
    data_attrs = " ".join(f"{k}={quoteattr(v)}" for k, v in node.op.attrs_to_ir(node.attrs).items())
    ins = "".join(_port(i, s.spec.type, s.spec.shape, False) for i, s in enumerate(node.inputs))
    n_in = len(node.inputs)
    outs = "".join(_port(n_in + j, s.type, s.shape, True) for j, s in enumerate(node.output_specs))
    layers.append(
        f'<layer id="{op_id}" name="op" type="{node.type_name}" version="{node.version}">'
        f"<data {data_attrs}/><input>{ins}</input><output>{outs}</output></layer>"
    )
    for i, src in enumerate(node.inputs):
        edges.append(
            f'<edge from-layer="{ids[src.node.id]}" from-port="0" to-layer="{op_id}" to-port="{i}"/>'
        )
    for j, spec in enumerate(node.output_specs):
        rid = len(layers)
        layers.append(
            f'<layer id="{rid}" name="out{j}" type="Result" version="opset1">'
            f"<input>{_port(0, spec.type, spec.shape, False)}</input></layer>"
        )
        edges.append(f'<edge from-layer="{op_id}" from-port="{n_in + j}" to-layer="{rid}" to-port="0"/>')
    xml = (
        f'<?xml version="1.0"?><net name="one_op" version="11"><layers>{"".join(layers)}</layers>'
        f"<edges>{''.join(edges)}</edges></net>"
    )
    return xml, bytes(weights)


def _ov_attr_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(_ov_attr_str(x) for x in v)
    return str(v).lower()


def _check_attr(name: str, theirs_value: Any, text: str) -> None:
    theirs = _ov_attr_str(theirs_value)
    ours = text.replace(" ", "").lower()
    if isinstance(theirs_value, float):
        assert float(ours) == pytest.approx(float(theirs), rel=1e-6), name
    elif isinstance(theirs_value, (list, tuple)) and all(isinstance(x, int) for x in theirs_value):
        # OpenVINO widens defaults such as pads "0" (or "") to one value per axis.
        mine = [int(x) for x in ours.split(",") if x]
        width = max(len(mine), len(theirs_value))
        assert [*mine, *[0] * (width - len(mine))] == [*theirs_value, *[0] * (width - len(theirs_value))], (
            f"attribute {name}: OpenVINO read {theirs!r}, opforge wrote {ours!r}"
        )
    else:
        assert theirs == ours, f"attribute {name}: OpenVINO read {theirs!r}, opforge wrote {ours!r}"


def check_ir_in_openvino(
    node: Node, feeds: Sequence[np.ndarray], rtol: float = 1e-4, atol: float = 1e-5
) -> None:
    """Write ``node`` as IR, load it into OpenVINO, check every attribute arrived under its name
    with its value, and compare OpenVINO's CPU results with the reference."""
    ov = pytest.importorskip("openvino")
    xml, weights = to_ir(node)
    model = ov_core().read_model(model=xml, weights=ov.Tensor(np.frombuffer(weights or b"\0", dtype=np.uint8)))
    ov_op = next(o for o in model.get_ops() if o.get_friendly_name() == "op")
    ov_attrs = ov_op.get_attributes()
    ours = node.op.attrs_to_ir(node.attrs)
    for name, text in ours.items():
        assert name in ov_attrs, f"OpenVINO's {node.type_name} has no attribute {name!r}: {sorted(ov_attrs)}"
        if name in ("pads_begin", "pads_end") and ours.get("auto_pad", "explicit") != "explicit":
            continue  # OpenVINO stores the padding it computed for auto_pad instead
        _check_attr(name, ov_attrs[name], text)
    compiled = ov_compile(model)
    result = compiled(list(feeds))
    assert_close(evaluate(node, feeds), [np.asarray(result[o]) for o in compiled.outputs], rtol, atol)
    # And the IR strings read back into equal attributes.
    assert node.op.attrs_from_ir("op", node.op.attrs_to_ir(node.attrs)) == node.attrs
