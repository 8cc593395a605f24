"""Interactive mode of ``opforge extgen new``: the questions, asked with ``input()`` (so a test or a
script can answer them on stdin), turned into the same configuration ``--config`` reads.

An answer that does not parse is asked again with the reason; end of input stops with an error
naming the question, so a script that answers too few questions fails instead of hanging.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from opforge.errors import ExtgenConfigError
from opforge.extgen.config import (
    ATTR_TYPES,
    DEVICES,
    EXTRACTOR_STYLES,
    ExtensionSpec,
    coerce_default,
    normalize_attr_type,
    parse_config,
)

T = TypeVar("T")


class Asker:
    def __init__(self, read: Callable[[str], str] = input, write: Callable[[str], None] = print) -> None:
        self.read = read
        self.write = write

    def ask(self, question: str, default: str | None = None, parse: Callable[[str], T] | None = None) -> T:
        prompt = f"{question}" + (f" [{default}]" if default is not None else "") + ": "
        while True:
            try:
                answer = self.read(prompt).strip()
            except EOFError:
                raise ExtgenConfigError(f"extgen: input ended before the question '{question}' was answered") from None
            if not answer and default is not None:
                answer = default
            try:
                return parse(answer) if parse else answer  # type: ignore[return-value]
            except (ValueError, ExtgenConfigError) as err:
                self.write(f"  {err}")

    def yes(self, question: str, default: bool) -> bool:
        def parse(a: str) -> bool:
            if a.lower() in ("y", "yes", "true", "1"):
                return True
            if a.lower() in ("n", "no", "false", "0"):
                return False
            raise ValueError("answer y or n")

        return self.ask(question + " (y/n)", "y" if default else "n", parse)


def _names(text: str) -> list[str]:
    out = [t.strip() for t in text.split(",") if t.strip()]
    if not out:
        raise ValueError("give at least one name (comma-separated)")
    return out


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # a bare string default


def ask_config(asker: Asker | None = None) -> ExtensionSpec:
    """Ask every question and return the validated configuration."""
    a = asker or Asker()
    cfg: dict[str, Any] = {}
    a.write("opforge extgen: answer each question; [default] is taken on an empty answer.")
    op_type = a.ask("Op type name (e.g. SoftClip)", None, lambda t: parse_config(
        {"package": "x", "opset": "x", "op": {"type": t}}).op_type)
    opset = a.ask("Custom opset name (lower-case, e.g. acme)", "custom", lambda t: parse_config(
        {"package": "x", "opset": t, "op": {"type": op_type}}).opset)
    cfg["package"] = a.ask("Distribution name", f"opforge-{opset}-{op_type.lower()}", lambda t: parse_config(
        {"package": t, "opset": opset, "op": {"type": op_type}}).package)
    cfg["opset"] = opset
    inputs = a.ask("Input names, comma-separated", "x", _names)
    outputs = a.ask("Output names, comma-separated", "y", _names)
    attrs: dict[str, Any] = {}
    while True:
        name: str = a.ask("Attribute name (empty when done)", "")
        if not name:
            break
        t = a.ask(f"  type of '{name}' ({', '.join(ATTR_TYPES)})", "float",
                  lambda x, name=name: normalize_attr_type(f"attribute '{name}'", x))  # type: ignore[misc]
        default = a.ask(f"  default of '{name}' (JSON, e.g. 1.0, [1, 2], true)", None,
                        lambda x, t=t, name=name: coerce_default(f"attribute '{name}'", t, _json_value(x)))  # type: ignore[misc]
        attrs[name] = {"type": t, "default": default}
    changes = a.yes("Does the op change the shape of its input", False)
    cfg["op"] = {"type": op_type, "inputs": inputs, "outputs": outputs, "attributes": attrs, "changes_shape": changes}
    frameworks: dict[str, Any] = {}
    if a.yes("Map an ONNX op to it", True):
        frameworks["onnx"] = {"domain": a.ask("  ONNX domain", f"com.{opset}"),
                              "type": a.ask("  ONNX op type", op_type)}
    if a.yes("Map a Paddle op to it", False):
        frameworks["paddle"] = {
            "type": a.ask("  Paddle op type", "".join("_" + c.lower() if c.isupper() else c for c in op_type).lstrip("_")),
            "inputs": a.ask(f"  Paddle input port names for {', '.join(inputs)}", ",".join(
                ["X"] if len(inputs) == 1 else [f"X{i}" for i in range(len(inputs))]), _names),
            "outputs": a.ask(f"  Paddle output port names for {', '.join(outputs)}", ",".join(
                ["Out"] if len(outputs) == 1 else [f"Out{i}" for i in range(len(outputs))]), _names),
        }
    cfg["frameworks"] = frameworks
    if frameworks:
        def style(x: str) -> str:
            for s in EXTRACTOR_STYLES:
                if x.lower() == s.lower():
                    return s
            raise ValueError(f"one of {', '.join(EXTRACTOR_STYLES)}")

        cfg["extractor"] = a.ask(f"Extractor style ({', '.join(EXTRACTOR_STYLES)})", "OpExtension", style)

    def devices(x: str) -> list[str]:
        ds = [d.upper() for d in _names(x)]
        bad = [d for d in ds if d not in DEVICES]
        if bad:
            raise ValueError(f"unknown device {bad[0]}; choose from {', '.join(DEVICES)}")
        return ds

    cfg["devices"] = a.ask(f"Device kernels to generate ({', '.join(DEVICES)})", "CPU,GPU", devices)
    if "CPU" in cfg["devices"]:
        def cpu_kernel(x: str) -> str:
            if x.lower() not in ("c++", "cpp", "python"):
                raise ValueError("answer c++ or python")
            return "python" if x.lower() == "python" else "c++"

        cfg["cpu_kernel"] = a.ask("CPU kernel in c++ (compiled, kernel ABI) or python (NumPy)", "c++", cpu_kernel)
    return parse_config(cfg, "answers")
