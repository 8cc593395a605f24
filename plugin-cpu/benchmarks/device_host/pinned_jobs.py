"""Run ``bench_cpu.py`` as several jobs at once on a many-core host, each job pinned (taskset) to
its own set of physical cores, one hardware thread per core, the models dealt round-robin over the
jobs; then append every job's output to one file.

A device call is short (15 minutes of device time a session), and the 1- and 2-thread rows are
what issue 15 asks for: on the 16-core device host, 8 jobs of 2 cores time 16 models in f32, bf16
and int8 at 1 and 2 threads in under 2 minutes where one job takes over 10. Each job's engines
still alternate in rounds on the same cores, so its ratios are side by side; what the jobs share
(L3, memory bandwidth, the package's power) moves absolute times, so quote ratios.

    python3 pinned_jobs.py MODELS_DIR OUT_FILE CORES_PER_JOB m1,m2,... [bench_cpu.py options]

``PINNED_DEADLINE_S`` (default 240) kills the jobs still running at that age (their partial
output is kept).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench_cpu.py"


def physical_cpus() -> list[int]:
    """One CPU of each physical core this process may run on (the first of its siblings)."""
    seen: set[str] = set()
    cpus = []
    for cpu in sorted(os.sched_getaffinity(0)):
        siblings = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list").read_text().strip()
        if siblings not in seen:
            seen.add(siblings)
            cpus.append(cpu)
    return cpus


def main() -> int:
    models_dir, out_file, per_job = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    models, extra = sys.argv[4].split(","), sys.argv[5:]
    cpus = physical_cpus()
    n_jobs = max(1, min(len(cpus) // per_job, len(models)))
    print(f"physical cpus {cpus}: {n_jobs} jobs of {per_job} cores", flush=True)
    jobs = []
    for j in range(n_jobs):
        mine = models[j::n_jobs]
        cores = ",".join(str(c) for c in cpus[j * per_job:(j + 1) * per_job])
        log = Path(f"/tmp/pinned_job_{j}.txt")
        cmd = ["taskset", "-c", cores, sys.executable, str(BENCH), "--models-dir", models_dir, "--only", *mine, *extra]
        with log.open("w") as sink:
            jobs.append((j, cores, mine, log, subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)))
    deadline = float(os.environ.get("PINNED_DEADLINE_S", "240"))
    t0 = time.time()
    with out_file.open("a") as out:
        for j, cores, mine, log, proc in jobs:
            try:
                proc.wait(timeout=max(1.0, deadline - (time.time() - t0)))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                out.write(f"\n===== job {j} killed at the deadline ({deadline:.0f} s)\n")
            out.write(f"\n===== job {j} cores {cores} models {mine} rc {proc.returncode} ({time.time() - t0:.0f} s)\n")
            out.write(log.read_text())
    print(f"all jobs done in {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
