"""Hook implementations: the ``opforge batch`` command (Ray is imported only when it runs)."""

from __future__ import annotations

from opforge.hookspecs import Register, hookimpl


@hookimpl
def opforge_register_commands(register: Register) -> None:
    from opforge_ray import batch_command

    register("batch", batch_command.run, help=batch_command.HELP, add_arguments=batch_command.add_arguments)
