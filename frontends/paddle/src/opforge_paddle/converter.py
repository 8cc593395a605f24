"""PaddleProgram (+ parameters) -> opforge Model.

Every op goes through the lookup a third party's extension does
(:class:`opforge.frontend.ExtensionSet`): mapping file, user extensions, plugin extensions,
extractors, then the standard translators this package registers as ConversionExtensions at
STANDARD_PRIORITY.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from opforge.errors import ConversionError, ModelValidationError, OpforgeError, UnsupportedOpError
from opforge.frontend.base import ConversionOptions
from opforge.frontend.extensions import ExtensionSet, Handler
from opforge.frontend.framework_node import FrameworkNode
from opforge.frontend.node_context import GraphBuilder
from opforge.graph import Model, Node, Output
from opforge.plugins.manager import PluginSystem
from opforge.shape import PartialShape

from opforge_paddle.context import FRAMEWORK, PaddleNodeContext
from opforge_paddle.program import PaddleOp, PaddleProgram


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
        first = sorted(missing)[0]
        raise UnsupportedOpError(
            f"{self.label}: {len(missing)} op type(s) have no converter registered:\n" + "\n".join(lines)
            + "\nTo convert them, pass an extension, e.g. "
            f'convert_model(..., extension=[OpExtension("<opforge op>", "{first}", framework="paddle", '
            f'inputs=["X"], outputs=["Out"])]) or ConversionExtension("{first}", fn, framework="paddle"); '
            "or install a plugin that registers one (opforge_register_conversion_extensions); or pass "
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

    def convert_op(self, op: PaddleOp) -> None:
        named: dict[str, list[Output | None]] = {}
        for port, vars_ in op.inputs.items():
            named[port] = [self._value(v, f"op '{op.name}' ({op.type}) input '{port}'") if v else None
                           for v in vars_]
        ctx = PaddleNodeContext(op, named, self.builder, self.label, self.program.format)
        handler = self.extensions.find("", op.type)
        if handler is None:
            outs = self._placeholder(ctx)
        else:
            try:
                outs = paddle_outputs(handler.extension.convert(ctx), ctx, handler)
            except OpforgeError as err:
                if self.options.allow_unsupported and _reads_placeholder(ctx):
                    outs = self._placeholder(ctx)  # nothing is known downstream of a placeholder
                else:
                    raise _wrap(err, ctx, handler) from err
            except Exception as err:
                raise ConversionError(
                    f"{ctx.label}: {handler.extension.describe()} ({handler.provider}) failed: "
                    f"{type(err).__name__}: {err}"
                ) from err
            self.providers[op.type] = handler.provider
        for port, vars_ in op.outputs.items():
            ports = outs.get(port, [])
            for k, var in enumerate(vars_):
                value = ports[k] if k < len(ports) else None
                if not var or value is None:
                    continue  # an output the translator does not produce (XShape, Mask, ...)
                value.add_names([var])
                self.values[var] = value

    def _placeholder(self, ctx: PaddleNodeContext) -> dict[str, list[Output | None]]:
        plain = {k: v for k, v in ctx.get_attributes().items() if isinstance(v, (int, float, str, list))}
        op = ctx.paddle_op
        n_out = sum(len(v) for v in op.outputs.values())
        node = ctx.op(FrameworkNode, *ctx.get_inputs(), framework=FRAMEWORK, op_type=op.type, domain="",
                      num_outputs=max(n_out, 1), attributes=plain)
        self.providers[op.type] = "placeholder (unsupported)"
        outs = iter(node.outputs())
        return {port: [next(outs) for _ in vars_] for port, vars_ in op.outputs.items()}


def _reads_placeholder(ctx: PaddleNodeContext) -> bool:
    return any(i is not None and i.node.type_name == "FrameworkNode" for i in ctx.get_inputs())


def _wrap(err: OpforgeError, ctx: PaddleNodeContext, handler: Handler) -> OpforgeError:
    msg = str(err)
    if ctx.label in msg:
        return err
    who = "" if handler.standard else f" [{handler.extension.describe()}, {handler.provider}]"
    try:
        return type(err)(f"{ctx.label}{who}: {msg}")
    except TypeError:
        return ConversionError(f"{ctx.label}{who}: {msg}")


def _port(v: Any, ctx: PaddleNodeContext, handler: Handler, where: str) -> Output | None:
    if v is None or isinstance(v, Output):
        return v
    if isinstance(v, Node):
        if len(v.output_specs) != 1:
            raise ConversionError(
                f"{handler.extension.describe()} returned node '{v.name}' with {len(v.output_specs)} outputs "
                f"for {where} of {ctx.label}; return node.output(i)"
            )
        return v.output(0)
    raise ConversionError(
        f"{handler.extension.describe()} returned {type(v).__name__} for {where} of {ctx.label}; expected node outputs"
    )


def paddle_outputs(result: Any, ctx: PaddleNodeContext, handler: Handler) -> dict[str, list[Output | None]]:
    """A conversion function's result as ports per named output.

    * a mapping ``{"Out": port or [ports], "XShape": ...}`` -- the Paddle way; every key must be one
      of the op's output ports;
    * a list: for an op with one output port, its variables in order (``split``'s ``Out``);
      otherwise one port per output port, in the model's port order;
    * a single node or port: the first output port.
    """
    names = ctx.get_output_names()
    if isinstance(result, Node):
        result = result.outputs()
    if isinstance(result, Output):
        result = [result]
    if isinstance(result, Mapping):
        out: dict[str, list[Output | None]] = {}
        for key, v in result.items():
            if key not in names:
                raise ConversionError(
                    f"{handler.extension.describe()} returned output '{key}' for {ctx.label}, which has output "
                    f"ports {', '.join(names) or 'none'}"
                )
            vals = list(v) if isinstance(v, (list, tuple)) else [v]
            out[key] = [_port(x, ctx, handler, f"output '{key}'") for x in vals]
        return out
    if not isinstance(result, Sequence) or isinstance(result, (str, bytes)):
        raise ConversionError(
            f"{handler.extension.describe()} returned {type(result).__name__} for {ctx.label}; a conversion "
            "function returns {output name: port(s)} or a list of ports"
        )
    ports = [_port(x, ctx, handler, f"output {k}") for k, x in enumerate(result)]
    if len(names) == 1:
        return {names[0]: ports}
    return {name: [ports[k]] for k, name in enumerate(names) if k < len(ports)}
