"""The opforge plugin of the Paddle frontend (entry point ``paddle`` of group ``opforge``).

It registers the frontend, and every standard translator as a ConversionExtension at
:data:`~opforge.frontend.STANDARD_PRIORITY`: the same public API a third party uses, at a
priority any other extension or extractor overrides.
"""

from __future__ import annotations

from opforge.frontend.extensions import STANDARD_PRIORITY
from opforge.hookspecs import Register, hookimpl

from opforge_paddle.frontend import PaddleFrontend
from opforge_paddle.ops import all_translators


@hookimpl
def opforge_register_frontends(register: Register) -> None:
    register(PaddleFrontend())


@hookimpl
def opforge_register_conversion_extensions(register: Register) -> None:
    for ext in all_translators():
        register(ext, priority=STANDARD_PRIORITY)
