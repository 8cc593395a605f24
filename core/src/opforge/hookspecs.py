"""Every hook a plugin can implement, in one module.

A plugin is a module (or object) with functions decorated by :data:`opforge.hookimpl`, found
through the ``opforge`` entry-point group::

    [project.entry-points.opforge]
    my_plugin = "my_package.plugin"

All hooks are *registration* hooks in the style of ``llm``: opforge passes a ``register``
callback and the plugin calls it once per thing it provides. Opforge owns the policy: it
validates each registration, records which plugin made it, and detects two plugins claiming the
same key (a :class:`~opforge.errors.PluginConflictError` naming both, identical in any install
order; an explicit higher ``priority=`` wins instead). Hooks are always called with keyword
arguments, so an implementation may accept fewer arguments than the spec declares, and new
arguments can be added later without breaking old plugins.

The built-in opset, the IR frontend and the built-in transformations are registered through these
same hooks (see :mod:`opforge.builtins`). ``docs/plugins.md`` documents each hook with examples;
a meta-test fails when a hook here lacks documentation or a test.

A plugin may define hooks of its own for other plugins to implement (HETERO's partition-policy
hook lives in ``opforge_hetero.hookspecs``): it names their module in ``OPFORGE_HOOKSPECS`` and
the plugin system adds them with pluggy's ``add_hookspecs``. The same meta-test covers them.
"""

from __future__ import annotations

from typing import Any, Protocol

import pluggy

hookspec = pluggy.HookspecMarker("opforge")
hookimpl = pluggy.HookimplMarker("opforge")


class Register(Protocol):
    def __call__(self, *args: Any, **kwargs: Any) -> None: ...


# ============================================================================ operations
@hookspec
def opforge_register_ops(register: Register) -> None:
    """Register operation definitions (subclasses of :class:`opforge.Op`).

    Call ``register(op_class, priority=0)`` for each. The key is ``(type_name, version)``:
    a custom op uses its own opset name as ``version`` (``"my_ext"``), which is what IR files
    record and how reading an IR finds the plugin again.

    :param register: ``register(op_class: type[Op], *, priority: int = 0)``
    """


# ============================================================================ frontends
@hookspec
def opforge_register_frontends(register: Register) -> None:
    """Register model-format readers (subclasses of :class:`opforge.frontend.Frontend`).

    ``read_model`` asks each frontend, in ``priority`` order then by name, whether it supports a
    path or bytes; the first that does loads and converts the model. Key: ``frontend.name``.

    :param register: ``register(frontend: Frontend, *, priority: int = 0)``
    """


@hookspec
def opforge_register_extractors(register: Register) -> None:
    """Register Model-Optimizer-style extractors: framework node -> op class + attributes.

    Key: ``(framework, domain, op_type)``. During conversion a user mapping file wins over
    extensions, extensions win over extractors' standard translators, as documented in
    ``docs/plugins.md``.

    :param register: ``register(framework: str, op_type: str, extractor, *, domain: str = "",
        priority: int = 0)``; ``extractor`` has ``extract(node) -> (op_class, attrs)``.
    """


@hookspec
def opforge_register_conversion_extensions(register: Register) -> None:
    """Register frontend extensions: :class:`opforge.frontend.OpExtension` (1:1 mapping) or
    :class:`opforge.frontend.ConversionExtension` (a function that builds a sub-graph).

    Key: ``(framework, domain, op_type)`` taken from the extension object.

    :param register: ``register(extension, *, priority: int = 0)``
    """


# ============================================================================ graph passes
@hookspec
def opforge_register_transformations(register: Register) -> None:
    """Register graph transformations (:class:`opforge.transformations.Transformation`).

    They run in a deterministic order: by ``stage`` (``"front"``, ``"middle"``, ``"back"``), then
    ``order`` (lower first), then ``name``. Key: ``transformation.name``.

    :param register: ``register(transformation: Transformation, *, priority: int = 0)``
    """


# ============================================================================ devices
@hookspec
def opforge_register_devices(register: Register) -> None:
    """Register device plugins: a name (``"CPU"``) and a zero-argument factory that returns a
    :class:`opforge.runtime.device.Device`. Factories are called lazily, only when the device
    is asked for, so importing a plugin never touches drivers. Key: the upper-cased name.

    :param register: ``register(name: str, factory: Callable[[], Device], *, priority: int = 0)``
    """


@hookspec
def opforge_register_kernels(register: Register) -> None:
    """Register device kernels for operations, per device name.

    The kernel object's form is defined by the device plugin (a NumPy callable, a compiled C++
    kernel, an OpenCL kernel description). Key: ``(device, type_name, version)``.

    :param register: ``register(device: str, op: str | type[Op], kernel, *, version: str | None
        = None, priority: int = 0)``
    """


# ============================================================================ command line
@hookspec
def opforge_register_commands(register: Register) -> None:
    """Register subcommands of the ``opforge`` command (``opforge batch ...``).

    ``add_arguments(parser)`` adds the command's options to its own ``argparse`` sub-parser;
    ``run(args)`` runs it and returns the exit status. Both are called only when the command
    line is built or the command is chosen, so import heavy packages inside them, not at module
    level. A built-in command's name cannot be taken. An invalid ``register`` call or a raising
    hook disables the plugin like any other hook; an ``add_arguments`` or ``run`` that raises
    costs only that command (reported naming the plugin), never the rest of the CLI. Key: the
    command name.

    :param register: ``register(name: str, run: Callable[[Namespace], int], *, help: str = "",
        add_arguments: Callable[[ArgumentParser], None] | None = None, priority: int = 0)``
    """
