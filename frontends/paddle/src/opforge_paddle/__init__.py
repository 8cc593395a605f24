"""PaddlePaddle frontend for opforge: PIR ``.json`` and legacy ``.pdmodel`` programs + ``.pdiparams``."""

from opforge_paddle.context import PaddleNodeContext
from opforge_paddle.frontend import PaddleFrontend

__all__ = ["PaddleFrontend", "PaddleNodeContext"]
