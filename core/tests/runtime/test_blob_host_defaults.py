"""Exported blobs and host-dependent defaults: a property the compile left at the device's
default (the CPU's precision: bf16 where the host has bf16 arithmetic) takes the importing
host's default; one the caller set is kept, and a host that refuses it says so naming the blob.

HOSTP is a device made here whose INFERENCE_PRECISION_HINT default is bf16 on a "bf16 host" and
f32 elsewhere (a class flag stands for the host: a new Core after changing it is another host),
refusing bf16 where the host has none, as the CPU does. It exports its precision as its payload."""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import opforge
import pytest
from opforge import Model
from opforge.errors import ModelFormatError, PropertyError
from opforge.plugins import PluginInfo, PluginSystem
from opforge.reference import evaluate_model
from opforge.runtime import CompileContext, Device, Executable
from opforge.runtime.properties import COMMON_PROPERTIES

X = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)


class PrecisionExecutable(Executable):
    def __init__(self, inner: Executable, precision: str) -> None:
        self.inner, self.precision = inner, precision

    def infer(self, inputs: Any, state: Any) -> list[np.ndarray]:
        return self.inner.infer(inputs, state)

    def properties(self) -> dict[str, Any]:
        return {"INFERENCE_PRECISION_HINT": self.precision}

    def export_payload(self) -> bytes | None:
        return self.precision.encode()


class HostPrecisionDevice(Device):
    host_bf16: ClassVar[bool] = True
    compiles: ClassVar[list[str]] = []
    imports: ClassVar[list[bytes]] = []

    def __init__(self, name: str) -> None:
        super().__init__(name)
        default = "bf16" if self.host_bf16 else "f32"
        self.property_specs = tuple(dataclasses.replace(s, default=default) if s.name == "INFERENCE_PRECISION_HINT"
                                    else s for s in COMMON_PROPERTIES)

    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        return ctx.core._device("TEMPLATE").query_model(model, ctx)

    def _precision(self, ctx: CompileContext) -> str:
        want = str(ctx.config["INFERENCE_PRECISION_HINT"])
        if want == "bf16" and not self.host_bf16:
            raise PropertyError("device HOSTP: INFERENCE_PRECISION_HINT=bf16 needs a host with bf16 arithmetic; "
                                "this one has none. Use f32.")
        return want

    def _inner(self, model: Model, ctx: CompileContext) -> Executable:
        cfg = ctx.core._table("TEMPLATE").merged(None)
        return ctx.core._device("TEMPLATE").compile_model(model, CompileContext("TEMPLATE", cfg, ctx.plugins, ctx.core))

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        precision = self._precision(ctx)
        HostPrecisionDevice.compiles.append(precision)
        return PrecisionExecutable(self._inner(model, ctx), precision)

    def import_compiled(self, model: Model, payload: bytes, ctx: CompileContext) -> Executable | None:
        precision = self._precision(ctx)  # a payload is no way around the host's refusal
        HostPrecisionDevice.imports.append(payload)
        if payload.decode() != precision:
            return None  # compiled for another precision: compile the IR
        return PrecisionExecutable(self._inner(model, ctx), precision)


class HostPlugin:
    @opforge.hookimpl
    def opforge_register_devices(self, register: Any) -> None:
        register("HOSTP", lambda: HostPrecisionDevice("HOSTP"))


@pytest.fixture
def hplugins(plugins: PluginSystem) -> Iterator[PluginSystem]:
    plugins.register_module(HostPlugin(), PluginInfo("host_precision", "opforge-test-hostp", "1.0"))
    HostPrecisionDevice.host_bf16 = True
    HostPrecisionDevice.compiles = []
    HostPrecisionDevice.imports = []
    yield plugins
    HostPrecisionDevice.host_bf16 = True


def _host(plugins: PluginSystem, bf16: bool) -> opforge.Core:
    """A Core on a host with or without bf16 (the device reads the flag when it is made)."""
    HostPrecisionDevice.host_bf16 = bf16
    return opforge.Core(plugins)


def _manifest(blob: bytes) -> dict[str, Any]:
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        data: dict[str, Any] = json.loads(z.read("manifest.json"))
        return data


def _rewrite(blob: bytes, drop: tuple[str, ...] = (), **changes: Any) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(blob))
    manifest = {k: v for k, v in {**json.loads(src.read("manifest.json")), **changes}.items() if k not in drop}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in src.namelist():
            z.writestr(name, json.dumps(manifest) if name == "manifest.json" else src.read(name))
    return out.getvalue()


def test_a_defaulted_precision_takes_the_importing_hosts_default(hplugins: PluginSystem, relu_add_model: Model) -> None:
    compiled = _host(hplugins, bf16=True).compile_model(relu_add_model, "HOSTP")
    assert compiled.get_property("INFERENCE_PRECISION_HINT") == "bf16"
    blob = compiled.export_model()
    m = _manifest(blob)
    assert m["config"]["INFERENCE_PRECISION_HINT"] == "bf16" and "INFERENCE_PRECISION_HINT" in m["defaulted"]
    # the same kind of host: its payload, in bf16
    same = _host(hplugins, bf16=True).import_model(blob)
    assert same.get_property("INFERENCE_PRECISION_HINT") == "bf16"
    assert (HostPrecisionDevice.compiles, HostPrecisionDevice.imports) == (["bf16"], [b"bf16"])
    # a host without bf16: f32, its default; the bf16 payload is not used (compiled from the IR)
    other = _host(hplugins, bf16=False).import_model(blob)
    assert other.get_property("INFERENCE_PRECISION_HINT") == "f32"
    assert (HostPrecisionDevice.compiles, HostPrecisionDevice.imports) == (["bf16", "f32"], [b"bf16"])
    np.testing.assert_array_equal(other([X])[0], evaluate_model(relu_add_model, [X])[0])
    # exported again there, the precision is still a default: a bf16 host gets bf16 back
    again = other.export_model()
    assert "INFERENCE_PRECISION_HINT" in _manifest(again)["defaulted"]
    assert _host(hplugins, bf16=True).import_model(again).get_property("INFERENCE_PRECISION_HINT") == "bf16"


@pytest.mark.parametrize("how", ["compile config", "set_property"])
def test_an_explicit_bf16_is_kept_and_refused_where_the_host_has_none(hplugins: PluginSystem, relu_add_model: Model,
                                                                      tmp_path: Path, how: str) -> None:
    core = _host(hplugins, bf16=True)
    if how == "set_property":
        core.set_property("HOSTP", {"INFERENCE_PRECISION_HINT": "bf16"})
        compiled = core.compile_model(relu_add_model, "HOSTP")
    else:
        compiled = core.compile_model(relu_add_model, "HOSTP", {"INFERENCE_PRECISION_HINT": "bf16"})
    path = tmp_path / "m.ofblob"
    compiled.export_model(path)
    assert "INFERENCE_PRECISION_HINT" not in _manifest(path.read_bytes())["defaulted"]
    assert _host(hplugins, bf16=True).import_model(path).get_property("INFERENCE_PRECISION_HINT") == "bf16"
    with pytest.raises(PropertyError) as err:
        _host(hplugins, bf16=False).import_model(path)
    text = str(err.value)
    assert f"'{path}' cannot be imported on this host" in text
    assert "INFERENCE_PRECISION_HINT=bf16 needs a host with bf16 arithmetic" in text
    assert "Its compile set INFERENCE_PRECISION_HINT=bf16" in text
    assert "config={'INFERENCE_PRECISION_HINT': 'f32'}" in text and "compile the model again for HOSTP" in text
    # the documented way out: an override at import
    fixed = _host(hplugins, bf16=False).import_model(path, config={"INFERENCE_PRECISION_HINT": "f32"})
    assert fixed.get_property("INFERENCE_PRECISION_HINT") == "f32"
    np.testing.assert_array_equal(fixed([X])[0], evaluate_model(relu_add_model, [X])[0])


def test_an_explicit_f32_stays_f32_on_a_bf16_host(hplugins: PluginSystem, relu_add_model: Model) -> None:
    blob = _host(hplugins, bf16=False).compile_model(relu_add_model, "HOSTP",
                                                     {"INFERENCE_PRECISION_HINT": "f32"}).export_model()
    assert _host(hplugins, bf16=True).import_model(blob).get_property("INFERENCE_PRECISION_HINT") == "f32"


def test_a_version_1_blob_keeps_its_whole_config(hplugins: PluginSystem, relu_add_model: Model) -> None:
    # before format version 2 a blob did not say which properties were defaults: all are kept
    blob = _host(hplugins, bf16=True).compile_model(relu_add_model, "HOSTP").export_model()
    v1 = _rewrite(blob, drop=("defaulted",), format_version=1)
    assert _host(hplugins, bf16=True).import_model(v1).get_property("INFERENCE_PRECISION_HINT") == "bf16"
    with pytest.raises(PropertyError, match=r"compiled-model blob cannot be imported on this host"):
        _host(hplugins, bf16=False).import_model(v1)


def test_a_malformed_defaulted_list_is_refused(hplugins: PluginSystem, relu_add_model: Model) -> None:
    blob = _host(hplugins, bf16=True).compile_model(relu_add_model, "HOSTP").export_model()
    with pytest.raises(ModelFormatError, match=r"'defaulted' must be a list of property names, got 'ALL'"):
        opforge.Core(hplugins).import_model(_rewrite(blob, defaulted="ALL"))
