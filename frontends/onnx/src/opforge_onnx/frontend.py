"""The ONNX frontend: detects ``.onnx`` files and ModelProto bytes and converts them."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING

from opforge.frontend.base import ConversionOptions, Frontend, ModelSource
from opforge.transformations.constant_folding import ConstantFolding

from opforge_onnx.converter import OnnxConverter
from opforge_onnx.fallback import OnnxFallbackRuntime
from opforge_onnx.loader import parse_model

if TYPE_CHECKING:
    from opforge.graph import Model
    from opforge.plugins.manager import PluginSystem


class OnnxFrontend(Frontend):
    name = "onnx"
    suffixes = (".onnx",)

    def supports(self, source: ModelSource) -> bool:
        try:
            if source.suffix() == ".onnx":
                return True
            if source.path is not None and source.suffix() not in ("", ".pb", ".bin", ".model"):
                return False
            head = source.head(64)
        except OSError:
            return False
        # A ModelProto starts with field 1 (ir_version, varint: tag 0x08) in every exporter's
        # output; bytes without a suffix are taken as ONNX only then.
        return len(head) >= 2 and head[0] == 0x08 and 0 < head[1] < 0x80

    def fallback_runtime(self) -> OnnxFallbackRuntime:
        """Runs the nodes a CustomLayersMapping.xml lists through ONNX Runtime (one per process,
        so its session cache is shared)."""
        return _runtime()

    def read(self, source: ModelSource, plugins: PluginSystem, options: ConversionOptions) -> Model:
        t0 = time.perf_counter()
        proto = parse_model(source)
        base_dir = source.path.absolute().parent if source.path is not None else None
        conv = OnnxConverter(proto, source.label, base_dir, plugins, options)
        model = conv.convert()
        # Shape -> Gather -> Concat -> Reshape chains and weight transforms become constants.
        ConstantFolding().apply(model)
        model.rt_info["conversion_seconds"] = time.perf_counter() - t0
        # The file name only: saved models must not carry the converting machine's folders.
        model.rt_info["source"] = source.path.name if source.path is not None else source.label
        return model


@functools.cache
def _runtime() -> OnnxFallbackRuntime:
    return OnnxFallbackRuntime()
