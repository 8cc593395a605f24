"""``opforge query model.onnx -d HETERO:GPU,CPU --dump partition.svg``: the function the core CLI
calls (the sub-command itself lives in ``opforge.cli``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from opforge.errors import OpforgeError
from opforge.graph import Model
from opforge.runtime.core import Core

from opforge_hetero.api import explain
from opforge_hetero.dump import dump_partition


def query_command(core: Core, model_path: str | os.PathLike[str] | Model, device: str,
                  dump_path: str | os.PathLike[str] | None = None, *,
                  config: Mapping[str, Any] | None = None, all_nodes: bool = False,
                  out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Print where each operation of the model would run on ``device`` (a HETERO name or a single
    device) and why; with ``dump_path``, also draw it (``.dot``/``.svg``/``.html``).

    Returns 0 when every operation has a device, 1 when some have none, 2 on an error (the
    message goes to ``err``)."""
    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    try:
        model = model_path if isinstance(model_path, Model) else core.read_model(model_path)
        placement = explain(core, model, device, config)
        print(placement.report(all_nodes=all_nodes), file=stdout)
        if dump_path is not None:
            written = dump_partition(model, placement, dump_path)
            print(f"partition drawn to {written}", file=stdout)
    except (OpforgeError, OSError) as e:
        print(f"error: {e}", file=stderr)
        return 2
    return 1 if placement.unsupported else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``opforge query`` (registered by :mod:`opforge_hetero.plugin`)."""
    parser.add_argument("model")
    parser.add_argument("-d", "--device", required=True, help="a device or HETERO:GPU,CPU")
    parser.add_argument("--dump", help="draw the placement: .svg, .dot or .html")
    parser.add_argument("--all", action="store_true", help="list every node, not only the operations")
    parser.add_argument("--extension", action="append",
                        help="extension to load first: installed plugin name, module path or .py file")


def run(args: argparse.Namespace) -> int:
    """``opforge query``: the placement report of :func:`query_command`, with the extensions
    loaded into a fresh Core first (the model may use their ops)."""
    core = Core()
    for ext in args.extension or []:
        core.add_extension(ext)
    return query_command(core, args.model, args.device, args.dump, all_nodes=args.all)
