"""``opforge opcheck TARGET``: the command line of :mod:`opforge.testing.opcheck`."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(sub: Any) -> None:
    so = sub.add_parser(
        "opcheck", help="check a plugin's ops on every available device against their reference",
        description="For every op TARGET provides x every available device: shapes against shape inference, "
                    "values against the op's reference (f32, f16 and the op's other types, ranks 0-6, dynamic "
                    "shapes), attributes through IR, and that the device ran the plugin's own kernel. Each "
                    "device runs in a child process, so a crashing kernel is reported, not fatal. Exit status 1 "
                    "when anything fails.")
    so.add_argument("target", help="a distribution (opforge-acme-softclip), a plugin name, or an op opset::Type")
    so.add_argument("-d", "--device", action="append", help="check only this device (repeatable)")
    so.add_argument("--timeout", type=float, default=600.0, help="seconds per device process (default 600)")
    so.add_argument("--extension", action="append",
                    help="a module or .py file of hook implementations to load first (a plugin not installed)")
    so.add_argument("--json", action="store_true", help="print the report as JSON")
    so.set_defaults(func=_opcheck)


def _opcheck(args: argparse.Namespace) -> int:
    from opforge.testing.opcheck import run_opcheck

    report = run_opcheck(args.target, args.device, timeout=args.timeout, extensions=args.extension)
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        print(report.summary())
        if report.ok:
            for line in _passed_lines(report):
                print(line)
    return 0 if report.ok else 1


def _passed_lines(report: Any) -> list[str]:
    by: dict[tuple[str, str], list[str]] = {}
    for r in report.results:
        if r.status == "passed":
            by.setdefault((r.op, r.device), []).append(f"{r.dtype}{r.shape}")
    return [f"  ok: {op} on {dev}: {len(v)} case(s)" for (op, dev), v in by.items()]
