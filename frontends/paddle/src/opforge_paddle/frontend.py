"""The Paddle frontend: detects both formats paddle 3.x writes and converts them.

* ``<prefix>.json`` -- the PIR program (paddle.jit.save's default in 3.x);
* ``<prefix>.pdmodel`` -- the legacy ProgramDesc protobuf;

each with ``<prefix>.pdiparams`` next to it (or given as ``weights=``). Paddle is never imported,
except to run the ops a CustomLayersMapping.xml hands to it (:mod:`opforge_paddle.fallback`).
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from opforge.errors import ModelFormatError
from opforge.frontend.base import ConversionOptions, Frontend, ModelSource
from opforge.limits import current
from opforge.model_files import read_regular
from opforge.transformations.constant_folding import ConstantFolding

from opforge_paddle import legacy, pir
from opforge_paddle.converter import PaddleConverter
from opforge_paddle.fallback import PaddleFallbackRuntime
from opforge_paddle.ops import pir_table
from opforge_paddle.params import read_params
from opforge_paddle.program import PaddleProgram

if TYPE_CHECKING:
    from opforge.graph import Model
    from opforge.plugins.manager import PluginSystem

PARAMS_SUFFIX = ".pdiparams"


def _is_pir_json(head: bytes) -> bool:
    text = head.lstrip()
    return text.startswith(b"{") and b'"base_code"' in text and b'"pir"' in text


def _is_program_desc(head: bytes) -> bool:
    # ProgramDesc field 1 (blocks, length-delimited: tag 0x0A), and the first BlockDesc starts
    # with idx (field 1, varint: tag 0x08) = 0 and parent_idx (field 2: tag 0x10).
    if len(head) < 5 or head[0] != 0x0A:
        return False
    i = 1
    while i < len(head) and head[i] & 0x80:
        i += 1
    return head[i + 1:i + 4] == b"\x08\x00\x10"


class PaddleFrontend(Frontend):
    name = "paddle"
    suffixes = (".pdmodel", ".json")

    def supports(self, source: ModelSource) -> bool:
        try:
            suffix = source.suffix()
            if suffix in (".pdmodel", PARAMS_SUFFIX):
                return True  # a .pdiparams passed as the model gets a message that says so
            if source.path is not None and suffix not in ("", ".json", ".pdmodel"):
                return False
            head = source.head(256)
        except OSError:
            return False
        return _is_pir_json(head) or (suffix != ".json" and _is_program_desc(head))

    def _model_bytes(self, source: ModelSource) -> bytes:
        if source.data is not None:
            return source.data
        if source.path is None:
            raise ModelFormatError("no Paddle model given")
        # Regular files only (a FIFO named *.json would block), within MAX_MODEL_FILE_BYTES.
        return read_regular(source.path, "Paddle model file")

    def _weights(self, source: ModelSource, program: PaddleProgram) -> tuple[bytes, str] | None:
        if source.weights is not None:
            return source.weights, "<weights bytes>"
        path: Path | None = source.weights_path
        if path is None and source.path is not None:
            path = source.path.with_suffix(PARAMS_SUFFIX)
        if path is None:
            if program.params:
                raise ModelFormatError(
                    f"{source.label}: the program has {len(program.params)} parameters (first: "
                    f"'{program.params[0]}') but no weights were given; pass weights=<.pdiparams path or bytes>"
                )
            return None
        if not os.path.lexists(path):
            if not program.params:
                return None
            raise ModelFormatError(
                f"{source.label}: the program has {len(program.params)} parameters (first: '{program.params[0]}') "
                f"but the parameters file '{path}' does not exist"
            )
        return read_regular(path, "Paddle parameters file", limit="MAX_WEIGHTS_BYTES"), str(path)

    def parse(self, source: ModelSource) -> PaddleProgram:
        """The program of ``source`` in the ProgramDesc vocabulary (no conversion)."""
        if source.suffix() == PARAMS_SUFFIX:
            raise ModelFormatError(
                f"{source.label}: this is a Paddle parameters file (.pdiparams), not a model; pass the program "
                f"file ('{source.path.with_suffix('.json') if source.path else '<prefix>.json'}' or '.pdmodel') "
                "and the parameters are found next to it"
            )
        data = self._model_bytes(source)
        if _is_pir_json(data[:256]) or source.suffix() == ".json":
            program = pir.parse_program(data, source.label, pir_table())
        else:
            program = legacy.parse_program(data, source.label)
        current().check("MAX_NODES", len(program.ops), f"{source.label}: op count")
        return program

    def fallback_runtime(self) -> PaddleFallbackRuntime:
        """Runs the ops a CustomLayersMapping.xml lists through paddle (imported only then; one
        per process, so its program cache is shared)."""
        return _runtime()

    def read(self, source: ModelSource, plugins: PluginSystem, options: ConversionOptions) -> Model:
        t0 = time.perf_counter()
        program = self.parse(source)
        weights_src = self._weights(source, program)
        weights = {} if weights_src is None else read_params(weights_src[0], program.params, program.vars,
                                                            weights_src[1])
        model = PaddleConverter(program, weights, plugins, options).convert()
        # Shape arithmetic and weight transforms (BN folding inputs, reshaped biases) become constants.
        ConstantFolding().apply(model)
        model.rt_info["conversion_seconds"] = time.perf_counter() - t0
        # The file name only: saved models must not carry the converting machine's folders.
        model.rt_info["source"] = source.path.name if source.path is not None else source.label
        return model


@functools.cache
def _runtime() -> PaddleFallbackRuntime:
    return PaddleFallbackRuntime()
