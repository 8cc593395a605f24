"""``CustomLayersMapping.xml``: ops the framework itself computes (the Model Optimizer's fallback).

::

    <CustomLayersMapping>
      <CustomLayer NativeType="com.microsoft::FastGelu" hasParam="false" protoParamName=""/>
      <CustomLayer NativeType="SkipLayerNormalization" hasParam="true"/>
    </CustomLayersMapping>

Each listed op type becomes a framework-fallback :class:`~opforge.frontend.framework_node.FrameworkNode`:
the framework gives its output types and shapes and runs it at inference (on the CPU device).
``NativeType`` is the framework op type, for ONNX optionally ``domain::Type``; ``hasParam`` says
whether the node's attributes are carried (``true``) or dropped (``false``, the default);
``protoParamName`` (Caffe's parameter message) is kept for reference. As in the Model Optimizer,
a mapping file wins over every extension and standard translator.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

from opforge.errors import ConversionError, ExtensionError, ModelFormatError
from opforge.frontend.extensions import ConversionResult, FrontendExtension, key_label
from opforge.frontend.framework_node import FrameworkNode, encode_specs, fallback_runtime
from opforge.frontend.node_context import NodeContext
from opforge.op import TensorSpec

ROOT_TAG = "CustomLayersMapping"
LAYER_TAG = "CustomLayer"
_KNOWN = {"NativeType", "hasParam", "protoParamName"}


class FrameworkFallbackExtension(FrontendExtension):
    """One ``<CustomLayer>``: converts its op type into a framework-fallback node."""

    def __init__(self, native_type: str, *, has_param: bool, proto_param_name: str = "",
                 source: str = "") -> None:
        domain, sep, op_type = native_type.rpartition("::")
        super().__init__(op_type if sep else native_type, framework="", domain=domain if sep else "")
        self.has_param = has_param
        self.proto_param_name = proto_param_name
        self.source = source

    def convert(self, ctx: NodeContext) -> ConversionResult:
        runtime = fallback_runtime(ctx.framework)
        payload, num_outputs = runtime.payload(ctx, self.has_param)
        inputs = ctx.get_inputs()
        if any(i is None for i in inputs):
            raise ConversionError(f"{ctx.label}: a framework-fallback node cannot read an absent input")
        specs = [TensorSpec(i.element_type, i.partial_shape) for i in inputs if i is not None]
        values: list[np.ndarray | None] = [i.node.constant_value() for i in inputs if i is not None]
        attrs: dict[str, Any] = {
            "framework": ctx.framework, "op_type": ctx.op_type, "domain": ctx.domain,
            "num_outputs": num_outputs, "payload": payload, "has_param": self.has_param,
            "attributes": ctx.get_attributes() if self.has_param else {},
        }
        probe = FrameworkNode.make_attrs(ctx.name, attrs)
        out_specs = runtime.infer(ctx.name, probe, specs, values)  # type: ignore[arg-type]
        attrs["attributes"] = {k: v for k, v in attrs["attributes"].items()
                               if isinstance(v, (int, float, str, list, np.ndarray))}
        node = ctx.op(FrameworkNode, *inputs, **attrs, output_specs=encode_specs(out_specs))
        outs = list(node.outputs())
        if not ctx.has_named_outputs:
            return outs
        # Named ports (Paddle): the framework's outputs are the ports' variables in port order.
        named: dict[str, Any] = {}
        k = 0
        for port in ctx.get_output_names():
            n = ctx.get_output_size(port)
            named[port] = outs[k:k + n]
            k += n
        return named

    def describe(self) -> str:
        where = f" (from {self.source})" if self.source else ""
        return f"framework fallback for {key_label(self.key)}{where}"


class _LineTracker(ET.TreeBuilder):
    """Remembers the line each element starts on, for messages."""

    def __init__(self) -> None:
        super().__init__()
        self.parser: Any = None
        self.lines: dict[int, int] = {}

    def start(self, tag: Any, attrs: Any) -> ET.Element:
        el = super().start(tag, attrs)
        self.lines[id(el)] = int(self.parser.parser.CurrentLineNumber) if self.parser is not None else 0
        return el


def load_custom_layers_mapping(path: str | Path) -> list[FrameworkFallbackExtension]:
    """Read a ``CustomLayersMapping.xml``; errors name the file and line."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise ExtensionError(f"custom layers mapping '{p}' cannot be read: {err}") from None
    target = _LineTracker()
    parser = DefusedXMLParser(target=target, forbid_dtd=True)
    target.parser = parser
    try:
        parser.feed(data)
        root = parser.close()
    except ET.ParseError as err:
        line = err.position[0] if err.position else "?"
        raise ModelFormatError(f"custom layers mapping '{p}', line {line}: not well-formed XML: {err}") from None
    except DefusedXmlException as err:
        raise ModelFormatError(f"custom layers mapping '{p}': refused ({type(err).__name__}: {err})") from None

    def where(el: ET.Element) -> str:
        return f"custom layers mapping '{p}', line {target.lines.get(id(el), '?')}"

    if root.tag != ROOT_TAG:
        raise ExtensionError(f"{where(root)}: the root element is <{root.tag}>, expected <{ROOT_TAG}>")
    out: list[FrameworkFallbackExtension] = []
    seen: dict[tuple[str, str], int] = {}
    for el in root:
        if not isinstance(el.tag, str):
            continue  # comments and processing instructions
        if el.tag != LAYER_TAG:
            raise ExtensionError(f"{where(el)}: unexpected element <{el.tag}>; <{ROOT_TAG}> holds <{LAYER_TAG}> only")
        unknown = sorted(set(el.attrib) - _KNOWN)
        if unknown:
            raise ExtensionError(f"{where(el)}: unknown attribute(s) {', '.join(unknown)}; "
                                 f"allowed: {', '.join(sorted(_KNOWN))}")
        native = (el.get("NativeType") or "").strip()
        if not native or native.endswith("::"):
            raise ExtensionError(f"{where(el)}: <{LAYER_TAG}> needs NativeType=\"Type\" (ONNX: \"domain::Type\"), "
                                 f"got {el.get('NativeType')!r}")
        flag = (el.get("hasParam") or "false").strip().lower()
        if flag not in ("true", "false"):
            raise ExtensionError(f"{where(el)}: hasParam must be \"true\" or \"false\", got {el.get('hasParam')!r}")
        ext = FrameworkFallbackExtension(native, has_param=flag == "true",
                                         proto_param_name=el.get("protoParamName") or "",
                                         source=where(el).removeprefix("custom layers mapping "))
        key = (ext.domain, ext.op_type)
        if key in seen:
            raise ExtensionError(f"{where(el)}: NativeType {native!r} is listed twice (first on line {seen[key]})")
        seen[key] = target.lines.get(id(el), 0)
        out.append(ext)
    return out
