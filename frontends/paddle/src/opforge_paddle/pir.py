"""The PIR format paddle 3.x writes by default: ``<prefix>.json`` (+ ``.pdiparams``).

The JSON is Paddle's PIR serialization (``paddle/fluid/pir/serialize_deserialize``): one region,
one block, ops as ``{"#": "<dialect id>.<op>", "I": operands, "O": results, "A": attributes}``,
values numbered ``{"%": id}``, types and attributes as ``{"#": kind, "D": data}``. Dialect ids:
0 builtin, 1 pd_op, 2 cf, 3 custom_op, 4 dist_op. Parameters are the compressed op ``"p"``
(``A = [..., name]``, one result object).

Ops are lowered into the ProgramDesc vocabulary with the :class:`~opforge_paddle.pir_signatures.PirOp`
table that translator modules declare; ``builtin.combine`` / ``builtin.split`` (vectors of
values) become lists on a named port. PIR ops without a table entry keep their PIR name
(``pd_op.foo``, custom ops without the dialect prefix) with ports named ``in0``, ``in1``, ...,
``out0``, ... so that the unsupported-op error lists them and an extension can still map them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.errors import ModelFormatError, OpforgeError, UnsupportedOpError
from opforge.limits import current

from opforge_paddle.pir_signatures import PirOp
from opforge_paddle.program import DTYPE_NAMES, TYPE_TO_VARTYPE, PaddleOp, PaddleProgram, PaddleVar

DIALECTS = {"0": "builtin", "1": "pd_op", "2": "cf", "3": "custom_op", "4": "dist_op"}

#: attributes that describe placement, naming or autograd, never the computation
_IGNORED_ATTRS = frozenset({"struct_name", "place", "stop_gradient", "persistable", "op_callstack",
                            "op_role", "op_dist_attr"})

#: the newest PIR serialization version checked against paddle 3.3.1's output (4); newer files
#: are read too -- the format is additive -- but errors then mention the version.
KNOWN_PIR_VERSION = 4


@dataclasses.dataclass
class _Value:
    name: str
    dtype: Type | None = None
    shape: list[int] | None = None
    elems: list[int] | None = None  # a vector value (builtin.combine / an op's vector result)
    const: np.ndarray | None = None  # the value of a full / full_int_array result


def _decode_type(t: Any) -> tuple[Type | None, list[int] | None]:
    if not isinstance(t, Mapping):
        return None, None
    kind = str(t.get("#", ""))
    data = t.get("D")
    if kind.endswith("t_dtensor") and isinstance(data, list) and len(data) >= 2:
        el = data[0].get("#", "") if isinstance(data[0], Mapping) else ""
        dtype = DTYPE_NAMES.get(str(el).split("t_")[-1])
        dims = [int(d) for d in data[1]] if isinstance(data[1], list) else None
        return dtype, dims
    return None, None


def _decode_attr(a: Any) -> Any:
    if not isinstance(a, Mapping):
        return a
    kind = str(a.get("#", "")).split(".", 1)[-1]
    data = a.get("D")
    if kind == "a_array":
        return [_decode_attr(x) for x in data or []]
    if kind in ("a_i32", "a_i64", "a_index"):
        return int(data)  # type: ignore[arg-type]
    if kind in ("a_f32", "a_f64"):
        if data is None and isinstance(a.get("VD"), str):
            return float(a["VD"])  # JSON has no inf / nan: paddle writes {"VD": "INF" | "-INF" | "NAN"}
        return float(data)  # type: ignore[arg-type]
    if kind == "a_bool":
        return bool(data)
    if kind == "a_intarray":
        return [int(x) for x in data or []]
    if kind == "a_dtype":
        return str(data)
    return data


def _const_of(op: str, attrs: Mapping[str, Any], where: str = "") -> np.ndarray | None:
    """The value a ``full``/``full_int_array`` op produces, known while reading."""
    dtype = DTYPE_NAMES.get(str(attrs.get("dtype", "")))
    if dtype is None:
        return None
    if op == "full_int_array":
        return np.asarray(attrs.get("value", []), dtype=dtype.np).reshape(-1)
    shape = [int(d) for d in attrs.get("shape", [])]
    # A few bytes of JSON can ask for gigabytes here: check before allocating (found by fuzzing).
    current().check_shape(shape, dtype.np.itemsize, f"{where or op}: the constant it fills")
    return np.full(shape, attrs.get("value", 0), dtype=dtype.np)


def parse_program(data: bytes, label: str, table: Mapping[str, PirOp]) -> PaddleProgram:
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:  # RecursionError: nesting
        raise ModelFormatError(f"{label}: not a valid Paddle PIR program (.json): {type(err).__name__}: {err}") from None
    base = doc.get("base_code") if isinstance(doc, dict) else None
    if not isinstance(base, dict) or base.get("magic") != "pir":
        raise ModelFormatError(
            f"{label}: not a Paddle PIR program: the JSON has no base_code.magic == 'pir' (paddle.jit.save "
            "writes it; other JSON files are not Paddle models)"
        )
    version = base.get("version")
    try:
        blocks = doc["program"]["regions"][0]["blocks"]
        ops_json = blocks[0]["ops"]
    except (KeyError, IndexError, TypeError):
        raise ModelFormatError(
            f"{label}: PIR program (version {version}) has no program.regions[0].blocks[0].ops") from None
    if not isinstance(ops_json, list):
        raise ModelFormatError(f"{label}: PIR program.regions[0].blocks[0].ops is not a list")
    reader = _PirReader(label, table, version)
    return reader.read(ops_json)


class _PirReader:
    def __init__(self, label: str, table: Mapping[str, PirOp], version: Any) -> None:
        self.label = label
        self.table = table
        self.version = version
        self.values: dict[int, _Value] = {}
        self.vars: dict[str, PaddleVar] = {}
        self.ops: list[PaddleOp] = []
        self.feeds: list[str] = []
        self.fetches: list[tuple[int, str, str]] = []
        self.params: list[str] = []
        self.split_of: dict[int, list[int]] = {}  # vector value -> the values builtin.split unpacks
        #: element values of the vector result being read: id -> (name, type), and those bound
        self._pending_split: dict[int, tuple[str, Any]] = {}
        self._claimed: set[int] = set()

    def fail(self, index: int, op: str, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.label}: op {index} ({op}): {msg}")

    @contextlib.contextmanager
    def _malformed(self, index: int, op: Mapping[str, Any]) -> Iterator[None]:
        """The JSON is untyped: a field of the wrong kind (a list where an id belongs, null for an
        attribute's data, a string for a shape) surfaces as a builtin error deep in the decoding.
        Each becomes a ModelFormatError naming the op (found by fuzzing, tests/fuzz)."""
        try:
            yield
        except OpforgeError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as err:
            raise self.fail(index, str(op.get("#")), f"malformed op ({type(err).__name__}: {err}); "
                            f"op JSON: {json.dumps(op, default=str)[:300]}") from None

    def _results(self, op: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        res = op.get("O", [])
        return [res] if isinstance(res, Mapping) else list(res or [])

    def _new_value(self, vid: Any, name: str, tt: Any, index: int, op: str, persistable: bool = False) -> _Value:
        if not isinstance(vid, int) or vid == 0:
            raise self.fail(index, op, f"result id {vid!r} is not a positive integer")
        if vid in self.values:
            raise self.fail(index, op, f"value %{vid} is defined twice")
        dtype, shape = _decode_type(tt)
        v = _Value(name, dtype, shape)
        if isinstance(tt, Mapping) and str(tt.get("#", "")).endswith("t_vec"):
            v.elems = []
        self.values[vid] = v
        self.vars[name] = PaddleVar(name, dtype, shape, persistable)
        return v

    def _operand(self, ref: Any, index: int, op: str) -> _Value | None:
        vid = ref.get("%") if isinstance(ref, Mapping) else None
        if vid == 0:
            return None  # an omitted optional operand
        if not isinstance(vid, int) or vid not in self.values:
            raise self.fail(index, op, f"operand {ref!r} refers to no earlier value (ops must be in order)")
        return self.values[vid]

    def read(self, ops_json: list[Any]) -> PaddleProgram:
        for i, op in enumerate(ops_json):
            if not isinstance(op, Mapping) or not isinstance(op.get("#"), str):
                raise ModelFormatError(f"{self.label}: op {i} is not an object with a '#' name")
            with self._malformed(i, op):
                if op.get("#") == "0.split":
                    ins = op.get("I") or []
                    src = ins[0].get("%") if ins and isinstance(ins[0], Mapping) else None
                    if isinstance(src, int):
                        self.split_of[src] = [self._vid(r) for r in self._results(op)]
        for i, op in enumerate(ops_json):
            with self._malformed(i, op):
                self._read_op(i, op)
        self.fetches.sort()
        return PaddleProgram(
            label=self.label, format="pir", ops=self.ops, vars=self.vars, feeds=self.feeds,
            fetches=[(var, name) for _, var, name in self.fetches], params=sorted(self.params),
        )

    def _read_op(self, i: int, op: Mapping[str, Any]) -> None:
        full = str(op["#"])
        if full == "p":
            a = op.get("A") or []
            pname = a[-1] if isinstance(a, list) and a and isinstance(a[-1], str) else None
            res = self._results(op)
            if pname is None or len(res) != 1:
                raise self.fail(i, "builtin.parameter", f"malformed parameter op {dict(op)!r:.200}")
            self._new_value(res[0].get("%"), pname, res[0].get("TT"), i, "builtin.parameter", True)
            self.params.append(pname)
            return
        dialect_id, _, short = full.partition(".")
        dialect = DIALECTS.get(dialect_id, dialect_id)
        qual = f"{dialect}.{short}"
        attrs: dict[str, Any] = {}
        for a in op.get("A") or []:
            if isinstance(a, Mapping) and "N" in a and a["N"] not in _IGNORED_ATTRS:
                attrs[str(a["N"])] = _decode_attr(a.get("AT"))
        results = self._results(op)
        operands = [self._operand(r, i, qual) for r in op.get("I") or []]
        if qual == "builtin.parameter":
            pname = str(attrs.get("parameter_name", ""))
            self._new_value(results[0].get("%"), pname, results[0].get("TT"), i, qual, True)
            self.params.append(pname)
            return
        if qual == "pd_op.data":
            name = str(attrs.get("name", f"input_{len(self.feeds)}"))
            self._new_value(results[0].get("%"), name, results[0].get("TT"), i, qual)
            self.feeds.append(name)
            return
        if qual == "pd_op.fetch":
            if len(operands) != 1 or operands[0] is None:
                raise self.fail(i, qual, "a fetch op takes one operand")
            self.fetches.append((int(attrs.get("col", len(self.fetches))), operands[0].name,
                                 str(attrs.get("name", operands[0].name))))
            return
        if qual == "builtin.combine":
            v = self._new_value(results[0].get("%"), f"combine_{results[0].get('%')}", results[0].get("TT"), i, qual)
            v.elems = [self._vid(r) for r in op.get("I") or []]
            return
        if qual == "builtin.split":
            src = operands[0] if operands else None
            for k, r in enumerate(results):
                rid = self._vid(r)
                if rid in self._claimed:
                    continue  # already named when the op producing the vector was read
                if src is not None and src.elems is not None and k < len(src.elems) and src.elems[k] in self.values:
                    self.values[rid] = self.values[src.elems[k]]  # unpacking a builtin.combine
                    continue
                self._new_value(rid, f"split_{rid}", r.get("TT"), i, qual)
            return
        if dialect not in ("pd_op", "custom_op"):
            raise UnsupportedOpError(
                f"{self.label}: op {i} ({qual}): ops of the '{dialect}' dialect (control flow, distributed) "
                "are not supported by opforge's Paddle frontend"
            )
        base = short[:-1] if short.endswith("_") and short[:-1] in self.table else short
        spec = self.table.get(base) if dialect == "pd_op" else None
        if spec is None:
            self._generic(i, qual if dialect == "pd_op" else short, op, operands, attrs, results)
        else:
            self._lower(i, spec, op, operands, attrs, results)

    def _vid(self, ref: Any) -> int:
        vid = ref.get("%") if isinstance(ref, Mapping) else None
        return vid if isinstance(vid, int) else 0

    def _result_names(self, i: int, op_name: str, results: list[Mapping[str, Any]],
                      ports: list[str]) -> dict[str, list[str]]:
        outputs: dict[str, list[str]] = {}
        for k, r in enumerate(results):
            port = ports[k] if k < len(ports) else f"out{k}"
            vid = r.get("%")
            if vid == 0:
                # a result nobody may use (PIR writes id 0 for null results): the port stays
                # known, bound to no variable, like an unused legacy output
                outputs.setdefault(port, [])
                continue
            tt = r.get("TT")
            if isinstance(tt, Mapping) and str(tt.get("#", "")).endswith("t_vec"):
                # A vector result: its elements are the values a builtin.split unpacks.
                v = self._new_value(vid, f"{op_name}_{vid}.vec", tt, i, op_name)
                elems = self.split_of.get(self._vid(r), [])
                v.elems = elems
                outputs[port] = [f"{op_name}_{e}.tmp" for e in elems]
                for e, et in zip(elems, tt.get("D") or []):
                    self._pending_split[e] = (f"{op_name}_{e}.tmp", et)
                continue
            if port:
                name = f"{op_name}_{vid}.tmp"
                self._new_value(vid, name, tt, i, op_name)
                outputs[port] = [name]
        return outputs

    def _lower(self, i: int, spec: PirOp, op: Mapping[str, Any], operands: list[_Value | None],
               pir_attrs: dict[str, Any], results: list[Mapping[str, Any]]) -> None:
        if len(operands) > len(spec.inputs):
            raise self.fail(i, f"pd_op.{spec.pir}", f"has {len(operands)} operands; its signature names "
                            f"{len(spec.inputs)} ({', '.join(a.port for a in spec.inputs)})")
        attrs = {spec.attrs.get(k, k): v for k, v in pir_attrs.items()}
        inputs: dict[str, list[str]] = {}
        for arg, v in zip(spec.inputs, operands):
            if v is None:
                continue
            if arg.attr is not None:
                value = self._const_value(v)
                if value is not None:
                    attrs[arg.attr] = value.reshape(-1)[0].item() if arg.scalar else value.reshape(-1).tolist()
                    continue
            inputs[arg.port] = [self.values[e].name for e in v.elems] if v.elems is not None else [v.name]
        for k, val in spec.extra.items():
            attrs.setdefault(k, val)
        if spec.pir in ("full", "full_int_array"):
            const = _const_of(spec.pir, pir_attrs, f"{self.label}: op {i} (pd_op.{spec.pir})")
            attrs = self._const_attrs(spec.pir, pir_attrs, const)
        if "dtype" in attrs and isinstance(attrs["dtype"], str) and attrs["dtype"] in DTYPE_NAMES:
            attrs["dtype"] = TYPE_TO_VARTYPE[DTYPE_NAMES[attrs["dtype"]]]
        self._pending_split = {}
        outputs = self._result_names(i, spec.pir, results, list(spec.outputs))
        self._bind_split(i, spec.pir)
        if spec.pir in ("full", "full_int_array") and results:
            vid = results[0].get("%")
            if isinstance(vid, int) and vid in self.values:
                self.values[vid].const = const
        self.ops.append(PaddleOp(spec.legacy, inputs, outputs, attrs, i))

    def _bind_split(self, i: int, op_name: str) -> None:
        """The builtin.split results that unpack a vector result get the element names."""
        for vid, (name, tt) in self._pending_split.items():
            if vid in self.values:
                raise self.fail(i, op_name, f"value %{vid} is defined twice")
            dtype, shape = _decode_type(tt)
            self.values[vid] = _Value(name, dtype, shape)
            self.vars[name] = PaddleVar(name, dtype, shape)
            self._claimed.add(vid)

    def _const_attrs(self, op: str, pir_attrs: Mapping[str, Any], const: np.ndarray | None) -> dict[str, Any]:
        """``full`` -> ``fill_constant`` (shape, value, dtype); ``full_int_array`` -> ``assign_value``."""
        dtype = DTYPE_NAMES.get(str(pir_attrs.get("dtype", "float32")), Type.f32)
        if op == "full":
            return {"shape": [int(d) for d in pir_attrs.get("shape", [])], "value": float(pir_attrs.get("value", 0.0)),
                    "dtype": TYPE_TO_VARTYPE[dtype]}
        values = [] if const is None else const.reshape(-1).tolist()
        return {"shape": [len(values)], "dtype": TYPE_TO_VARTYPE[dtype], "values": values}

    def _const_value(self, v: _Value) -> np.ndarray | None:
        if v.const is not None:
            return v.const
        if v.elems is not None:
            parts = [self.values[e].const if e in self.values else None for e in v.elems]
            if parts and all(p is not None for p in parts):
                return np.concatenate([np.asarray(p).reshape(-1) for p in parts if p is not None])
        return None

    def _generic(self, i: int, op_type: str, op: Mapping[str, Any], operands: list[_Value | None],
                 attrs: dict[str, Any], results: list[Mapping[str, Any]]) -> None:
        inputs: dict[str, list[str]] = {}
        for k, v in enumerate(operands):
            if v is not None:
                inputs[f"in{k}"] = [self.values[e].name for e in v.elems] if v.elems is not None else [v.name]
        self._pending_split = {}
        outputs = self._result_names(i, op_type.split(".")[-1], results, [])
        self._bind_split(i, op_type)
        self.ops.append(PaddleOp(op_type, inputs, outputs, attrs, i))
