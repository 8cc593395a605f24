"""Stream an IR ``.xml`` with expat, one ``<layer>`` at a time, never holding the whole tree.

A whole-document ``ElementTree`` costs about ten times the file in memory (an element object,
an attribute dict and strings per tag, for ~15 tags per layer) and defusedxml's pure-Python
parser callbacks make it slow: 50 MB of layers took 15 s and 740 MB. Here expat calls back per
tag; each ``<layer>`` is built as a small ElementTree (so layer code reads it as usual), handed to
``on_layer`` and dropped, each ``<edge>`` is handed over as its attributes, and only the model
``<rt_info>`` is kept as a tree. Memory is then the compact records the reader keeps per layer.

Untrusted XML: a DOCTYPE is refused when it starts, as are entity declarations and external
references (billion laughs, ``SYSTEM "file:///etc/passwd"``), before anything is expanded or
fetched -- what defusedxml's ``forbid_dtd`` did.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from typing import Any
from xml.parsers import expat


class XmlRefused(Exception):
    """A construct IR files never have (DOCTYPE, entities, external references)."""


class XmlStructureError(Exception):
    """The document is XML, but not laid out as an IR."""


class IrStream:
    """Parses chunks of an IR document and calls back per part:

    * ``on_net(attrs)`` at the root element (its tag must be ``net``);
    * ``on_layer(element)`` for each ``<net><layers><layer>`` (a complete subtree);
    * ``on_edge(attrs)`` for each ``<net><edges><edge>``;
    * the model ``<net><rt_info>`` is kept in :attr:`rt_info`.
    """

    def __init__(self, on_net: Callable[[str, dict[str, str]], None], on_layer: Callable[[ET.Element], None],
                 on_edge: Callable[[dict[str, str]], None]) -> None:
        self.on_net = on_net
        self.on_layer = on_layer
        self.on_edge = on_edge
        self.rt_info: ET.Element | None = None
        self.seen_layers = False
        self.seen_edges = False
        self._path: list[str] = []
        self._build: list[ET.Element] = []  # the subtree being built (a layer or the model rt_info)
        self._text: list[str] = []
        p = expat.ParserCreate()
        p.buffer_text = True
        p.ordered_attributes = False
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.CharacterDataHandler = self._chars
        p.StartDoctypeDeclHandler = self._doctype
        p.EntityDeclHandler = self._entity
        p.UnparsedEntityDeclHandler = self._unparsed_entity
        p.ExternalEntityRefHandler = self._external
        # Parameter entities (in a DTD) are never parsed; the DOCTYPE is refused anyway.
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        self._parser = p

    # --- feeding --------------------------------------------------------------------------------
    def feed(self, chunks: Iterable[bytes]) -> None:
        for chunk in chunks:
            self._parser.Parse(chunk, False)
        self._parser.Parse(b"", True)

    @property
    def position(self) -> str:
        return f"line {self._parser.CurrentLineNumber}, column {self._parser.CurrentColumnNumber}"

    # --- expat callbacks ------------------------------------------------------------------------
    def _doctype(self, name: str, *_: Any) -> None:
        raise XmlRefused("the XML has a DOCTYPE/DTD, which IR files never have; refusing to process it "
                         "(entity expansion and external entities are a known attack)")

    def _entity(self, name: str, *_: Any) -> None:
        raise XmlRefused(f"the XML declares entities ('{name}'), which IR files never do; refusing it")

    def _unparsed_entity(self, name: str, *_: Any) -> None:
        raise XmlRefused(f"the XML declares an unparsed entity ('{name}'); refusing it")

    def _external(self, context: str, base: str | None, system_id: str | None, public_id: str | None) -> int:
        raise XmlRefused(f"the XML references external resources ({system_id or public_id}); refusing it")

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        depth = len(self._path)
        self._path.append(tag)
        if self._build:
            el = ET.SubElement(self._build[-1], tag, attrs)
            self._build.append(el)
            self._text = []
            return
        if depth == 0:
            self.on_net(tag, attrs)
        elif depth == 1:
            if tag in ("layers", "edges"):
                flag = "seen_layers" if tag == "layers" else "seen_edges"
                if getattr(self, flag):
                    raise XmlStructureError(f"the <net> has two <{tag}> elements; refusing to guess which one counts")
                setattr(self, flag, True)
            elif tag == "rt_info":
                if self.rt_info is not None:
                    raise XmlStructureError("the <net> has two <rt_info> elements")
                self.rt_info = ET.Element(tag, attrs)
                self._build.append(self.rt_info)
        elif depth == 2 and self._path[1] == "layers" and tag == "layer":
            self._build.append(ET.Element(tag, attrs))
            self._text = []
        elif depth == 2 and self._path[1] == "edges" and tag == "edge":
            self.on_edge(attrs)

    def _end(self, tag: str) -> None:
        self._path.pop()
        if not self._build:
            return
        el = self._build.pop()
        if self._text:
            if len(el) == 0:
                el.text = "".join(self._text)
            self._text = []
        if not self._build and el.tag == "layer":
            self.on_layer(el)

    def _chars(self, text: str) -> None:
        # Only an element's own text matters (a <dim>'s value); whitespace between tags is dropped.
        if self._build and not text.isspace():
            self._text.append(text)
