"""Frontends (model-format readers) and the frontend-extension API."""

from opforge.frontend.base import ConversionOptions, Frontend, ModelSource
from opforge.frontend.convert import convert_model, find_frontend
from opforge.frontend.extensions import (
    STANDARD_PRIORITY,
    ConversionExtension,
    ExtensionSet,
    ExtractorExtension,
    FrontendExtension,
    FrontExtractorOp,
    Handler,
    MappingFile,
    OpExtension,
    load_mapping_file,
    normalize_domain,
)
from opforge.frontend.framework_node import FrameworkNode
from opforge.frontend.node_context import GraphBuilder, NodeContext

__all__ = [
    "STANDARD_PRIORITY", "ConversionExtension", "ConversionOptions", "ExtensionSet", "ExtractorExtension",
    "FrameworkNode", "FrontExtractorOp", "Frontend", "FrontendExtension", "GraphBuilder", "Handler",
    "MappingFile", "ModelSource", "NodeContext", "OpExtension", "convert_model", "find_frontend",
    "load_mapping_file", "normalize_domain",
]
