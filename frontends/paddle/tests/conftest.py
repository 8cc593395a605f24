"""Fixtures of the Paddle frontend tests (helpers live in paddle_test_utils)."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# --import-mode=importlib does not put test directories on sys.path; the helpers module is
# imported by name from the test modules.
sys.path.insert(0, os.path.dirname(__file__))

from paddle_test_utils import as_list, save_both

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The full-size vision networks (``slow``) run only when asked for (``-m slow``), so the
    default run of these tests stays short."""
    if config.getoption("markexpr", ""):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow")
    for item in items:
        if "slow" in item.keywords and _HERE in Path(str(item.fspath)).parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def paddle() -> Any:
    warnings.filterwarnings("ignore", module="paddle")
    pd = pytest.importorskip("paddle")
    pd.set_device("cpu")
    return pd


@pytest.fixture()
def build(paddle: Any, tmp_path: Path) -> Callable[..., tuple[dict[str, Path], list[np.ndarray], list[np.ndarray]]]:
    """build(net, {name: (shape, dtype)}, inputs) -> (paths by format, inputs, paddle outputs)."""

    def _build(net: Any, specs: dict[str, tuple[list[int], str]], inputs: list[np.ndarray],
               name: str = "model") -> tuple[dict[str, Path], list[np.ndarray], list[np.ndarray]]:
        net.eval()
        with paddle.no_grad():
            ref = as_list(net(*[paddle.to_tensor(x) for x in inputs]))
        in_specs = [paddle.static.InputSpec(shape, dtype, n) for n, (shape, dtype) in specs.items()]
        return save_both(paddle, net, in_specs, tmp_path / name), inputs, ref

    return _build
