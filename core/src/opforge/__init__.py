"""opforge: an inference framework built to be extended by pip-installable plugins.

The public API mirrors OpenVINO's Python API (``Core``, ``read_model``, ``compile_model``,
``save_model``...) so its users feel at home.
"""

from __future__ import annotations

from opforge.element_type import Type
from opforge.errors import OpforgeError
from opforge.graph import Model, Node, Output, op
from opforge.hookspecs import hookimpl
from opforge.op import InferContext, NoAttrs, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape

__version__ = "0.1.0"

__all__ = [
    "InferContext", "Model", "NoAttrs", "Node", "Op", "OpAttrs", "OpforgeError", "Output",
    "PartialShape", "TensorSpec", "Type", "__version__", "hookimpl", "op",
]
