"""The plugin system, tested through fake installed distributions (see ``plugin_fixtures.py``).

Every plugin here is a real module of ``@opforge.hookimpl`` functions, found by
``importlib.metadata`` through an ``opforge`` entry point, exactly as a pip-installed one is.
The ``test_hook_<name>`` tests exercise one hook each, end to end; ``test_hooks_meta.py`` fails
when a hook has none.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge import hookimpl
from opforge.errors import (
    DeviceUnavailableError,
    ExtensionError,
    PluginConflictError,
    PluginError,
    PluginHookError,
    PluginLoadError,
    PluginValidationError,
    UnsupportedOpError,
)
from opforge.frontend.node_context import GraphBuilder, NodeContext
from opforge.graph import Model, Node
from opforge.plugins import BUILTIN_PLUGINS, PluginInfo, PluginSystem, default_plugins
from opforge.plugins.registry import USER
from opforge.transformations import run_transformations
from plugin_fixtures import MINI_DEVICE_SOURCE, FakeDists, FakePlugin, load_quietly, op_class_source

X = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)

#: a plugin that provides one of everything
EVERYTHING = MINI_DEVICE_SOURCE + op_class_source("Twice", "FakeTwice", "fake_opset") + '''
from opforge.frontend import Frontend
from opforge.frontend.extensions import ConversionExtension
from opforge.transformations import Transformation


class FakeFrontend(Frontend):
    name = "fakefmt"
    suffixes = (".fake",)

    def supports(self, source):
        return source.suffix() == ".fake"

    def read(self, source, plugins, options):
        raise NotImplementedError


class FakePass(Transformation):
    name = "fake_pass"

    def apply(self, model):
        return False


class FakeExtractor:
    @classmethod
    def extract(cls, node):
        return "Relu", {}


@hookimpl
def opforge_register_ops(register):
    register(Twice)


@hookimpl
def opforge_register_kernels(register):
    register("FAKEDEV", Twice, lambda attrs, x: [x[0] * 2])


@hookimpl
def opforge_register_devices(register):
    register("FakeDev", lambda: MiniDevice("FAKEDEV"))


@hookimpl
def opforge_register_frontends(register):
    register(FakeFrontend())


@hookimpl
def opforge_register_transformations(register):
    register(FakePass())


@hookimpl
def opforge_register_extractors(register):
    register("onnx", "FakeRelu", FakeExtractor, domain="com.fake")


@hookimpl
def opforge_register_conversion_extensions(register):
    register(ConversionExtension("FakeCopy", lambda ctx: [ctx.get_input(0)], framework="onnx"))
'''


def relu_model(n: int = 2, registry: Any = None) -> Model:
    x = Node.create("Parameter", [], {"element_type": "f32", "shape": [n, n]}, "x", registry=registry)
    y = Node.create("Relu", [x], {}, "relu", registry=registry)
    return Model([y], [x], name="relu")


def node_context(ps: PluginSystem, op_type: str, domain: str = "") -> NodeContext:
    """What a frontend hands a translator for one ONNX node with one f32[2, 2] input."""
    builder = GraphBuilder(ps.ops)
    x = Node.create("Parameter", [], {"element_type": "f32", "shape": [2, 2]}, "x", registry=ps.ops)
    builder.reserve("x")
    return NodeContext(framework="onnx", op_type=op_type, domain=domain, name="n1", inputs=[x.output(0)],
                       attributes={}, builder=builder, output_names=["y"])


# ============================================================================ loading
def test_a_good_plugin_lands_in_every_registry_with_its_distribution(fake_dists: FakeDists) -> None:
    good = fake_dists.plugin("opforge-fake-everything", EVERYTHING, version="2.3.1", name="everything")
    ps, warned = fake_dists.load()
    assert warned == []
    rec = ps.records["everything"]
    assert (rec.status, rec.error) == ("loaded", None)
    assert rec.info == PluginInfo("everything", "opforge-fake-everything", "2.3.1")
    assert rec.entry_point == good.module
    mod = sys.modules[good.module]
    assert ps.ops.get("FakeTwice", "fake_opset") is mod.Twice
    expected = {
        ps.ops: ("FakeTwice", "fake_opset"),
        ps.kernels: ("FAKEDEV", "FakeTwice", "fake_opset"),
        ps.devices: "FAKEDEV",
        ps.frontends: "fakefmt",
        ps.transformations: "fake_pass",
        ps.extractors: ("onnx", "com.fake", "FakeRelu"),
        ps.conversion_extensions: ("onnx", "", "FakeCopy"),
    }
    for registry, key in expected.items():
        reg = registry.registration(key)
        assert reg is not None, f"{registry.kind} {key} was not registered"
        assert reg.plugin == rec.info and reg.priority == 0
    assert ps.provides("everything") == {
        "ops": ["FakeTwice/fake_opset"],
        "frontends": ["fakefmt"],
        "extractors": ["onnx/com.fake/FakeRelu"],
        "conversion_extensions": ["onnx/FakeCopy"],
        "transformations": ["fake_pass"],
        "devices": ["FAKEDEV"],
        "commands": [],
        "kernels": {"FAKEDEV": ["FakeTwice/fake_opset"]},
    }
    assert ps.conflicts() == [] and ps.failures == []
    assert str(rec.info) == "opforge-fake-everything 2.3.1 (plugin 'everything')"


BROKEN_IMPORTS = {
    "ImportError": ("raise ImportError('libfakegpu.so.1: cannot open shared object file')\n",
                    "ImportError: libfakegpu.so.1: cannot open shared object file"),
    "ModuleNotFoundError": ("import libfakegpu  # noqa\n", "ModuleNotFoundError: No module named 'libfakegpu'"),
    "SyntaxError": ("def broken(:\n    pass\n", "SyntaxError: "),
    "RuntimeError": ("raise RuntimeError('no FAKE driver found')\n", "RuntimeError: no FAKE driver found"),
}


@pytest.mark.parametrize("kind", list(BROKEN_IMPORTS))
def test_a_plugin_that_fails_to_import_is_reported_and_the_others_load(fake_dists: FakeDists, kind: str) -> None:
    source, reason = BROKEN_IMPORTS[kind]
    fake_dists.plugin("fake-before", op_class_source("A", "FakeA", "fake_a") + "\n@hookimpl\n"
                      "def opforge_register_ops(register):\n    register(A)\n")
    broken = fake_dists.plugin("fake-broken", source, version="0.3.1")
    fake_dists.plugin("fake-zafter", op_class_source("Z", "FakeZ", "fake_z") + "\n@hookimpl\n"
                      "def opforge_register_ops(register):\n    register(Z)\n")
    ps, warned = fake_dists.load()
    assert len(warned) == 1, warned
    assert warned[0].startswith("plugin fake-broken 0.3.1 (plugin 'fake_broken') could not be loaded: "
                                f"import of '{broken.module}' failed: {reason}")
    assert "OPFORGE_STRICT_PLUGINS=1" in warned[0]
    rec = ps.records["fake_broken"]
    assert rec.status == "failed"
    assert rec.info == PluginInfo("fake_broken", "fake-broken", "0.3.1")
    assert rec.error is not None and reason in rec.error
    assert ps.failures == [warned[0].split(" (opforge goes on")[0]]
    assert ps.records["fake_before"].status == ps.records["fake_zafter"].status == "loaded"
    assert ps.ops.get("FakeA", "fake_a").type_name == "FakeA"
    assert ps.ops.get("FakeZ", "fake_z").type_name == "FakeZ"


def test_an_entry_point_naming_a_missing_attribute_is_reported(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-attr", "VALUE = 1\n", attr="plugin_object")
    ps, warned = fake_dists.load()
    assert len(warned) == 1 and "AttributeError" in warned[0] and "plugin_object" in warned[0]
    assert ps.records["fake_attr"].status == "failed"


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_strict_mode_raises_plugin_load_error(fake_dists: FakeDists, how: str) -> None:
    broken = fake_dists.plugin("fake-broken", "raise RuntimeError('boom')\n", version="4.5")
    if how == "environment":
        fake_dists.env.setenv("OPFORGE_STRICT_PLUGINS", "1")
        fake_dists.env.setenv("OPFORGE_LOAD_PLUGINS", "fake_broken")
        with pytest.raises(PluginLoadError) as info:
            PluginSystem()
    else:
        with pytest.raises(PluginLoadError) as info:
            fake_dists.load(strict=True)
    assert str(info.value) == (f"plugin fake-broken 4.5 (plugin 'fake_broken') could not be loaded: import of "
                               f"'{broken.module}' failed: RuntimeError: boom")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_strict_can_be_switched_off_explicitly(fake_dists: FakeDists) -> None:
    fake_dists.env.setenv("OPFORGE_STRICT_PLUGINS", "1")
    fake_dists.plugin("fake-broken", "raise RuntimeError('boom')\n")
    ps, warned = fake_dists.load(strict=False)
    assert ps.records["fake_broken"].status == "failed" and len(warned) == 1


# ============================================================================ hook errors
RAISES_IN_HOOK = op_class_source("A", "FakeHalfA", "fake_half") + op_class_source("B", "FakeHalfB", "fake_half") + '''

@hookimpl
def opforge_register_ops(register):
    register(A)
    raise KeyError("FAKE_HOME")


@hookimpl
def opforge_register_kernels(register):
    register("FAKEDEV", "Relu", lambda attrs, x: [x[0]])
'''


def test_a_raising_hookimpl_is_reported_and_nothing_of_that_call_is_kept(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-gpu", RAISES_IN_HOOK, version="0.3.1")
    ps, warned = fake_dists.load()
    assert warned == ["plugin fake-gpu 0.3.1 (plugin 'fake_gpu') raised in hook opforge_register_ops: "
                      "KeyError: 'FAKE_HOME' (the plugin is disabled; opforge goes on without it)"]
    assert ps.records["fake_gpu"].status == "failed"
    # A was registered before the raise: it must not be left behind
    assert ("FakeHalfA", "fake_half") not in ps.ops
    with pytest.raises(UnsupportedOpError):
        ps.ops.get("FakeHalfA", "fake_half")
    # half a plugin would fail later in a more confusing place: its other hook's kernel is gone
    # too, and the core still works
    assert ("Relu", None) not in ps.kernels_for("FAKEDEV")
    assert ps.ops.get("Relu").type_name == "Relu"


def test_a_failed_hook_leaves_its_reason_in_the_record(fake_dists: FakeDists) -> None:
    """``opforge plugins`` prints ``records[name].error`` for a failed plugin: it must say why."""
    fake_dists.plugin("fake-gpu", RAISES_IN_HOOK, version="0.3.1")
    ps, _ = fake_dists.load()
    rec = ps.records["fake_gpu"]
    assert rec.status == "failed"
    assert rec.error is not None and "opforge_register_ops" in rec.error and "FAKE_HOME" in rec.error


def test_in_strict_mode_a_raising_hookimpl_raises_plugin_hook_error_chained(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-gpu", RAISES_IN_HOOK, version="0.3.1")
    with pytest.raises(PluginHookError) as info:
        fake_dists.load(strict=True)
    err = info.value
    assert str(err) == ("plugin fake-gpu 0.3.1 (plugin 'fake_gpu') raised in hook opforge_register_ops: "
                        "KeyError: 'FAKE_HOME'")
    assert isinstance(err.__cause__, KeyError) and err.__cause__.args == ("FAKE_HOME",)
    assert isinstance(err, PluginError)


# ============================================================================ invalid hookimpls
@pytest.mark.parametrize(("source", "reason"), [
    ("@hookimpl\ndef opforge_register_opz(register):\n    pass\n", "unknown hook 'opforge_register_opz'"),
    ("@hookimpl\ndef opforge_register_ops(register, device):\n    pass\n",
     "Argument(s) {'device'} are declared in the hookimpl but can not be found in the hookspec"),
    ("@hookimpl(wrapper=True)\ndef opforge_register_ops(register):\n    pass\n",
     "do not support wrapper=True/hookwrapper=True"),
], ids=["unknown-hook", "unknown-argument", "wrapper-not-generator"])
def test_an_invalid_hookimpl_is_reported(fake_dists: FakeDists, source: str, reason: str) -> None:
    fake_dists.plugin("fake-typo", op_class_source("T", "FakeTypo", "fake_typo") + "\n@hookimpl\n"
                      "def opforge_register_kernels(register):\n    register('FAKEDEV', T, print)\n\n" + source,
                      version="1.2")
    fake_dists.plugin("fake-fine", "@hookimpl\ndef opforge_register_devices(register):\n"
                      "    register('FINE', object)\n")
    ps, warned = fake_dists.load()
    assert len(warned) == 1
    assert warned[0].startswith("plugin fake-typo 1.2 (plugin 'fake_typo') could not be loaded: "
                                "invalid hook implementation: ")
    assert reason in warned[0]
    rec = ps.records["fake_typo"]
    assert rec.status == "failed" and rec.error is not None and reason in rec.error
    # none of its (valid) hooks ran, and pluggy no longer holds it
    assert ps.kernels_for("FAKEDEV") == {}
    assert ps.pm.get_plugin("fake_typo") is None
    assert ps.records["fake_fine"].status == "loaded" and "FINE" in ps.devices
    with pytest.raises(PluginLoadError, match=r"fake-typo 1\.2.*invalid hook implementation"):
        fake_dists.load(strict=True)


# ============================================================================ validation
@pytest.mark.parametrize(("hook", "call", "message"), [
    ("opforge_register_ops", "register(int)", "opforge_register_ops registered <class 'int'>; expected a "
     "subclass of opforge.Op with a type_name"),
    ("opforge_register_ops", "register(Op)", "expected a subclass of opforge.Op with a type_name"),
    ("opforge_register_frontends", "register('onnx')", "expected an instance of opforge.frontend.Frontend"),
    ("opforge_register_transformations", "register(print)", "expected an instance of "
     "opforge.transformations.Transformation"),
    ("opforge_register_conversion_extensions", "register(print)", "expected an OpExtension or ConversionExtension"),
    ("opforge_register_devices", "register('CPU', 42)", "needs register(name: str, factory: callable)"),
    ("opforge_register_kernels", "register('CPU', 3.5, print)", "op must be an op type name or Op class"),
    ("opforge_register_extractors", "register('onnx', 'Foo', object())", "has no extract(node) method"),
])
def test_registering_a_wrong_object_is_a_validation_error_naming_the_plugin(
        fake_dists: FakeDists, hook: str, call: str, message: str) -> None:
    source = op_class_source("Good", "FakeGood", "fake_valid")
    if hook != "opforge_register_ops":  # a valid hook beside the sloppy one
        source += "\n@hookimpl\ndef opforge_register_ops(register):\n    register(Good)\n"
    source += f"\n@hookimpl\ndef {hook}(register):\n    {call}\n"
    fake_dists.plugin("fake-sloppy", source, version="0.9")
    ps, warned = fake_dists.load()
    assert len(warned) == 1 and warned[0].startswith("plugin fake-sloppy 0.9 (plugin 'fake_sloppy'): ")
    assert message in warned[0]
    assert ps.records["fake_sloppy"].status == "failed"
    if hook != "opforge_register_ops":  # the plugin is disabled as a whole, its valid hook too
        assert ("FakeGood", "fake_valid") not in ps.ops
    with pytest.raises(PluginValidationError, match=r"^plugin fake-sloppy 0\.9 \(plugin 'fake_sloppy'\): ") as info:
        fake_dists.load(strict=True)
    assert message in str(info.value)


def test_validation_drops_the_whole_hook_call(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-sloppy", op_class_source("Good", "FakeGood", "fake_valid") + '''
@hookimpl
def opforge_register_ops(register):
    register(Good)
    register("Good")
''')
    ps, warned = fake_dists.load()
    assert len(warned) == 1 and "registered 'Good'" in warned[0]
    assert ("FakeGood", "fake_valid") not in ps.ops


# ============================================================================ conflicts
def _provider(kind: str, tag: str, priority: int = 0) -> str:
    """A plugin claiming the shared key of ``kind`` plus a key of its own (``tag``)."""
    prio = f", priority={priority}" if priority else ""
    if kind == "op":
        return (op_class_source("Twin", "FakeTwin", "fake_twin") + op_class_source("Own", f"Fake{tag}", "fake_twin")
                + f"\nTwin.origin = {tag!r}\n\n@hookimpl\ndef opforge_register_ops(register):\n"
                f"    register(Twin{prio})\n    register(Own)\n")
    if kind == "kernel":
        return (f"\n@hookimpl\ndef opforge_register_kernels(register):\n"
                f"    register('FakeDev', 'Relu', lambda a, x: [x[0] + 0], version='opset1'{prio})\n"
                f"    register('FakeDev', 'Fake{tag}', {tag!r})\n")
    return (MINI_DEVICE_SOURCE + f"\n@hookimpl\ndef opforge_register_devices(register):\n"
            f"    register('twin', lambda: MiniDevice({tag!r}){prio})\n"
            f"    register({tag!r}, lambda: MiniDevice({tag!r}))\n")


#: how each kind is looked up: shared key, one plugin's own key
CONFLICT_LOOKUPS = {
    "op": (lambda ps: ps.ops.get("FakeTwin", "fake_twin"), lambda ps: ps.ops.get("FakeAlpha", "fake_twin"),
           "operation FakeTwin/fake_twin"),
    "kernel": (lambda ps: ps.kernels.lookup(("FAKEDEV", "Relu", "opset1")),
               lambda ps: ps.kernels_for("fakedev")[("FakeAlpha", None)], "kernel FAKEDEV/Relu/opset1"),
    "device": (lambda ps: opforge.Core(ps).get_property("TWIN", "FULL_DEVICE_NAME"),
               lambda ps: opforge.Core(ps).get_property("alpha", "FULL_DEVICE_NAME"), "device TWIN"),
}


def _install_and_load(tmp: Path, kind: str, order: tuple[str, ...], priorities: dict[str, int] | None = None
                      ) -> tuple[PluginSystem, list[str]]:
    """Install fake-alpha and fake-beta in ``order`` (each in its own site, the later one first on
    sys.path), load them, and take them off sys.path again."""
    versions = {"alpha": "1.0", "beta": "2.0b1"}
    before = set(sys.modules)
    with pytest.MonkeyPatch.context() as mp:
        dists = FakeDists(tmp / "-".join(order), mp)
        for tag in order:
            dists.plugin(f"fake-{tag}", _provider(kind, tag.capitalize() if kind != "device" else tag,
                                                  (priorities or {}).get(tag, 0)),
                         version=versions[tag], site=tag)
        ps, warned = dists.load()
    dists.forget_modules(before)
    return ps, warned


@pytest.mark.parametrize("kind", list(CONFLICT_LOOKUPS))
def test_two_plugins_claiming_one_key_conflict_identically_in_any_install_order(
        fake_dists: FakeDists, tmp_path: Path, kind: str) -> None:
    shared, own, label = CONFLICT_LOOKUPS[kind]
    messages = []
    for order in (("alpha", "beta"), ("beta", "alpha")):
        ps, warned = _install_and_load(tmp_path, kind, order)
        assert warned == []
        with pytest.raises(PluginConflictError) as info:
            shared(ps)
        messages.append(str(info.value))
        assert [str(c) for c in ps.conflicts()] == [str(info.value)]
        own(ps)  # every other key still works
    assert messages[0] == messages[1]
    assert messages[0].startswith(
        f"{label} is registered by more than one plugin: fake-alpha 1.0 (plugin 'fake_alpha') and "
        "fake-beta 2.0b1 (plugin 'fake_beta'). ")
    assert "OPFORGE_LOAD_PLUGINS" in messages[0] and "priority=" in messages[0]


@pytest.mark.parametrize("kind", list(CONFLICT_LOOKUPS))
def test_a_higher_priority_resolves_a_conflict(fake_dists: FakeDists, tmp_path: Path, kind: str) -> None:
    shared, _, _ = CONFLICT_LOOKUPS[kind]
    for order in (("alpha", "beta"), ("beta", "alpha")):
        ps, _ = _install_and_load(tmp_path / "prio", kind, order, {"beta": 5})
        assert ps.conflicts() == []
        winner = shared(ps)
        if kind == "op":
            assert winner.origin == "Beta"
        elif kind == "device":
            assert winner == "mini test device TWIN"
        reg = {"op": ps.ops, "kernel": ps.kernels, "device": ps.devices}[kind]
        key = {"op": ("FakeTwin", "fake_twin"), "kernel": ("FAKEDEV", "Relu", "opset1"), "device": "TWIN"}[kind]
        found = reg.registration(key)
        assert found is not None and found.plugin.distribution == "fake-beta" and found.priority == 5


def test_conflict_messages_do_not_depend_on_registration_order() -> None:
    class Twin(opforge.Op):
        type_name = "FakeTwin"
        version = "fake_twin"

    class Plugin:
        @hookimpl
        def opforge_register_ops(self, register: Any) -> None:
            register(Twin)

    infos = [PluginInfo("zeta", "zeta-dist", "1"), PluginInfo("alpha", "alpha-dist", "2")]
    messages = []
    for order in (infos, infos[::-1]):
        ps = PluginSystem(autoload=False)
        for info in order:
            assert ps.register_module(Plugin(), info)
        with pytest.raises(PluginConflictError) as err:
            ps.ops.get("FakeTwin", "fake_twin")
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert "alpha-dist 2 (plugin 'alpha') and zeta-dist 1 (plugin 'zeta')" in messages[0]


def test_a_conflict_is_an_error_in_strict_mode(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-alpha", _provider("op", "Alpha"))
    fake_dists.plugin("fake-beta", _provider("op", "Beta"))
    fake_dists.env.setenv("OPFORGE_STRICT_PLUGINS", "1")
    with pytest.raises(PluginConflictError, match="operation FakeTwin/fake_twin is registered by more than one"):
        fake_dists.load()


def test_a_device_conflict_shows_up_when_listing_devices(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-alpha", _provider("device", "alpha"))
    fake_dists.plugin("fake-beta", _provider("device", "beta"))
    ps, _ = fake_dists.load()
    core = opforge.Core(ps)
    assert {"ALPHA", "BETA"} <= set(core.available_devices)
    assert "TWIN" not in core.available_devices
    assert "more than one plugin" in core.unavailable_devices()["TWIN"]
    with pytest.raises(PluginConflictError):
        core.compile_model(relu_model(), "TWIN")


# ============================================================================ environment
def _two_plugins(fake_dists: FakeDists) -> tuple[FakePlugin, FakePlugin]:
    a = fake_dists.plugin("opforge-fake-a", "@hookimpl\ndef opforge_register_devices(register):\n"
                          "    register('FAKE_A', object)\n", name="fake_a")
    b = fake_dists.plugin("opforge-fake-b", "@hookimpl\ndef opforge_register_devices(register):\n"
                          "    register('FAKE_B', object)\n", name="fake_b")
    return a, b


@pytest.mark.parametrize(("value", "loaded"), [
    ("fake_a", {"fake_a"}),
    ("opforge-fake-b", {"fake_b"}),
    (" fake_a , opforge-fake-b ", {"fake_a", "fake_b"}),
    ("", set()),
    (",", set()),
], ids=["entry-point-name", "distribution-name", "both-with-spaces", "empty", "only-commas"])
def test_opforge_load_plugins_is_an_allow_list(fake_dists: FakeDists, value: str, loaded: set[str]) -> None:
    plugins = _two_plugins(fake_dists)
    fake_dists.env.setenv("OPFORGE_LOAD_PLUGINS", value)
    ps, warned = load_quietly()
    assert warned == []
    for plugin in plugins:  # a plugin left out is not even imported
        assert (plugin.module in sys.modules) == (plugin.name in loaded)
    for name in ("fake_a", "fake_b", "template_extension"):
        rec = ps.records[name]
        if name in loaded:
            assert rec.status == "loaded"
        else:
            assert (rec.status, rec.error) == ("disabled", "not in OPFORGE_LOAD_PLUGINS")
    assert {k for k in ("FAKE_A", "FAKE_B") if k in ps.devices} == {n.upper() for n in loaded}
    # the built-in plugins are not subject to the allow-list
    assert all(ps.records[m.rsplit(".", 1)[-1]].status == "loaded" for m in BUILTIN_PLUGINS)


def test_disable_autoload_loads_only_the_builtins(fake_dists: FakeDists) -> None:
    _two_plugins(fake_dists)
    fake_dists.env.setenv("OPFORGE_DISABLE_PLUGIN_AUTOLOAD", "1")
    fake_dists.env.setenv("OPFORGE_LOAD_PLUGINS", "fake_a")  # does not override it
    ps, warned = load_quietly()
    assert warned == []
    assert sorted(ps.records) == sorted(m.rsplit(".", 1)[-1] for m in BUILTIN_PLUGINS)
    assert all(r.info.builtin for r in ps.records.values())
    assert list(ps.devices.keys()) == ["AUTO"]  # the built-in meta device only
    assert not any(m.startswith("opforge_fake_") for m in sys.modules)
    # the process-wide system honours it too
    assert "fake_a" not in default_plugins().records


def test_trace_plugins_prints_every_hook_call(fake_dists: FakeDists, capsys: pytest.CaptureFixture[str]) -> None:
    fake_dists.plugin("fake-traced", "@hookimpl\ndef opforge_register_devices(register):\n"
                      "    register('TRACED', object)\n", version="3.1")
    fake_dists.env.setenv("OPFORGE_TRACE_PLUGINS", "1")
    fake_dists.load()
    err = capsys.readouterr().err
    assert "[opforge] opforge_register_devices -> fake-traced 3.1 (plugin 'fake_traced') (" in err
    assert "[opforge] opforge_register_ops -> standard_opset (built-in) (" in err
    fake_dists.env.delenv("OPFORGE_TRACE_PLUGINS")
    fake_dists.load()
    assert capsys.readouterr().err == ""


# ============================================================================ built-ins, calling
def test_builtin_plugins_are_ordinary_plugins(plugin_env: pytest.MonkeyPatch) -> None:
    ps = PluginSystem(autoload=False)
    names = [m.rsplit(".", 1)[-1] for m in BUILTIN_PLUGINS]
    assert list(ps.records) == names
    for mod, name in zip(BUILTIN_PLUGINS, names):
        rec = ps.records[name]
        assert rec.status == "loaded" and rec.info == PluginInfo(name, builtin=True)
        assert ps.pm.get_plugin(name) is importlib.import_module(mod)
    reg = ps.ops.registration(("Relu", "opset1"))
    assert reg is not None and reg.plugin == PluginInfo("standard_opset", builtin=True)
    assert str(reg.plugin) == "standard_opset (built-in)"
    assert {"Parameter/opset1", "Result/opset1", "Relu/opset1", "Add/opset1"} <= set(
        ps.provides("standard_opset")["ops"])
    assert {"constant_folding", "dead_code_elimination"} <= set(ps.provides("standard_transformations")["transformations"])


def test_a_plugin_can_override_a_builtin_op_only_with_a_higher_priority(fake_dists: FakeDists) -> None:
    for priority in (0, 1):
        fake_dists.plugin(f"fake-relu{priority}", op_class_source("MyRelu", "Relu", "opset1") + f"""
@hookimpl
def opforge_register_ops(register):
    register(MyRelu, priority={priority})
""")
    same, _ = fake_dists.load(["fake_relu0"])
    with pytest.raises(PluginConflictError, match=r"fake-relu0 1\.0 \(plugin 'fake_relu0'\) and standard_opset "
                       r"\(built-in\)"):
        same.ops.get("Relu", "opset1")
    higher, _ = fake_dists.load(["fake_relu1"])
    assert higher.conflicts() == []
    assert higher.ops.get("Relu", "opset1").__module__ == fake_dists.plugins[1].module


def test_a_hookimpl_may_take_fewer_arguments_than_the_spec(fake_dists: FakeDists) -> None:
    plugin = fake_dists.plugin("fake-lazy", '''
CALLS = []


@hookimpl
def opforge_register_devices():
    CALLS.append("called")
''')
    ps, warned = fake_dists.load()
    assert warned == [] and ps.records["fake_lazy"].status == "loaded"
    assert sys.modules[plugin.module].CALLS == ["called"]


def test_hooks_are_called_with_keywords_so_specs_can_grow(plugin_env: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    class Plugin:
        @hookimpl
        def opforge_register_devices(self, register: Any) -> None:
            seen.append(register)

    ps = PluginSystem(autoload=False)
    assert ps.register_module(Plugin(), PluginInfo("kw"))
    impl = next(i for i in ps.pm.hook.opforge_register_devices.get_hookimpls() if i.plugin_name == "kw")
    ps.call_impl(impl, "opforge_register_devices", PluginInfo("kw"), register=print, added_in_v2=object())
    assert seen[-1] is print


# ============================================================================ add_extension
EXTENSION_SOURCE = op_class_source("Ext", "FakeExt", "fake_ext") + '''

@hookimpl
def opforge_register_ops(register):
    register(Ext)
'''


class UserOp(opforge.Op):
    type_name = "FakeUserOp"
    version = "fake_user"


def test_add_extension_with_an_op_class(plugin_env: pytest.MonkeyPatch) -> None:
    core, other = opforge.Core(), opforge.Core()
    core.add_extension(UserOp)
    assert core.plugins.ops.get("FakeUserOp", "fake_user") is UserOp
    reg = core.plugins.ops.registration(UserOp.key())
    assert reg is not None and reg.plugin == USER
    for ps in (other.plugins, default_plugins()):
        with pytest.raises(UnsupportedOpError):
            ps.ops.get("FakeUserOp", "fake_user")


def test_add_extension_overrides_a_plugin_op_without_conflict(plugin_env: pytest.MonkeyPatch) -> None:
    class MyRelu(opforge.Op):
        type_name = "Relu"
        version = "opset1"

    core = opforge.Core()
    core.add_extension([MyRelu])
    assert core.plugins.ops.get("Relu", "opset1") is MyRelu
    assert core.plugins.conflicts() == []
    assert opforge.Core().plugins.ops.get("Relu", "opset1") is not MyRelu


@pytest.mark.parametrize("form", ["module", "dotted-path", "py-file", "py-path"])
def test_add_extension_with_a_plugin_module(fake_dists: FakeDists, tmp_path: Path, form: str) -> None:
    if form in ("module", "dotted-path"):
        name = fake_dists.module(EXTENSION_SOURCE)
        ext: Any = importlib.import_module(name) if form == "module" else name
        plugin_name = name
    else:
        path = tmp_path / "my_extension.py"
        path.write_text("import opforge\nfrom opforge import Op, TensorSpec, hookimpl\n" + EXTENSION_SOURCE)
        ext = str(path) if form == "py-file" else path
        plugin_name = str(path)
    core, other = opforge.Core(), opforge.Core()
    core.add_extension(ext)
    op = core.plugins.ops.get("FakeExt", "fake_ext")
    assert op.type_name == "FakeExt"
    reg = core.plugins.ops.registration(("FakeExt", "fake_ext"))
    assert reg is not None and reg.plugin == PluginInfo(plugin_name)
    assert core.plugins.records[plugin_name].status == "loaded"
    # local to that Core: neither another Core nor the process-wide plugins see it
    for ps in (other.plugins, default_plugins()):
        assert ("FakeExt", "fake_ext") not in ps.ops
        assert plugin_name not in ps.records
        assert ps.pm.get_plugin(plugin_name) is None
    core.add_extension(ext)  # adding it again is harmless
    assert core.plugins.conflicts() == []


@pytest.mark.parametrize("by", ["entry-point", "distribution"])
def test_add_extension_loads_an_installed_plugin_even_with_autoload_disabled(fake_dists: FakeDists, by: str) -> None:
    plugin = fake_dists.plugin("opforge-fake-ext", EXTENSION_SOURCE, name="fake_ext", version="0.7")
    fake_dists.env.setenv("OPFORGE_DISABLE_PLUGIN_AUTOLOAD", "1")
    core = opforge.Core()
    assert ("FakeExt", "fake_ext") not in core.plugins.ops
    core.add_extension("fake_ext" if by == "entry-point" else "opforge-fake-ext")
    reg = core.plugins.ops.registration(("FakeExt", "fake_ext"))
    assert reg is not None and reg.plugin == plugin.info
    assert core.plugins.records["fake_ext"].entry_point == plugin.module
    assert ("FakeExt", "fake_ext") not in opforge.Core().plugins.ops


def test_add_extension_of_an_already_loaded_plugin_is_a_no_op(fake_dists: FakeDists) -> None:
    fake_dists.plugin("opforge-fake-ext", EXTENSION_SOURCE, name="fake_ext")
    core = opforge.Core()
    assert core.plugins.records["fake_ext"].status == "loaded"
    core.add_extension("fake_ext")
    assert core.plugins.conflicts() == []


def test_add_extension_with_the_module_of_an_already_loaded_plugin(fake_dists: FakeDists) -> None:
    """Passing the module an installed plugin is already loaded from must not fail nor leave
    the plugin registered twice (a conflict with itself)."""
    plugin = fake_dists.plugin("opforge-fake-ext", EXTENSION_SOURCE, name="fake_ext")
    core = opforge.Core()
    for ext in (importlib.import_module(plugin.module), plugin.module):
        core.add_extension(ext)
    assert core.plugins.conflicts() == []
    assert core.plugins.ops.get("FakeExt", "fake_ext").type_name == "FakeExt"


@pytest.mark.parametrize(("value", "error", "message"), [
    (42, ExtensionError, "add_extension cannot use int: expected an Op subclass"),
    (object(), ExtensionError, "add_extension cannot use object"),
    ("opforge_no_such_module_xyz", ExtensionError, "'opforge_no_such_module_xyz' is neither an installed plugin"),
    ("no_such_file.py", ExtensionError, "extension file 'no_such_file.py' does not exist"),
    (type("Nameless", (opforge.Op,), {}), ExtensionError, "Nameless has no type_name"),
], ids=["int", "object", "unknown-module", "missing-file", "op-without-type-name"])
def test_add_extension_rejects_bad_values(plugin_env: pytest.MonkeyPatch, value: Any, error: type, message: str) -> None:
    core = opforge.Core()
    with pytest.raises(error, match=re.escape(message)) as info:
        core.add_extension(value)
    assert isinstance(info.value, ValueError)  # ExtensionError is also a ValueError
    assert core.plugins.conflicts() == [] and core.plugins.failures == default_plugins().failures


def test_add_extension_of_a_broken_installed_plugin_raises(fake_dists: FakeDists) -> None:
    fake_dists.plugin("opforge-fake-broken", "raise ImportError('no libfake')\n", name="fake_broken")
    fake_dists.env.setenv("OPFORGE_DISABLE_PLUGIN_AUTOLOAD", "1")
    with pytest.raises(PluginLoadError, match="plugin 'fake_broken' failed to import: ImportError: no libfake"):
        opforge.Core().add_extension("fake_broken")


def test_add_extension_of_a_py_file_that_raises(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "bad_ext.py"
    path.write_text("raise RuntimeError('half written')\n")
    with pytest.raises(ExtensionError, match=r"bad_ext\.py' raised on import: RuntimeError: half written"):
        opforge.Core().add_extension(str(path))


# ============================================================================ one test per hook
def test_hook_opforge_register_ops(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-ops", op_class_source("Twice", "FakeTwice", "fake_ops") + '''

Twice.evaluate = classmethod(lambda cls, attrs, inputs: [inputs[0] * 2])


@hookimpl
def opforge_register_ops(register):
    register(Twice)
''', version="1.4")
    node = opforge.op("FakeTwice", opforge.op("Parameter", element_type="f32", shape=[2, 2]), version="fake_ops")
    assert (node.type_name, node.version) == ("FakeTwice", "fake_ops")
    assert str(node.output(0).partial_shape) == str(opforge.PartialShape([2, 2]))
    from opforge.reference import evaluate_model

    np.testing.assert_array_equal(evaluate_model(Model([node]), [X])[0], X * 2)
    reg = default_plugins().ops.registration(("FakeTwice", "fake_ops"))
    assert reg is not None and reg.plugin == PluginInfo("fake_ops", "fake-ops", "1.4")


def test_hook_opforge_register_frontends(fake_dists: FakeDists, tmp_path: Path) -> None:
    fake_dists.plugin("fake-format", '''
from opforge.frontend import Frontend
from opforge.graph import Model, Node


class SizeFrontend(Frontend):
    """A file holding one number n: the model Relu(x: f32[n, n])."""

    name = "sizefmt"
    suffixes = (".size",)

    def supports(self, source):
        return source.suffix() == ".size"

    def read(self, source, plugins, options):
        n = int(source.path.read_text())
        x = Node.create("Parameter", [], {"element_type": "f32", "shape": [n, n]}, "x", registry=plugins.ops)
        y = Node.create("Relu", [x], {}, "relu", registry=plugins.ops)
        return Model([y], [x], name=source.path.stem)


@hookimpl
def opforge_register_frontends(register):
    register(SizeFrontend())
''')
    ps, _ = fake_dists.load()
    path = tmp_path / "tiny.size"
    path.write_text("3")
    model = opforge.Core(ps).read_model(path)
    assert model.name == "tiny"
    assert [n.type_name for n in model.get_ordered_ops()] == ["Parameter", "Relu", "Result"]
    assert str(model.input(0).partial_shape) == str(opforge.PartialShape([3, 3]))
    other = tmp_path / "tiny.other"
    other.write_text("3")
    with pytest.raises(opforge.OpforgeError, match=r"installed frontends: .*sizefmt \(\.size\)"):
        opforge.Core(ps).read_model(other)


def test_hook_opforge_register_extractors(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-extractors", '''
from opforge.frontend.extensions import FrontExtractorOp


class LeakyExtractor(FrontExtractorOp):
    op = "FakeLeaky"
    domain = "com.fake"

    @classmethod
    def extract(cls, node):
        return "Relu", {}


@hookimpl
def opforge_register_extractors(register):
    register("onnx", LeakyExtractor.op, LeakyExtractor, domain=LeakyExtractor.domain)
''', version="0.2")
    ps, _ = fake_dists.load()
    from opforge.frontend.extensions import ExtensionSet, normalize_outputs

    handler = ExtensionSet("onnx", ps).find("com.fake", "FakeLeaky")
    assert handler is not None
    assert handler.provider == "extractor from plugin fake-extractors 0.2 (plugin 'fake_extractors')"
    assert ExtensionSet("onnx", ps).find("", "FakeLeaky") is None  # the domain is part of the key
    ctx = node_context(ps, "FakeLeaky", "com.fake")
    (out,) = normalize_outputs(handler.extension.convert(ctx), ctx, handler)
    assert out is not None and out.node.type_name == "Relu"


def test_hook_opforge_register_conversion_extensions(fake_dists: FakeDists) -> None:
    pytest.importorskip("opforge.frontend.extensions")
    fake_dists.plugin("fake-conversions", '''
from opforge.frontend.extensions import ConversionExtension


def double(ctx):
    x = ctx.get_input(0)
    return [ctx.op("Add", x, x)]


@hookimpl
def opforge_register_conversion_extensions(register):
    register(ConversionExtension("FakeDouble", double, framework="onnx"))
''', version="5.0")
    ps, _ = fake_dists.load()
    from opforge.frontend.extensions import ConversionExtension, ExtensionSet, normalize_outputs

    reg = ps.conversion_extensions.registration(("onnx", "", "FakeDouble"))
    assert reg is not None and isinstance(reg.value, ConversionExtension)
    assert reg.plugin == PluginInfo("fake_conversions", "fake-conversions", "5.0")
    handler = ExtensionSet("onnx", ps).find("ai.onnx", "FakeDouble")  # the default domain, spelt out
    assert handler is not None and handler.provider == "plugin fake-conversions 5.0 (plugin 'fake_conversions')"
    assert ExtensionSet("paddle", ps).find("", "FakeDouble") is None
    ctx = node_context(ps, "FakeDouble")
    (out,) = normalize_outputs(handler.extension.convert(ctx), ctx, handler)
    assert out is not None and out.node.type_name == "Add"
    assert [i.node.name for i in out.node.inputs] == ["x", "x"]


def test_hook_opforge_register_transformations(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-passes", '''
from opforge.transformations import Transformation


class Mark(Transformation):
    name = "fake_mark"
    stage = "front"
    order = 1

    def apply(self, model):
        model.rt_info.setdefault("passes", []).append(self.name)
        return True


class Late(Mark):
    name = "fake_late"
    stage = "back"


@hookimpl
def opforge_register_transformations(register):
    register(Late())
    register(Mark())
''')
    ps, _ = fake_dists.load()
    passes = [t for _, t in ps.transformations.items()]
    assert {"fake_mark", "fake_late", "constant_folding"} <= {t.name for t in passes}
    model = relu_model()
    changed = run_transformations(model, passes)
    assert model.rt_info["passes"] == ["fake_mark", "fake_late"]
    assert changed[0] == "fake_mark" and changed[-1] == "fake_late"
    reg = ps.transformations.registration("fake_mark")
    assert reg is not None and reg.plugin.distribution == "fake-passes"


def test_hook_opforge_register_devices(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-devices", MINI_DEVICE_SOURCE + '''

FACTORY_CALLS = []


def make_mini():
    FACTORY_CALLS.append("MINI")
    return MiniDevice("MINI")


@hookimpl
def opforge_register_devices(register):
    register("mini", make_mini)
    register("ABSENT", lambda: AbsentDevice("ABSENT"))
    register("NOT_A_DEVICE", object)


@hookimpl
def opforge_register_kernels(register):
    register("MINI", "Relu", lambda attrs, x: [np.maximum(x[0], 0)])
''', version="0.3.1")
    ps, _ = fake_dists.load()
    module = sys.modules[fake_dists.plugins[0].module]
    assert module.FACTORY_CALLS == []  # loading a plugin never builds its devices
    core = opforge.Core(ps)
    assert "MINI" in core.available_devices and module.FACTORY_CALLS == ["MINI"]
    assert core.unavailable_devices()["ABSENT"] == "no absent hardware here (test device)"
    assert core.get_property("mini", "FULL_DEVICE_NAME") == "mini test device MINI"
    assert core.get_versions("MINI") == {"MINI": "fake-devices 0.3.1 (plugin 'fake_devices')"}
    compiled = core.compile_model(relu_model(), "MINI")
    np.testing.assert_array_equal(compiled([X])[0], np.maximum(X, 0))
    with pytest.raises(DeviceUnavailableError, match=r"NOT_A_DEVICE: plugin fake-devices 0\.3\.1 .* returned object"):
        core.compile_model(relu_model(), "NOT_A_DEVICE")


def test_hook_opforge_register_kernels(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-device", MINI_DEVICE_SOURCE + '''

@hookimpl
def opforge_register_devices(register):
    register("MINI", lambda: MiniDevice("MINI"))
''')
    fake_dists.plugin("fake-kernels", '''
@hookimpl
def opforge_register_kernels(register):
    register("mini", "Relu", lambda attrs, x: [np.maximum(x[0], 0) + 10])
    register("OTHER", "Relu", lambda attrs, x: [x[0]])
''', version="2.0")
    ps, _ = fake_dists.load()
    assert set(ps.kernels_for("mini")) == {("Relu", None)}
    assert set(ps.kernels_for("OTHER")) == {("Relu", None)}
    reg = ps.kernels.registration(("MINI", "Relu", None))
    assert reg is not None and reg.plugin == PluginInfo("fake_kernels", "fake-kernels", "2.0")
    assert ps.provides("fake_kernels")["kernels"] == {"MINI": ["Relu"], "OTHER": ["Relu"]}
    compiled = opforge.Core(ps).compile_model(relu_model(), "MINI")
    np.testing.assert_array_equal(compiled([X])[0], np.maximum(X, 0) + 10)


def test_extractor_keys_are_normalized_like_extension_keys(plugin_env: pytest.MonkeyPatch) -> None:
    """``"ai.onnx"`` and ``""`` are one ONNX domain and framework names are lower case for
    conversion extensions; an extractor registered either way must be found the same."""
    from opforge.frontend.extensions import ExtensionSet

    class Extractor:
        @classmethod
        def extract(cls, node: Any) -> tuple[str, dict[str, Any]]:
            return "Relu", {}

    class Plugin:
        @hookimpl
        def opforge_register_extractors(self, register: Any) -> None:
            register("onnx", "FakeDefaultDomain", Extractor, domain="ai.onnx")
            register("ONNX", "FakeUpperFramework", Extractor)

    ps = PluginSystem(autoload=False)
    assert ps.register_module(Plugin(), PluginInfo("norm", "fake-norm", "1"))
    found = ExtensionSet("onnx", ps)
    assert found.find("", "FakeDefaultDomain") is not None
    assert found.find("ai.onnx", "FakeDefaultDomain") is not None
    assert found.find("", "FakeUpperFramework") is not None
