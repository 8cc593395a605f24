"""A backend for the ONNX node-test conformance runner (``run_node_tests.py --backend
module:opforge_cpu.testing.onnx_backend``): converts with opforge's ONNX frontend and compiles on
the ``CPU`` device.

``prepare`` converts and compiles (errors count as load errors); the callable it returns runs an
inference. Outputs are returned as the device computed them, without dtype fix-ups.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

_CORE: Any = None


def _core() -> Any:
    global _CORE
    if _CORE is None:
        import opforge

        _CORE = opforge.Core()
    return _CORE


def prepare(model_path: str) -> Callable[[Sequence[Any]], list[np.ndarray]]:
    import onnx
    from opforge.frontend.convert import convert_model

    proto = onnx.load_model(model_path, load_external_data=False)
    inits = {i.name for i in proto.graph.initializer}
    names = [i.name for i in proto.graph.input if i.name not in inits]
    model = convert_model(model_path, framework="onnx")
    compiled = _core().compile_model(model, "CPU")

    def run_inputs(inputs: Sequence[Any]) -> list[np.ndarray]:
        feeds = {n: np.asarray(v) for n, v in zip(names, inputs)}
        return list(compiled(feeds).to_tuple())

    return run_inputs


def run(model_path: str, inputs: Sequence[Any]) -> list[np.ndarray]:
    return prepare(model_path)(inputs)
