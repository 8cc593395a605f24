"""A plugin that calls ``sys.exit()`` (or raises another non-Exception BaseException) while being
imported or in a hook is reported as broken; it never ends the program. Ctrl-C still does."""

from __future__ import annotations

import pytest
from opforge.cli import main
from opforge.plugins import default_plugins
from plugin_fixtures import FakeDists, op_class_source

GOOD = op_class_source("A", "FakeA", "fake_a") + "\n@hookimpl\ndef opforge_register_ops(register):\n    register(A)\n"


@pytest.mark.parametrize(("source", "reason"), [
    ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
    ("raise SystemExit('bye')\n", "SystemExit: bye"),
    ("class Odd(BaseException):\n    pass\nraise Odd('strange')\n", "Odd: strange"),
])
def test_sys_exit_at_import_marks_the_plugin_broken(fake_dists: FakeDists, source: str, reason: str) -> None:
    fake_dists.plugin("fake-good", GOOD)
    fake_dists.plugin("fake-exits", source, version="0.2")
    ps, warned = fake_dists.load()
    rec = ps.records["fake_exits"]
    assert rec.status == "failed" and rec.error is not None and reason in rec.error
    assert len(warned) == 1 and "fake-exits 0.2" in warned[0]
    assert ps.records["fake_good"].status == "loaded" and ps.ops.get("FakeA", "fake_a").type_name == "FakeA"


def test_sys_exit_in_a_hook_marks_the_plugin_broken(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-hook-exits", GOOD.replace("    register(A)\n", "    register(A)\n    raise SystemExit(0)\n"))
    ps, _ = fake_dists.load()
    rec = ps.records["fake_hook_exits"]
    assert rec.status == "failed" and rec.error is not None
    assert "raised in hook opforge_register_ops: SystemExit: 0" in rec.error
    assert ("FakeA", "fake_a") not in ps.ops  # nothing of the failed call is kept


def test_ctrl_c_still_interrupts(fake_dists: FakeDists) -> None:
    fake_dists.plugin("fake-interrupt", "raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        fake_dists.load()


def test_opforge_plugins_still_prints(fake_dists: FakeDists, capsys: pytest.CaptureFixture[str]) -> None:
    fake_dists.plugin("fake-exits", "import sys\nsys.exit(1)\n", version="0.2")
    fake_dists.plugin("fake-good", GOOD)
    fake_dists.env.setenv("OPFORGE_LOAD_PLUGINS", "fake-exits,fake-good")
    with pytest.warns(Warning):
        assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "fake_exits  [fake-exits 0.2]  failed" in out and "SystemExit: 1" in out
    assert "fake_good  [fake-good 1.0]  loaded" in out
    assert default_plugins().records["fake_good"].status == "loaded"


def test_a_device_factory_calling_sys_exit_makes_the_device_unavailable(fake_dists: FakeDists) -> None:
    from opforge import Core
    from opforge.errors import DeviceUnavailableError

    fake_dists.plugin("fake-dev-exits", "import sys\n\n@hookimpl\ndef opforge_register_devices(register):\n"
                      "    register('EXITDEV', lambda: sys.exit(4))\n")
    ps, _ = fake_dists.load()
    core = Core(ps)
    assert "EXITDEV" in core.unavailable_devices()
    with pytest.raises(DeviceUnavailableError, match=r"device EXITDEV: the factory of plugin .*fake-dev-exits.* "
                                                     r"raised SystemExit: 4"):
        core.get_property("EXITDEV", "FULL_DEVICE_NAME")
