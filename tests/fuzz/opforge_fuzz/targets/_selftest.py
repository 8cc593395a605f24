"""A target that misbehaves on purpose, so the tests can check that the harness reports each kind
of finding (test_fuzz_harness.py). Not listed by ``targets.names()`` (leading underscore): it is
run only by name. ``OPFORGE_FUZZ_SELFTEST`` picks the behaviour of its one seed."""

from __future__ import annotations

import os
import random

from opforge.errors import ModelFormatError

NAME = "_selftest"


def seeds() -> list[bytes]:
    return [os.environ.get("OPFORGE_FUZZ_SELFTEST", "ok").encode()]


def fuzz_one(data: bytes) -> None:
    if data == b"hang":
        while True:
            pass
    if data == b"crash":
        os.abort()
    if data == b"bare":
        raise KeyError("a bare KeyError")
    if data == b"empty":
        raise ModelFormatError("")
    raise ModelFormatError("an expected, well-described error")


def mutate(data: bytes, rng: random.Random) -> bytes:
    return data  # the seed's behaviour, repeated
