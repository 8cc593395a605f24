"""The one profiling record (``ProfilingInfo``) every device's counters are given as."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from opforge import Model
from opforge.errors import KernelError
from opforge.plugins import PluginInfo, PluginSystem
from opforge.runtime import CompileContext, Device, Executable, ProfilingInfo
from opforge.runtime.profiling import normalize


def test_rows_read_by_attribute_and_by_key() -> None:
    row = ProfilingInfo("conv1", "Convolution", "jit:avx2", 1.5, "EXECUTED", {"fused_names": ["conv1", "relu1"]})
    assert (row.node_name, row["exec_type"], row["fused_names"]) == ("conv1", "jit:avx2", ["conv1", "relu1"])
    assert row.get("kernel") is None
    with pytest.raises(KeyError, match=r"no field 'kernel'; fields: node_name, node_type, exec_type, "
                                       r"real_time_ms, status, fused_names"):
        row["kernel"]
    assert row.to_dict() == {"node_name": "conv1", "node_type": "Convolution", "exec_type": "jit:avx2",
                             "real_time_ms": 1.5, "status": "EXECUTED", "fused_names": ["conv1", "relu1"]}


def test_mappings_are_converted_and_checked() -> None:
    rows = normalize([{"node_name": "a", "node_type": "Relu", "exec_type": "ref", "real_time_ms": "0.25",
                       "status": "executed", "kernel": "relu_f32"}], "MYDEV")
    assert rows == [ProfilingInfo("a", "Relu", "ref", 0.25, "EXECUTED", {"kernel": "relu_f32"})]
    with pytest.raises(KernelError, match=r"device MYDEV returned a profiling row without exec_type, status"):
        normalize([{"node_name": "a", "node_type": "Relu", "real_time_ms": 1}], "MYDEV")
    with pytest.raises(KernelError, match=r"profiling status 'DONE' for node 'a'; expected one of EXECUTED"):
        normalize([{"node_name": "a", "node_type": "Relu", "exec_type": "x", "real_time_ms": 1, "status": "DONE"}],
                  "MYDEV")
    with pytest.raises(KernelError, match=r"real_time_ms='fast' for node 'a'"):
        normalize([{"node_name": "a", "node_type": "Relu", "exec_type": "x", "real_time_ms": "fast",
                    "status": "EXECUTED"}], "MYDEV")
    with pytest.raises(KernelError, match="a profiling row of type tuple"):
        normalize([("a", 1.0)], "MYDEV")


class _DictRows(Executable):
    """A device written before the record existed: its rows are plain dicts."""

    def infer(self, inputs: Any, state: Any) -> list[np.ndarray]:
        return [np.asarray(inputs[0])]

    def performance_counters(self, state: Any) -> list[Any]:
        return [{"node_name": "y", "node_type": "Relu", "exec_type": "legacy", "real_time_ms": 0.5,
                 "status": "EXECUTED", "thread": 3}]


class _LegacyDevice(Device):
    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        return {n.name: self.name for n in model.get_ordered_ops()}

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        return _DictRows()


class _Plugin:
    @opforge.hookimpl
    def opforge_register_devices(self, register: Any) -> None:
        register("LEGACY", lambda: _LegacyDevice("LEGACY"))


def test_infer_request_gives_records_whatever_the_device_returns() -> None:
    ps = PluginSystem(autoload=False)
    ps.register_module(_Plugin(), PluginInfo("legacy", "opforge-legacy", "1"))
    core = opforge.Core(ps)
    x = opforge.op("Parameter", element_type="f32", shape=[2], name="x")
    model = Model([opforge.op("Relu", x, name="y")], [x])
    req = core.compile_model(model, "LEGACY").create_infer_request()
    req.infer([np.ones(2, np.float32)])
    [row] = req.get_profiling_info()
    assert isinstance(row, ProfilingInfo) and (row.exec_type, row["thread"]) == ("legacy", 3)
