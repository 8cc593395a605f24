"""Paddle legacy ``.pdmodel`` (ProgramDesc protobuf) + ``.pdiparams`` -> opforge model.
Mutations edit ProgramDesc fields through protobuf reflection and the parameter bytes."""

from __future__ import annotations

import random

from opforge_fuzz.targets import _common, _paddle

NAME = "paddle_legacy"


def seeds() -> list[bytes]:
    return _common.committed_seeds(NAME)


def fuzz_one(data: bytes) -> None:
    _paddle.read(data, ".pdmodel")


def mutate(data: bytes, rng: random.Random, pool: list[bytes] | None = None) -> bytes:
    return _paddle.mutate(data, rng, pool, pir=False)
