"""PaddleProgram (+ parameters) -> opforge Model.

Every op goes through the lookup a third party's extension does
(:class:`opforge.frontend.ExtensionSet`): mapping file, user extensions, plugin extensions,
extractors, then the standard translators this package registers as ConversionExtensions at
STANDARD_PRIORITY.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from opforge.errors import ConversionError, ModelValidationError, OpforgeError, UnsupportedOpError
from opforge.frontend.base import ConversionOptions
from opforge.frontend.extensions import ExtensionSet, Handler, normalize_outputs
from opforge.frontend.framework_node import FrameworkNode
from opforge.frontend.node_context import GraphBuilder, NodeContext
from opforge.graph import Model, Node, Output
from opforge.plugins.manager import PluginSystem
from opforge.shape import PartialShape
from opforge.untrusted_text import identifier

from opforge_paddle.program import PaddleOp, PaddleProgram

FRAMEWORK = "paddle"


class PaddleConverter:
    def __init__(self, program: PaddleProgram, weights: Mapping[str, np.ndarray], plugins: PluginSystem,
                 options: ConversionOptions) -> None:
        self.program = program
        self.weights = weights
        self.label = program.label
        self.plugins = plugins
        self.options = options
        self.extensions = ExtensionSet(FRAMEWORK, plugins, options.extensions)
        self.builder = GraphBuilder(plugins.ops)
        self.values: dict[str, Output] = {}
        self.providers: dict[str, str] = {}

    # --- unsupported ops -----------------------------------------------------------------------
    def check_supported(self) -> None:
        missing: dict[str, list[str]] = collections.defaultdict(list)
        for op in self.program.ops:
            if self.extensions.find("", op.type) is None:
                missing[op.type].append(op.name)
        if not missing or self.options.allow_unsupported:
            return
        lines = []
        for op_type, names in sorted(missing.items()):
            shown = ", ".join(repr(x) for x in names[:10]) + (
                f", ... ({len(names) - 10} more)" if len(names) > 10 else "")
            lines.append(f"  - {op_type}: {len(names)} node(s): {shown}")
        # A name from the file goes into suggested code only when it is a plain identifier.
        first = identifier(sorted(missing)[0], "<op type>")
        raise UnsupportedOpError(
            f"{self.label}: {len(missing)} op type(s) have no converter registered:\n" + "\n".join(lines)
            + "\nTo convert them, pass an extension, e.g. "
            f'convert_model(..., extension=[OpExtension("<opforge op>", "{first}", framework="paddle", '
            f'inputs=["X"], outputs=["Out"])]) or ConversionExtension("{first}", fn, framework="paddle"); '
            "or install a plugin that registers one (opforge_register_conversion_extensions); or list them in a "
            f'CustomLayersMapping.xml (<CustomLayer NativeType="{first}" hasParam="true"/>, given as extension=) '
            "to run them through paddle; or pass "
            "allow_unsupported=True (--allow-unsupported) to keep them as placeholder nodes."
        )

    # --- conversion ----------------------------------------------------------------------------
    def convert(self) -> Model:
        self.check_supported()
        params = self._parameters()
        for op in self.program.ops:
            self.convert_op(op)
        results = []
        for var, out_name in self.program.fetches:
            port = self._value(var, f"model output '{out_name}'")
            r = self.builder.op("Result", [port], {}, f"{out_name}/sink_port_0")
            port.add_names([out_name])
            results.append(r)
        if not results:
            raise ModelValidationError(f"{self.label}: the program fetches no outputs")
        name = Path(self.label).stem if self.label and not self.label.startswith("<") else "model"
        model = Model(results, params, name=name)
        model.rt_info["framework"] = FRAMEWORK
        model.rt_info["paddle_format"] = self.program.format
        model.rt_info["conversion_providers"] = dict(self.providers)
        return model

    def _parameters(self) -> list[Node]:
        known = set(self.program.feeds)
        unknown = sorted(set(self.options.input_shapes) - known)
        if unknown:
            raise ModelValidationError(
                f"{self.label}: input shape given for {', '.join(repr(u) for u in unknown)}, which the model does "
                f"not have; its inputs: {', '.join(repr(n) for n in self.program.feeds) or 'none'}"
            )
        params = []
        for name in self.program.feeds:
            var = self.program.vars.get(name)
            if var is None or var.dtype is None:
                raise ModelValidationError(f"{self.label}: model input '{name}' has no tensor type in the program")
            if name in self.options.input_shapes:
                shape = PartialShape(self.options.input_shapes[name])
            elif var.shape is None:
                shape = PartialShape.dynamic()
            else:
                shape = PartialShape([d if d >= 0 else None for d in var.shape])
            p = Node.create("Parameter", [], {"element_type": var.dtype, "shape": shape},
                            name=self.builder.unique_name(name), registry=self.plugins.ops)
            p.output(0).set_names([name])
            self.values[name] = p.output(0)
            params.append(p)
        return params

    def _value(self, var: str, who: str) -> Output:
        port = self.values.get(var)
        if port is not None:
            return port
        if var in self.weights:
            c = self.builder.const(self.weights[var], None, var)
            c.output(0).set_names([var])
            self.values[var] = c.output(0)
            return c.output(0)
        pv = self.program.vars.get(var)
        if pv is not None and pv.persistable:
            raise ModelValidationError(
                f"{self.label}: {who} reads persistable variable '{var}', which the parameters file does not hold"
            )
        raise ModelValidationError(
            f"{self.label}: {who} reads variable '{var}', which no earlier op, feed or parameter produces"
        )

    def context(self, op: PaddleOp) -> NodeContext:
        """The public NodeContext of one op: named inputs and outputs, as any extension sees them."""
        named: dict[str, list[Output | None]] = {}
        for port, vars_ in op.inputs.items():
            named[port] = [self._value(v, f"op '{op.name}' ({op.type}) input '{port}'") if v else None
                           for v in vars_]
        flat = [v for vals in named.values() for v in vals]
        return NodeContext(
            framework=FRAMEWORK, op_type=op.type, domain="", name=op.name, inputs=flat, attributes=op.attrs,
            builder=self.builder, named_inputs=named, named_outputs=op.outputs, source=self.label,
            extra={"paddle_op": op, "format": self.program.format},
        )

    def convert_op(self, op: PaddleOp) -> None:
        ctx = self.context(op)
        handler = self.extensions.find("", op.type)
        outs: list[Output | None]
        if handler is None:
            outs = self._placeholder(ctx, op)
        else:
            try:
                outs = normalize_outputs(handler.extension.convert(ctx), ctx, handler)
            except OpforgeError as err:
                if self.options.allow_unsupported and _reads_placeholder(ctx):
                    outs = self._placeholder(ctx, op)  # nothing is known downstream of a placeholder
                else:
                    raise _wrap(err, ctx, handler) from err
            except Exception as err:
                raise ConversionError(
                    f"{ctx.label}: {handler.extension.describe()} ({handler.provider}) failed: "
                    f"{type(err).__name__}: {err}"
                ) from err
            self.providers[op.type] = handler.provider
        # normalize_outputs lists each port's variables in turn, as op.outputs binds them
        values = iter(outs)
        for vars_ in op.outputs.values():
            for var in vars_:
                value = next(values, None)
                if not var or value is None:
                    continue  # an output the translator does not produce (XShape, Mask, ...)
                value.add_names([var])
                self.values[var] = value

    def _placeholder(self, ctx: NodeContext, op: PaddleOp) -> list[Output | None]:
        plain = {k: v for k, v in ctx.get_attributes().items() if isinstance(v, (int, float, str, list))}
        n_out = sum(len(v) for v in op.outputs.values())
        node = ctx.op(FrameworkNode, *ctx.get_inputs(), framework=FRAMEWORK, op_type=op.type, domain="",
                      num_outputs=max(n_out, 1), attributes=plain)
        self.providers[op.type] = "placeholder (unsupported)"
        return list(node.outputs())


def _reads_placeholder(ctx: NodeContext) -> bool:
    return any(i is not None and i.node.type_name == "FrameworkNode" for i in ctx.get_inputs())


def _wrap(err: OpforgeError, ctx: NodeContext, handler: Handler) -> OpforgeError:
    msg = str(err)
    if ctx.label in msg:
        return err
    who = "" if handler.standard else f" [{handler.extension.describe()}, {handler.provider}]"
    try:
        return type(err)(f"{ctx.label}{who}: {msg}")
    except TypeError:
        return ConversionError(f"{ctx.label}{who}: {msg}")
