"""``OpforgePredictor``: an opforge model as a callable class for ``Dataset.map_batches``.

::

    import ray
    from opforge_ray import OpforgePredictor, put_model

    model = put_model("mobilenet_v2.onnx")          # converted once, here; IR bytes in the object store
    ds = ray.data.read_parquet("images/")           # a column named after the model's input
    preds = ds.map_batches(OpforgePredictor, fn_constructor_kwargs={"model": model},
                           concurrency=2, num_cpus=1, batch_size=64)

Ray constructs the class once per actor; the constructor reads the IR bytes, picks the device
from the resources Ray assigned the actor (:mod:`opforge_ray.placement`) and compiles. Each call
then maps one batch (:mod:`opforge_ray.batching`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from opforge.runtime.core import Core

from opforge_ray.batching import BatchRunner
from opforge_ray.payload import ModelLike, load_model
from opforge_ray.placement import Placement, place, worker_resources


class OpforgePredictor:
    """Maps batches (dicts of NumPy arrays) through an opforge model.

    :param model: a :class:`~opforge_ray.ModelRef` from :func:`~opforge_ray.put_model` (converted
        once on the driver), a ``ModelPayload``, an opforge ``Model`` or a model path.
    :param device: ``"CPU"`` (threads matched to the actor's CPUs), ``"GPU"``/``"VPU"`` (the one
        Ray assigned the actor), or any device name such as ``"GPU.1"``.
    :param config: compile properties, e.g. ``{"INFERENCE_PRECISION_HINT": "f32"}``.
    :param batching: ``"auto"``, ``"split"`` or ``"reshape"``: how a batch whose size is not the
        model's static batch is run (see :mod:`opforge_ray.batching`).
    :param keep_inputs: also pass the input columns through (default: dropped, they are the bulk).
    :param output_prefix: prepended to the output column names.
    :param cast: cast input columns to the model's element types (``same_kind`` casts only, e.g.
        float64 to float32); without it a column of another type is an error naming it.
    """

    def __init__(self, model: ModelLike, device: str = "CPU", config: Mapping[str, Any] | None = None, *,
                 batching: str = "auto", keep_inputs: bool = False, output_prefix: str = "",
                 cast: bool = False) -> None:
        core = Core()
        loaded = load_model(model, core)
        self.placement: Placement = place(device, config, *worker_resources())
        self.runner = BatchRunner(core, loaded, self.placement.device, self.placement.config,
                                  batching=batching, keep_inputs=keep_inputs, output_prefix=output_prefix,
                                  cast=cast)

    @property
    def input_names(self) -> list[str]:
        return self.runner.input_names

    @property
    def output_names(self) -> list[str]:
        return self.runner.output_names

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
        return self.runner(batch)

    def __repr__(self) -> str:
        return f"<OpforgePredictor '{self.runner.model.name}' on {self.placement.reason}>"
