"""What the partition drawings say: two-line node labels in ``.dot`` (a real line break, not a
literal backslash-n), the SVG's title (the document's <title>, wrapped to the drawing), and the
placement reasons and transfer sizes shown in the SVG itself, not only in tooltips."""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import opforge
from opforge import Model
from opforge_hetero.dump import CHAR_W, MARGIN, dump_partition

NS = "{http://www.w3.org/2000/svg}"


def placement(core: opforge.Core, model: Model) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return core.compile_model(model, "HETERO:FAST,SLOW").get_property("HETERO_PLACEMENT")


def test_dot_labels_break_lines_and_cut_edges_carry_sizes(core: opforge.Core, swish_model: Model,
                                                          tmp_path: Path) -> None:
    text = dump_partition(swish_model, placement(core, swish_model), tmp_path / "p.dot").read_text()
    swish = next(line for line in text.splitlines() if line.strip().startswith('"swish"'))
    assert 'label="swish\\nSwish @ SLOW"' in swish  # DOT's own \n escape, once
    assert "\\\\n" not in text
    assert 'label="FAST\u2192SLOW, 24 B"' in text and 'label="SLOW\u2192FAST, 24 B"' in text


def test_svg_title_reasons_and_transfer_sizes(core: opforge.Core, swish_model: Model, tmp_path: Path) -> None:
    p = placement(core, swish_model)
    root = ET.fromstring(dump_partition(swish_model, p, tmp_path / "p.svg").read_text())
    title = root.find(f"{NS}title")
    assert title is not None and title.text == p.summary()  # type: ignore[attr-defined]
    lines = [t for t in root.iter(f"{NS}text") if t.get("class") == "title"]
    assert " ".join(t.text or "" for t in lines) == p.summary()  # type: ignore[attr-defined]
    width = float(root.get("width", "0"))
    assert all(MARGIN + len(t.text or "") * CHAR_W <= width + 1 for t in lines), "title runs off the drawing"
    reasons = [t.text or "" for t in root.iter(f"{NS}text") if t.get("class") == "reason"]
    assert any(r.startswith("Swish: no FAST kernel") or r.startswith("Swish: no FAST") for r in reasons), reasons
    cut_labels = [t.text for g in root.iter(f"{NS}g") if g.get("class") == "cut-edge" for t in g.iter(f"{NS}text")]
    assert sorted(cut_labels) == ["FAST\u2192SLOW, 24 B", "SLOW\u2192FAST, 24 B"]
