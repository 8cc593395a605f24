"""IR form of ops that carry a body sub-model (Loop-5), as OpenVINO writes and reads it:

* ``<port_map>``: ``<input external_port_id internal_layer_id [axis start end stride part_size]>``
  per fed body Parameter (a sliced one has ``axis``), ``<output external_port_id internal_layer_id
  [axis ...]>`` per Loop output (a concatenated one has ``axis``); the special body ports as an
  input with ``purpose="current_iteration"`` and an output with ``purpose="execution_condition"``
  (``external_port_id="-1"``). External ids are the Loop layer's port ids (outputs continue after
  the inputs); internal ids are body layer ids.
* ``<back_edges><edge from-layer to-layer>``: body Result -> body Parameter of a merged input.
* ``<body>``: a nested ``<layers>``/``<edges>`` net; its constants live in the same ``.bin``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from opforge.errors import ModelFormatError
from opforge.graph import Model, Node

#: deeper nesting of bodies than this is refused (a crafted file could nest thousands deep)
MAX_BODY_DEPTH = 64

#: the only slicing the Loop op models: one element per iteration over the whole axis
_WHOLE_AXIS = {"start": "0", "end": "-1", "stride": "1", "part_size": "1"}


def body_of(node: Node) -> Model | None:
    body = getattr(node.attrs, "body", None)
    return body if isinstance(body, Model) else None


def write_body(writer: Any, el: ET.Element, node: Node, body: Model) -> None:
    """Append ``<port_map>``, ``<back_edges>`` and ``<body>`` to the layer element ``el``;
    ``writer`` is the IR writer of the enclosing net (its ``.bin`` is shared)."""
    sub = type(writer)(body, writer.compress, writer.plugins, writer.sink)
    sub.bin_size, sub.stored = writer.bin_size, writer.stored
    body_el = ET.Element("body")
    sub.graph(body_el)
    writer.bin_size = sub.bin_size
    a = node.attrs
    par = [sub.layer_ids[p.id] for p in body.parameters]
    res = [sub.layer_ids[r.id] for r in body.results]
    n_in = len(node.inputs)
    pm = ET.SubElement(el, "port_map")
    back = ET.SubElement(el, "back_edges")
    for d in a.input_descriptions:  # type: ignore[attr-defined]
        attrs = {"external_port_id": str(d.external_port_id), "internal_layer_id": str(par[d.body_parameter_index])}
        if d.kind == "sliced":
            attrs = {"axis": str(d.axis), **attrs, **_WHOLE_AXIS}
        ET.SubElement(pm, "input", attrs)
        if d.kind == "merged":
            ET.SubElement(back, "edge", {"from-layer": str(res[d.back_edge_result_index]),
                                         "to-layer": str(par[d.body_parameter_index])})
    for o in a.output_descriptions:  # type: ignore[attr-defined]
        attrs = {"external_port_id": str(n_in + o.external_port_id), "internal_layer_id": str(res[o.body_result_index])}
        if o.axis is not None:
            attrs = {"axis": str(o.axis), **attrs, **_WHOLE_AXIS}
        ET.SubElement(pm, "output", attrs)
    if a.current_iteration_input_idx >= 0:  # type: ignore[attr-defined]
        ET.SubElement(pm, "input", {"external_port_id": "-1",
                                    "internal_layer_id": str(par[a.current_iteration_input_idx]),  # type: ignore[attr-defined]
                                    "purpose": "current_iteration"})
    if a.body_condition_output_idx >= 0:  # type: ignore[attr-defined]
        ET.SubElement(pm, "output", {"external_port_id": "-1",
                                     "internal_layer_id": str(res[a.body_condition_output_idx]),  # type: ignore[attr-defined]
                                     "purpose": "execution_condition"})
    el.append(body_el)


def read_body_attrs(reader: Any, layer: Any, where: str) -> dict[str, Any]:
    """The attribute values of a body-carrying layer (``body`` and the port maps), the body read
    by a nested reader of the same kind as ``reader`` (same weights, plugins and limits)."""
    depth = getattr(reader, "depth", 0) + 1
    if depth > MAX_BODY_DEPTH:
        raise ModelFormatError(f"{where}: bodies nest deeper than {MAX_BODY_DEPTH} levels")
    body_el: ET.Element = layer.body
    sub = type(reader)(iter(()), f"{reader.label} (body of {layer.where})", reader.weights, reader.plugins,
                       reader.limits)
    sub.depth = depth
    layers_el, edges_el = body_el.find("layers"), body_el.find("edges")
    if layers_el is None:
        raise ModelFormatError(f"{where}: <body> has no <layers>")
    for child in layers_el.findall("layer"):
        sub._add_layer(child)
    for e in ([] if edges_el is None else edges_el.findall("edge")):
        sub._on_edge(dict(e.attrib))
    edges = sub._parse_edges(sub.layers)
    order = sub._toposort(sub.layers, edges)
    model: Model = sub._build(f"{layer.name}/body", sub.layers, edges, order)
    by_pos = sorted(sub.layers.values(), key=lambda la: la.pos)
    par = {la.id: i for i, la in enumerate(la for la in by_pos if la.type == "Parameter")}
    res = {la.id: i for i, la in enumerate(la for la in by_pos if la.type == "Result")}

    def num(e: ET.Element, key: str) -> int:
        text = e.get(key)
        try:
            return int(text or "")
        except ValueError:
            raise ModelFormatError(f"{where}: <port_map> <{e.tag}> {key}={text!r} is not an integer") from None

    def body_index(table: dict[int, int], lid: int, what: str) -> int:
        if lid not in table:
            raise ModelFormatError(f"{where}: <port_map> names body layer {lid}, which is not a body {what}")
        return table[lid]

    back: dict[int, int] = {}
    back_el = layer.back_edges
    for e in ([] if back_el is None else back_el.findall("edge")):
        back[num(e, "to-layer")] = num(e, "from-layer")
    pm = layer.port_map
    if pm is None:
        raise ModelFormatError(f"{where}: has a <body> but no <port_map>")
    ins, outs = layer.inputs, layer.outputs
    inputs: list[dict[str, Any]] = []
    output_descs: list[dict[str, Any]] = []
    special = {"current_iteration_input_idx": -1, "body_condition_output_idx": -1}
    for e in pm:
        lid = num(e, "internal_layer_id")
        purpose = e.get("purpose")
        if e.tag == "input":
            idx = body_index(par, lid, "Parameter")
            if purpose == "current_iteration":
                special["current_iteration_input_idx"] = idx
                continue
            ext = num(e, "external_port_id")
            if ext not in ins:
                raise ModelFormatError(f"{where}: <port_map> input external_port_id={ext} is not an input port")
            d: dict[str, Any] = {"kind": "invariant", "external_port_id": ins.index(ext), "body_parameter_index": idx}
            if e.get("axis") is not None:
                _check_whole_axis(e, where)
                d.update(kind="sliced", axis=num(e, "axis"))
            elif lid in back:
                d.update(kind="merged", back_edge_result_index=body_index(res, back[lid], "Result"))
            inputs.append(d)
        elif e.tag == "output":
            idx = body_index(res, lid, "Result")
            if purpose == "execution_condition":
                special["body_condition_output_idx"] = idx
                continue
            ext = num(e, "external_port_id")
            if ext not in outs:
                raise ModelFormatError(f"{where}: <port_map> output external_port_id={ext} is not an output port")
            o: dict[str, Any] = {"external_port_id": outs.index(ext), "body_result_index": idx}
            if e.get("axis") is not None:
                _check_whole_axis(e, where)
                o["axis"] = num(e, "axis")
            output_descs.append(o)
    return {"body": model, "input_descriptions": inputs, "output_descriptions": output_descs, **special}


def _check_whole_axis(e: ET.Element, where: str) -> None:
    for key, want in _WHOLE_AXIS.items():
        got = e.get(key, want)
        if got != want and not (key == "end" and got == "-1"):
            raise ModelFormatError(
                f"{where}: <port_map> <{e.tag}> {key}={got!r}: opforge's Loop slices and concatenates one "
                f"element per iteration over the whole axis (start=0 end=-1 stride=1 part_size=1)"
            )
