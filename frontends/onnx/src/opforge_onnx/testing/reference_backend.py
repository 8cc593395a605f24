"""A backend for ``run_node_tests.py --backend module:opforge_onnx.testing.reference_backend``.

It converts with opforge (the ONNX frontend, through the plugin system) and evaluates with
``opforge.reference.evaluate_model``: the numbers it gives are "conversion + reference
evaluation", not a device's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from opforge.frontend.convert import convert_model
from opforge.reference import evaluate_model


def prepare(model_path: str) -> Callable[[Sequence[Any]], list[np.ndarray]]:
    """Convert now (errors count as load errors); the returned callable evaluates."""
    proto = onnx.load_model(model_path, load_external_data=False)
    inits = {i.name for i in proto.graph.initializer}
    names = [i.name for i in proto.graph.input if i.name not in inits]
    model = convert_model(model_path, framework="onnx")

    def run_inputs(inputs: Sequence[Any]) -> list[np.ndarray]:
        feeds = {n: np.asarray(v) for n, v in zip(names, inputs)}
        # Outputs are returned as opforge computed them: no dtype fix-ups that would hide bugs.
        return evaluate_model(model, feeds)

    return run_inputs


def run(model_path: str, inputs: Sequence[Any]) -> list[np.ndarray]:
    return prepare(model_path)(inputs)
