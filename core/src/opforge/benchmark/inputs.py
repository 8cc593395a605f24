"""The inputs a benchmark feeds: random tensors of each input's type and shape, or arrays from
an ``.npz`` file; plus ``-shape``/``-b`` applied to the model before compiling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.errors import InferenceInputError
from opforge.graph import Model
from opforge.shape import PartialShape


def parse_shapes(text: str | None, model: Model) -> dict[str | int, PartialShape]:
    """``-shape``: ``x[1,3,224,224],mask[1,128]`` or, for a one-input model, ``[1,3,224,224]``."""
    if not text:
        return {}
    from opforge.cli import parse_input_spec

    out: dict[str | int, PartialShape] = {}
    text = text.strip()
    if text.startswith("["):
        if len(model.inputs) != 1:
            names = ", ".join(p.any_name for p in model.inputs)
            raise InferenceInputError(f"-shape {text}: the model has {len(model.inputs)} inputs ({names}); "
                                      "name each one: -shape name[1,3,224,224],other[1,128]")
        out[0] = PartialShape.parse(text[1:-1] if text.endswith("]") else text[1:])
        return out
    # split on the commas between specs, not those inside brackets
    depth, start = 0, 0
    for i, ch in enumerate(text + ","):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            spec = text[start:i].strip()
            start = i + 1
            if not spec:
                continue
            name, shape = parse_input_spec(spec)
            if shape is None:
                raise InferenceInputError(f"-shape {spec!r}: expected NAME[d0,d1,...]")
            _port(model, name)
            out[name] = shape
    return out


def _port(model: Model, name: str) -> Any:
    for p in model.inputs:
        if name == p.any_name or name in p.names:
            return p
    raise InferenceInputError(f"model has no input {name!r}; inputs: "
                              + ", ".join(repr(p.any_name) for p in model.inputs))


def apply_batch(model: Model, batch: int, shapes: dict[str | int, PartialShape]) -> dict[str | int, PartialShape]:
    """``-b N``: dimension 0 of every input not already given a shape becomes N."""
    out = dict(shapes)
    for i, p in enumerate(model.inputs):
        if i in out or p.any_name in out or any(n in out for n in p.names):
            continue
        ps = p.partial_shape
        if ps.rank is None or ps.rank == 0:
            raise InferenceInputError(f"-b {batch}: input '{p.any_name}' has shape {ps}, which has no batch "
                                      "dimension; give its shape with -shape instead")
        dims = list(ps.dims)
        dims[0] = batch
        out[p.any_name] = PartialShape(dims)
    return out


def load_npz(path: str | Path, model: Model) -> dict[str, np.ndarray]:
    """Arrays by input name; the ``in.<name>`` keys of the bench reference files work too."""
    p = Path(path)
    if not p.is_file():
        raise InferenceInputError(f"-i {path}: no such file (expected an .npz of inputs by name, or 'random')")
    try:
        data = np.load(p, allow_pickle=False)
    except Exception as err:
        raise InferenceInputError(f"-i {path}: not a readable .npz file ({type(err).__name__}: {err})") from err
    arrays = {k.removeprefix("in."): data[k] for k in data.files}
    feeds: dict[str, np.ndarray] = {}
    for port in model.inputs:
        key = next((n for n in (port.any_name, *sorted(port.names)) if n in arrays), None)
        if key is None:
            raise InferenceInputError(f"-i {path} has no array for input '{port.any_name}'; it has: "
                                      + ", ".join(sorted(arrays)))
        feeds[port.any_name] = arrays[key]
    return feeds


def random_inputs(model: Model, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random data of each input's type; shapes must be static (see ``-shape``)."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for port in model.inputs:
        ps = port.partial_shape
        if not ps.is_static:
            example = ",".join("1" if d is None else str(d) for d in (ps.dims if ps.rank_is_static else (1,)))
            raise InferenceInputError(
                f"input '{port.any_name}' has a dynamic shape {ps}: give it one with "
                f"-shape {port.any_name}[{example}] (or -b N for the batch dimension), or feed an .npz with -i")
        shape = ps.to_tuple()
        et = port.element_type
        if et.is_float:
            feeds[port.any_name] = rng.standard_normal(shape).astype(et.np)
        elif et is Type.boolean:
            feeds[port.any_name] = rng.integers(0, 2, shape).astype(bool)
        elif et.is_integral:
            # small non-negative values: valid indices/token ids for embeddings and gathers
            feeds[port.any_name] = rng.integers(0, 2, shape).astype(et.np)
        else:
            raise InferenceInputError(f"input '{port.any_name}' has type {et}, for which no random "
                                      "data can be made; feed an .npz with -i")
    return feeds
