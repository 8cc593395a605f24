"""opforge: an inference framework built to be extended by pip-installable plugins.

The public API mirrors OpenVINO's Python API (``Core``, ``read_model``, ``compile_model``,
``save_model``...) so its users feel at home.
"""

from __future__ import annotations

import os
from typing import Any

from opforge.element_type import Type
from opforge.errors import OpforgeError
from opforge.graph import Model, Node, Output, op
from opforge.hookspecs import hookimpl
from opforge.op import InferContext, NoAttrs, Op, OpAttrs, TensorSpec
from opforge.runtime import AsyncInferQueue, CompiledModel, Core, InferRequest, Results
from opforge.shape import PartialShape

__version__ = "0.1.0"


def save_model(model: Model, xml_path: str | os.PathLike[str], *, compress_to_fp16: bool = False) -> None:
    """Write ``model`` as OpenVINO IR v11: ``xml_path`` plus the ``.bin`` beside it."""
    from opforge.ir.writer import save_model as _save

    _save(model, xml_path, compress_to_fp16=compress_to_fp16)


def convert_model(model: Any, **kwargs: Any) -> Model:
    """Convert a model file or bytes (ONNX, Paddle, IR...) to a :class:`Model`; see
    :func:`opforge.frontend.convert.convert_model` for ``extension=``, ``input=``,
    ``allow_unsupported=``."""
    from opforge.frontend.convert import convert_model as _convert

    return _convert(model, **kwargs)


def read_model(model: str | os.PathLike[str] | bytes, weights: Any = None) -> Model:
    """Read a model with the installed frontends (``Core().read_model``)."""
    return Core().read_model(model, weights)


__all__ = [
    "AsyncInferQueue", "CompiledModel", "Core", "InferContext", "InferRequest", "Model", "NoAttrs", "Node",
    "Op", "OpAttrs", "OpforgeError", "Output", "PartialShape", "Results", "TensorSpec", "Type",
    "__version__", "convert_model", "hookimpl", "op", "read_model", "save_model",
]
