"""``opforge extgen new``: the command line of the Model Extension Generator."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from opforge.errors import ExtgenConfigError


def add_parser(sub: Any) -> None:
    se = sub.add_parser("extgen", help="Model Extension Generator: write a plugin package for a custom op")
    esub = se.add_subparsers(dest="extgen_command", required=True)
    sn = esub.add_parser(
        "new", help="generate a package (interactive questions, or --config FILE.json)",
        description="Generate an installable opforge plugin package for one custom op: op class, ONNX/Paddle "
                    "mappings, device kernels (CPU C++ or NumPy, GPU OpenCL, VPU MVCL), tests and a README. "
                    "Without --config the questions are asked on the terminal (or read from stdin).")
    sn.add_argument("--config", help="a JSON configuration (silent mode); see docs/plugins.md")
    sn.add_argument("--output-dir", default=".", help="folder the package folder is created in (default: here)")
    sn.add_argument("--force", action="store_true", help="write into an existing, non-empty package folder")
    sn.set_defaults(func=_new)


def _new(args: argparse.Namespace) -> int:
    from opforge.extgen.config import parse_config
    from opforge.extgen.render import INSTALL_COMMAND, write_package

    if args.config:
        path = Path(args.config)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise ExtgenConfigError(f"--config {path}: cannot read it: {err.strerror}") from None
        except json.JSONDecodeError as err:
            raise ExtgenConfigError(f"--config {path}: not valid JSON: {err}") from None
        spec = parse_config(data, str(path))
    else:
        from opforge.extgen.questions import ask_config

        spec = ask_config()
    root = write_package(spec, args.output_dir, force=args.force)
    print(f"wrote {root} (op {spec.opset}::{spec.op_type}, kernels: {', '.join(spec.devices) or 'none'})")
    print(f"install it into the environment that has opforge:  cd {root} && {INSTALL_COMMAND}")
    print(f"then check it:  opforge opcheck {spec.package}")
    return 0
