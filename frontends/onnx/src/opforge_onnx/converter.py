"""ONNX GraphProto -> opforge Model.

Every node goes through the same lookup a third party's extension does
(:class:`opforge.frontend.ExtensionSet`): mapping file, user extensions, plugin extensions,
extractors, then the standard translators this package registers as ConversionExtensions.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, GraphProto, NodeProto
from opforge.errors import (
    ConversionError,
    ModelFormatError,
    ModelValidationError,
    OpforgeError,
    UnsupportedOpError,
)
from opforge.frontend.base import ConversionOptions
from opforge.frontend.extensions import ExtensionSet, Handler, normalize_domain, normalize_outputs
from opforge.frontend.framework_node import FrameworkNode
from opforge.frontend.node_context import GraphBuilder, NodeContext
from opforge.graph import Model, Node, Output
from opforge.plugins.manager import PluginSystem
from opforge.shape import PartialShape
from opforge.untrusted_text import identifier

from opforge_onnx.loader import TYPE_TO_ONNX, TensorReader, decode_type
from opforge_onnx.validation import MAX_OPSET_VERSION, check_graphs, check_opset_imports, check_text

FRAMEWORK = "onnx"

#: deeper If/Loop/Scan nesting than this is refused (malicious models nest thousands deep)
MAX_GRAPH_DEPTH = 64


class SubgraphConverter:
    """Handed to translators of If/Loop/Scan (``ctx.extra["subgraph"]``): converts a body graph
    inline, with its inputs bound to given ports and outer-scope names visible."""

    def __init__(self, conv: OnnxConverter, scope: Mapping[str, Output], depth: int) -> None:
        self._conv = conv
        self._scope = scope
        self._depth = depth

    def __call__(self, graph: GraphProto, inputs: Sequence[Output], prefix: str) -> list[Output]:
        if self._depth + 1 > MAX_GRAPH_DEPTH:
            raise ModelValidationError(
                f"{self._conv.label}: subgraph nesting depth exceeds {MAX_GRAPH_DEPTH}"
            )
        if len(inputs) != len(graph.input):
            raise ConversionError(
                f"{self._conv.label}: subgraph '{graph.name}' takes {len(graph.input)} inputs, got {len(inputs)}"
            )
        values: collections.ChainMap[str, Output] = collections.ChainMap({}, dict(self._scope))
        for t in graph.initializer:
            values.maps[0][t.name] = self._conv.builder.const(
                self._conv.reader.to_array(t), None, f"{prefix}{t.name}").output(0)
        for vi, port in zip(graph.input, inputs):
            values.maps[0][vi.name] = port
        return self._conv.convert_nodes(graph, values, self._depth + 1, prefix)


class OnnxConverter:
    def __init__(self, model: onnx.ModelProto, label: str, base_dir: Path | None, plugins: PluginSystem,
                 options: ConversionOptions) -> None:
        check_text(model, label)  # first: everything below and every other check reads names
        self.model = model
        self.label = label
        self.plugins = plugins
        self.options = options
        self.reader = TensorReader(label, base_dir)
        self.opsets: dict[str, int] = {}
        for imp in model.opset_import:
            self.opsets[normalize_domain(FRAMEWORK, imp.domain)] = int(imp.version)
        self.extensions = ExtensionSet(FRAMEWORK, plugins, options.extensions)
        self.builder = GraphBuilder(plugins.ops)
        self.providers: dict[str, str] = {}
        self.local_functions = {(normalize_domain(FRAMEWORK, f.domain), f.name): f for f in model.functions}

    # --- unsupported ops -----------------------------------------------------------------------
    def _walk(self, graph: GraphProto, depth: int = 0) -> list[NodeProto]:
        if depth > MAX_GRAPH_DEPTH:
            raise ModelValidationError(f"{self.label}: subgraph nesting depth exceeds {MAX_GRAPH_DEPTH}")
        out: list[NodeProto] = []
        for n in graph.node:
            out.append(n)
            for a in n.attribute:
                if a.type == AttributeProto.GRAPH:
                    out.extend(self._walk(a.g, depth + 1))
                elif a.type == AttributeProto.GRAPHS:
                    for g in a.graphs:
                        out.extend(self._walk(g, depth + 1))
        return out

    def _schema(self, op_type: str, dom: str, opset: int | None) -> Any:
        if opset is None:
            return None
        if not (isinstance(op_type, str) and isinstance(dom, str) and 1 <= opset <= MAX_OPSET_VERSION):
            # validation.py refuses such files before conversion; this keeps a bare TypeError
            # from onnx.defs' C signature out of any path that skips it (a translator's own call)
            raise ModelFormatError(
                f"{self.label}: cannot look up op {op_type!r} of domain {dom!r} at opset version {opset}: "
                f"op types and domains must be UTF-8 text and versions 1..{MAX_OPSET_VERSION}"
            )
        try:
            return onnx.defs.get_schema(op_type, opset, dom)
        except onnx.defs.SchemaError:
            return None

    def has_function(self, op_type: str, dom: str, opset: int | None) -> bool:
        """Whether the op can be expanded into its ONNX function body (or a model-local function)."""
        if (dom, op_type) in self.local_functions:
            return True
        schema = self._schema(op_type, dom, opset)
        return schema is not None and bool(schema.has_function or schema.has_context_dependent_function)

    def function_body(self, n: NodeProto, dom: str, opset: int | None,
                      inputs: Sequence[Output | None]) -> onnx.FunctionProto | None:
        local = self.local_functions.get((dom, n.op_type))
        if local is not None:
            return local
        schema = self._schema(n.op_type, dom, opset)
        if schema is None or opset is None:
            return None
        fn = onnx.FunctionProto()
        if schema.has_function:
            versions = [v for v in schema.function_opset_versions if v <= opset] or [schema.since_version]
            fn.ParseFromString(schema.get_function_with_opset_version(max(versions)))
            return fn
        if schema.has_context_dependent_function:
            versions = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
            types = []
            for port in inputs:
                if port is None:
                    types.append(onnx.TypeProto().SerializeToString())
                    continue
                ps = port.partial_shape
                dims = None if ps.rank is None else [d if d is not None else "?" for d in ps.dims]
                code = TYPE_TO_ONNX.get(port.element_type, 0)
                types.append(onnx.helper.make_tensor_type_proto(code, dims).SerializeToString())
            body = schema.get_context_dependent_function_with_opset_version(
                max(versions) if versions else schema.since_version, n.SerializeToString(), types)
            if not body:
                return None
            fn.ParseFromString(body)
            return fn
        return None

    def expand_function(self, n: NodeProto, fn: onnx.FunctionProto, name: str, inputs: Sequence[Output | None],
                        depth: int) -> list[Output | None]:
        """Inline a function body: the node's inputs and attributes bound to the function's."""
        if depth + 1 > MAX_GRAPH_DEPTH:
            raise ModelValidationError(f"{self.label}: function nesting depth exceeds {MAX_GRAPH_DEPTH}")
        tag = f"{name}/"
        values: dict[str, Output] = {}
        rename: dict[str, str] = {}
        for i, fname in enumerate(fn.input):
            port = inputs[i] if i < len(inputs) else None
            if port is None:
                rename[fname] = ""
            else:
                rename[fname] = tag + fname
                values[tag + fname] = port
        node_attrs = {a.name: a for a in n.attribute}
        defaults = {a.name: a for a in fn.attribute_proto}
        schema = self._schema(n.op_type, normalize_domain(FRAMEWORK, n.domain), self.opsets.get(
            normalize_domain(FRAMEWORK, n.domain)))
        if schema is not None:
            # Standard ops keep attribute defaults in the schema, not in the function body.
            for aname, adef in schema.attributes.items():
                if aname not in defaults and adef.default_value.type != AttributeProto.UNDEFINED:
                    defaults[aname] = adef.default_value
        fopsets = dict(self.opsets)
        for imp in fn.opset_import:
            fopsets[normalize_domain(FRAMEWORK, imp.domain)] = int(imp.version)
        scope = dict(rename)
        for fnode in fn.node:
            for o in fnode.output:
                if o:
                    scope[o] = tag + o
        for k, fnode in enumerate(fn.node):
            new = NodeProto()
            new.CopyFrom(fnode)
            for a in new.attribute:
                # Subgraphs (If branches) read function-scope names, which are renamed here.
                if a.type == AttributeProto.GRAPH:
                    _rename_graph(a.g, scope)
                elif a.type == AttributeProto.GRAPHS:
                    for g in a.graphs:
                        _rename_graph(g, scope)
            del new.input[:]
            new.input.extend(rename.get(x, tag + x) if x else "" for x in fnode.input)
            del new.output[:]
            new.output.extend(tag + x if x else "" for x in fnode.output)
            renamed = list(new.attribute)
            del new.attribute[:]
            for a in renamed:
                if a.ref_attr_name:
                    src = node_attrs.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
                    if src is None:
                        continue  # an optional attribute the caller did not set
                    b = AttributeProto()
                    b.CopyFrom(src)
                    b.name = a.name
                    new.attribute.append(b)
                else:
                    new.attribute.append(a)
            new.name = fnode.name or f"{fnode.op_type}_{k}"
            self.convert_node(new, k, values, depth + 1, tag, fopsets)
        return [values.get(tag + o) for o in fn.output]

    def check_supported(self) -> None:
        missing: dict[tuple[str, str], list[str]] = {}
        for n in self._walk(self.model.graph):
            dom = normalize_domain(FRAMEWORK, n.domain)
            if self.extensions.find(dom, n.op_type) is None and not self.has_function(
                    n.op_type, dom, self.opsets.get(dom)):
                missing.setdefault((dom, n.op_type), []).append(n.name or (n.output[0] if n.output else "?"))
        if not missing or self.options.allow_unsupported:
            return
        lines = []
        for (dom, op), names in sorted(missing.items()):
            ver = self.opsets.get(dom)
            shown = ", ".join(repr(x) for x in names[:10]) + (f", ... ({len(names) - 10} more)" if len(names) > 10 else "")
            lines.append(
                f"  - {dom + '::' if dom else ''}{op} (domain '{dom or 'ai.onnx'}'"
                f"{f', opset {ver}' if ver is not None else ''}): {len(names)} node(s): {shown}"
            )
        dom0, op0 = sorted(missing)[0]
        # Names from the file go into suggested code only when they are plain identifiers.
        op0 = identifier(op0, "<op type>")
        dom_arg = f', domain="{identifier(dom0, "<domain>")}"' if dom0 else ""
        known = [d for d in self.extensions.known_domains() if d]
        raise UnsupportedOpError(
            f"{self.label}: {len(missing)} op type(s) have no converter registered:\n" + "\n".join(lines)
            + "\nTo convert them, pass an extension, e.g. "
            f'convert_model(..., extension=[OpExtension("<opforge op>", "{op0}", framework="onnx"{dom_arg})]) '
            f'or ConversionExtension("{op0}", fn, framework="onnx"{dom_arg}); or install a plugin that '
            "registers one (opforge_register_conversion_extensions); or list them in a CustomLayersMapping.xml "
            f'(<CustomLayer NativeType="{dom0 + "::" if dom0 else ""}{op0}" hasParam="true"/>, given as extension=) '
            "to run them through ONNX Runtime; or pass allow_unsupported=True "
            "(--allow-unsupported) to keep them as placeholder nodes."
            + (f" Custom domains with extensions installed: {', '.join(known)}." if known else "")
        )

    # --- conversion ----------------------------------------------------------------------------
    def convert(self) -> Model:
        # Before anything is built: a duplicate producer or opset 99 must not convert at all.
        check_opset_imports(self.model, self.label)
        check_graphs(self.model, self.label, self.reader.limits)
        self.check_supported()
        graph = self.model.graph
        values: dict[str, Output] = {}
        init_names = set()
        for t in graph.initializer:
            arr = self.reader.to_array(t)
            c = self.builder.const(arr, None, t.name or "initializer")
            c.output(0).set_names([t.name])
            values[t.name] = c.output(0)
            init_names.add(t.name)
        for st in graph.sparse_initializer:
            arr = self.sparse_to_array(st)
            name = st.values.name
            c = self.builder.const(arr, None, name)
            c.output(0).set_names([name])
            values[name] = c.output(0)
            init_names.add(name)
        params: list[Node] = []
        graph_inputs = [vi for vi in graph.input if vi.name not in init_names]
        known_inputs = {vi.name for vi in graph_inputs}
        unknown = sorted(set(self.options.input_shapes) - known_inputs)
        if unknown:
            raise ModelValidationError(
                f"{self.label}: input shape given for {', '.join(repr(u) for u in unknown)}, which the model "
                f"does not have; its inputs: {', '.join(repr(n) for n in known_inputs) or 'none'}"
            )
        for vi in graph_inputs:
            et, shape = self.value_info_type(vi)
            if vi.name in self.options.input_shapes:
                shape = PartialShape(self.options.input_shapes[vi.name])
            p = Node.create("Parameter", [], {"element_type": et, "shape": shape},
                            name=self.builder.unique_name(vi.name), registry=self.plugins.ops)
            p.output(0).set_names([vi.name])
            values[vi.name] = p.output(0)
            params.append(p)
        outs = self.convert_nodes(graph, values, 0, "")
        results = []
        for vi, port in zip(graph.output, outs):
            r = self.builder.op("Result", [port], {}, f"{vi.name}/sink_port_0")
            if vi.name not in port.names:
                port.add_names([vi.name])
            results.append(r)
        model = Model(results, params, name=graph.name or (Path(self.label).stem if self.label else "model"))
        model.rt_info["framework"] = FRAMEWORK
        model.rt_info["conversion_providers"] = dict(self.providers)
        return model

    def value_info_type(self, vi: onnx.ValueInfoProto) -> tuple[Any, PartialShape]:
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise UnsupportedOpError(
                f"{self.label}: input '{vi.name}' is a {vi.type.WhichOneof('value') or 'untyped'} value; "
                "opforge supports tensor inputs only"
            )
        et = decode_type(tt.elem_type, f"{self.label}: input '{vi.name}'")
        if not tt.HasField("shape"):
            return et, PartialShape.dynamic()
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        # Some exporters write -1 for a dynamic dimension: it reads as dynamic, as before.
        dims = [None if d is not None and d < 0 else d for d in dims]
        static = [d for d in dims if d is not None]
        # As for an IR Parameter: rank, dimensions and the bytes of the static part are bounded.
        limits = self.reader.limits
        limits.check("MAX_TENSOR_RANK", len(dims), f"{self.label}: input '{vi.name}': shape rank")
        for d in static:
            limits.check("MAX_DIMENSION", d, f"{self.label}: input '{vi.name}': dimension")
        limits.check_bytes("MAX_TENSOR_BYTES", math.prod(static) * et.np.itemsize,
                           f"{self.label}: input '{vi.name}': shape {dims}")
        return et, PartialShape(dims)

    def sparse_to_array(self, st: onnx.SparseTensorProto) -> np.ndarray:
        name = st.values.name or "<unnamed sparse tensor>"
        where = f"{self.label}: sparse tensor '{name}'"
        dims = [int(d) for d in st.dims]
        if any(d < 0 for d in dims):
            raise ModelFormatError(f"{where}: negative dimension in its dense shape {dims}")
        vals = self.reader.to_array(st.values, "sparse values")
        # A few bytes of values can declare a dense shape of gigabytes: check before np.zeros.
        count = self.reader.limits.check_shape(dims, vals.dtype.itemsize, f"{where}: dense form")
        self.reader.total_bytes += count * vals.dtype.itemsize
        self.reader.limits.check_bytes("MAX_WEIGHTS_BYTES", self.reader.total_bytes,
                                       f"{where}: the weights read so far with its dense form")
        idx = self.reader.to_array(st.indices, "sparse indices").astype(np.int64)
        nnz = vals.size
        if vals.ndim != 1:
            raise ModelFormatError(f"{where}: values must be 1-D, got shape {list(vals.shape)}")
        if idx.ndim == 1:
            if idx.shape[0] != nnz:
                raise ModelFormatError(f"{where}: {idx.shape[0]} linear indices for {nnz} values")
            lin = idx
        elif idx.ndim == 2 and idx.shape == (nnz, len(dims)):
            bad = (idx < 0) | (idx >= np.asarray(dims, dtype=np.int64))
            if bad.any():
                raise ModelValidationError(f"{where}: has indices out of range of its shape {dims}")
            lin = np.ravel_multi_index(tuple(idx.T), dims) if idx.size else idx.reshape(-1)
        else:
            raise ModelFormatError(
                f"{where}: indices of shape {list(idx.shape)} fit neither [{nnz}] nor [{nnz}, {len(dims)}]"
            )
        if lin.size and (lin.min() < 0 or lin.max() >= count):
            raise ModelValidationError(f"{where}: has indices out of range of its shape {dims}")
        dense = np.zeros(dims, dtype=vals.dtype)
        flat = dense.reshape(-1)
        flat[lin] = vals.reshape(-1)
        return dense

    def decode_attribute(self, a: AttributeProto, node_label: str) -> Any:
        t = a.type
        if t == AttributeProto.FLOAT:
            return float(a.f)
        if t == AttributeProto.INT:
            return int(a.i)
        if t == AttributeProto.STRING:
            return a.s.decode("utf-8", errors="replace")
        if t == AttributeProto.TENSOR:
            return self.reader.to_array(a.t, f"{node_label} attribute '{a.name}'")
        if t == AttributeProto.GRAPH:
            return a.g
        if t == AttributeProto.FLOATS:
            return [float(x) for x in a.floats]
        if t == AttributeProto.INTS:
            return [int(x) for x in a.ints]
        if t == AttributeProto.STRINGS:
            return [s.decode("utf-8", errors="replace") for s in a.strings]
        if t == AttributeProto.TENSORS:
            return [self.reader.to_array(x, f"{node_label} attribute '{a.name}'") for x in a.tensors]
        if t == AttributeProto.GRAPHS:
            return list(a.graphs)
        if t == AttributeProto.SPARSE_TENSOR:
            return self.sparse_to_array(a.sparse_tensor)
        return a

    def convert_nodes(self, graph: GraphProto, values: Any, depth: int, prefix: str) -> list[Output]:
        """Convert ``graph``'s nodes into ``values`` (name -> port); returns its outputs' ports."""
        for k, n in enumerate(graph.node):
            self.convert_node(n, k, values, depth, prefix)
        outs = []
        for vi in graph.output:
            if vi.name not in values:
                raise ModelValidationError(
                    f"{self.label}: graph output '{vi.name}' is produced by no node, input or initializer"
                )
            outs.append(values[vi.name])
        return outs

    def convert_node(self, n: NodeProto, k: int, values: Any, depth: int, prefix: str,
                     opsets: Mapping[str, int] | None = None) -> None:
        dom = normalize_domain(FRAMEWORK, n.domain)
        opsets = self.opsets if opsets is None else opsets
        base_name = n.name or (n.output[0] if n.output and n.output[0] else f"{n.op_type}_{k}")
        name = f"{prefix}{base_name}"
        inputs: list[Output | None] = []
        for i, x in enumerate(n.input):
            if not x:
                inputs.append(None)
                continue
            if x not in values:
                raise ModelValidationError(
                    f"{self.label}: node '{name}' ({n.op_type}) input {i} reads '{x}', which no earlier node, "
                    "graph input or initializer produces (nodes must be in topological order)"
                )
            inputs.append(values[x])
        while inputs and inputs[-1] is None:
            inputs.pop()  # trailing empty optional inputs are the same as absent ones
        opset = opsets.get(dom)
        if opset is None and dom == "":
            raise ModelValidationError(
                f"{self.label}: node '{name}' ({n.op_type}) is in the default ONNX domain, but the model "
                "imports no version of it (opset_import)"
            )
        label = f"node '{name}' ({n.op_type})"
        attrs = {a.name: self.decode_attribute(a, f"{self.label}: {label}") for a in n.attribute}
        ctx = NodeContext(
            framework=FRAMEWORK, op_type=n.op_type, domain=dom, name=name, inputs=inputs,
            attributes=attrs, builder=self.builder, output_names=list(n.output), opset_version=opset,
            type_decoder=decode_type, source=self.label,
            extra={"subgraph": SubgraphConverter(self, values, depth), "node_proto": n},
        )
        handler = self.extensions.find(dom, n.op_type)
        outs: list[Output | None]
        fn = self.function_body(n, dom, opset, inputs) if handler is None else None
        if fn is not None:
            # No translator, but ONNX defines the op as a function of other ops: inline it.
            try:
                outs = self.expand_function(n, fn, name, inputs, depth)
            except OpforgeError as err:
                raise type(err)(f"{ctx.label} (expanded from its ONNX function body): {err}") from err
            self.providers[f"{dom + '::' if dom else ''}{n.op_type}"] = "ONNX function body"
        elif handler is None:
            if not self.options.allow_unsupported:
                # Only ops inside inlined function bodies get here: the model's own were checked.
                raise UnsupportedOpError(
                    f"{ctx.label}: no converter is registered for this op; add an extension for it "
                    "(ConversionExtension / OpExtension) or pass allow_unsupported=True"
                )
            outs = self._placeholder(ctx)
        else:
            try:
                outs = normalize_outputs(handler.extension.convert(ctx), ctx, handler)
            except OpforgeError as err:
                if self.options.allow_unsupported and self._reads_placeholder(inputs):
                    # Downstream of a placeholder nothing is known about types and shapes;
                    # keep this op as a placeholder too so the rest of the model still converts.
                    outs = self._placeholder(ctx)
                else:
                    raise self._wrap(err, ctx, handler) from err
            except Exception as err:
                raise ConversionError(
                    f"{ctx.label}: {handler.extension.describe()} ({handler.provider}) failed: "
                    f"{type(err).__name__}: {err}"
                ) from err
            self.providers[f"{dom + '::' if dom else ''}{n.op_type}"] = handler.provider
        for i, out_name in enumerate(n.output):
            if not out_name:
                continue
            port = outs[i] if i < len(outs) else None
            if port is None:
                continue  # an output the translator does not produce; reading it fails below
            if depth == 0:  # subgraph tensors are inlined copies; only top-level names are public
                port.add_names([out_name])
            values[out_name] = port

    def _wrap(self, err: OpforgeError, ctx: NodeContext, handler: Handler) -> OpforgeError:
        msg = str(err)
        if ctx.label in msg:
            return err
        who = "" if handler.standard else f" [{handler.extension.describe()}, {handler.provider}]"
        try:
            return type(err)(f"{ctx.label}{who}: {msg}")
        except TypeError:
            return ConversionError(f"{ctx.label}{who}: {msg}")

    @staticmethod
    def _reads_placeholder(inputs: Sequence[Output | None]) -> bool:
        return any(i is not None and i.node.type_name == "FrameworkNode" for i in inputs)

    def _placeholder(self, ctx: NodeContext) -> list[Output | None]:
        plain = {k: v for k, v in ctx.get_attributes().items()
                 if isinstance(v, (int, float, str, list, np.ndarray))}
        node = ctx.op(FrameworkNode, *ctx.get_inputs(), framework=FRAMEWORK, op_type=ctx.op_type,
                      domain=ctx.domain, num_outputs=max(len(ctx.output_names), 1), attributes=plain)
        self.providers[f"{ctx.domain + '::' if ctx.domain else ''}{ctx.op_type}"] = "placeholder (unsupported)"
        return list(node.outputs())


def _rename_graph(g: GraphProto, mapping: Mapping[str, str], depth: int = 0) -> None:
    """Rewrite references to outer-scope names inside a subgraph (not its own inputs/outputs)."""
    if depth > MAX_GRAPH_DEPTH:
        raise ModelValidationError(f"subgraph nesting depth exceeds {MAX_GRAPH_DEPTH}")
    local = {vi.name for vi in g.input} | {t.name for t in g.initializer}
    for n in g.node:
        local.update(o for o in n.output if o)
    for n in g.node:
        for i, x in enumerate(n.input):
            if x and x not in local and x in mapping:
                n.input[i] = mapping[x]
        for a in n.attribute:
            if a.type == AttributeProto.GRAPH:
                _rename_graph(a.g, mapping, depth + 1)
            elif a.type == AttributeProto.GRAPHS:
                for sg in a.graphs:
                    _rename_graph(sg, mapping, depth + 1)
    for o in g.output:
        if o.name not in local and o.name in mapping:
            o.name = mapping[o.name]
