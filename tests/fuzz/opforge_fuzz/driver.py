"""Run fuzz targets: ``python -m opforge_fuzz.driver [TARGET|all] [--seconds N | --runs N]``.

Each target runs in a child process (one after another, never in parallel) so that a crash (a
segfault in a C++ kernel, an abort in protobuf) or a hang stuck in C code is reported as a
finding instead of killing the runner. Two engines:

* ``atheris`` (default when installed): libFuzzer's coverage-guided loop over instrumented
  Python (opforge, its frontends and plugins, and the stdlib parsers they call), with the
  target's structure-aware mutator mixed with libFuzzer's byte mutations.
* ``random``: a seeded, deterministic loop of the same structure-aware mutations, keeping inputs
  that produce a new outcome (a new error site or a successful read) as further bases. The test
  suite's smoke run uses it: same inputs on every run, no libFuzzer process exit to work around.

Every input gets a hang check (random engine: a CPU-time watchdog, ``--timeout``, SIGPROF;
atheris: libFuzzer's ``-timeout``) and a faulthandler backstop (a hang in C code ends the child,
which the parent reports); the process runs
under ``RLIMIT_AS`` (``--memory-mb``) with opforge's resource limits lowered (harness.py).
Findings are de-duplicated by kind, exception type and innermost opforge frame; each unique one is
saved as ``<workdir>/<target>/findings/<kind>-<sha>.bin`` (the input) and ``.txt`` (traceback).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_WORKDIR = Path(os.environ.get("TMPDIR", "/tmp")) / "opforge-fuzz"
SUMMARY_EVERY_S = 2.0


class _Session:
    """Counts, de-duplicates and saves findings of one target run, and writes the summary."""

    def __init__(self, target: str, workdir: Path, engine: str, stop_on_finding: bool) -> None:
        self.target = target
        self.dir = workdir / target
        self.findings_dir = self.dir / "findings"
        self.findings_dir.mkdir(parents=True, exist_ok=True)
        self.summary_path = self.dir / "summary.json"
        self.engine = engine
        self.stop = stop_on_finding
        self.execs = 0
        self.outcomes: dict[str, int] = {}
        self.unique: dict[str, dict[str, Any]] = {}
        self.t0 = time.monotonic()
        self._last_write = 0.0
        # the input being run, so that the parent can name it when the child dies mid-input
        self._current = os.open(self.dir / "current-input", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)

    def run(self, fuzz_one: Any, data: bytes, timeout_s: float, backstop_s: float | None = None) -> bool:
        """Run one input; True when it produced a new outcome (engine feedback)."""
        from opforge_fuzz.harness import digest, run_one

        os.ftruncate(self._current, 0)
        os.pwrite(self._current, data, 0)
        # The watchdog counts CPU time, this backstop wall time: on a loaded host (CI at load 14 on
        # 2 cores gave the child ~15 % of a core) 2 s of CPU took longer than the old 10 s backstop,
        # and a Python hang was reported as a crash. The backstop is only for hangs in C code.
        faulthandler.dump_traceback_later(backstop_s or max(60.0, 20 * timeout_s), exit=True)
        try:
            finding = run_one(fuzz_one, data, timeout_s)
        finally:
            faulthandler.cancel_dump_traceback_later()
        self.execs += 1
        new = False
        if finding is not None:
            key = finding.key
            if key not in self.unique:
                new = True
                name = f"{finding.kind}-{digest(data)}"
                (self.findings_dir / f"{name}.bin").write_bytes(data)
                (self.findings_dir / f"{name}.txt").write_text(finding.trace)
                self.unique[key] = {"kind": finding.kind, "exception": finding.exc_type, "where": finding.where,
                                    "message": finding.message, "input": str(self.findings_dir / f"{name}.bin"),
                                    "count": 0}
                print(f"[fuzz {self.target}] NEW FINDING {key}: {finding.message[:200]}", file=sys.stderr, flush=True)
            self.unique[key]["count"] += 1
            if self.stop:
                self.write_summary(final=True)
                raise SystemExit(3)
        else:
            outcome = _outcome_key()
            if outcome not in self.outcomes:
                new = True
                self.outcomes[outcome] = 0
            self.outcomes[outcome] += 1
        now = time.monotonic()
        if now - self._last_write > SUMMARY_EVERY_S:
            self.write_summary()
        return new

    def write_summary(self, final: bool = False) -> dict[str, Any]:
        self._last_write = time.monotonic()
        secs = self._last_write - self.t0
        summary = {"target": self.target, "engine": self.engine, "execs": self.execs,
                   "seconds": round(secs, 2), "execs_per_s": round(self.execs / secs, 1) if secs else 0.0,
                   "final": final, "findings": list(self.unique.values()),
                   "distinct_outcomes": len(self.outcomes)}
        tmp = self.summary_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(summary, indent=1))
        tmp.replace(self.summary_path)
        return summary


_last_outcome = ["ok"]


def _outcome_key() -> str:
    return _last_outcome[0]


def _track_outcomes(fuzz_one: Any) -> Any:
    """Wrap a target so the engine sees *which* expected error it ended in (random engine's
    feedback: an input reaching a new error site is worth mutating further)."""
    import traceback

    from opforge.errors import OpforgeError

    def wrapped(data: bytes) -> None:
        try:
            fuzz_one(data)
        except OpforgeError as err:
            fr = traceback.extract_tb(err.__traceback__)[-1]
            _last_outcome[0] = f"{type(err).__name__}@{Path(fr.filename).name}:{fr.lineno}"
            raise
        _last_outcome[0] = "ok"

    return wrapped


def _child(args: argparse.Namespace) -> int:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
    from opforge_fuzz import harness

    harness.set_fuzz_limits(args.memory_mb)
    from opforge_fuzz.targets import load

    target = load(args.target)
    if hasattr(target, "setup"):
        target.setup()
    seeds = [s for s in target.seeds() if s]
    session = _Session(args.target, Path(args.workdir), args.engine, args.stop_on_finding)
    fuzz_one = _track_outcomes(target.fuzz_one)
    # Every seed must be clean: a seed that is itself a finding is reported first. Seeds get 10x
    # the time: the first reads import translators and compile kernels.
    for s in seeds:
        session.run(fuzz_one, s, 10 * args.timeout)
    if args.engine == "atheris":
        _run_atheris(args, target, seeds, session, fuzz_one)
    else:
        _run_random(args, target, seeds, session, fuzz_one)
    summary = session.write_summary(final=True)
    print(json.dumps({k: v for k, v in summary.items() if k != "findings"}), file=sys.stderr)
    return 0


def _run_random(args: argparse.Namespace, target: Any, seeds: list[bytes], session: _Session,
                fuzz_one: Any) -> None:
    from opforge_fuzz.mutate import mutate_bytes

    rng = random.Random(args.seed)
    pool = list(seeds)
    deadline = time.monotonic() + args.seconds if args.seconds else None
    i = 0
    while (args.runs is None or i < args.runs) and (deadline is None or time.monotonic() < deadline):
        i += 1
        data = rng.choice(pool)
        for _ in range(1 if rng.random() < 0.6 else rng.randint(2, 4)):  # stacked mutations
            try:
                data = target.mutate(data, rng, pool) if _takes_pool(target) else target.mutate(data, rng)
            except Exception as err:  # noqa: BLE001 - a mutator bug is the harness's, not a finding
                print(f"[fuzz {args.target}] mutator failed ({type(err).__name__}: {err}); byte mutation instead",
                      file=sys.stderr)
                data = mutate_bytes(data, rng)
        data = data[: args.max_len]
        if session.run(fuzz_one, data, args.timeout) and len(pool) < 4096:
            pool.append(data)


def _takes_pool(target: Any) -> bool:
    import inspect

    return "pool" in inspect.signature(target.mutate).parameters


def _run_atheris(args: argparse.Namespace, target: Any, seeds: list[bytes], session: _Session,
                 fuzz_one: Any) -> None:
    import atheris

    corpus = Path(args.workdir) / args.target / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    from opforge_fuzz.harness import digest

    for s in seeds:
        (corpus / f"seed-{digest(s)}").write_bytes(s)
    # Instrument what the seeds above loaded of opforge, its frontends and plugins (the code under
    # test). atheris.instrument_all() would also rewrite numpy, onnx and the stdlib: minutes of
    # start-up on these cores for coverage that says little about opforge.
    count = _instrument_opforge(atheris)
    print(f"[fuzz {args.target}] instrumented {count} functions", file=sys.stderr, flush=True)
    pool = list(seeds)
    takes_pool = _takes_pool(target)

    # Hangs under atheris are libFuzzer's to detect (-timeout, wall clock, in C): a Python signal
    # handler raising inside atheris' instrumentation callbacks ends the process ("fuzz target
    # exited") at random points. The faulthandler backstop stays, behind libFuzzer's timeout.
    lf_timeout = max(10, int(5 * args.timeout))

    def test_one(data: bytes) -> None:
        session.run(fuzz_one, data, 0, backstop_s=3 * lf_timeout)

    def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if rng.random() < 0.3:
            return bytes(atheris.Mutate(data, max_size))
        try:
            out = target.mutate(data, rng, pool) if takes_pool else target.mutate(data, rng)
        except Exception:  # noqa: BLE001 - an exception escaping into libFuzzer hangs it: mutate bytes
            return bytes(atheris.Mutate(data, max_size))
        return bytes(out[:max_size])

    artifacts = Path(args.workdir) / args.target / "libfuzzer-"  # not the current directory
    flags = [sys.argv[0], str(corpus), f"-artifact_prefix={artifacts}", f"-timeout={lf_timeout}", f"-rss_limit_mb={args.memory_mb}", f"-max_len={args.max_len}",
             f"-seed={args.seed or 1}", "-print_final_stats=1"]
    if args.runs is not None:
        flags.append(f"-runs={args.runs}")
    if args.seconds:
        flags.append(f"-max_total_time={int(args.seconds)}")
    atheris.Setup(flags, test_one, custom_mutator=custom_mutator)
    try:
        atheris.Fuzz()
    finally:
        session.write_summary(final=True)


def _instrument_opforge(atheris: Any) -> int:
    import inspect

    seen: set[int] = set()
    count = 0

    def visit(obj: Any, module: str, depth: int) -> None:
        nonlocal count
        if id(obj) in seen or depth > 3:
            return
        seen.add(id(obj))
        if inspect.isfunction(obj):
            if obj.__module__ == module:
                try:
                    atheris.instrument_func(obj)
                    count += 1
                except Exception:  # noqa: BLE001 - a function atheris cannot rewrite stays uninstrumented
                    pass
            return
        if inspect.isclass(obj) and obj.__module__ == module:
            for v in vars(obj).values():
                visit(getattr(v, "__func__", v), module, depth + 1)
                if isinstance(v, property):
                    for acc in (v.fget, v.fset):
                        if acc is not None:
                            visit(acc, module, depth + 1)

    for name, mod in list(sys.modules.items()):
        if name.split(".")[0].startswith("opforge") and not name.startswith("opforge_fuzz") and mod is not None:
            for v in list(vars(mod).values()):
                visit(v, name, 0)
    return count


def _parent(args: argparse.Namespace) -> int:
    from opforge_fuzz.targets import names

    targets = names() if args.target == "all" else [args.target]
    failed = False
    for t in targets:
        result = run_target(t, args)
        print(json.dumps(result, indent=1))
        failed = failed or bool(result["findings"])
    return 1 if failed else 0


def run_target(target: str, args: argparse.Namespace) -> dict[str, Any]:
    """Fuzz one target in a child process; its summary, with a ``crash`` finding when it died."""
    workdir = Path(args.workdir)
    summary_path = workdir / target / "summary.json"
    summary_path.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "opforge_fuzz.driver", target, "--child", "--engine", args.engine,
           "--timeout", str(args.timeout), "--memory-mb", str(args.memory_mb), "--workdir", str(workdir),
           "--seed", str(args.seed), "--max-len", str(args.max_len)]
    if args.runs is not None:
        cmd += ["--runs", str(args.runs)]
    if args.seconds:
        cmd += ["--seconds", str(args.seconds)]
    if args.stop_on_finding:
        cmd.append("--stop-on-finding")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    # budget for a hung child: the run itself, imports and seeds, then the faulthandler backstop
    budget = (args.seconds or 0) + (args.runs or 0) * args.timeout + 600
    # The child's whole stderr (libFuzzer's status lines, tracebacks) is kept beside its findings.
    log = workdir / target / "stderr.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as err:
        try:
            rc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, timeout=budget).returncode
        except subprocess.TimeoutExpired:
            rc = -9
    with open(log, "rb") as f:
        f.seek(max(0, log.stat().st_size - 4000))
        err_tail = f.read().decode(errors="replace")
    summary: dict[str, Any] = {"target": target, "execs": 0, "findings": []}
    if summary_path.exists():
        summary = json.loads(summary_path.read_text())
    expected_rc = (0, 3) if args.stop_on_finding else (0,)
    finished = bool(summary.get("final")) or (args.engine == "atheris" and "Done " in err_tail)
    if rc not in expected_rc or (rc == 0 and not finished):
        current = workdir / target / "current-input"
        summary["findings"].append({
            "kind": "hang" if rc == 124 or "libFuzzer: timeout" in err_tail else "crash",
            "exception": f"child exit status {rc}",
            "where": "?", "message": err_tail[-1500:],
            "input": str(current) if current.exists() else "?", "count": 1,
        })
    summary["returncode"] = rc
    # libFuzzer ends the process with exit() once its runs or time are done, before the child's
    # last summary write: take the exact count from its final statistics.
    cov = re.findall(r"cov: (\d+) ft: (\d+) corp: (\d+)", err_tail)
    if cov:  # libFuzzer's last status line: edges covered, features, corpus size
        summary["coverage"] = {"edges": int(cov[-1][0]), "features": int(cov[-1][1]), "corpus": int(cov[-1][2])}
    m = re.search(r"stat::number_of_executed_units:\s*(\d+)", err_tail)
    if m:
        summary["execs"] = int(m.group(1))
        secs = summary.get("seconds") or 0
        summary["execs_per_s"] = round(summary["execs"] / secs, 1) if secs else 0.0
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scripts/fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("target", nargs="?", default="all", help="a target name, or 'all' (one after another)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--seconds", type=float, default=None, help="run each target this long")
    g.add_argument("--runs", type=int, default=None, help="run each target for this many mutated inputs")
    p.add_argument("--engine", choices=("atheris", "random"), default=None,
                   help="default: atheris when installed, else random")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=2.0, help="seconds per input before it counts as a hang")
    p.add_argument("--memory-mb", type=int, default=4096, help="address-space cap of the fuzzing process")
    p.add_argument("--max-len", type=int, default=1 << 16)
    p.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    p.add_argument("--stop-on-finding", action="store_true")
    p.add_argument("--list", action="store_true", help="list the targets and exit")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.list:
        from opforge_fuzz.targets import names

        print("\n".join(names()))
        return 0
    if args.engine is None:
        try:
            import atheris  # noqa: F401
            args.engine = "atheris"
        except ImportError:
            args.engine = "random"
    if args.runs is None and not args.seconds:
        args.seconds = 60.0
    if args.child:
        return _child(args)
    return _parent(args)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    raise SystemExit(main())
