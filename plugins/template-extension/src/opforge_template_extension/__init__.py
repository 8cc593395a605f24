"""A template custom-op plugin for opforge (the counterpart of OpenVINO's template extension)."""

from opforge_template_extension.op import TemplateIdentity

__all__ = ["TemplateIdentity"]
