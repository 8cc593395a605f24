"""``opforge_register_commands``: subcommands that plugins add to the ``opforge`` CLI, and the
ways a broken one is contained (left out with a warning, never taking the CLI down)."""

from __future__ import annotations

import pytest
from opforge.cli import main
from plugin_fixtures import FakeDists

HELLO = '''
def add_arguments(parser):
    parser.add_argument("who")
    parser.add_argument("--times", type=int, default=1)
    parser.set_defaults(greeting="hello")


def run(args):
    print(" ".join([args.greeting, args.who] * args.times))
    return 3


@hookimpl
def opforge_register_commands(register):
    register("hello", run, help="say hello", add_arguments=add_arguments)
    register("quiet", lambda args: None)
'''


def test_hook_opforge_register_commands(fake_dists: FakeDists, capsys: pytest.CaptureFixture[str]) -> None:
    fake_dists.plugin("fake-hello", HELLO, version="1.2")
    fake_dists.env.setenv("OPFORGE_LOAD_PLUGINS", "fake_hello")
    assert main(["hello", "world", "--times", "2"]) == 3
    assert capsys.readouterr() == ("hello world hello world\n", "")
    assert main(["quiet"]) == 0  # run returning None counts as success
    assert main(["plugins"]) == 0
    assert "    commands: hello, quiet" in capsys.readouterr().out.splitlines()
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "say hello" in capsys.readouterr().out


BROKEN = '''
def raising_arguments(parser):
    parser.add_argument("--half")
    raise RuntimeError("add_arguments is broken")


def crash(args):
    raise ValueError("run is broken")


@hookimpl
def opforge_register_commands(register):
    register("convert", lambda args: 0)
    register("half", lambda args: 0, add_arguments=raising_arguments)
    register("crash", crash)
    register("works", lambda args: 7)
'''


def test_a_broken_command_is_left_out_and_the_rest_of_the_cli_works(
        fake_dists: FakeDists, capsys: pytest.CaptureFixture[str]) -> None:
    fake_dists.plugin("fake-broken", BROKEN, version="0.1")
    fake_dists.env.setenv("OPFORGE_LOAD_PLUGINS", "fake_broken")
    assert main(["works"]) == 7
    err = capsys.readouterr().err
    assert ("opforge: warning: plugin fake-broken 0.1 (plugin 'fake_broken') registers command 'convert', "
            "which is built in; left out") in err
    assert ("opforge: warning: command 'half' of plugin fake-broken 0.1 (plugin 'fake_broken') left out: its "
            "add_arguments raised RuntimeError: add_arguments is broken") in err
    with pytest.raises(SystemExit):  # no half-built 'half' command
        main(["half", "--half", "x"])
    capsys.readouterr()
    assert main(["crash"]) == 2
    assert capsys.readouterr().err.endswith(
        "opforge: error: command 'crash' of plugin fake-broken 0.1 (plugin 'fake_broken') failed: "
        "ValueError: run is broken\n")
    assert main(["plugins"]) == 0  # the built-in 'convert' is still the built-in one
    assert "fake_broken  [fake-broken 0.1]  loaded" in capsys.readouterr().out


def test_an_invalid_registration_disables_the_plugin_and_two_claims_conflict(
        fake_dists: FakeDists, capsys: pytest.CaptureFixture[str]) -> None:
    fake_dists.plugin("fake-bad-name", "@hookimpl\ndef opforge_register_commands(register):\n"
                                       "    register('Bad Name', lambda args: 0)\n")
    for dist in ("fake-one", "fake-two"):
        fake_dists.plugin(dist, "@hookimpl\ndef opforge_register_commands(register):\n"
                                "    register('twin', lambda args: 0)\n")
    fake_dists.env.setenv("OPFORGE_LOAD_PLUGINS", "fake_bad_name,fake_one,fake_two")
    with pytest.warns(UserWarning, match="command name 'Bad Name' must be lower-case"):
        assert main(["plugins"]) == 0
    out, err = capsys.readouterr()
    assert "fake_bad_name  [fake-bad-name 1.0]  failed" in out
    assert "opforge: warning: command 'twin' left out: command twin is registered by more than one plugin" in err
