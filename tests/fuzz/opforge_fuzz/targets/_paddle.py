"""What the two Paddle targets share: one input = program file + .pdiparams (join_parts), read
through the Paddle frontend as ``<name><suffix>`` given as bytes (no file is touched)."""

from __future__ import annotations

import random
from pathlib import Path

from opforge.frontend.base import ConversionOptions, ModelSource

from opforge_fuzz.harness import join_parts, split_parts
from opforge_fuzz.mutate import mutate_bytes, mutate_json, mutate_proto, splice
from opforge_fuzz.targets import _common
from opforge_fuzz.targets.onnx_reader import round_trip


def read(data: bytes, suffix: str) -> None:
    program, params = split_parts(data)
    # The path only names the format (suffix) and labels messages; with data and weights given
    # as bytes the frontend reads nothing from disk.
    src = ModelSource(path=Path("fuzz" + suffix), data=program, weights=params)
    model = _common.frontend("paddle").read(src, _common.core().plugins, ConversionOptions())
    round_trip(model)


def mutate(data: bytes, rng: random.Random, pool: list[bytes] | None, pir: bool) -> bytes:
    program, params = split_parts(data)
    r = rng.random()
    if r < 0.7:
        if pir:
            program = mutate_json(program, rng)
        else:
            from opforge_paddle.protoschema import schema

            program = mutate_proto(program, schema().ProgramDesc, rng)
    elif r < 0.9:
        params = mutate_bytes(params, rng)
    elif pool:
        other_prog, other_params = split_parts(rng.choice(pool))
        if rng.random() < 0.5:
            params = other_params  # parameters of another program: count/shape/dtype mismatches
        else:
            program = splice(program, other_prog, rng)
    else:
        return mutate_bytes(data, rng)
    return join_parts(program, params)
