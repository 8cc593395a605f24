#!/usr/bin/env bash
# Prepare, on this machine, what the device machine's x86 host needs to run the CPU benchmark
# (run.sh): that host has Python 3.12 with torch, onnx and ONNX Runtime but no network, no
# OpenVINO and no opforge, and a call may carry at most 64 MiB beside the checkout.
#
#   PY312=/root/.pyenv/versions/3.12.1/bin/python3.12 plugin-cpu/benchmarks/device_host/prepare.sh
#
# Writes the ignored folder .devrun/host/ (~40 MB):
#   ofcpu.tar.xz    opforge-cpu built here for cp312 (the wheel's files, xz: 11 MB against 20 MB zipped)
#   ov.tar.xz       OpenVINO's wheel for cp312 with its CPU plugin and ONNX/IR frontends only (21 MB
#                   against 59 MB: GPU/NPU plugins, the other frontends and the kernel cache left out)
#   *.whl           tbb (the TBB build's runtime), the template extension (cp312), and opforge's
#                   pure-Python dependencies that image lacks (pydantic, defusedxml)
#   bench_set.py    a copy of shared/bench/make_models.py (its torch models: bert_small, mlp)
# Then, with the device tool: run(command="bash plugin-cpu/benchmarks/device_host/run.sh",
# carry=[".devrun/host"]); see run.sh for its knobs.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
PY312=${PY312:?set PY312 to a Python 3.12 interpreter (the device host runs cp312)}
OV_VERSION=${OV_VERSION:-2026.4.1}
DEST=.devrun/host
mkdir -p "$DEST" /tmp/opforge-host-prep
VENV=/tmp/opforge-host-prep/venv
[ -x "$VENV/bin/python" ] || "$PY312" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip setuptools wheel

echo "== opforge-cpu and the template extension for cp312 (a full C++ build: ~10 min on 2 cores)"
WHEELS=/tmp/opforge-host-prep/wheels
rm -rf "$WHEELS" && mkdir -p "$WHEELS"
flock /tmp/opforge-bench.lock flock /tmp/opforge-cpu-build.lock \
  nice "$VENV/bin/python" -m pip wheel -q --no-deps ./plugin-cpu ./plugins/template-extension -w "$WHEELS"
UNPACK=/tmp/opforge-host-prep/ofcpu
rm -rf "$UNPACK" && mkdir -p "$UNPACK"
(cd "$UNPACK" && unzip -q "$WHEELS"/opforge_cpu-*.whl)
tar -cf - -C "$UNPACK" . | xz -6 -T1 > "$DEST/ofcpu.tar.xz"
cp "$WHEELS"/opforge_template_extension-*.whl "$DEST/"

echo "== OpenVINO $OV_VERSION (CPU plugin only) and the wheels that image lacks"
DL=/tmp/opforge-host-prep/dl
rm -rf "$DL" && mkdir -p "$DL"
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
           --platform manylinux1_x86_64)
for req in "openvino==$OV_VERSION" "tbb==2021.13.1"; do
  "$VENV/bin/python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$DL" "$req"
done
# with their dependencies, so that pydantic and pydantic-core match
"$VENV/bin/python" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d "$DL/deps" pydantic defusedxml
OV=/tmp/opforge-host-prep/ov
rm -rf "$OV" && mkdir -p "$OV"
(cd "$OV" && unzip -q "$DL"/openvino-*.whl)
# only what compile_model(..., "CPU") on an ONNX file loads
rm -rf "$OV"/openvino/include "$OV"/openvino/frontend/{pytorch,tensorflow,paddle,jax}
rm -f "$OV"/openvino/libs/{libopenvino_intel_gpu_plugin.so,libopenvino_intel_npu_plugin.so,cache.json}
rm -f "$OV"/openvino/libs/libopenvino_{tensorflow,tensorflow_lite,pytorch,paddle,jax,gguf}_frontend.so*
tar -cf - -C "$OV" . | xz -6 -T1 > "$DEST/ov.tar.xz"
cp "$DL"/tbb-*.whl "$DL"/deps/*.whl "$DEST/"

cp ../shared/bench/make_models.py "$DEST/bench_set.py"
du -sh "$DEST"
