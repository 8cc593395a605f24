"""The OpenMP spin count the CPU plugin sets before libgomp loads: by CPU vendor, never over a
wait policy the user chose."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from opforge_cpu._loader import SPIN_COUNT_BY_VENDOR, default_spin_count

AMD = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel name\t: AMD EPYC\n"
INTEL = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel name\t: Intel(R) Xeon(R)\n"


@pytest.mark.parametrize(("cpuinfo", "expected"), [
    (AMD, 1000),
    (INTEL, 300),
    ("processor\t: 0\nvendor_id\t: HygonGenuine\n", SPIN_COUNT_BY_VENDOR["GenuineIntel"]),
    ("", SPIN_COUNT_BY_VENDOR["GenuineIntel"]),  # no /proc/cpuinfo (another OS, a sandbox)
])
def test_spin_count_follows_the_vendor(cpuinfo: str, expected: int) -> None:
    assert default_spin_count(cpuinfo) == expected


def _spin_count_in_child(env_extra: dict[str, str], drop: tuple[str, ...] = ()) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", *drop)}
    env.update(env_extra)
    code = ("import os; from opforge_cpu._loader import load_core; load_core(); "
            "print(os.environ.get('GOMP_SPINCOUNT', '-'))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         check=True)
    return out.stdout.strip()


def test_loading_the_plugin_sets_this_hosts_count() -> None:
    assert _spin_count_in_child({}) == str(default_spin_count())


def test_a_users_spin_count_or_wait_policy_is_kept() -> None:
    assert _spin_count_in_child({"GOMP_SPINCOUNT": "1234"}) == "1234"
    assert _spin_count_in_child({"OMP_WAIT_POLICY": "PASSIVE"}) == "-"
