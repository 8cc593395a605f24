"""A model converted once on the driver and shipped to the workers as IR bytes.

Converting an ONNX or Paddle model costs seconds and needs the frontend installed; a worker
should not repeat it. The driver converts once, serializes the result as IR v11 (``.xml`` and
``.bin`` bytes, what ``opforge.save_model`` writes) and puts that in Ray's object store once;
every worker reads the same bytes back with ``Core.read_model(xml, weights)``, which needs only
the IR frontend built into opforge (plus the plugins of any custom op the model uses).
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from opforge.errors import ModelFormatError

if TYPE_CHECKING:
    from opforge.graph import Model
    from opforge.runtime.core import Core

#: what the predictor and the Serve deployment accept as their ``model`` argument
ModelLike = Any  # ModelRef | ModelPayload | ray.ObjectRef | opforge Model | path | bytes


@dataclasses.dataclass(frozen=True, repr=False)
class ModelPayload:
    """An opforge model as IR v11 bytes."""

    name: str
    xml: bytes
    weights: bytes

    @classmethod
    def from_model(cls, model: Model | str | os.PathLike[str] | bytes, *, core: Core | None = None,
                   **convert: Any) -> ModelPayload:
        """Convert ``model`` (an opforge ``Model``, or a path/bytes any installed frontend reads).

        ``convert`` goes to :func:`opforge.convert_model`: ``input={"x": [-1, 3, 224, 224]}`` makes
        the batch dimension dynamic, so the workers run each batch in one call."""
        from opforge.graph import Model
        from opforge.ir.writer import serialize
        from opforge.runtime.core import Core

        core = core or Core()
        if not isinstance(model, Model):
            if convert:
                from opforge.frontend.convert import convert_model

                model = convert_model(model, **convert)
            else:
                model = core.read_model(model)
        elif convert:
            raise ModelFormatError(f"model '{model.name}' is already converted; {', '.join(convert)} apply "
                                   "to model files only")
        xml, weights = serialize(model, plugins=core.plugins)
        return cls(model.name, xml, weights)

    def read(self, core: Core) -> Model:
        return core.read_model(self.xml, self.weights)

    @property
    def nbytes(self) -> int:
        return len(self.xml) + len(self.weights)

    def __repr__(self) -> str:
        return f"<ModelPayload '{self.name}' ({len(self.xml):,} B xml, {len(self.weights):,} B weights)>"


@dataclasses.dataclass(frozen=True)
class ModelRef:
    """A :class:`ModelPayload` stored once in Ray's object store (``ray.put``).

    It is small and picklable, so it travels in ``fn_constructor_kwargs`` and deployment
    arguments while the bytes stay in the object store: each node fetches them once, however
    many workers it runs."""

    ref: Any  # ray.ObjectRef[ModelPayload]
    name: str
    nbytes: int

    def get(self) -> ModelPayload:
        import ray

        payload = ray.get(self.ref)
        if not isinstance(payload, ModelPayload):
            raise ModelFormatError(f"ModelRef '{self.name}' points at a {type(payload).__name__}, not a ModelPayload")
        return payload


def put_model(model: Model | str | os.PathLike[str] | bytes | ModelPayload, *, core: Core | None = None,
              **convert: Any) -> ModelRef:
    """Convert ``model`` once here and put its IR bytes in Ray's object store (Ray must be
    initialized). Pass the result as the ``model`` of :class:`~opforge_ray.OpforgePredictor` or
    of :func:`opforge_ray.serve.deployment`. ``convert``: see :meth:`ModelPayload.from_model`."""
    import ray

    payload = model if isinstance(model, ModelPayload) else ModelPayload.from_model(model, core=core, **convert)
    return ModelRef(ray.put(payload), payload.name, payload.nbytes)


def load_model(model: ModelLike, core: Core) -> Model:
    """On a worker: the opforge ``Model`` behind any accepted ``model`` argument."""
    from opforge.graph import Model

    if isinstance(model, ModelRef):
        return model.get().read(core)
    if isinstance(model, ModelPayload):
        return model.read(core)
    if isinstance(model, Model):
        return model
    if isinstance(model, (str, os.PathLike, bytes)):
        # A path is read (and converted) by each worker: fine for IR files on shared storage,
        # wasteful for ONNX; put_model avoids it.
        return core.read_model(model)
    if type(model).__name__ == "ObjectRef":
        import ray

        return load_model(ray.get(model), core)
    raise ModelFormatError(
        f"model must be a ModelRef (opforge_ray.put_model), a ModelPayload, an opforge Model or a model "
        f"path; got {type(model).__name__}"
    )
