"""Structural checks of an ONNX model that ``onnx.checker`` and ONNX Runtime make and the
conversion itself would not notice.

* **Single static assignment.** Each name is defined once per graph: by a graph input, an
  initializer (which may also be listed as a graph input: its default value) or one node output.
  Converting node by node, a second producer would silently win ("last writer wins"), so a model
  ONNX Runtime refuses would run with different numbers here.
* **Opset imports.** The default domain (``""`` / ``ai.onnx``) and ``ai.onnx.ml`` versions must lie
  in the range the installed ``onnx`` package defines; every version must be positive, and a
  domain may be imported once. ``opset 99`` is a newer (or corrupt) file, not "the newest we
  know".
* **Size.** The number of nodes, subgraphs included, is bounded by ``MAX_NODES``
  (:mod:`opforge.limits`).

Subgraphs (``If``/``Loop``/``Scan`` bodies) are checked the same way, iteratively, so a deep
nesting cannot exhaust the Python stack.
"""

from __future__ import annotations

import onnx
from onnx import AttributeProto, GraphProto
from opforge.errors import ModelFormatError, ModelValidationError
from opforge.limits import Limits

DEFAULT_DOMAINS = ("", "ai.onnx")
ML_DOMAIN = "ai.onnx.ml"


def supported_opsets() -> dict[str, int]:
    """The newest version of each standard domain the installed onnx package defines."""
    newest_ml = max((row[3] for row in onnx.helper.VERSION_TABLE if row[3] is not None), default=1)
    return {"ai.onnx": int(onnx.defs.onnx_opset_version()), ML_DOMAIN: int(newest_ml)}


def check_opset_imports(model: onnx.ModelProto, label: str) -> None:
    _check_imports(model.opset_import, label, "the model")
    for f in model.functions:
        _check_imports(f.opset_import, label, f"local function '{f.domain}::{f.name}'")


def _check_imports(imports: object, label: str, owner: str) -> None:
    newest = supported_opsets()
    seen: dict[str, int] = {}
    for imp in imports:  # type: ignore[attr-defined]
        _utf8(imp.domain, label, f"{owner}: an opset_import domain")
        dom = "ai.onnx" if imp.domain in DEFAULT_DOMAINS else imp.domain
        shown = imp.domain or "'' (ai.onnx)"
        version = int(imp.version)
        if dom in seen and seen[dom] != version:
            raise ModelValidationError(
                f"{label}: {owner} imports domain {shown} twice, with versions {seen[dom]} and {version}"
            )
        seen[dom] = version
        top = newest.get(dom)
        if top is not None and not 1 <= version <= top:
            raise ModelValidationError(
                f"{label}: {owner} imports domain {shown} at opset version {version}, outside the "
                f"supported range 1..{top} (onnx {onnx.__version__}); the file was written for a newer "
                "ONNX, or is corrupt"
            )
        if top is None and version < 1:
            raise ModelValidationError(
                f"{label}: {owner} imports domain {shown} at opset version {version}; versions start at 1"
            )


def check_graphs(model: onnx.ModelProto, label: str, limits: Limits) -> None:
    """SSA and node count of the main graph and every subgraph."""
    max_nodes = limits.get("MAX_NODES")
    total = 0
    for f in model.functions:
        _utf8(f.name, label, "a local function name")
        _utf8(f.domain, label, f"the domain of local function '{f.name}'")
        for k, n in enumerate(f.node):
            for value in (n.op_type, n.domain, n.name, *n.input, *n.output):
                _utf8(value, label, f"node #{k} of local function '{f.name}'")
    stack: list[tuple[GraphProto, str]] = [(model.graph, "main graph")]
    while stack:
        graph, where = stack.pop()
        total += len(graph.node)
        if total > max_nodes:
            limits.check("MAX_NODES", total, f"{label}: node count (subgraphs included)")
        _check_text(graph, label, where)
        _check_ssa(graph, label, where)
        for k, n in enumerate(graph.node):
            node = n.name or f"#{k} ({n.op_type})"
            for a in n.attribute:
                if a.type == AttributeProto.GRAPH:
                    stack.append((a.g, f"subgraph '{a.name}' of node '{node}'"))
                elif a.type == AttributeProto.GRAPHS:
                    stack.extend((g, f"subgraph '{a.name}'[{i}] of node '{node}'") for i, g in enumerate(a.graphs))


def _utf8(value: object, label: str, what: str) -> None:
    # protobuf hands a string field that is not valid UTF-8 over as bytes (ONNX is proto2, which
    # does not validate): every later use of it as a name would fail in some other way.
    if not isinstance(value, str):
        raise ModelFormatError(f"{label}: {what} is not valid UTF-8 text ({bytes(value)[:40]!r})")  # type: ignore[call-overload]


def _check_text(graph: GraphProto, label: str, where: str) -> None:
    """Every name of ``graph`` is text (checked before any of them is used)."""
    for kind, values in (("input", graph.input), ("output", graph.output), ("value_info", graph.value_info)):
        for vi in values:
            _utf8(vi.name, label, f"a graph {kind} name in the {where}")
    for t in graph.initializer:
        _utf8(t.name, label, f"an initializer name in the {where}")
    for k, n in enumerate(graph.node):
        what = f"node #{k} in the {where}"
        for field, value in (("op_type", n.op_type), ("domain", n.domain), ("name", n.name)):
            _utf8(value, label, f"{what}: its {field}")
        for x in [*n.input, *n.output]:
            _utf8(x, label, f"{what}: a tensor name")
        for a in n.attribute:
            _utf8(a.name, label, f"{what}: an attribute name")


def _check_ssa(graph: GraphProto, label: str, where: str) -> None:
    producer: dict[str, str] = {}
    inside = "" if where == "main graph" else f" in {where}"
    for vi in graph.input:
        if vi.name in producer:
            raise ModelValidationError(
                f"{label}: graph input '{vi.name}'{inside} is declared twice; names must be unique "
                "(onnx.checker: single static assignment)"
            )
        producer[vi.name] = "graph input"
    inits: set[str] = set()
    for kind, tensors in (("initializer", graph.initializer),
                          ("sparse initializer", [s.values for s in graph.sparse_initializer])):
        for t in tensors:
            if t.name in inits:
                raise ModelValidationError(
                    f"{label}: {kind} name '{t.name}'{inside} is not unique (another initializer has it)"
                )
            inits.add(t.name)
            # An initializer that is also a graph input is that input's default value (allowed).
            producer.setdefault(t.name, kind)
    for k, n in enumerate(graph.node):
        node = f"node '{n.name}' ({n.op_type})" if n.name else f"node #{k} ({n.op_type})"
        for out in n.output:
            if not out:
                continue  # an omitted optional output
            if out in producer:
                raise ModelValidationError(
                    f"{label}: tensor '{out}'{inside} is produced twice: by {producer[out]} and by {node}; "
                    "each tensor must have exactly one producer (onnx.checker: single static assignment)"
                )
            producer[out] = node
