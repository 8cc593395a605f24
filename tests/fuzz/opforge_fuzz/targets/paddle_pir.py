"""Paddle PIR ``.json`` + ``.pdiparams`` -> opforge model (JSON decoding, PIR lowering, the
parameters file's headers and TensorDescs, translation). Mutations edit JSON values and the
parameter bytes."""

from __future__ import annotations

import random

from opforge_fuzz.targets import _common, _paddle

NAME = "paddle_pir"


def seeds() -> list[bytes]:
    return _common.committed_seeds(NAME)


def fuzz_one(data: bytes) -> None:
    _paddle.read(data, ".json")


def mutate(data: bytes, rng: random.Random, pool: list[bytes] | None = None) -> bytes:
    return _paddle.mutate(data, rng, pool, pir=True)
