"""Backends for the ONNX node-test conformance runner (``run_node_tests.py --backend
module:...``), one per opforge device: a module exposes ``prepare``/``run`` made here.

``prepare`` converts (and compiles) at once, so errors count as load errors; the callable it
returns runs one inference. Outputs are returned as opforge computed them: no dtype fix-ups that
would hide bugs. The device ``"REFERENCE"`` evaluates with ``opforge.reference.evaluate_model``
(the oracle: "conversion + reference evaluation", not a device's numbers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Runner = Callable[[Sequence[Any]], list[np.ndarray]]

_CORE: Any = None


def _core() -> Any:
    global _CORE
    if _CORE is None:
        import opforge

        _CORE = opforge.Core()
    return _CORE


def backend_for(device: str) -> tuple[Callable[[str], Runner], Callable[[str, Sequence[Any]], list[np.ndarray]]]:
    """``(prepare, run)`` for ``device`` ("CPU", "GPU.1", "REFERENCE", ...)."""

    def prepare(model_path: str) -> Runner:
        import onnx
        from opforge.frontend.convert import convert_model
        from opforge.reference import evaluate_model

        proto = onnx.load_model(model_path, load_external_data=False)
        inits = {i.name for i in proto.graph.initializer}
        names = [i.name for i in proto.graph.input if i.name not in inits]
        model = convert_model(model_path, framework="onnx")
        if device.upper() == "REFERENCE":
            def run_reference(inputs: Sequence[Any]) -> list[np.ndarray]:
                return evaluate_model(model, {n: np.asarray(v) for n, v in zip(names, inputs)})

            return run_reference
        # the node tests' expected outputs are f32 results (rtol 1e-3): a device computing in bf16
        # by default (CPU on a bf16 host, as OpenVINO's) runs them in f32, as the ONNX backend does
        from opforge_onnx.backend import onnx_semantics_config

        compiled = _core().compile_model(model, device, onnx_semantics_config(_core(), device))

        def run_inputs(inputs: Sequence[Any]) -> list[np.ndarray]:
            return list(compiled({n: np.asarray(v) for n, v in zip(names, inputs)}).to_tuple())

        return run_inputs

    def run(model_path: str, inputs: Sequence[Any]) -> list[np.ndarray]:
        return prepare(model_path)(inputs)

    return prepare, run
