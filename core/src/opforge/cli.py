"""The ``opforge`` command: plugins, devices, convert (the Model Optimizer), demo, and the
commands plugins add through ``opforge_register_commands``."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from opforge.errors import OpforgeError, PluginHookError


def _plugins(args: argparse.Namespace) -> int:
    from opforge.plugins import default_plugins

    ps = default_plugins()
    rows = []
    for name in sorted(ps.records):
        rec = ps.records[name]
        if rec.info.builtin and not args.all:
            continue
        row: dict[str, Any] = {
            "name": name,
            "distribution": rec.info.distribution,
            "version": rec.info.version,
            "builtin": rec.info.builtin,
            "status": rec.status,
            "error": rec.error,
            "entry_point": rec.entry_point,
        }
        if rec.status == "loaded":
            row["provides"] = ps.provides(name)
        rows.append(row)
    conflicts = [str(c) for c in ps.conflicts()]
    if args.json:
        print(json.dumps({"plugins": rows, "conflicts": conflicts, "failures": ps.failures}, indent=2))
        return 0
    if not rows:
        print("no plugins installed" + ("" if args.all else " (add --all to show the built-in ones)"))
    for row in rows:
        label = (row["distribution"] and f"{row['distribution']} {row['version']}") or "built-in"
        print(f"{row['name']}  [{label}]  {row['status']}")
        if row["error"]:
            print(f"    error: {row['error']}")
        for kind, items in (row.get("provides") or {}).items():
            if not items:
                continue
            if isinstance(items, dict):
                for dev, ks in sorted(items.items()):
                    print(f"    kernels on {dev}: {_short(ks)}")
            else:
                print(f"    {kind.replace('_', ' ')}: {_short(items)}")
    for c in conflicts:
        print(f"CONFLICT: {c}")
    return 0


def _short(items: list[str], limit: int = 12) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _devices(args: argparse.Namespace) -> int:
    from opforge.runtime.core import Core

    core = Core()
    available = core.available_devices
    unavailable = core.unavailable_devices()
    left_out = core.left_out_hardware()
    if args.json:
        print(json.dumps({"available": available, "unavailable": unavailable, "left_out": left_out}, indent=2))
        return 0
    for d in available:
        print(f"{d}: {core.get_property(d, 'FULL_DEVICE_NAME')}")
    # GPU and VPU number the same OpenCL devices: one line per reason, naming every device it hits
    said: dict[str, list[str]] = {}
    for d, lines in left_out.items():
        for line in lines:
            said.setdefault(line, []).append(d)
    for line, devs in said.items():
        print(f"{', '.join(devs)}: {line}")
    for d, why in unavailable.items():
        print(f"{d}: unavailable ({why})")
    if not available and not unavailable:
        print("no device plugins installed (pip install opforge-cpu)")
        return 0
    for d in core.meta_devices():
        print(f"{d}: meta device, e.g. {d}:GPU,CPU")
    return 0


_INPUT_RE = re.compile(r"^(?P<name>[^\[]+)(\[(?P<shape>[^\]]*)\])?$")


def parse_input_spec(text: str) -> tuple[str, Any]:
    """``name[1,3,224,224]`` -> ("name", PartialShape); ``?``/``-1`` are dynamic dims."""
    from opforge.shape import PartialShape

    m = _INPUT_RE.match(text.strip())
    if not m:
        raise OpforgeError(f"--input {text!r}: expected NAME or NAME[d0,d1,...]")
    shape = m.group("shape")
    return m.group("name").strip(), (PartialShape.parse(shape) if shape is not None else None)


def convert(model_path: str, output: str, extensions: list[str], inputs: list[str],
            compress_to_fp16: bool, allow_unsupported: bool, quiet: bool = False) -> dict[str, Any]:
    """Convert a model file to IR; returns the summary printed by ``opforge convert``."""
    from opforge.frontend.convert import convert_model
    from opforge.ir.writer import check_output, save_model
    from opforge.model_files import recording
    from opforge.plugins import default_plugins

    def say(msg: str) -> None:
        if not quiet:
            print(msg, flush=True)

    t0 = time.perf_counter()
    shapes: dict[str, Any] = {}
    for spec in inputs:
        name, shape = parse_input_spec(spec)
        if shape is not None:
            shapes[name] = shape
    # The model being converted and every file read with it (weights, external data) are never
    # overwritten. The output is checked before reading too, so a bad -o fails at once.
    protect: list[Any] = [Path(model_path)]
    check_output(output, protect=protect)
    if extensions:
        say(f"[1/3] extensions: {', '.join(extensions)}")
    say(f"[2/3] reading {model_path}" + (f" with input shapes {', '.join(f'{k}{v}' for k, v in shapes.items())}"
                                         if shapes else ""))
    with recording() as files_read:
        model = convert_model(model_path, extension=extensions or None, allow_unsupported=allow_unsupported,
                              input=shapes or None)
    protect.extend(files_read)
    say(f"[3/3] writing {output}")
    save_model(model, output, compress_to_fp16=compress_to_fp16, protect=protect)
    plugins = default_plugins()
    ops = Counter(n.type_name for n in model.get_ordered_ops())
    custom: dict[str, str] = {}
    params = 0
    for n in model.get_ordered_ops():
        v = n.constant_value()
        if v is not None and v.dtype.kind == "f":
            params += int(v.size)
        if not n.op.is_standard:
            reg = plugins.ops.registration(n.op.key())
            custom[f"{n.type_name} ({n.version})"] = str(reg.plugin) if reg else "an extension given with --extension"
    summary = {
        "model": model_path,
        "output": output,
        "nodes": sum(ops.values()),
        "ops": dict(ops.most_common()),
        "custom_ops": custom,
        "parameters": params,
        "inputs": {p.any_name: f"{p.element_type.ir}{p.partial_shape}" for p in model.inputs},
        "outputs": {p.any_name: f"{p.element_type.ir}{p.partial_shape}" for p in model.outputs},
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return summary


def _convert(args: argparse.Namespace) -> int:
    out = args.output or str(Path(args.model).with_suffix(".xml").name)
    summary = convert(args.model, out, args.extension or [], args.input or [], args.compress_to_fp16,
                      args.allow_unsupported, quiet=args.json)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"converted {summary['model']} -> {summary['output']} in {summary['seconds']} s")
    print(f"  nodes: {summary['nodes']}  parameters: {summary['parameters']:,}")
    print("  ops: " + ", ".join(f"{k} x{v}" for k, v in summary["ops"].items()))
    for op, plugin in summary["custom_ops"].items():
        print(f"  custom op {op} provided by {plugin}")
    print("  inputs: " + ", ".join(f"{k}: {v}" for k, v in summary["inputs"].items()))
    print("  outputs: " + ", ".join(f"{k}: {v}" for k, v in summary["outputs"].items()))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from opforge.demo import run_demo

    return run_demo(Path(args.out), devices=args.device)


class _VersionAction(argparse.Action):
    """``opforge --version``: printed from package metadata, so a broken plugin cannot stop it."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from opforge.versions import version_report

        print(version_report())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="opforge", description="opforge: inference with pluggable ops, frontends and devices")
    p.add_argument("--version", action=_VersionAction, help="versions of opforge and of every installed plugin")
    sub = p.add_subparsers(dest="command", required=True)

    sp = sub.add_parser("plugins", help="list installed plugins and what each provides")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--all", action="store_true", help="include the built-in plugins")
    sp.set_defaults(func=_plugins)

    sd = sub.add_parser("devices", help="list devices, and why unavailable ones are")
    sd.add_argument("--json", action="store_true")
    sd.set_defaults(func=_devices)

    sc = sub.add_parser("convert", help="convert a model (ONNX, Paddle, IR) to OpenVINO IR (.xml + .bin)")
    sc.add_argument("model")
    sc.add_argument("-o", "--output", help="output .xml path (default: <model name>.xml here)")
    sc.add_argument("--extension", action="append",
                    help="extension: installed plugin name, module path, .py file, .json mapping file or "
                         "CustomLayersMapping .xml (framework fallback)")
    sc.add_argument("--input", action="append", help="input shape override: name[1,3,224,224] (? = dynamic)")
    sc.add_argument("--compress-to-fp16", action="store_true", help="store float32 weights as float16")
    sc.add_argument("--allow-unsupported", action="store_true", help="keep unsupported ops as placeholders")
    sc.add_argument("--json", action="store_true", help="print the summary as JSON")
    sc.set_defaults(func=_convert)

    sm = sub.add_parser("demo", help="the main job on the bundled sample model (custom op)")
    sm.add_argument("--out", default="opforge-demo-out", help="folder for the files it writes")
    sm.add_argument("--device", action="append", help="devices to run on (default: every available one)")
    sm.set_defaults(func=_demo)
    from opforge.extgen.command import add_parser as add_extgen_parser
    from opforge.testing.opcheck_command import add_parser as add_opcheck_parser

    add_extgen_parser(sub)
    add_opcheck_parser(sub)

    from opforge.benchmark.command import add_parser as add_benchmark_parser

    add_benchmark_parser(sub)
    _add_plugin_commands(sub)
    return p


def _warn(msg: str) -> None:
    print(f"opforge: warning: {msg}", file=sys.stderr)


def _add_plugin_commands(sub: Any) -> None:
    """Subcommands contributed through ``opforge_register_commands``. A broken one is left out
    with a warning naming its plugin: the built-in commands (``opforge plugins`` above all, which
    explains what is broken) must keep working whatever is installed."""
    try:
        from opforge.plugins import default_plugins

        commands = default_plugins().commands
    except Exception as err:  # noqa: BLE001 - e.g. OPFORGE_STRICT_PLUGINS with a broken plugin
        _warn(f"plugin commands left out: {type(err).__name__}: {err}")
        return
    for name in commands.keys():  # noqa: SIM118 - a Registry is not iterable
        try:
            reg = commands.registration(name)
        except OpforgeError as err:  # two plugins claim the name
            _warn(f"command '{name}' left out: {err}")
            continue
        if reg is None:
            continue
        cmd = reg.value
        if cmd.name in sub.choices:
            _warn(f"plugin {reg.plugin} registers command '{cmd.name}', which is built in; left out")
            continue
        # The plugin fills a parser of its own first, so one whose add_arguments raises halfway
        # leaves no half-built subcommand behind.
        own = argparse.ArgumentParser(prog=f"opforge {cmd.name}", add_help=False)
        try:
            if cmd.add_arguments is not None:
                cmd.add_arguments(own)
        except Exception as err:  # noqa: BLE001 - a plugin's bug costs its own command only
            _warn(f"command '{cmd.name}' of plugin {reg.plugin} left out: its add_arguments raised "
                  f"{type(err).__name__}: {err}")
            continue
        sp = sub.add_parser(cmd.name, parents=[own], help=cmd.help or f"(from plugin {reg.plugin})",
                            description=cmd.help or None)
        sp.set_defaults(func=_plugin_runner(cmd, str(reg.plugin)))


def _plugin_runner(cmd: Any, plugin: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            status = cmd.run(args)
        except OpforgeError:
            raise
        except Exception as err:
            raise PluginHookError(f"command '{cmd.name}' of plugin {plugin} failed: "
                                  f"{type(err).__name__}: {err}") from err
        return 0 if status is None else int(status)
    return run


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _main(argv)
        finally:
            # short outputs sit in the buffer until here: a reader that left shows up now
            sys.stdout.flush()
    except BrokenPipeError:
        # `opforge plugins | head -1`: the reader has all it wanted. Stop quietly, as Unix tools
        # do (status 128 + SIGPIPE), and point stdout at /dev/null so that Python's own flush at
        # exit does not print a traceback either.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, io.UnsupportedOperation):
            pass
        return 141


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except OpforgeError as err:
        print(f"opforge: error: {err}", file=sys.stderr)
        return 2
    except KeyError as err:
        print(f"opforge: error: {err.args[0] if err.args else err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
