"""A real two-node Ray cluster (Ray's own ``ray.cluster_utils.Cluster``: two raylets on this
machine, one CPU each, on the loopback address), started once and shared by every test that
asks for it: starting Ray costs seconds, so the tests share one cluster."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Ray binds its cluster to the machine's address and rewrites 127.0.0.1 to it; with this switch
# (Ray's single-machine mode, read when ray is imported, inherited by every process it starts)
# it stays on the loopback address: nothing of the tests' cluster is reachable from outside.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

# --import-mode=importlib keeps this folder off sys.path: make the model helpers importable.
if "opforge_ray_test_models" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("opforge_ray_test_models", Path(__file__).with_name("models.py"))
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["opforge_ray_test_models"] = _module
    _spec.loader.exec_module(_module)

#: why a test that needs Ray is skipped, or None when Ray is usable
RAY_MISSING = None if importlib.util.find_spec("ray") else "ray is not installed (pip install 'ray[data,serve]')"


_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that start a Ray instance of their own (``slow``) run only when asked for
    (``-m slow``); the default run shares the one cluster below."""
    if config.getoption("markexpr", ""):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow")
    for item in items:
        if "slow" in item.keywords and _HERE in Path(str(item.fspath)).parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Any]:
    """Every module using it carries ``pytestmark = pytest.mark.xdist_group("ray_cluster")``, so
    under ``pytest -n 2 --dist loadgroup`` one xdist worker runs them all on one cluster."""
    if RAY_MISSING:
        pytest.skip(RAY_MISSING)
    import ray
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    c.add_node(num_cpus=1)
    ray.init(address=c.address, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield c
    finally:
        ray.shutdown()
        c.shutdown()
