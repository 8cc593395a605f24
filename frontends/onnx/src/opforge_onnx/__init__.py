"""opforge-onnx: the ONNX frontend of opforge.

``opforge_onnx.convert_model(path_or_bytes, extension=[...], allow_unsupported=False,
input={...})`` is :func:`opforge.frontend.convert_model` with the ONNX frontend forced.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from opforge.graph import Model

__version__ = "0.1.0"


def convert_model(model: str | os.PathLike[str] | bytes, *, extension: Any = None,
                  allow_unsupported: bool = False, input: Mapping[str, Any] | None = None,
                  plugins: Any = None) -> Model:
    """Convert an ONNX file or ModelProto bytes into an opforge Model (see opforge.convert_model)."""
    from opforge.frontend.convert import convert_model as _convert

    return _convert(model, extension=extension, allow_unsupported=allow_unsupported, input=input,
                    framework="onnx", plugins=plugins)


__all__ = ["__version__", "convert_model"]
