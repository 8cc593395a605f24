"""A model compiled for a device: inputs/outputs, infer requests, properties."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from opforge.errors import PropertyError
from opforge.graph import Model, Output
from opforge.runtime.device import Executable
from opforge.runtime.infer_request import InferRequest, Inputs
from opforge.runtime.results import Results

if TYPE_CHECKING:
    from opforge.runtime.core import Core


class CompiledModel:
    """What :meth:`Core.compile_model` returns. Calling it runs inference: ``compiled(inputs)``.
    Thread-safe: each thread calling it gets its own infer request."""

    def __init__(self, core: Core, model: Model, executable: Executable, device: str,
                 config: dict[str, Any]) -> None:
        self._core = core
        self._model = model
        self._executable = executable
        self.device = device
        self._config = dict(config)
        self._local = threading.local()
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
                           "OPTIMAL_NUMBER_OF_INFER_REQUESTS", "SUPPORTED_PROPERTIES"})
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

    def _pool(self) -> ThreadPoolExecutor:
        with self._executor_lock:
            if self._executor is None:
                n = max(2, int(self.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
                self._executor = ThreadPoolExecutor(max_workers=n, thread_name_prefix="opforge-async")
            return self._executor

    def __repr__(self) -> str:
        return f"<CompiledModel '{self._model.name}' on {self.device}>"
