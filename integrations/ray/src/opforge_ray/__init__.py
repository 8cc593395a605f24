"""opforge on Ray: batch inference with Ray Data, serving with Ray Serve, ``opforge batch``.

Importing this package does not import Ray (the ``opforge`` plugin entry point lives here and
plugin loading must stay cheap); Ray is imported when a model is put in the object store, a
predictor runs on a worker, or :mod:`opforge_ray.serve` is imported.
"""

from opforge_ray.batching import BATCHING_MODES, BatchRunner
from opforge_ray.payload import ModelPayload, ModelRef, load_model, put_model
from opforge_ray.placement import Placement, place
from opforge_ray.predictor import OpforgePredictor

__all__ = [
    "BATCHING_MODES", "BatchRunner", "ModelPayload", "ModelRef", "OpforgePredictor", "Placement",
    "load_model", "place", "put_model",
]
