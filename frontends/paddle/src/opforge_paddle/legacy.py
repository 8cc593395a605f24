"""The legacy format: a ProgramDesc protobuf (``<prefix>.pdmodel``)."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError
from opforge.errors import ModelFormatError, UnsupportedOpError

from opforge_paddle.program import VARTYPE_TO_TYPE, PaddleOp, PaddleProgram, PaddleVar
from opforge_paddle.protoschema import schema

#: VarType.Type values of variables that are not tensors saved in .pdiparams
_FEED_MINIBATCH, _FETCH_LIST, _DENSE_TENSOR = 9, 10, 7

#: bookkeeping attributes every op carries; they never change what an op computes
_IGNORED_ATTRS = frozenset({"op_callstack", "op_device", "op_namescope", "op_role", "op_role_var",
                            "with_quant_attr"})

# AttrType numbers (framework.proto)
(_INT, _FLOAT, _STRING, _INTS, _FLOATS, _STRINGS, _BOOLEAN, _BOOLEANS, _BLOCK, _LONG, _BLOCKS, _LONGS,
 _FLOAT64S, _VAR, _VARS, _FLOAT64, _SCALAR, _SCALARS) = range(18)


def _scalar(s: Any) -> Any:
    t = int(s.type)
    if t == 1:
        return bool(s.b)
    if t == 2:
        return int(s.i)
    if t == 3:
        return float(s.r)
    return complex(s.c.r, s.c.i)


def _attr_value(a: Any) -> Any:
    t = int(a.type)
    if t == _INT:
        return int(a.i)
    if t == _FLOAT:
        return float(a.f)
    if t == _STRING:
        return str(a.s)
    if t == _INTS:
        return [int(x) for x in a.ints]
    if t == _FLOATS:
        return [float(x) for x in a.floats]
    if t == _STRINGS:
        return [str(x) for x in a.strings]
    if t == _BOOLEAN:
        return bool(a.b)
    if t == _BOOLEANS:
        return [bool(x) for x in a.bools]
    if t == _BLOCK:
        return int(a.block_idx)
    if t == _LONG:
        return int(a.l)
    if t == _BLOCKS:
        return [int(x) for x in a.blocks_idx]
    if t == _LONGS:
        return [int(x) for x in a.longs]
    if t == _FLOAT64S:
        return [float(x) for x in a.float64s]
    if t == _VAR:
        return str(a.var_name)
    if t == _VARS:
        return [str(x) for x in a.vars_name]
    if t == _FLOAT64:
        return float(a.float64)
    if t == _SCALAR:
        return _scalar(a.scalar)
    if t == _SCALARS:
        return [_scalar(x) for x in a.scalars]
    raise ModelFormatError(f"attribute '{a.name}' has unknown attribute type {t}")


def parse_program(data: bytes, label: str) -> PaddleProgram:
    """Decode a ``.pdmodel``; errors name the file and, where one is involved, the op or variable."""
    prog = schema().ProgramDesc()
    try:
        prog.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as err:
        raise ModelFormatError(f"{label}: not a valid Paddle ProgramDesc (.pdmodel): {err}") from None
    if len(prog.blocks) == 0:
        raise ModelFormatError(f"{label}: not a valid Paddle ProgramDesc (.pdmodel): the program has no blocks")
    block = prog.blocks[0]
    if not any(op.type in ("feed", "fetch") for op in block.ops):
        raise ModelFormatError(
            f"{label}: not a Paddle inference program: it has no feed/fetch ops (save it with "
            "paddle.jit.save or paddle.static.save_inference_model)"
        )
    if len(prog.blocks) > 1 and any(len(b.ops) for b in prog.blocks[1:]):
        kinds = sorted({op.type for op in block.ops if any(a.type in (_BLOCK, _BLOCKS) for a in op.attrs)})
        raise UnsupportedOpError(
            f"{label}: the program has {len(prog.blocks)} blocks (control flow: {', '.join(kinds) or 'sub-blocks'}); "
            "opforge's Paddle frontend reads single-block inference programs"
        )
    pvars: dict[str, PaddleVar] = {}
    params: list[str] = []
    for v in block.vars:
        _text(v.name, label, "a variable name")
        vt = int(v.type.type)
        dtype = shape = None
        if vt == _DENSE_TENSOR and v.type.HasField("dense_tensor"):
            t = v.type.dense_tensor.tensor
            dtype = VARTYPE_TO_TYPE.get(int(t.data_type))
            shape = [int(d) for d in t.dims]
        pvars[v.name] = PaddleVar(v.name, dtype, shape, bool(v.persistable))
        if v.persistable and vt not in (_FEED_MINIBATCH, _FETCH_LIST):
            params.append(v.name)
    ops: list[PaddleOp] = []
    feeds: list[tuple[int, str]] = []
    fetches: list[tuple[int, str]] = []
    for i, od in enumerate(block.ops):
        _text(od.type, label, f"the type of op {i}")
        for arg in [*od.inputs, *od.outputs]:
            _text(arg.parameter, label, f"an argument name of op {i} ({od.type})")
            for x in arg.arguments:
                _text(x, label, f"a variable of op {i} ({od.type})")
        try:
            attrs = {a.name: _attr_value(a) for a in od.attrs if a.name not in _IGNORED_ATTRS}
        except ModelFormatError as err:
            raise ModelFormatError(f"{label}: op {i} ({od.type}): {err}") from None
        inputs = {v.parameter: [str(x) for x in v.arguments] for v in od.inputs}
        outputs = {v.parameter: [str(x) for x in v.arguments] for v in od.outputs}
        if od.type == "feed":
            names = outputs.get("Out", [])
            if len(names) != 1:
                raise ModelFormatError(f"{label}: feed op {i} must have one output 'Out', has {names}")
            feeds.append((_col(attrs, len(feeds), f"{label}: feed op {i}"), names[0]))
            continue
        if od.type == "fetch":
            names = inputs.get("X", [])
            if len(names) != 1:
                raise ModelFormatError(f"{label}: fetch op {i} must have one input 'X', has {names}")
            fetches.append((_col(attrs, len(fetches), f"{label}: fetch op {i}"), names[0]))
            continue
        ops.append(PaddleOp(str(od.type), inputs, outputs, attrs, i))
    for _, name in feeds:
        if name not in pvars:
            raise ModelFormatError(f"{label}: feed variable '{name}' is not declared in the program's block")
    return PaddleProgram(
        label=label, format="legacy", ops=ops, vars=pvars,
        feeds=[n for _, n in sorted(feeds)],
        fetches=[(n, n) for _, n in sorted(fetches)],
        params=sorted(params),
    )


def _col(attrs: dict[str, Any], default: int, where: str) -> int:
    """A feed/fetch op's ``col`` attribute: an integer (a damaged file can hold any type)."""
    col = attrs.get("col", default)
    if isinstance(col, bool) or not isinstance(col, int):
        raise ModelFormatError(f"{where}: attribute 'col' must be an integer, got {col!r:.100}")
    return col


def _text(value: Any, label: str, what: str) -> str:
    """Protobuf hands a string field that is not valid UTF-8 over as bytes (framework.proto is
    proto2, which does not enforce UTF-8): refuse it instead of carrying bytes into names."""
    if isinstance(value, bytes):
        raise ModelFormatError(f"{label}: {what} is not valid UTF-8 text ({value[:40]!r})")
    return str(value)
