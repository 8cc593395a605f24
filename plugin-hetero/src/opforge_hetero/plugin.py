"""Hook implementations: the HETERO device and the ``opforge query`` command."""

from __future__ import annotations

import argparse

from opforge.hookspecs import Register, hookimpl

from opforge_hetero import hookspecs

#: the hooks HETERO defines for other plugins (the partition policy); added by the core
OPFORGE_HOOKSPECS = hookspecs


@hookimpl
def opforge_register_devices(register: Register) -> None:
    # Imported lazily by the factory: loading plugins must stay cheap.
    def factory() -> object:
        from opforge_hetero.device import HeteroDevice

        return HeteroDevice("HETERO")

    register("HETERO", factory)


#: the one-line help of ``opforge query`` (here, so that building the command line imports nothing)
QUERY_HELP = "which device runs each operation (query_model), and why"


@hookimpl
def opforge_register_commands(register: Register) -> None:
    # The placement report and the drawings belong to HETERO, which explains a single device as
    # well as a list of them. Imported when the command line is built or run, not at load time.
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        from opforge_hetero import cli

        cli.add_arguments(parser)

    def run(args: argparse.Namespace) -> int:
        from opforge_hetero import cli

        return cli.run(args)

    register("query", run, help=QUERY_HELP, add_arguments=add_arguments)
