"""The interface every frontend (a model-format reader) implements."""

from __future__ import annotations

import abc
import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opforge.errors import ModelFormatError
from opforge.model_files import check_regular, head

if TYPE_CHECKING:
    from opforge.graph import Model
    from opforge.plugins.manager import PluginSystem


@dataclasses.dataclass
class ModelSource:
    """A model given as a path or as bytes (plus, for formats with separate weights, their
    path or bytes)."""

    path: Path | None = None
    data: bytes | None = None
    weights_path: Path | None = None
    weights: bytes | None = None

    @classmethod
    def of(cls, model: str | os.PathLike[str] | bytes | bytearray | memoryview,
           weights: str | os.PathLike[str] | bytes | None = None) -> ModelSource:
        src = cls()
        if isinstance(model, (bytes, bytearray, memoryview)):
            src.data = bytes(model)
        elif isinstance(model, (str, os.PathLike)):
            p = Path(model)
            # Not just "exists": a FIFO or device named model.onnx would block the reader forever.
            check_regular(p)
            src.path = p
        else:
            raise ModelFormatError(
                f"read_model expects a path or bytes, got {type(model).__name__}"
            )
        if isinstance(weights, (bytes, bytearray, memoryview)):
            src.weights = bytes(weights)
        elif weights is not None:
            src.weights_path = Path(weights)
        return src

    @property
    def label(self) -> str:
        """How messages name the model: its path, or '<bytes>'."""
        return str(self.path) if self.path is not None else "<model bytes>"

    def head(self, n: int = 512) -> bytes:
        """The first ``n`` bytes, for format detection."""
        if self.data is not None:
            return self.data[:n]
        if self.path is not None:
            return head(self.path, n)
        return b""

    def suffix(self) -> str:
        return self.path.suffix.lower() if self.path is not None else ""


@dataclasses.dataclass
class ConversionOptions:
    """Options a frontend honours while converting."""

    #: user extensions (OpExtension/ConversionExtension objects), highest priority first
    extensions: list[Any] = dataclasses.field(default_factory=list)
    #: keep unsupported framework ops as placeholder nodes instead of failing
    allow_unsupported: bool = False
    #: override input shapes: {input name: PartialShape}
    input_shapes: dict[str, Any] = dataclasses.field(default_factory=dict)


class Frontend(abc.ABC):
    """A model-format reader, registered through ``opforge_register_frontends``."""

    #: short unique name: "onnx", "paddle", "ir"
    name: str = ""
    #: file suffixes it reads, for messages ("no frontend reads .foo; installed read: ...")
    suffixes: tuple[str, ...] = ()

    @abc.abstractmethod
    def supports(self, source: ModelSource) -> bool:
        """Cheap check (suffix, magic bytes) whether this frontend reads ``source``. Never raises."""

    @abc.abstractmethod
    def read(self, source: ModelSource, plugins: PluginSystem, options: ConversionOptions) -> Model:
        """Load and convert ``source`` into a core :class:`~opforge.graph.Model`."""
