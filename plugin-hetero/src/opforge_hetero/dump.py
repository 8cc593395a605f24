"""Drawing a partition: ``.dot`` (Graphviz source), ``.svg`` (laid out here, no Graphviz needed)
and ``.html`` (the SVG plus the placement table). Nodes are coloured by device; edges that cross
devices -- the transfers -- are drawn red and dashed and labelled with both devices."""

from __future__ import annotations

import html
import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opforge.errors import OpforgeError
from opforge.graph import Model, Node

from opforge_hetero.placement import Placement, _size

#: colours of well-known devices; other devices take the next colour of PALETTE
DEVICE_COLORS: dict[str, str] = {"GPU": "#59a14f", "CPU": "#4e79a7", "NPU": "#b07aa1"}
PALETTE: tuple[str, ...] = ("#f28e2b", "#edc948", "#76b7b2", "#ff9da7", "#9c755f", "#e15759", "#bab0ac")
#: nodes no device can run
UNPLACED_COLOR = "#d3d3d3"
CUT_COLOR = "#d62728"
EDGE_COLOR = "#8c8c8c"

NODE_W, NODE_H, GAP_X, GAP_Y, MARGIN, LEGEND_H = 168, 54, 24, 64, 24, 56
#: average width of a character of the 11-12 px sans-serif text, to wrap and shorten text
CHAR_W = 6.6


def device_colors(devices: Sequence[str]) -> dict[str, str]:
    """A distinct colour per device, stable for a given device list."""
    out: dict[str, str] = {}
    spare = iter(PALETTE)
    for d in devices:
        base = d.split(".")[0]
        fixed = DEVICE_COLORS.get(base)
        out[d] = fixed if fixed is not None and fixed not in out.values() else next(spare, "#999999")
    return out


class _View:
    """What every format draws: visible nodes, their devices and the edges, cut or not."""

    def __init__(self, model: Model, placement: Placement | Mapping[str, Any], show_constants: bool) -> None:
        self.model = model
        self.order: list[Node] = model.get_ordered_ops()
        self.placement = placement if isinstance(placement, Placement) else None
        self.devices_of: dict[str, tuple[str, ...]] = {}
        self.reason: dict[str, str] = {}
        self.subgraph: dict[str, int | None] = {}
        #: (producer node, receiving device) -> bytes moved per inference
        self.transfer_bytes: dict[tuple[str, str], int] = {}
        if isinstance(placement, Placement):
            for name, p in placement.nodes.items():
                self.devices_of[name] = p.devices or ((p.device,) if p.device else ())
                self.reason[name] = p.reason
                self.subgraph[name] = p.subgraph
            self.device_list: list[str] = list(placement.devices)
            self.title = placement.summary()
            for t in placement.transfers:
                key = (t.producer, t.target)
                self.transfer_bytes[key] = self.transfer_bytes.get(key, 0) + t.nbytes
        else:
            for name, v in placement.items():
                dev = v.get("device") if isinstance(v, Mapping) else v
                self.devices_of[name] = (str(dev),) if dev else ()
                if isinstance(v, Mapping) and v.get("reason"):
                    self.reason[name] = str(v["reason"])
            self.device_list = []
            for devs in self.devices_of.values():
                self.device_list.extend(d for d in devs if d not in self.device_list)
            self.title = f"model '{model.name}'"
        self.colors = device_colors(self.device_list)
        self.nodes = [n for n in self.order if show_constants or n.type_name != "Constant"]
        visible = {n.name for n in self.nodes}
        self.edges: list[tuple[Node, Node, str | None]] = []  # (src, dst, cut label)
        for n in self.nodes:
            seen: set[str] = set()
            for src in n.inputs:
                if src.node.name not in visible or src.node.name in seen:
                    continue
                seen.add(src.node.name)
                self.edges.append((src.node, n, self._cut(src.node, n)))

    def _cut(self, src: Node, dst: Node) -> str | None:
        if src.type_name in ("Parameter", "Constant") or dst.type_name == "Result":
            return None  # inputs and weights are fed to every device; outputs leave from anywhere
        a, b = self.devices_of.get(src.name, ()), self.devices_of.get(dst.name, ())
        if not a or not b or set(b) & set(a):
            return None
        label = f"{a[0]}\u2192{b[0]}"
        nbytes = self.transfer_bytes.get((src.name, b[0]))
        return label if nbytes is None else f"{label}, {_size(nbytes)}"

    def color(self, name: str) -> str:
        devs = self.devices_of.get(name, ())
        return self.colors.get(devs[0], UNPLACED_COLOR) if devs else UNPLACED_COLOR

    def device_text(self, name: str) -> str:
        return ",".join(self.devices_of.get(name, ())) or "none"

    @property
    def cut_edges(self) -> list[tuple[Node, Node, str]]:
        return [(a, b, c) for a, b, c in self.edges if c is not None]


# ============================================================================ DOT
def to_dot(view: _View) -> str:
    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    def q(text: str) -> str:
        return '"' + esc(text) + '"'

    lines = [f"digraph {q(view.model.name)} {{", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
             f"  label={q(view.title)}; labelloc=t;"]
    clusters: dict[int, list[Node]] = {}
    loose: list[Node] = []
    for n in view.nodes:
        sg = view.subgraph.get(n.name)
        if sg is not None and n.type_name != "Result":
            clusters.setdefault(sg, []).append(n)
        else:
            loose.append(n)

    def node_line(n: Node, indent: str) -> str:
        # "\n" is DOT's line break: joined after escaping, so it is not escaped into a literal
        label = '"' + "\\n".join(esc(part) for part in (n.name, f"{n.type_name} @ {view.device_text(n.name)}")) + '"'
        tip = view.reason.get(n.name, "")
        return (f"{indent}{q(n.name)} [label={label}, fillcolor={q(view.color(n.name))}, "
                f"tooltip={q(tip)}];")

    for sg in sorted(clusters):
        devs = view.devices_of.get(clusters[sg][0].name, ("?",))
        lines.append(f"  subgraph cluster_{sg} {{")
        lines.append(f"    label={q(f'sub-graph {sg} ({devs[0]})')}; style=dashed; color={q(view.colors.get(devs[0], '#999999'))};")
        lines.extend(node_line(n, "    ") for n in clusters[sg])
        lines.append("  }")
    lines.extend(node_line(n, "  ") for n in loose)
    for a, b, cut in view.edges:
        if cut:
            lines.append(f"  {q(a.name)} -> {q(b.name)} [color={q(CUT_COLOR)}, style=dashed, penwidth=2.5, "
                         f"label={q(cut)}, fontcolor={q(CUT_COLOR)}];")
        else:
            lines.append(f"  {q(a.name)} -> {q(b.name)} [color={q(EDGE_COLOR)}];")
    lines.append("  // legend: " + ", ".join(f"{d} = {c}" for d, c in view.colors.items())
                 + f", cut edge (transfer) = {CUT_COLOR} dashed")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ============================================================================ SVG
def _layout(view: _View, header: float = LEGEND_H) -> tuple[dict[str, tuple[float, float]], float, float]:
    """A layered layout: layer = longest path from an input; within a layer, nodes ordered by
    the mean position of their producers (a barycentre pass keeps edges short and uncrossed)."""
    layer: dict[str, int] = {}
    preds: dict[str, list[str]] = {n.name: [] for n in view.nodes}
    for a, b, _ in view.edges:
        preds[b.name].append(a.name)
    for n in view.nodes:  # topological order
        layer[n.name] = 1 + max((layer[p] for p in preds[n.name]), default=-1)
    rows: dict[int, list[str]] = {}
    for n in view.nodes:
        rows.setdefault(layer[n.name], []).append(n.name)
    pos: dict[str, float] = {}
    for k in sorted(rows):
        row = rows[k]
        if k > 0:
            row.sort(key=lambda m: (sum(pos[p] for p in preds[m]) / len(preds[m])) if preds[m] else 1e9)
        for i, m in enumerate(row):
            pos[m] = float(i)
    width_nodes = max((len(r) for r in rows.values()), default=1)
    width = 2 * MARGIN + width_nodes * (NODE_W + GAP_X) - GAP_X
    coords: dict[str, tuple[float, float]] = {}
    for k, row in rows.items():
        row_w = len(row) * (NODE_W + GAP_X) - GAP_X
        x0 = (width - row_w) / 2
        for i, m in enumerate(row):
            coords[m] = (x0 + i * (NODE_W + GAP_X), MARGIN + header + k * (NODE_H + GAP_Y))
    height = MARGIN * 2 + header + (max(rows, default=0) + 1) * (NODE_H + GAP_Y) - GAP_Y
    return coords, max(width, 520.0), height


def _shorten(text: str, width_px: float) -> str:
    n = max(4, int(width_px / CHAR_W))
    return text if len(text) <= n else text[:n - 1] + "\u2026"


def to_svg(view: _View) -> str:
    e = html.escape
    # The summary is wrapped to the drawing's width (one long line ran off the right edge), and
    # is also the document's <title>: what a browser tab and a file viewer show.
    _, width, _ = _layout(view)
    title_lines = textwrap.wrap(view.title, max(40, int((width - 2 * MARGIN) / (CHAR_W * 1.1)))) or [""]
    header = LEGEND_H + 16 * (len(title_lines) - 1)
    coords, width, height = _layout(view, header)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="Helvetica, Arial, sans-serif" font-size="11">',
           f"<title>{e(view.title)}</title>",
           "<defs>",
           f'<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
           f'<path d="M0,0 L10,5 L0,10 z" fill="{EDGE_COLOR}"/></marker>',
           f'<marker id="arrow-cut" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
           f'<path d="M0,0 L10,5 L0,10 z" fill="{CUT_COLOR}"/></marker>',
           "</defs>",
           f'<rect x="0" y="0" width="{width:.0f}" height="{height:.0f}" fill="white"/>']
    out.extend(f'<text class="title" x="{MARGIN}" y="{MARGIN + 16 * i}" font-size="12" font-weight="bold">{e(line)}</text>'
               for i, line in enumerate(title_lines))
    # legend
    x = float(MARGIN)
    y = MARGIN + 16 * (len(title_lines) - 1) + 18
    for dev, col in view.colors.items():
        out.append(f'<rect class="legend" x="{x:.0f}" y="{y}" width="14" height="14" rx="3" fill="{col}" stroke="#333"/>'
                   f'<text x="{x + 19:.0f}" y="{y + 11}">{e(dev)}</text>')
        x += 30 + 7 * len(dev)
    out.append(f'<line x1="{x:.0f}" y1="{y + 7}" x2="{x + 30:.0f}" y2="{y + 7}" stroke="{CUT_COLOR}" '
               f'stroke-width="2.5" stroke-dasharray="6,4"/><text x="{x + 36:.0f}" y="{y + 11}">cut edge (transfer)</text>')
    # edges under nodes
    for a, b, cut in view.edges:
        (ax, ay), (bx, by) = coords[a.name], coords[b.name]
        x1, y1, x2, y2 = ax + NODE_W / 2, ay + NODE_H, bx + NODE_W / 2, by
        mid = (y1 + y2) / 2
        d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2 - 2:.1f}"
        if cut:
            out.append(f'<g class="cut-edge"><title>{e(a.name)} \u2192 {e(b.name)}: transfer {e(cut)}</title>'
                       f'<path d="{d}" fill="none" stroke="{CUT_COLOR}" stroke-width="2.5" stroke-dasharray="6,4" '
                       f'marker-end="url(#arrow-cut)"/>'
                       f'<text x="{(x1 + x2) / 2 + 4:.1f}" y="{mid:.1f}" fill="{CUT_COLOR}" font-weight="bold">{e(cut)}</text></g>')
        else:
            out.append(f'<path class="edge" d="{d}" fill="none" stroke="{EDGE_COLOR}" stroke-width="1.2" '
                       f'marker-end="url(#arrow)"/>')
    for n in view.nodes:
        nx, ny = coords[n.name]
        fill = view.color(n.name)
        tip = f"{n.name} ({n.type_name}) on {view.device_text(n.name)}"
        if n.name in view.reason:
            tip += f": {view.reason[n.name]}"
        name = _shorten(n.name, NODE_W - 8)
        # the reason shows in the box (shortened), in full in the tooltip
        reason = view.reason.get(n.name, "")
        reason_text = (f'<text class="reason" x="{nx + NODE_W / 2:.1f}" y="{ny + 45:.1f}" text-anchor="middle" '
                       f'font-size="9" fill="#222">{e(_shorten(reason, (NODE_W - 8) * 11 / 9))}</text>' if reason else "")
        out.append(f'<g class="node" data-device="{e(view.device_text(n.name))}"><title>{e(tip)}</title>'
                   f'<rect x="{nx:.1f}" y="{ny:.1f}" width="{NODE_W}" height="{NODE_H}" rx="6" fill="{fill}" '
                   f'stroke="#333" stroke-width="1"/>'
                   f'<text x="{nx + NODE_W / 2:.1f}" y="{ny + 16:.1f}" text-anchor="middle" font-weight="bold">{e(name)}</text>'
                   f'<text x="{nx + NODE_W / 2:.1f}" y="{ny + 31:.1f}" text-anchor="middle">'
                   f'{e(_shorten(f"{n.type_name} @ {view.device_text(n.name)}", NODE_W - 8))}</text>{reason_text}</g>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ============================================================================ HTML
def to_html(view: _View) -> str:
    e = html.escape
    rows = []
    for n in view.order:
        if n.type_name == "Constant":
            continue
        sg = view.subgraph.get(n.name)
        rows.append(f'<tr><td>{e(n.name)}</td><td>{e(n.type_name)}</td>'
                    f'<td style="background:{view.color(n.name)}">{e(view.device_text(n.name))}</td>'
                    f'<td>{"" if sg is None else sg}</td><td>{e(view.reason.get(n.name, ""))}</td></tr>')
    cuts = "".join(f"<li><b>{e(a.name)}</b> \u2192 <b>{e(b.name)}</b>: {e(c)}</li>" for a, b, c in view.cut_edges)
    legend = " ".join(f'<span class="dev" style="background:{c}">{e(d)}</span>' for d, c in view.colors.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(view.model.name)}: partition</title>
<style>
body {{ font-family: Helvetica, Arial, sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; margin-top: 1em; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; font-size: 13px; }}
.dev {{ padding: 2px 8px; border-radius: 4px; margin-right: 6px; }}
.cut {{ color: {CUT_COLOR}; }}
</style></head><body>
<h1>{e(view.model.name)}</h1>
<p>{e(view.title)}</p>
<p>Devices: {legend} <span class="cut">- - - cut edge (transfer)</span></p>
<div class="graph">{to_svg(view)}</div>
<h2 class="cut">Cut edges ({len(view.cut_edges)})</h2>
<ul>{cuts or "<li>none: no tensor crosses devices</li>"}</ul>
<h2>Placement</h2>
<table><tr><th>node</th><th>type</th><th>device</th><th>sub-graph</th><th>reason</th></tr>
{"".join(rows)}
</table></body></html>
"""


def dump_partition(model: Model, placement: Placement | Mapping[str, Any], path: str | os.PathLike[str],
                   *, show_constants: bool = False) -> Path:
    """Draw ``model`` coloured by device into ``path``; its suffix picks the format (``.dot``,
    ``.svg``, ``.html``). ``placement`` is a :class:`Placement` (``compiled.get_property(
    "HETERO_PLACEMENT")`` or :func:`opforge_hetero.explain`) or a ``{node: device}`` dict (what
    ``core.query_model`` returns). Weights are left out unless ``show_constants``."""
    target = Path(path)
    writers = {".dot": to_dot, ".gv": to_dot, ".svg": to_svg, ".html": to_html, ".htm": to_html}
    writer = writers.get(target.suffix.lower())
    if writer is None:
        raise OpforgeError(f"cannot dump a partition to '{target}': use a .dot, .svg or .html file name")
    text = writer(_View(model, placement, show_constants))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
