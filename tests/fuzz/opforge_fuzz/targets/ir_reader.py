"""IR ``.xml`` + ``.bin`` -> opforge model through ``opforge.ir.reader.read_ir`` (defusedxml,
layer/edge/port checks, weight offsets against the .bin, op versions, shape inference). One
input holds both files (harness.join_parts). A model that reads must write and read back."""

from __future__ import annotations

import functools
import random

from opforge.frontend.base import ConversionOptions, ModelSource
from opforge.ir.reader import read_ir
from opforge.ir.writer import serialize

from opforge_fuzz.harness import join_parts, split_parts
from opforge_fuzz.mutate import mutate_bytes, mutate_xml, splice
from opforge_fuzz.targets import _common, _onnx_models
from opforge_fuzz.targets.onnx_reader import round_trip

NAME = "ir_reader"


@functools.lru_cache(maxsize=1)
def _generated() -> tuple[bytes, ...]:
    """The ONNX seed models written by opforge's IR writer (v11), plus one in FP16."""
    core = _common.core()
    out = []
    for i, data in enumerate(_onnx_models.all_models()):
        model = _common.frontend("onnx").read(ModelSource(data=data), core.plugins, ConversionOptions())
        xml, weights = serialize(model, compress_to_fp16=(i == 0))
        out.append(join_parts(xml, weights))
    return tuple(out)


def seeds() -> list[bytes]:
    return list(_generated()) + _common.committed_seeds(NAME)


def fuzz_one(data: bytes) -> None:
    xml, weights = split_parts(data)
    model = read_ir(xml, weights, plugins=_common.core().plugins)
    round_trip(model)


def mutate(data: bytes, rng: random.Random, pool: list[bytes] | None = None) -> bytes:
    xml, weights = split_parts(data)
    r = rng.random()
    if r < 0.75:
        xml = mutate_xml(xml, rng)
    elif r < 0.85:
        weights = mutate_bytes(weights, rng)
    elif r < 0.92 and pool:
        other_xml, other_w = split_parts(rng.choice(pool))
        xml, weights = (splice(xml, other_xml, rng), weights) if rng.random() < 0.5 else (xml, other_w)
    else:
        return mutate_bytes(data, rng)
    return join_parts(xml, weights)
