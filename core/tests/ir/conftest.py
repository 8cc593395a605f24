"""Fixtures of the IR tests.

``plugins`` is a plugin system holding the standard ops that import, registered one module at a
time: other ops are being added to the opset while these tests run, and one half-written module
must not hide every op from the IR tests (the standard-opset hook registers all or nothing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge.graph import Model, Node, Value
from opforge.ir import read_ir, save_model
from opforge.opset import op_modules, ops_in_module
from opforge.plugins import PluginInfo, PluginSystem

STANDARD = PluginInfo("standard_opset", builtin=True)


def standard_plugins() -> PluginSystem:
    ps = PluginSystem(autoload=False, builtins=())
    for name in op_modules():
        try:
            classes = ops_in_module(name)
        except Exception:  # noqa: BLE001 - a module another engineer is still writing
            continue
        for cls in classes:
            ps.ops.add(cls.key(), cls, STANDARD)
    return ps


@pytest.fixture(scope="session")
def plugins() -> PluginSystem:
    return standard_plugins()


class Kit:
    """Builds nodes through the test's plugin system and compares models."""

    def __init__(self, ps: PluginSystem) -> None:
        self.ps = ps

    def has(self, *type_names: str) -> bool:
        return all(self.ps.ops.versions(t) for t in type_names)

    def op(self, type_name: str, *inputs: Value, name: str | None = None, version: str | None = None,
           **attrs: Any) -> Node:
        return Node.create(type_name, inputs, attrs, name, version=version, registry=self.ps.ops)

    def param(self, name: str, shape: Any, element_type: str = "f32") -> Node:
        p = self.op("Parameter", name=name, element_type=element_type, shape=shape)
        p.output(0).set_names([name])
        return p

    def const(self, value: Any, name: str | None = None) -> Node:
        return self.op("Constant", name=name, value=np.asarray(value))

    def model(self, outputs: list[Value], params: list[Node], name: str = "model") -> Model:
        results = [o if isinstance(o, Node) and o.type_name == "Result" else self.op("Result", o)
                   for o in outputs]
        return Model(results, params, name)

    def roundtrip(self, model: Model, tmp_path: Path, **kw: Any) -> Model:
        xml = tmp_path / "model.xml"
        save_model(model, xml, plugins=self.ps, **kw)
        return read_ir(xml, None, self.ps)

    @staticmethod
    def assert_same(a: Model, b: Model) -> None:
        """Same nodes (type, version, name, attributes, inputs, tensor names, shapes), same
        parameter and result order."""
        oa, ob = a.get_ordered_ops(), b.get_ordered_ops()
        assert [n.name for n in oa] == [n.name for n in ob]
        pos_a = {n.id: i for i, n in enumerate(oa)}
        pos_b = {n.id: i for i, n in enumerate(ob)}
        for na, nb in zip(oa, ob):
            assert (na.type_name, na.version) == (nb.type_name, nb.version), na.name
            if na.type_name == "Constant":
                va, vb = na.constant_value(), nb.constant_value()
                assert va is not None and vb is not None
                assert va.dtype == vb.dtype and va.shape == vb.shape, na.name
                np.testing.assert_array_equal(va, vb)
            else:
                assert na.attrs == nb.attrs, na.name
            assert [(pos_a[i.node.id], i.index) for i in na.inputs] == \
                   [(pos_b[i.node.id], i.index) for i in nb.inputs], na.name
            assert na.output_specs == nb.output_specs, na.name
            if na.type_name != "Result":
                assert na.output_names == nb.output_names, na.name
        assert [p.name for p in a.parameters] == [p.name for p in b.parameters]
        assert [r.name for r in a.results] == [r.name for r in b.results]
        assert a.name == b.name


@pytest.fixture
def kit(plugins: PluginSystem) -> Kit:
    return Kit(plugins)
