"""Frontends (model-format readers) and the frontend-extension API."""

from opforge.frontend.base import ConversionOptions, Frontend, ModelSource

__all__ = ["ConversionOptions", "Frontend", "ModelSource"]
