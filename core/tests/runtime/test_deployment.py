"""Deployment: export_model / import_model, the compile cache (CACHE_DIR) and the AUTO device, on
the test TEMPLATE device plus two devices made here: PAYLOAD (exports its own compiled form and
counts compiles and imports) and FAILING (never compiles)."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge import Model
from opforge.builtins.auto_device import AutoFallbackWarning
from opforge.errors import (
    BlobVersionError,
    DeviceNotFoundError,
    ModelFormatError,
    PropertyError,
    UnsupportedOpError,
)
from opforge.plugins import PluginInfo, PluginSystem
from opforge.reference import evaluate_model
from opforge.runtime import CompileContext, Device, Executable
from opforge.runtime.cache import CacheWarning
from opforge.runtime.device import Availability

X = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)


class CountingExecutable(Executable):
    def __init__(self, inner: Executable, tag: bytes) -> None:
        self.inner, self.tag = inner, tag

    def infer(self, inputs: Any, state: Any) -> list[np.ndarray]:
        return self.inner.infer(inputs, state)

    def export_payload(self) -> bytes | None:
        return self.tag


class PayloadDevice(Device):
    """Compiles like TEMPLATE and exports a payload; import_compiled uses it instead of compiling."""

    compiles = 0
    imports: list[bytes] = []

    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        return ctx.core._device("TEMPLATE").query_model(model, ctx)

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        PayloadDevice.compiles += 1
        inner = ctx.core._device("TEMPLATE").compile_model(model, _template_ctx(ctx))
        return CountingExecutable(inner, b"payload-v1")

    def import_compiled(self, model: Model, payload: bytes, ctx: CompileContext) -> Executable | None:
        PayloadDevice.imports.append(payload)
        if payload != b"payload-v1":
            return None  # a payload this device no longer reads: compile from the IR instead
        inner = ctx.core._device("TEMPLATE").compile_model(model, _template_ctx(ctx))
        return CountingExecutable(inner, payload)


def _template_ctx(ctx: CompileContext) -> CompileContext:
    cfg = ctx.core._table("TEMPLATE").merged(None)
    return CompileContext("TEMPLATE", cfg, ctx.plugins, ctx.core)


class FailingDevice(Device):
    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        return {}

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        raise UnsupportedOpError(f"device FAILING has no kernel for any op of '{model.name}'")


class GoneDevice(Device):
    def availability(self) -> Availability:
        return Availability(False, "unplugged (test device)")

    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        return {}

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        raise RuntimeError("unreachable")


class ExtraDevices:
    @opforge.hookimpl
    def opforge_register_devices(self, register: Any) -> None:
        register("PAYLOAD", lambda: PayloadDevice("PAYLOAD"))
        register("FAILING", lambda: FailingDevice("FAILING"))
        register("GONE", lambda: GoneDevice("GONE"))


@pytest.fixture
def dcore(plugins: PluginSystem) -> opforge.Core:
    plugins.register_module(ExtraDevices(), PluginInfo("extra_devices", "opforge-test-extra", "1.0"))
    PayloadDevice.compiles = 0
    PayloadDevice.imports = []
    return opforge.Core(plugins)


def _manifest(blob: bytes) -> dict[str, Any]:
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        data: dict[str, Any] = json.loads(z.read("manifest.json"))
        return data


def _rewrite(blob: bytes, **changes: Any) -> bytes:
    """The blob with manifest entries changed (what another installation would have written)."""
    src = zipfile.ZipFile(io.BytesIO(blob))
    manifest = {**json.loads(src.read("manifest.json")), **changes}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in src.namelist():
            z.writestr(name, json.dumps(manifest) if name == "manifest.json" else src.read(name))
    return out.getvalue()


# ============================================================================ export / import
def test_export_import_round_trip(dcore: opforge.Core, relu_add_model: Model, tmp_path: Path) -> None:
    compiled = dcore.compile_model(relu_add_model, "TEMPLATE", {"TEMPLATE_DELAY_S": 0.0, "PERFORMANCE_HINT": "THROUGHPUT"})
    blob = compiled.export_model()
    m = _manifest(blob)
    assert (m["format"], m["format_version"], m["device"]) == ("opforge-compiled-model", 2, "TEMPLATE")
    # what the compile set is kept; the rest were the device's defaults (resolved again on import)
    assert "PERFORMANCE_HINT" not in m["defaulted"] and "TEMPLATE_DELAY_S" not in m["defaulted"]
    assert "INFERENCE_NUM_THREADS" in m["defaulted"] and "INFERENCE_PRECISION_HINT" in m["defaulted"]
    assert m["versions"] == {"opforge": opforge.__version__, "opforge-test-template": "0.0"}
    assert m["config"]["PERFORMANCE_HINT"] == "THROUGHPUT" and "CACHE_DIR" not in m["config"]
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        assert sorted(z.namelist()) == ["manifest.json", "model.bin", "model.xml"]  # TEMPLATE has no payload
    expected = evaluate_model(relu_add_model, [X])[0]
    # from bytes, from a path, from a stream
    compiled.export_model(tmp_path / "m.ofblob")
    sink = io.BytesIO()
    compiled.export_model(sink)
    for source in (blob, tmp_path / "m.ofblob", io.BytesIO(sink.getvalue())):
        imported = dcore.import_model(source)
        assert imported.device == "TEMPLATE"
        assert imported.get_property("PERFORMANCE_HINT") == "THROUGHPUT"
        np.testing.assert_array_equal(imported([X])[0], expected)
        assert [p.any_name for p in imported.inputs] == ["x"] and [p.any_name for p in imported.outputs] == ["y"]


def test_import_uses_the_device_payload_hook(dcore: opforge.Core, relu_add_model: Model) -> None:
    blob = dcore.compile_model(relu_add_model, "PAYLOAD").export_model()
    assert PayloadDevice.compiles == 1
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        assert z.read("device.payload") == b"payload-v1"
    imported = dcore.import_model(blob, "PAYLOAD")
    assert (PayloadDevice.compiles, PayloadDevice.imports) == (1, [b"payload-v1"])  # not compiled again
    np.testing.assert_array_equal(imported([X])[0], evaluate_model(relu_add_model, [X])[0])
    # a payload the device declines: compiled from the IR the blob carries
    src = zipfile.ZipFile(io.BytesIO(blob))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in src.namelist():
            z.writestr(name, b"payload-v0" if name == "device.payload" else src.read(name))
    dcore.import_model(out.getvalue())
    assert PayloadDevice.compiles == 2


def test_import_refuses_other_versions_with_a_clear_message(dcore: opforge.Core, relu_add_model: Model) -> None:
    blob = dcore.compile_model(relu_add_model, "TEMPLATE").export_model()
    versions = _manifest(blob)["versions"]
    older = _rewrite(blob, versions={**versions, "opforge-test-template": "0.9"})
    with pytest.raises(BlobVersionError, match=r"opforge-test-template 0.9 made it, 0.0 is installed.*Export it "
                                               r"again.*opforge-test-template==0.9"):
        dcore.import_model(older)
    missing = _rewrite(blob, versions={**versions, "opforge-acme": "2.0"})
    with pytest.raises(BlobVersionError, match=r"opforge-acme 2\.0 is not installed"):
        dcore.import_model(missing)
    with pytest.raises(BlobVersionError, match=r"blob format version 7 is not readable.*versions 1..2"):
        dcore.import_model(_rewrite(blob, format_version=7))


def test_import_rejects_what_is_not_a_blob(dcore: opforge.Core, relu_add_model: Model, tmp_path: Path) -> None:
    with pytest.raises(ModelFormatError, match="not an opforge compiled-model blob"):
        dcore.import_model(b"<net name='x'/>")
    with pytest.raises(ModelFormatError, match="does not exist"):
        dcore.import_model(tmp_path / "nothing.ofblob")
    empty = io.BytesIO()
    zipfile.ZipFile(empty, "w").close()
    with pytest.raises(ModelFormatError, match=r"no manifest.json"):
        dcore.import_model(empty.getvalue())
    blob = dcore.compile_model(relu_add_model, "TEMPLATE").export_model()
    with pytest.raises(DeviceNotFoundError, match=r"compiled for TEMPLATE, not PAYLOAD"):
        dcore.import_model(blob, "PAYLOAD")


# ============================================================================ CACHE_DIR
def test_cache_dir_second_compile_loads_from_cache(dcore: opforge.Core, relu_add_model: Model, tmp_path: Path) -> None:
    dcore.set_property("PAYLOAD", {"CACHE_DIR": str(tmp_path / "cache")})
    first = dcore.compile_model(relu_add_model, "PAYLOAD")
    second = dcore.compile_model(relu_add_model, "PAYLOAD")
    s = dcore.cache_stats
    assert (s.misses, s.stores, s.hits, s.errors) == (1, 1, 1, 0)
    # the trace: compiled once, the second time built from the cached payload
    assert (PayloadDevice.compiles, PayloadDevice.imports) == (1, [b"payload-v1"])
    assert (first.get_property("LOADED_FROM_CACHE"), second.get_property("LOADED_FROM_CACHE")) == (False, True)
    np.testing.assert_array_equal(second([X])[0], first([X])[0])
    entries = list((tmp_path / "cache").iterdir())
    assert [p.suffix for p in entries] == [".ofblob"]
    # written with the usual permissions (umask), not mkstemp's 0600
    mask = os.umask(0o022)
    os.umask(mask)
    assert entries[0].stat().st_mode & 0o777 == 0o666 & ~mask


def test_cache_key_covers_model_config_and_versions(dcore: opforge.Core, relu_add_model: Model,
                                                    tmp_path: Path, plugins: PluginSystem) -> None:
    dcore.set_property({"CACHE_DIR": str(tmp_path)})  # Core-wide
    assert dcore.get_property("CACHE_DIR") == str(tmp_path)
    dcore.compile_model(relu_add_model, "TEMPLATE")
    dcore.compile_model(relu_add_model, "TEMPLATE", {"TEMPLATE_DELAY_S": 0.001})  # other config
    changed = relu_add_model.clone()
    bias = next(n for n in changed.get_ordered_ops() if n.name == "bias")
    bias.attrs = type(bias.attrs)(value=np.array([1.0, -2.0, 3.5], np.float32))  # other weights
    dcore.compile_model(changed, "TEMPLATE")
    assert (dcore.cache_stats.misses, dcore.cache_stats.hits) == (3, 0)
    dcore.compile_model(relu_add_model.clone(), "TEMPLATE")  # same model, same config
    assert dcore.cache_stats.hits == 1
    # the same model with another version of the device's plugin is another entry
    other = PluginSystem(autoload=False)
    template_plugin = type(plugins.records["template_device"].module)()
    other.register_module(template_plugin, PluginInfo("template_device", "opforge-test-template", "0.1"))
    core2 = opforge.Core(other)
    core2.set_property({"CACHE_DIR": str(tmp_path)})
    core2.compile_model(relu_add_model, "TEMPLATE")
    assert (core2.cache_stats.misses, core2.cache_stats.hits) == (1, 0)


def test_cache_of_a_model_file_skips_the_frontend(dcore: opforge.Core, relu_add_model: Model, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    xml = tmp_path / "m" / "model.xml"
    xml.parent.mkdir()
    opforge.save_model(relu_add_model, xml, )
    reads: list[Any] = []
    real = dcore.read_model
    monkeypatch.setattr(dcore, "read_model", lambda *a, **k: reads.append(a) or real(*a, **k))
    dcore.set_property("TEMPLATE", {"CACHE_DIR": str(tmp_path / "cache")})
    dcore.compile_model(str(xml), "TEMPLATE")
    hit = dcore.compile_model(str(xml), "TEMPLATE")
    assert len(reads) == 1 and hit.get_property("LOADED_FROM_CACHE")
    np.testing.assert_array_equal(hit([X])[0], evaluate_model(relu_add_model, [X])[0])
    # new weights beside the .xml: another entry, read again
    changed = relu_add_model.clone()
    bias = next(n for n in changed.get_ordered_ops() if n.name == "bias")
    bias.attrs = type(bias.attrs)(value=np.array([0.0, 0.0, 0.0], np.float32))
    opforge.save_model(changed, xml)
    fresh = dcore.compile_model(str(xml), "TEMPLATE")
    assert len(reads) == 2 and not fresh.get_property("LOADED_FROM_CACHE")
    np.testing.assert_array_equal(fresh([X])[0], evaluate_model(changed, [X])[0])


def test_broken_cache_entry_warns_and_recompiles(dcore: opforge.Core, relu_add_model: Model, tmp_path: Path) -> None:
    dcore.set_property("TEMPLATE", {"CACHE_DIR": str(tmp_path)})
    dcore.compile_model(relu_add_model, "TEMPLATE")
    entry = next(tmp_path.iterdir())
    entry.write_bytes(b"garbage")
    with pytest.warns(CacheWarning, match="is unusable.*not an opforge compiled-model blob.*compiling again"):
        again = dcore.compile_model(relu_add_model, "TEMPLATE")
    assert not again.get_property("LOADED_FROM_CACHE") and dcore.cache_stats.errors == 1
    assert dcore.compile_model(relu_add_model, "TEMPLATE").get_property("LOADED_FROM_CACHE")  # rewritten


def test_cache_dir_errors(dcore: opforge.Core, relu_add_model: Model, tmp_path: Path) -> None:
    with pytest.raises(PropertyError, match=r"unknown Core-wide property 'NO_SUCH_LIMIT'.*CACHE_DIR.*MAX_NODES"):
        dcore.set_property({"CACHE_DIR": str(tmp_path), "NO_SUCH_LIMIT": 1})
    assert dcore.get_property("CACHE_DIR") == ""  # nothing half-applied
    (tmp_path / "file").write_text("x")
    dcore.set_property("TEMPLATE", {"CACHE_DIR": str(tmp_path / "file" / "sub")})
    with pytest.raises(PropertyError, match="cannot be created"):
        dcore.compile_model(relu_add_model, "TEMPLATE")


# ============================================================================ AUTO
def test_auto_falls_back_and_reports_the_device(dcore: opforge.Core, relu_add_model: Model) -> None:
    with pytest.warns(AutoFallbackWarning, match=r"runs on TEMPLATE; passed over: FAILING \(UnsupportedOpError"):
        compiled = dcore.compile_model(relu_add_model, "AUTO:FAILING,TEMPLATE")
    assert compiled.get_property("EXECUTION_DEVICES") == ["TEMPLATE"]
    assert "no kernel for any op" in compiled.get_property("AUTO_SKIPPED_DEVICES")["FAILING"]
    np.testing.assert_array_equal(compiled([X])[0], evaluate_model(relu_add_model, [X])[0])
    # an unavailable device is passed over the same way
    with pytest.warns(AutoFallbackWarning, match=r"GONE \(DeviceUnavailableError: .*unplugged"):
        assert dcore.compile_model(relu_add_model, "AUTO:GONE,TEMPLATE").get_property("EXECUTION_DEVICES") == ["TEMPLATE"]


def test_auto_first_device_that_compiles(dcore: opforge.Core, relu_add_model: Model) -> None:
    compiled = dcore.compile_model(relu_add_model, "AUTO:PAYLOAD,TEMPLATE")
    assert compiled.get_property("EXECUTION_DEVICES") == ["PAYLOAD"]
    assert compiled.get_property("AUTO_SKIPPED_DEVICES") == {}
    # plain AUTO: every available device (BROKEN and GONE are not), FAILING passed over
    with pytest.warns(AutoFallbackWarning, match="passed over: FAILING"):
        plain = dcore.compile_model(relu_add_model, "AUTO")
    assert plain.get_property("EXECUTION_DEVICES") == ["PAYLOAD"]
    # MULTI_DEVICE_PRIORITIES when the name has no list
    chosen = dcore.compile_model(relu_add_model, "AUTO", {"MULTI_DEVICE_PRIORITIES": "TEMPLATE"})
    assert chosen.get_property("EXECUTION_DEVICES") == ["TEMPLATE"]
    assert "AUTO" in dcore.meta_devices() and "AUTO" not in dcore.available_devices


def test_auto_errors_name_every_device(dcore: opforge.Core, relu_add_model: Model) -> None:
    with pytest.raises(UnsupportedOpError, match=r"AUTO:FAILING,GONE: no device could compile model 'relu_add': "
                                                 r"FAILING: UnsupportedOpError.*; GONE: DeviceUnavailableError"):
        dcore.compile_model(relu_add_model, "AUTO:FAILING,GONE")
    with pytest.raises(DeviceNotFoundError, match="listed twice"):
        dcore.compile_model(relu_add_model, "AUTO:TEMPLATE,TEMPLATE")
    with pytest.raises(PropertyError, match=r"DEVICE_PROPERTIES has settings for GPU.*\(TEMPLATE\)"):
        dcore.compile_model(relu_add_model, "AUTO:TEMPLATE", {"DEVICE_PROPERTIES": {"GPU": {}}})


def test_auto_passes_device_properties_and_exports(dcore: opforge.Core, relu_add_model: Model) -> None:
    compiled = dcore.compile_model(relu_add_model, "AUTO:TEMPLATE",
                                   {"DEVICE_PROPERTIES": {"TEMPLATE": {"TEMPLATE_DELAY_S": 0.001}}})
    assert compiled.get_property("EXECUTION_DEVICES") == ["TEMPLATE"]
    blob = compiled.export_model()
    assert _manifest(blob)["device"] == "AUTO:TEMPLATE"
    again = dcore.import_model(blob)
    assert again.get_property("EXECUTION_DEVICES") == ["TEMPLATE"]
    np.testing.assert_array_equal(again([X])[0], evaluate_model(relu_add_model, [X])[0])


def test_export_of_a_model_compiled_from_a_file_reads_it_again(dcore: opforge.Core, relu_add_model: Model,
                                                               tmp_path: Path) -> None:
    xml = tmp_path / "model.xml"
    opforge.save_model(relu_add_model, xml)
    compiled = dcore.compile_model(str(xml), "TEMPLATE")
    assert not isinstance(compiled._source, Model)  # the file is read again, its weights not kept
    imported = dcore.import_model(compiled.export_model())
    np.testing.assert_array_equal(imported([X])[0], evaluate_model(relu_add_model, [X])[0])
    opforge.save_model(relu_add_model, xml)  # rewritten: not the model that was compiled, maybe
    with pytest.raises(ModelFormatError, match="changed since the model was compiled"):
        compiled.export_model()
