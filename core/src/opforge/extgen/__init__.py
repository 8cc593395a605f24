"""The Model Extension Generator: ``opforge extgen new`` writes an installable plugin package for
one custom op (op class, framework mappings, device kernels, tests, README) from answers to
questions or a JSON configuration. See :mod:`opforge.extgen.config` for the configuration."""

from opforge.extgen.config import ExtensionSpec, parse_config
from opforge.extgen.render import INSTALL_COMMAND, files, write_package

__all__ = ["INSTALL_COMMAND", "ExtensionSpec", "files", "parse_config", "write_package"]
