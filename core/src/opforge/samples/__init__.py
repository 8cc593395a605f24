"""The bundled sample model of the main job (``opforge demo``)."""

from __future__ import annotations

from pathlib import Path

SAMPLE_ONNX = Path(__file__).with_name("sample_custom_op.onnx")
#: the ONNX domain and op type of the custom op inside the sample (provided by the
#: opforge-template-extension plugin)
CUSTOM_DOMAIN = "org.opforge.template"
CUSTOM_OP = "Identity"
