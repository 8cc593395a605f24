"""PaddlePaddle frontend for opforge: PIR ``.json`` and legacy ``.pdmodel`` programs + ``.pdiparams``."""

from opforge_paddle.frontend import PaddleFrontend

__all__ = ["PaddleFrontend"]
