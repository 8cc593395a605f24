"""A model compiled for a device: inputs/outputs, infer requests, properties."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from opforge.errors import PropertyError
from opforge.graph import Model, Output
from opforge.runtime.device import Executable
from opforge.runtime.infer_request import InferRequest, Inputs
from opforge.runtime.inputs import InputBinder
from opforge.runtime.results import Results

if TYPE_CHECKING:
    from opforge.runtime.core import Core


class CompiledModel:
    """What :meth:`Core.compile_model` returns. Calling it runs inference: ``compiled(inputs)``.
    Thread-safe: each thread calling it gets its own infer request."""

    def __init__(self, core: Core, model: Model, executable: Executable, device: str,
                 config: dict[str, Any], *, source: Model | Callable[[], Model] | None = None,
                 loaded_from_cache: bool = False, explicit: Collection[str] | None = None) -> None:
        self._core = core
        self._model = model
        # The model as given to compile_model, before the device's transformations: what
        # export_model writes. A clone (structure only, constants shared), or, for a model
        # compiled from a file, a function that reads the file again: keeping the source weights
        # alive would undo the device releasing its copy of them.
        self._source = source
        self.loaded_from_cache = loaded_from_cache
        self._executable = executable
        self.device = device
        self._config = dict(config)
        # The config keys the caller set; the others are the device's (host-dependent) defaults,
        # which an exported blob leaves to the importing host. None: all of them were set.
        self._explicit = frozenset(self._config if explicit is None else explicit)
        self._local = threading.local()
        #: matches inputs to the model's (shared by its requests: built once, read only)
        self._binder = InputBinder(model, model.inputs)
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()

    @property
    def inputs(self) -> list[Output]:
        return self._model.inputs

    @property
    def outputs(self) -> list[Output]:
        return self._model.outputs

    def input(self, key: int | str = 0) -> Output:
        return self._model.input(key)

    def output(self, key: int | str = 0) -> Output:
        return self._model.output(key)

    def get_runtime_model(self) -> Model:
        """The model as compiled (after the device's transformations)."""
        return self._model

    def create_infer_request(self) -> InferRequest:
        return InferRequest(self)

    def __call__(self, inputs: Inputs = None) -> Results:
        req = getattr(self._local, "request", None)
        if req is None:
            req = self._local.request = self.create_infer_request()
        return req.infer(inputs)

    def infer_new_request(self, inputs: Inputs = None) -> Results:
        return self.create_infer_request().infer(inputs)

    def get_property(self, name: str) -> Any:
        key = name.upper()
        if key == "SUPPORTED_PROPERTIES":
            return sorted({*self._config, *self._executable.properties(), "EXECUTION_DEVICES",
                           "OPTIMAL_NUMBER_OF_INFER_REQUESTS", "SUPPORTED_PROPERTIES", "LOADED_FROM_CACHE"})
        if key == "LOADED_FROM_CACHE":
            return self.loaded_from_cache
        if key == "EXECUTION_DEVICES":
            return self._executable.properties().get("EXECUTION_DEVICES", [self.device])
        if key == "OPTIMAL_NUMBER_OF_INFER_REQUESTS":
            streams = int(self._config.get("NUM_STREAMS", 1) or 1)
            if str(self._config.get("PERFORMANCE_HINT", "LATENCY")).upper() == "THROUGHPUT":
                streams = max(streams, os.cpu_count() or 1)
            return streams
        props = self._executable.properties()
        if key in props:
            return props[key]
        if key in self._config:
            return self._config[key]
        raise PropertyError(
            f"compiled model on {self.device} has no property '{name}'; supported: "
            + ", ".join(self.get_property("SUPPORTED_PROPERTIES"))
        )

    def export_model(self, target: str | os.PathLike[str] | IO[bytes] | None = None) -> bytes:
        """This compiled model as a self-describing blob (see :mod:`opforge.runtime.blob`) for
        :meth:`Core.import_model`; also written to ``target`` (a path or a binary stream) if given."""
        if self._source is None:
            raise PropertyError(f"{self!r} was made without its source model; it cannot be exported")
        data = self.export_bytes(self._source if isinstance(self._source, Model) else self._source())
        if target is None:
            return data
        if isinstance(target, (str, os.PathLike)):
            Path(target).write_bytes(data)
        else:
            target.write(data)
        return data

    def export_bytes(self, source: Model) -> bytes:
        """The blob of this compiled model, with ``source`` as its model (see export_model)."""
        from opforge.ir.writer import serialize
        from opforge.runtime.blob import Blob
        from opforge.runtime.fingerprint import model_hash, relevant_versions

        xml, weights = serialize(source, plugins=self._core.plugins)
        config = {k: v for k, v in self._config.items() if k != "CACHE_DIR"}
        blob = Blob(device=self.device, config=config,
                    versions=relevant_versions(self._core.plugins, source, self.device),
                    model_hash=model_hash(source), xml=xml, weights=weights,
                    payload=self._executable.export_payload(),
                    defaulted=sorted(k for k in config if k not in self._explicit))
        return blob.to_bytes()

    def _pool(self) -> ThreadPoolExecutor:
        with self._executor_lock:
            if self._executor is None:
                n = max(2, int(self.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
                self._executor = ThreadPoolExecutor(max_workers=n, thread_name_prefix="opforge-async")
            return self._executor

    def __repr__(self) -> str:
        return f"<CompiledModel '{self._model.name}' on {self.device}>"
