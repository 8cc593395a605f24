"""ONNX bytes -> opforge model through the ONNX frontend (protobuf decode, tensor decode,
node translation, shape inference, constant folding). A model that reads must also survive the
IR writer and read back (a round trip that fails is an oracle finding)."""

from __future__ import annotations

import random

import onnx
from opforge.errors import OpforgeError
from opforge.frontend.base import ConversionOptions, ModelSource
from opforge.ir.reader import read_ir
from opforge.ir.writer import serialize

from opforge_fuzz.harness import OracleFailure
from opforge_fuzz.mutate import mutate_bytes, mutate_proto, splice
from opforge_fuzz.targets import _common, _onnx_models

NAME = "onnx_reader"


def seeds() -> list[bytes]:
    return _onnx_models.all_models() + _common.committed_seeds(NAME)


def fuzz_one(data: bytes) -> None:
    core = _common.core()
    # Bytes, not a path: external data then has no folder to be read from, so nothing outside
    # the fuzzer's inputs is ever opened (external-data paths are covered by tests/robustness).
    model = _common.frontend("onnx").read(ModelSource(data=data), core.plugins, ConversionOptions())
    round_trip(model)


def round_trip(model: object) -> None:
    """A model opforge read must write as IR and read back."""
    try:
        xml, weights = serialize(model)  # type: ignore[arg-type]
    except OpforgeError:
        return  # a clear "cannot be saved" error is acceptable
    try:
        read_ir(xml, weights, plugins=_common.core().plugins)
    except OpforgeError as err:
        raise OracleFailure(f"IR written by opforge does not read back: {type(err).__name__}: {err}") from err


def mutate(data: bytes, rng: random.Random, pool: list[bytes] | None = None) -> bytes:
    r = rng.random()
    if r < 0.8:
        return mutate_proto(data, onnx.ModelProto, rng)
    if r < 0.9 and pool:
        return splice(data, rng.choice(pool), rng)
    return mutate_bytes(data, rng)
