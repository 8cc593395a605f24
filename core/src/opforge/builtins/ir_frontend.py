"""The built-in OpenVINO IR frontend: reads ``.xml`` (+ ``.bin``) files and IR bytes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opforge.frontend.base import ConversionOptions, Frontend, ModelSource
from opforge.hookspecs import Register, hookimpl
from opforge.ir.reader import read_ir

if TYPE_CHECKING:
    from opforge.graph import Model
    from opforge.plugins.manager import PluginSystem

# What IR bytes start with (after an optional UTF-8 byte-order mark and whitespace).
_IR_MAGIC = (b"<?xml", b"<net")


class IrFrontend(Frontend):
    """Reads OpenVINO IR v10/v11. Weights: ``source.weights_path`` or ``source.weights``, else
    the ``.bin`` beside the ``.xml``."""

    name = "ir"
    suffixes = (".xml",)

    def supports(self, source: ModelSource) -> bool:
        try:
            if source.path is not None:
                return source.suffix() == ".xml"
            if source.data is not None:
                head = source.data[:64].lstrip(b"\xef\xbb\xbf").lstrip()
                return head.startswith(_IR_MAGIC)
        except Exception:  # noqa: BLE001 - supports() must never raise; "no" lets other frontends try
            return False
        return False

    def read(self, source: ModelSource, plugins: PluginSystem, options: ConversionOptions) -> Model:
        weights = source.weights_path if source.weights_path is not None else source.weights
        xml = source.path if source.path is not None else source.data
        if xml is None:
            from opforge.errors import ModelFormatError

            raise ModelFormatError("the IR frontend was given neither a path nor bytes to read")
        model = read_ir(xml, weights, plugins)
        if options.input_shapes:
            shapes: dict[str | int, Any] = dict(options.input_shapes.items())
            model.reshape(shapes)
        return model


@hookimpl
def opforge_register_frontends(register: Register) -> None:
    register(IrFrontend())
