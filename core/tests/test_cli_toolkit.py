"""``opforge --version``, ``python -m opforge`` and a closed pipe (``opforge query``, a command of
the HETERO plugin, is tested in plugin-hetero/tests/test_query_command.py)."""

from __future__ import annotations

import subprocess
import sys

import opforge
import pytest
from opforge.cli import main
from opforge.versions import installed_plugins


def test_version_lists_opforge_and_every_installed_plugin(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"opforge {opforge.__version__}"
    for dist, version, _ep in installed_plugins():
        assert any(line.strip().startswith(f"{dist} {version}") for line in lines[1:]), (dist, lines)


def test_python_dash_m_opforge_is_the_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "opforge", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith(f"opforge {opforge.__version__}\n"), proc.stderr
    bad = subprocess.run([sys.executable, "-m", "opforge", "convert", "missing.onnx"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "missing.onnx" in bad.stderr and "Traceback" not in bad.stderr


def test_a_closed_pipe_ends_quietly() -> None:
    # the reader is gone before opforge writes a byte: what `opforge plugins --all | head -0` does
    proc = subprocess.Popen([sys.executable, "-m", "opforge", "plugins", "--all", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert err == ""
