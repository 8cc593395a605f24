"""Running a compiled model over a batch of rows: columns in, columns out.

A batch is a dict of NumPy arrays whose first dimension is the row. The model's inputs are
taken from the columns named after them; each output becomes a column named after it; every
other column (ids, labels) passes through unchanged, so rows stay matched to their keys.

The batch Ray hands over rarely has the model's batch size. Three ways to bridge that:

``auto`` (default)
    a model whose batch dimension is dynamic runs the whole batch in one call; one with a
    static batch ``b`` runs it in chunks of ``b`` (``split``).
``split``
    chunks of the model's static batch (1 for a dynamic one). Each row goes through exactly the
    computation a serial loop would do, so the outputs are bitwise those of serial calls. A last
    chunk shorter than ``b`` is padded by repeating its last row; the padding rows' outputs are
    dropped.
``reshape``
    the model is re-batched to the batch's size (one compiled variant per size, a few kept). A
    model may hard-code its batch (a ``Reshape`` to a constant shape) or mix rows: then
    re-batching fails to validate, or gives outputs whose first dimension is not the row count,
    or changes the rows' results. The first two are refused with an error; for the third, each
    new variant's first and last rows are checked against the original model once, and a
    variant that differs is refused. Results match serial ones to float rounding (about 1e-6),
    not bitwise, since kernels may block a larger batch differently.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from opforge.element_type import Type
from opforge.errors import InferenceInputError, InputTypeError, ModelValidationError, OpforgeError
from opforge.graph import Model
from opforge.runtime.compiled_model import CompiledModel
from opforge.runtime.core import Core
from opforge.shape import PartialShape, shape_str

Batching = Literal["auto", "split", "reshape"]
BATCHING_MODES: tuple[str, ...] = ("auto", "split", "reshape")
#: compiled re-batched variants kept per runner (Ray's last batch is often shorter)
MAX_VARIANTS = 4
#: how far a re-batched variant's rows may drift from the original model's (relative to the
#: output's magnitude) before it is refused: far above float rounding, far below a wrong row
REBATCH_TOLERANCE = 1e-3


def static_batch(model: Model) -> int | None:
    """The model's batch size if its inputs fix one (the same static first dimension), else None."""
    sizes: set[int] = set()
    for port in model.inputs:
        ps = port.partial_shape
        if ps.rank is None:
            continue
        if ps.rank == 0:
            raise InferenceInputError(
                f"model '{model.name}': input '{port.any_name}' is a scalar; batch inference needs a "
                "batch (first) dimension on every input"
            )
        if ps[0] is not None:
            sizes.add(int(ps[0]))
    if len(sizes) > 1:
        raise InferenceInputError(
            f"model '{model.name}': inputs disagree on the batch size (first dimensions "
            f"{', '.join(f'{p.any_name}{p.partial_shape}' for p in model.inputs)})"
        )
    return sizes.pop() if sizes else None


class BatchRunner:
    """A compiled model applied to column batches (see the module docstring)."""

    def __init__(self, core: Core, model: Model, device: str = "CPU", config: Mapping[str, Any] | None = None,
                 *, batching: str = "auto", keep_inputs: bool = False, output_prefix: str = "",
                 cast: bool = False) -> None:
        if batching not in BATCHING_MODES:
            raise OpforgeError(f"batching={batching!r}: expected one of {', '.join(BATCHING_MODES)}")
        self.core = core
        self.model = model
        self.device = device
        self.config = dict(config or {})
        self.batching = batching
        self.keep_inputs = keep_inputs
        self.cast = cast
        self.batch = static_batch(model)
        self.compiled = core.compile_model(model, device, self.config)
        self.input_names = [p.any_name for p in self.compiled.inputs]
        self.output_names = [output_prefix + p.any_name for p in self.compiled.outputs]
        self._variants: OrderedDict[int, CompiledModel] = OrderedDict()

    # --- the call ------------------------------------------------------------------------------
    def __call__(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
        arrays, rows = self.prepare(batch)
        outputs = self.run(arrays, rows)
        out: dict[str, Any] = {k: v for k, v in batch.items() if self.keep_inputs or k not in arrays}
        for name, value in outputs.items():
            if name in out:
                raise InferenceInputError(
                    f"model '{self.model.name}': output '{name}' would overwrite the batch's column of that "
                    "name; pass output_prefix= to rename the outputs"
                )
            out[name] = value
        return out

    def prepare(self, batch: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], int]:
        """The model's input columns of ``batch``, checked (names, types, row shapes), and the row count."""
        missing = [n for n in self.input_names if n not in batch]
        if missing:
            raise InferenceInputError(
                f"model '{self.model.name}' needs column(s) {', '.join(repr(m) for m in missing)} (its input "
                f"names); the batch has {', '.join(repr(str(c)) for c in batch) or 'no columns'}"
            )
        arrays: dict[str, np.ndarray] = {}
        rows: int | None = None
        for name in self.input_names:
            arr = self._column(name, batch[name])
            if rows is not None and arr.shape[0] != rows:
                raise InferenceInputError(
                    f"columns have different row counts: '{self.input_names[0]}' {rows}, '{name}' {arr.shape[0]}"
                )
            rows = int(arr.shape[0])
            arrays[name] = arr
        return arrays, int(rows or 0)

    def _column(self, name: str, values: Any) -> np.ndarray:
        port = self.compiled.input(name)
        arr = np.asarray(values)
        if arr.dtype == object and arr.ndim == 1:
            # Parquet list columns arrive as an array of per-row arrays: stack them if they agree.
            with contextlib.suppress(ValueError):
                arr = np.stack([np.asarray(v) for v in arr])
        if arr.dtype == object:
            raise InferenceInputError(
                f"column '{name}' holds Python objects (rows of different shapes?); model '{self.model.name}' "
                f"expects {port.element_type} rows of shape {shape_str(self._row_shape(port.partial_shape))}"
            )
        if arr.ndim == 0:
            raise InferenceInputError(f"column '{name}' is a scalar, not a column of rows")
        row = self._row_shape(port.partial_shape)
        if port.partial_shape.rank is not None and not row.compatible(arr.shape[1:]):
            raise InferenceInputError(
                f"column '{name}' has rows of shape {shape_str(arr.shape[1:])}; model '{self.model.name}' expects "
                f"{shape_str(row)}"
            )
        want = port.element_type
        if self.cast and want is not Type.dynamic and arr.dtype != want.np:
            if not np.can_cast(arr.dtype, want.np, "same_kind"):
                raise InputTypeError(f"column '{name}' of {arr.dtype} cannot be cast to the model's {want}")
            arr = arr.astype(want.np)
        return arr

    @staticmethod
    def _row_shape(ps: PartialShape) -> PartialShape:
        return PartialShape(ps.dims[1:]) if ps.rank else ps

    def run(self, arrays: Mapping[str, np.ndarray], rows: int) -> dict[str, np.ndarray]:
        """The outputs for ``rows`` rows of inputs, by (prefixed) output name."""
        if rows == 0:
            return {name: np.zeros((0, *self._static_row(i)), self.compiled.outputs[i].element_type.np)
                    for i, name in enumerate(self.output_names)}
        b = self.batch
        if b is None:
            if self.batching == "split":
                return self._chunks(self.compiled, arrays, rows, 1)
            return self._call(self.compiled, arrays, rows)
        if rows == b:
            return self._call(self.compiled, arrays, rows)
        if self.batching == "reshape":
            if rows in self._variants:
                self._variants.move_to_end(rows)
                return self._call(self._variants[rows], arrays, rows)
            return self._new_variant(arrays, rows, b)
        return self._chunks(self.compiled, arrays, rows, b)

    def _static_row(self, i: int) -> tuple[int, ...]:
        ps = self.compiled.outputs[i].partial_shape
        if not ps.is_static or ps.rank == 0:
            return ()
        return ps.to_tuple()[1:]

    def _call(self, compiled: CompiledModel, feed: Mapping[str, np.ndarray], rows: int) -> dict[str, np.ndarray]:
        results = compiled(dict(feed))
        out: dict[str, np.ndarray] = {}
        for i, name in enumerate(self.output_names):
            value = np.asarray(results[i])
            if value.ndim == 0 or value.shape[0] != rows:
                raise ModelValidationError(
                    f"model '{self.model.name}': output '{compiled.outputs[i].any_name}' has shape "
                    f"{shape_str(value.shape)} for {rows} input row(s); an output must have the rows as its "
                    "first dimension to be split back into rows"
                )
            out[name] = value
        return out

    def _chunks(self, compiled: CompiledModel, arrays: Mapping[str, np.ndarray], rows: int,
                b: int) -> dict[str, np.ndarray]:
        parts: dict[str, list[np.ndarray]] = {name: [] for name in self.output_names}
        for start in range(0, rows, b):
            take = min(b, rows - start)
            feed = {k: v[start:start + b] for k, v in arrays.items()}
            if take < b:
                feed = {k: np.concatenate([v, np.repeat(v[-1:], b - take, axis=0)]) for k, v in feed.items()}
            for name, value in self._call(compiled, feed, b).items():
                parts[name].append(value[:take])
        return {name: p[0] if len(p) == 1 else np.concatenate(p) for name, p in parts.items()}

    # --- re-batched variants -------------------------------------------------------------------
    def _new_variant(self, arrays: Mapping[str, np.ndarray], rows: int, b: int) -> dict[str, np.ndarray]:
        """Compile the model re-batched to ``rows``, check it, keep it; returns its outputs."""
        clone = self.model.clone()
        try:
            clone.reshape({i: [rows, *p.partial_shape.dims[1:]] for i, p in enumerate(clone.inputs)})
            variant = self.core.compile_model(clone, self.device, self.config)
        except OpforgeError as err:
            raise ModelValidationError(
                f"model '{self.model.name}' cannot be re-batched from {self.batch} to {rows} rows ({err}); "
                "use batching='split'"
            ) from err
        got = self._call(variant, arrays, rows)
        self._check_variant(got, arrays, rows, b)
        self._variants[rows] = variant
        while len(self._variants) > MAX_VARIANTS:
            self._variants.popitem(last=False)
        return got

    def _check_variant(self, got: Mapping[str, np.ndarray], arrays: Mapping[str, np.ndarray], rows: int,
                       b: int) -> None:
        """Refuse a re-batched model whose rows differ from the original model's on the same input."""
        for r in sorted({0, rows - 1}):
            want = self._chunks(self.compiled, {k: v[r:r + 1] for k, v in arrays.items()}, 1, b)
            for name in self.output_names:
                row, ref = got[name][r], want[name][0]
                if row.dtype.kind == "f":
                    scale = max(1.0, float(np.max(np.abs(ref))) if ref.size else 1.0)
                    bad = not np.allclose(row, ref, rtol=0.0, atol=REBATCH_TOLERANCE * scale, equal_nan=True)
                else:
                    bad = not np.array_equal(row, ref)
                if bad:
                    raise ModelValidationError(
                        f"model '{self.model.name}' re-batched from {self.batch} to {rows} rows changes output "
                        f"'{name}' of row {r} (the model mixes rows or hard-codes its batch); use batching='split'"
                    )
