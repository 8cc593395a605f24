"""``opforge plugins`` and ``opforge devices``: in-process through ``opforge.cli.main``, and once
through the installed console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opforge.cli import main
from opforge.plugins import BUILTIN_PLUGINS, PluginWarning
from plugin_fixtures import MINI_DEVICE_SOURCE, PLUGIN_ENV_VARS, FakeDists, op_class_source

TEMPLATE_ROW = "template_extension  [opforge-template-extension 0.1.0]  loaded"
BUILTINS = [m.rsplit(".", 1)[-1] for m in BUILTIN_PLUGINS]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run(capsys, *argv, "--json"))
    return data


def rows(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in data["plugins"]}


# ============================================================================ plugins
def test_plugins_lists_the_template_extension_and_its_op(plugin_env: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "plugins")
    lines = out.splitlines()
    i = lines.index(TEMPLATE_ROW)
    assert lines[i + 1] == "    ops: Identity/template_extension"
    for name in BUILTINS:  # only with --all
        assert not any(line.startswith(f"{name}  ") for line in lines)
    out_all = run(capsys, "plugins", "--all")
    assert TEMPLATE_ROW in out_all.splitlines()
    assert "standard_opset  [built-in]  loaded" in out_all.splitlines()
    assert "    transformations: constant_folding, dead_code_elimination" in out_all.splitlines()


def test_plugins_json(plugin_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "plugins")
    assert set(data) == {"plugins", "conflicts", "failures"}
    row = rows(data)["template_extension"]
    assert row["distribution"] == "opforge-template-extension" and row["version"] == "0.1.0"
    assert (row["status"], row["error"], row["builtin"]) == ("loaded", None, False)
    assert row["entry_point"] == "opforge_template_extension.plugin"
    assert row["provides"]["ops"] == ["Identity/template_extension"]
    assert not set(BUILTINS) & set(rows(data))
    every = rows(run_json(capsys, "plugins", "--all"))
    for name in BUILTINS:
        assert every[name]["builtin"] is True and every[name]["status"] == "loaded"
    assert "Relu/opset1" in every["standard_opset"]["provides"]["ops"]
    assert every["template_extension"] == row


def test_plugins_shows_a_failed_plugin_with_its_error(fake_dists: FakeDists,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    broken = fake_dists.plugin("fake-broken", "raise ImportError('libfake.so: cannot open shared object file')\n",
                               version="0.3.1")
    reason = f"import of '{broken.module}' failed: ImportError: libfake.so: cannot open shared object file"
    with pytest.warns(PluginWarning, match="fake-broken 0.3.1"):
        out = run(capsys, "plugins")
    lines = out.splitlines()
    i = lines.index("fake_broken  [fake-broken 0.3.1]  failed")
    assert lines[i + 1] == f"    error: {reason}"
    assert TEMPLATE_ROW in lines  # the others still load
    data = run_json(capsys, "plugins")  # the process-wide system is built once: no second warning
    row = rows(data)["fake_broken"]
    assert (row["status"], row["error"], row["version"]) == ("failed", reason, "0.3.1")
    assert "provides" not in row
    assert data["failures"] == [f"plugin fake-broken 0.3.1 (plugin 'fake_broken') could not be loaded: {reason}"]


def test_plugins_shows_the_error_of_a_plugin_whose_hook_raised(fake_dists: FakeDists,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    fake_dists.plugin("fake-hook", "@hookimpl\ndef opforge_register_ops(register):\n"
                      "    raise RuntimeError('FAKE_HOME is not set')\n", version="1.1")
    with pytest.warns(PluginWarning):
        out = run(capsys, "plugins")
    lines = out.splitlines()
    i = lines.index("fake_hook  [fake-hook 1.1]  failed")
    assert lines[i + 1].startswith("    error: ") and "FAKE_HOME is not set" in lines[i + 1]


def test_plugins_shows_conflicts(fake_dists: FakeDists, capsys: pytest.CaptureFixture[str]) -> None:
    for dist in ("fake-one", "fake-two"):
        fake_dists.plugin(dist, op_class_source("Twin", "FakeTwin", "fake_twin")
                          + "\n@hookimpl\ndef opforge_register_ops(register):\n    register(Twin)\n")
    lines = run(capsys, "plugins").splitlines()
    assert "fake_one  [fake-one 1.0]  loaded" in lines and "    ops: FakeTwin/fake_twin" in lines
    conflicts = [line for line in lines if line.startswith("CONFLICT: ")]
    assert conflicts == ["CONFLICT: operation FakeTwin/fake_twin is registered by more than one plugin: "
                         "fake-one 1.0 (plugin 'fake_one') and fake-two 1.0 (plugin 'fake_two'). Uninstall one "
                         "of them, or disable one with OPFORGE_LOAD_PLUGINS, or register with a higher priority= "
                         "to override deliberately."]
    assert run_json(capsys, "plugins")["conflicts"] == [conflicts[0].removeprefix("CONFLICT: ")]


def test_plugins_with_nothing_installed(plugin_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    plugin_env.setenv("OPFORGE_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert run(capsys, "plugins") == "no plugins installed (add --all to show the built-in ones)\n"
    assert [line for line in run(capsys, "plugins", "--all").splitlines() if not line.startswith(" ")] == [
        f"{name}  [built-in]  loaded" for name in sorted(BUILTINS)]


def test_the_console_script_works(plugin_env: pytest.MonkeyPatch) -> None:
    script = Path(sys.executable).parent / "opforge"
    exe = str(script) if script.exists() else shutil.which("opforge")
    if exe is None:
        pytest.skip("the opforge console script is not installed")
    env = {k: v for k, v in os.environ.items() if k not in PLUGIN_ENV_VARS}
    proc = subprocess.run([exe, "plugins", "--json"], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    row = rows(json.loads(proc.stdout))["template_extension"]
    assert row["status"] == "loaded" and row["provides"]["ops"] == ["Identity/template_extension"]


# ============================================================================ devices
def test_devices_runs(plugin_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "devices")
    assert out.strip()
    data = run_json(capsys, "devices")
    assert set(data) == {"available", "unavailable", "left_out"}
    assert isinstance(data["available"], list) and isinstance(data["unavailable"], dict)
    assert isinstance(data["left_out"], dict)


def test_devices_with_none_installed(plugin_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    plugin_env.setenv("OPFORGE_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert run(capsys, "devices") == "no device plugins installed (pip install opforge-cpu)\n"
    assert run_json(capsys, "devices") == {"available": [], "unavailable": {}, "left_out": {}}


def test_devices_lists_available_and_unavailable_ones(fake_dists: FakeDists,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    fake_dists.plugin("fake-devices", MINI_DEVICE_SOURCE + '''
@hookimpl
def opforge_register_devices(register):
    register("mini", lambda: MiniDevice("MINI"))
    register("absent", lambda: AbsentDevice("ABSENT"))
''')
    lines = run(capsys, "devices").splitlines()
    assert "MINI: mini test device MINI" in lines
    assert "ABSENT: unavailable (no absent hardware here (test device))" in lines
    data = run_json(capsys, "devices")
    assert "MINI" in data["available"] and "ABSENT" not in data["available"]
    assert data["unavailable"]["ABSENT"] == "no absent hardware here (test device)"


def test_devices_say_which_hardware_they_left_out_and_why(fake_dists: FakeDists,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    fake_dists.plugin("fake-partial", MINI_DEVICE_SOURCE + '''
class PartialDevice(MiniDevice):
    def availability(self):
        return Availability(True, left_out=("card 'B' left out: its compiler fails (test device)",))


class TwinDevice(PartialDevice):
    pass


class TwinAlias(PartialDevice):
    alias_of = "TWIN"


class OddDevice(MiniDevice):
    def availability(self):
        return ("yes", "a tuple, not an Availability")


@hookimpl
def opforge_register_devices(register):
    register("partial", lambda: PartialDevice("PARTIAL"))
    register("twin", lambda: TwinDevice("TWIN"))
    register("twinalias", lambda: TwinAlias("TWINALIAS"))
    register("odd", lambda: OddDevice("ODD"))
''')
    lines = run(capsys, "devices").splitlines()
    # one line per reason, naming each device it hits; an alias repeats nothing
    assert "PARTIAL, TWIN: card 'B' left out: its compiler fails (test device)" in lines
    assert "PARTIAL: mini test device PARTIAL" in lines
    assert "ODD: unavailable (availability() returned tuple, expected Availability)" in lines
    data = run_json(capsys, "devices")
    ours = {k: v for k, v in data["left_out"].items() if k in ("PARTIAL", "TWIN", "TWINALIAS", "ODD")}
    assert ours == {"PARTIAL": ["card 'B' left out: its compiler fails (test device)"],
                    "TWIN": ["card 'B' left out: its compiler fails (test device)"]}


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["plugin"])
    assert info.value.code == 2
    assert "invalid choice: 'plugin'" in capsys.readouterr().err
