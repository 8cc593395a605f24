"""``opforge vpu compile kernel.cl -o kernel.bin``: offline compilation, as ``clc`` did for MYRIAD."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="vpu_command", required=True)
    c = sub.add_parser("compile", help="compile MYRIAD OpenCL C into a .bin for this machine's VPU device")
    c.add_argument("source", help="the .cl file")
    c.add_argument("-o", "--output", help="the .bin to write (default: SOURCE with .bin)")
    c.add_argument("-d", "--device", default="VPU", help="the opforge device to compile for (VPU, VPU.1)")
    c.add_argument("--options", default="", help="OpenCL build options (-cl-fast-relaxed-math...)")


def run(args: argparse.Namespace) -> int:
    from opforge.errors import OpforgeError

    from opforge_vpu.binary import compile_file

    src = Path(args.source)
    out = Path(args.output) if args.output else src.with_suffix(".bin")
    try:
        header = compile_file(src, out, args.device, args.options)
    except OpforgeError as err:
        print(f"opforge vpu compile: {err}", file=sys.stderr)
        return 1
    kernels = ", ".join(sorted(header.kernels)) or "none"
    print(f"{out}: {len(header.kernels)} kernel(s) ({kernels}) for {header.device} ({header.platform}, driver "
          f"{header.driver}){'; half mapped onto float (no cl_khr_fp16)' if not header.fp16 else ''}")
    return 0
