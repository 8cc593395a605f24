"""The Model Extension Generator's configuration: the JSON ``opforge extgen new --config`` reads,
validated into :class:`ExtensionSpec`, the one object every template is rendered from.

Every problem is an :class:`~opforge.errors.ExtgenConfigError` that names the key and what was
expected; unknown keys are errors too, because a misspelt key silently ignored would generate a
package that quietly lacks what the author asked for.
"""

from __future__ import annotations

import dataclasses
import keyword
import math
import re
from collections.abc import Mapping
from typing import Any

from opforge.errors import ExtgenConfigError

#: attribute types an op can declare, with the spellings accepted for each
ATTR_TYPES: dict[str, tuple[str, ...]] = {
    "float": ("float", "f32", "double"),
    "int": ("int", "i64", "integer"),
    "bool": ("bool", "boolean"),
    "string": ("string", "str"),
    "float[]": ("float[]", "floats", "list[float]"),
    "int[]": ("int[]", "ints", "list[int]"),
}
#: devices a kernel can be generated for
DEVICES = ("CPU", "GPU", "VPU")
#: how framework ops are mapped to the op (the three extension styles opforge has)
EXTRACTOR_STYLES = ("OpExtension", "ConversionExtension", "FrontExtractorOp")
#: the two forms of CPU kernel
CPU_KERNELS = ("c++", "python")

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DIST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_OPSET = re.compile(r"^[a-z_][a-z0-9_]*$")
# OpenCL JIT names the GPU plugin defines itself; an attribute whose macro would shadow one breaks the kernel
_RESERVED_MACROS = re.compile(r"^(INPUT\d+_|OUTPUT\d+_|NUM_INPUTS$|GLOBAL_WORKSIZE|LOCAL_WORKSIZE)")
# C, C++ and OpenCL C words an attribute cannot be named, since it becomes a struct field / argument
_C_WORDS_TEXT = (
    "auto break case char const continue default do double else enum extern float for goto if int long "
    "register return short signed sizeof static struct switch typedef union unsigned void volatile while "
    "bool class delete explicit false friend inline mutable namespace new operator private protected public "
    "template this throw true try typename using virtual half global local kernel constant private "
    "read_only write_only uint uchar ushort ulong size_t"
)
_C_WORDS = frozenset(_C_WORDS_TEXT.split())


@dataclasses.dataclass(frozen=True)
class AttrSpec:
    name: str
    type: str  # a key of ATTR_TYPES
    default: Any


@dataclasses.dataclass(frozen=True)
class OnnxSpec:
    domain: str
    type: str
    attribute_names: dict[str, str]  # op attribute -> ONNX attribute


@dataclasses.dataclass(frozen=True)
class PaddleSpec:
    type: str
    inputs: list[str]
    outputs: list[str]
    attribute_names: dict[str, str]  # op attribute -> Paddle attribute


@dataclasses.dataclass(frozen=True)
class ExtensionSpec:
    """Everything the generator needs, validated; derived names are properties."""

    package: str
    version: str
    opset: str
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attributes: list[AttrSpec]
    changes_shape: bool
    onnx: OnnxSpec | None
    paddle: PaddleSpec | None
    extractor: str
    devices: list[str]
    cpu_kernel: str

    @property
    def module(self) -> str:
        """The import package: ``opforge-acme-softclip`` -> ``opforge_acme_softclip``."""
        return re.sub(r"[-.]+", "_", self.package).lower()

    @property
    def plugin_name(self) -> str:
        """The entry-point name: the module without its ``opforge_`` prefix."""
        m = self.module
        return m[len("opforge_"):] if m.startswith("opforge_") and len(m) > len("opforge_") else m

    @property
    def op_snake(self) -> str:
        """``SoftClip`` -> ``soft_clip``: file, function and kernel names."""
        s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", self.op_type)
        return re.sub(r"_+", "_", s).lower().strip("_")

    @property
    def op_class(self) -> str:
        return self.op_type[0].upper() + self.op_type[1:]

    @property
    def cpp_kernel(self) -> bool:
        return "CPU" in self.devices and self.cpu_kernel == "c++"

    def as_json(self) -> dict[str, Any]:
        """The configuration in the JSON form ``--config`` reads (what interactive mode saves)."""
        out: dict[str, Any] = {
            "package": self.package, "version": self.version, "opset": self.opset,
            "op": {"type": self.op_type, "inputs": self.inputs, "outputs": self.outputs,
                   "attributes": {a.name: {"type": a.type, "default": a.default} for a in self.attributes},
                   "changes_shape": self.changes_shape},
            "frameworks": {}, "extractor": self.extractor, "devices": self.devices, "cpu_kernel": self.cpu_kernel,
        }
        if self.onnx:
            out["frameworks"]["onnx"] = {"domain": self.onnx.domain, "type": self.onnx.type,
                                         "attributes": self.onnx.attribute_names}
        if self.paddle:
            out["frameworks"]["paddle"] = {"type": self.paddle.type, "inputs": self.paddle.inputs,
                                           "outputs": self.paddle.outputs,
                                           "attributes": self.paddle.attribute_names}
        return out


def _keys(where: str, data: Mapping[str, Any], required: set[str], optional: set[str]) -> None:
    if not isinstance(data, Mapping):
        raise ExtgenConfigError(f"{where}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - required - optional)
    if unknown:
        raise ExtgenConfigError(
            f"{where}: unknown key(s) {', '.join(repr(k) for k in unknown)}; known keys: "
            f"{', '.join(sorted(required | optional))}"
        )
    missing = sorted(required - set(data))
    if missing:
        raise ExtgenConfigError(f"{where}: missing key(s) {', '.join(repr(k) for k in missing)}")


def _str(where: str, value: Any, pattern: re.Pattern[str] | None = None, what: str = "") -> str:
    if not isinstance(value, str) or not value:
        raise ExtgenConfigError(f"{where}: expected a non-empty string, got {value!r}")
    if pattern is not None and not pattern.match(value):
        raise ExtgenConfigError(f"{where}: {value!r} is not {what}")
    return value


def _names(where: str, value: Any, *, identifiers: bool) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ExtgenConfigError(f"{where}: expected a non-empty list of names, got {value!r}")
    out = [_str(f"{where}[{i}]", v, _IDENT if identifiers else None, "a valid identifier (letters, digits, _)")
           for i, v in enumerate(value)]
    if identifiers:
        bad = [n for n in out if keyword.iskeyword(n) or n in _C_WORDS]
        if bad:
            raise ExtgenConfigError(f"{where}: {bad[0]!r} is a Python/C keyword and cannot name a port")
    dup = sorted({n for n in out if out.count(n) > 1})
    if dup:
        raise ExtgenConfigError(f"{where}: duplicate name(s) {', '.join(dup)}")
    return out


def normalize_attr_type(where: str, spelled: Any) -> str:
    for canonical, spellings in ATTR_TYPES.items():
        if isinstance(spelled, str) and spelled.strip().lower() in spellings:
            return canonical
    raise ExtgenConfigError(
        f"{where}: unknown attribute type {spelled!r}; use one of {', '.join(ATTR_TYPES)}"
    )


def coerce_default(where: str, type_: str, value: Any) -> Any:
    """``value`` as a Python value of attribute type ``type_``, or an error naming ``where``."""
    def fail() -> ExtgenConfigError:
        return ExtgenConfigError(f"{where}: default {value!r} is not a valid {type_}")

    if type_ == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise fail()
        return float(value)
    if type_ == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail()
        return int(value)
    if type_ == "bool":
        if not isinstance(value, bool):
            raise fail()
        return value
    if type_ == "string":
        # kept out of C string literals and XML attributes without escaping: printable, no quotes
        if not isinstance(value, str) or any(c in value for c in "\"'\\<>&\n\r") or not value.isprintable():
            raise ExtgenConfigError(f"{where}: default {value!r} must be a printable string without quotes, "
                                    "backslashes or <>&")
        return value
    inner = "float" if type_ == "float[]" else "int"
    if not isinstance(value, list):
        raise fail()
    return [coerce_default(f"{where}[{i}]", inner, v) for i, v in enumerate(value)]


_ZERO: dict[str, Any] = {"float": 0.0, "int": 0, "bool": False, "string": "", "float[]": [], "int[]": []}


def _attributes(where: str, data: Any) -> list[AttrSpec]:
    if data is None:
        return []
    if not isinstance(data, Mapping):
        raise ExtgenConfigError(f"{where}: expected an object {{name: {{\"type\": ..., \"default\": ...}}}}")
    out = []
    for name, desc in data.items():
        w = f"{where}.{name}"
        _str(w, name, _IDENT, "a valid attribute name (letters, digits, _)")
        if keyword.iskeyword(name) or name in _C_WORDS or name.startswith("model_") or name.startswith("_"):
            raise ExtgenConfigError(f"{w}: {name!r} cannot name an attribute (a Python/C keyword, a pydantic "
                                    "'model_' name or a leading underscore)")
        if _RESERVED_MACROS.match(name.upper()):
            raise ExtgenConfigError(f"{w}: {name!r} would shadow the GPU kernel's JIT macro {name.upper()}")
        if isinstance(desc, str):  # "lo": "float" - the type alone, zero default
            desc = {"type": desc}
        _keys(w, desc, {"type"}, {"default"})
        t = normalize_attr_type(f"{w}.type", desc["type"])
        default = coerce_default(f"{w}.default", t, desc["default"]) if "default" in desc else _ZERO[t]
        out.append(AttrSpec(name, t, default))
    upper = [a.name.upper() for a in out]
    clash = sorted({u for u in upper if upper.count(u) > 1})
    if clash:
        raise ExtgenConfigError(f"{where}: attributes differing only in case ({clash[0]}) share one kernel macro")
    return out


def _renames(where: str, data: Any, attrs: list[AttrSpec]) -> dict[str, str]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ExtgenConfigError(f"{where}: expected an object {{op attribute: framework attribute}}")
    known = {a.name for a in attrs}
    for k, v in data.items():
        if k not in known:
            raise ExtgenConfigError(f"{where}: {k!r} is not an attribute of the op; attributes: "
                                    f"{', '.join(sorted(known)) or 'none'}")
        _str(f"{where}.{k}", v)
    return dict(data)


def parse_config(data: Any, source: str = "config") -> ExtensionSpec:
    """Validate a configuration (the parsed JSON) into an :class:`ExtensionSpec`."""
    _keys(source, data, {"package", "opset", "op"},
          {"version", "frameworks", "extractor", "devices", "cpu_kernel"})
    package = _str(f"{source}: package", data["package"], _DIST,
                   "a distribution name (letters, digits, '-', '_', '.'), e.g. opforge-acme-softclip")
    version = _str(f"{source}: version", data.get("version", "0.1.0"), re.compile(r"^\d+(\.\d+)*$"),
                   "a version such as 0.1.0")
    opset = _str(f"{source}: opset", data["opset"], _OPSET,
                 "a custom opset name (lower-case letters, digits, _), e.g. acme")
    if re.fullmatch(r"opset\d+", opset):
        raise ExtgenConfigError(f"{source}: opset {opset!r} is a standard opset name; custom ops need their own "
                                "opset so they never shadow a standard operation")
    op = data["op"]
    _keys(f"{source}: op", op, {"type"}, {"inputs", "outputs", "attributes", "changes_shape"})
    op_type = _str(f"{source}: op.type", op["type"], _IDENT, "an op type name (letters, digits, _)")
    inputs = _names(f"{source}: op.inputs", op.get("inputs", ["x"]), identifiers=True)
    outputs = _names(f"{source}: op.outputs", op.get("outputs", ["y"]), identifiers=True)
    attrs = _attributes(f"{source}: op.attributes", op.get("attributes"))
    clash = sorted({a.name for a in attrs} & (set(inputs) | set(outputs)))
    if clash:
        raise ExtgenConfigError(f"{source}: op: {clash[0]!r} names both a port and an attribute")
    changes_shape = op.get("changes_shape", False)
    if not isinstance(changes_shape, bool):
        raise ExtgenConfigError(f"{source}: op.changes_shape: expected true or false, got {changes_shape!r}")

    frameworks = data.get("frameworks", {})
    _keys(f"{source}: frameworks", frameworks, set(), {"onnx", "paddle"})
    onnx = None
    if "onnx" in frameworks:
        f = frameworks["onnx"]
        w = f"{source}: frameworks.onnx"
        _keys(w, f, set(), {"domain", "type", "attributes"})
        domain = f.get("domain", "")
        if not isinstance(domain, str):
            raise ExtgenConfigError(f"{w}.domain: expected a string, got {domain!r}")
        onnx = OnnxSpec(domain, _str(f"{w}.type", f.get("type", op_type)), _renames(f"{w}.attributes",
                                                                                    f.get("attributes"), attrs))
    paddle = None
    if "paddle" in frameworks:
        f = frameworks["paddle"]
        w = f"{source}: frameworks.paddle"
        _keys(w, f, {"type"}, {"inputs", "outputs", "attributes"})
        p_in = _names(f"{w}.inputs", f.get("inputs", ["X"]), identifiers=False)
        p_out = _names(f"{w}.outputs", f.get("outputs", ["Out"]), identifiers=False)
        if len(p_in) != len(inputs) or len(p_out) != len(outputs):
            raise ExtgenConfigError(
                f"{w}: the Paddle op has {len(p_in)} named input(s) and {len(p_out)} named output(s), the op "
                f"{len(inputs)} and {len(outputs)}: give one Paddle port name per op port, in the op's order"
            )
        paddle = PaddleSpec(_str(f"{w}.type", f["type"]), p_in, p_out,
                            _renames(f"{w}.attributes", f.get("attributes"), attrs))

    extractor = data.get("extractor", "OpExtension")
    if extractor not in EXTRACTOR_STYLES:
        raise ExtgenConfigError(f"{source}: extractor: {extractor!r}; use one of {', '.join(EXTRACTOR_STYLES)}")
    devices_raw = data.get("devices", ["CPU"])
    if not isinstance(devices_raw, list):
        raise ExtgenConfigError(f"{source}: devices: expected a list such as [\"CPU\", \"GPU\"], got {devices_raw!r}")
    devices = []
    for i, d in enumerate(devices_raw):
        name = _str(f"{source}: devices[{i}]", d).upper()
        if name not in DEVICES:
            raise ExtgenConfigError(f"{source}: devices[{i}]: {d!r}; kernels can be generated for "
                                    f"{', '.join(DEVICES)}")
        if name not in devices:
            devices.append(name)
    cpu_kernel = str(data.get("cpu_kernel", "c++")).lower().replace("cpp", "c++")
    if cpu_kernel not in CPU_KERNELS:
        raise ExtgenConfigError(f"{source}: cpu_kernel: {data.get('cpu_kernel')!r}; use \"c++\" (compiled, "
                                "through the CPU kernel ABI) or \"python\" (NumPy, the slow path)")
    return ExtensionSpec(package, version, opset, op_type, inputs, outputs, attrs, changes_shape, onnx, paddle,
                         extractor, devices, cpu_kernel)
