# Sourced by scripts/demo and scripts/test: makes sure .venv exists and holds every package of
# the monorepo (found by scanning for pyproject.toml files, not from a hand-kept list) plus the
# test dependencies. Re-installs only when one of those files changed since the last install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"

packages() {
  # core first: every other package depends on it
  echo "$ROOT/core"
  for f in "$ROOT"/frontends/*/pyproject.toml "$ROOT"/plugin-*/pyproject.toml "$ROOT"/plugins/*/pyproject.toml "$ROOT"/integrations/*/pyproject.toml; do
    [ -f "$f" ] && dirname "$f"
  done
  return 0
}

stamp() {
  { cat "$ROOT/requirements-dev.txt"; for p in $(packages); do cat "$p/pyproject.toml"; done; } | sha256sum | cut -c1-16
}

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating $VENV" >&2
  "$PY" -m venv "$VENV"
fi
want="$(stamp)"
# Several shells (parallel test workers, developers' terminals) may source this at once: one
# installs, the others wait and then find the stamp current. The same lock serialises manual
# rebuilds of the C++ plugins: `flock /tmp/opforge-cpu-build.lock pip install --no-deps -e plugin-cpu`
# (with build isolation: the venv does not hold plugin-cpu's build requirements).
exec 9>"${TMPDIR:-/tmp}/opforge-cpu-build.lock"
flock 9
if [ "$(cat "$VENV/.opforge-stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "[setup] installing packages into $VENV" >&2
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  "$VENV/bin/python" -m pip install -q -r "$ROOT/requirements-dev.txt" >&2
  # A package whose *build* needs another package of this repository cannot build in an
  # isolated environment, where pip would look for it on PyPI: install everything else first,
  # then those against the venv. (None does today: plugins with a compiled CPU kernel carry a
  # copy of opforge-cpu's kernel ABI header, see docs/plugins.md.)
  first=(); second=()
  for p in $(packages); do
    if sed -n '/^\[build-system\]/,/^\[/p' "$p/pyproject.toml" | grep -q '"opforge'; then
      second+=(-e "$p")
    else
      first+=(-e "$p")
    fi
  done
  "$VENV/bin/python" -m pip install -q "${first[@]}" >&2
  if ((${#second[@]})); then
    "$VENV/bin/python" -m pip install -q scikit-build-core pybind11 >&2
    "$VENV/bin/python" -m pip install -q --no-build-isolation "${second[@]}" >&2
  fi
  echo "$want" > "$VENV/.opforge-stamp"
fi
# An OpenCL device for the GPU, VPU and HETERO tests and the demo. pyopencl's wheel brings PoCL
# 3.0 (LLVM 14), whose compiler refuses every kernel on CPUs newer than its LLVM (AMD Zen 5:
# "unknown target CPU 'generic'"). Checked once per CPU model; where no device can build a
# kernel and this is a Debian/Ubuntu machine we may administer (CI runs as root), install
# Debian's PoCL, which picks its code target from the CPU's features.
opencl_mark="$VENV/.opforge-opencl-$({ grep -E '^(cpu family|model|model name|flags)\s' /proc/cpuinfo 2>/dev/null || true; } | head -4 | sha256sum | cut -c1-12)"
if [ ! -f "$opencl_mark" ]; then
  if ! "$VENV/bin/python" -m opforge_gpu.compiler_probe; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "[setup] installing Debian's PoCL (pocl-opencl-icd) for a working OpenCL CPU device" >&2
      { DEBIAN_FRONTEND=noninteractive apt-get install -y -q pocl-opencl-icd \
        || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q pocl-opencl-icd; }; } >&2 \
        || echo "[setup] apt-get could not install pocl-opencl-icd: GPU/VPU tests will skip" >&2
      "$VENV/bin/python" -m opforge_gpu.compiler_probe || true
    else
      echo "[setup] no OpenCL device can build kernels here and this shell cannot install one" \
           "(needs root and apt-get): GPU/VPU tests will skip; see the lines above" >&2
    fi
  fi
  touch "$opencl_mark"
fi
flock -u 9
exec 9>&-
export PATH="$VENV/bin:$PATH"
# Bytecode caches on, kept out of the tree. The suite starts many child processes (one per plugin
# switch setting or ISA cap in a test: a switch is read once a process), each importing opforge and
# its plugins: with PYTHONDONTWRITEBYTECODE set (some sandboxes and CI images set it) every one of them
# compiled ~550 modules from source, 0.4-0.5 s a process (Emerald Rapids VM, stop 28: a child that
# compiles mlp.onnx took 1.25 s, 0.77 s with caches).
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$VENV/.pycache}"
