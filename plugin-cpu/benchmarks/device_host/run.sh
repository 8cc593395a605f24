#!/usr/bin/env bash
# The CPU benchmark on the device machine's x86 host (stop 24: a 16-core Intel Xeon with AMX;
# stop 19: the same kind), run there by the device tool after prepare.sh here:
#
#   run(command="HELD=tv_resnet50,unet_small bash plugin-cpu/benchmarks/device_host/run.sh",
#       carry=[".devrun/host"], timeout_s=480)
#
# 1. installs opforge (core and the ONNX frontend from the checkout, opforge-cpu and OpenVINO from
#    .devrun/host) into that image's Python 3.12; its own ONNX Runtime (1.30) is the third engine;
# 2. makes the models (make_models_there.py: the four benchmark models, HELD, int8 copies);
# 3. times them side by side at 1 and 2 threads in f32, bf16 and int8 as pinned jobs of 2 cores
#    (pinned_jobs.py), then the benchmark models on every core in one job;
# 4. shows which oneDNN kernels run (onednn_impls.py) for resnet18 int8 and bf16;
# 5. runs test_cpu_custom_kernels.py twice without xdist (a worker crashed there once, stop 19).
# Knobs: HELD (comma list, make_real_models.py names), MODELS (default: the four and HELD),
# GEN_S / PINNED_S / ALL_S (seconds for steps 2, 3a, 3b). Output under $OUT: log.txt,
# bench.txt (the pinned jobs), bench_all_cores.txt. About 6-7 minutes with 12 held-out models.
set -u
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s)
step() { echo "== [$(( $(date +%s) - T0 )) s] $*"; }
HERE=plugin-cpu/benchmarks/device_host
KIT=.devrun/host
HELD=${HELD:-}
MODELS=${MODELS:-resnet18,mobilenet_v2,bert_small,mlp${HELD:+,$HELD}}

lscpu | grep -E "^Model name|^CPU\(s\)|^Thread|^Core|^Socket|^L2|^L3|^NUMA node\(s\)"
grep -o -w -E "avx2|avx512f|avx512_vnni|avx_vnni|avx512_bf16|avx512_fp16|amx_tile|amx_bf16|amx_int8" /proc/cpuinfo | sort | uniq -c
SITE=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
# into site-packages rather than PYTHONPATH: the tests' child processes run without it
tar -xJf $KIT/ov.tar.xz -C "$SITE" && tar -xJf $KIT/ofcpu.tar.xz -C "$SITE" || exit 3
python3 -m pip install -q --no-index --no-deps --no-compile $KIT/*.whl 2>&1 | grep -v -i warn | tail -3
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e core -e frontends/onnx 2>&1 | grep -v -i warn | tail -3
python3 -c "import opforge, openvino, onnxruntime as o; c = opforge.Core(); \
print(c.available_devices, c.get_property('CPU', 'FULL_DEVICE_NAME'), 'OpenVINO', openvino.__version__, 'ORT', o.__version__)" || exit 4
step installed

timeout "${GEN_S:-170}" python3 $HERE/make_models_there.py /tmp/m "$HELD" 2>&1 | tail -40
step "models made: $(ls /tmp/m/onnx | wc -l) float, $(ls /tmp/m/int8 2>/dev/null | wc -l) int8"

PINNED_DEADLINE_S=${PINNED_S:-170} python3 $HERE/pinned_jobs.py /tmp/m "$OUT/bench.txt" 2 "$MODELS" \
  --threads 1 2 --runs 24 --rounds 6
step "pinned jobs done"
NP=$(cat /sys/devices/system/cpu/cpu*/topology/thread_siblings_list | sort -u | wc -l)
timeout "${ALL_S:-70}" python3 plugin-cpu/benchmarks/bench_cpu.py --models-dir /tmp/m \
  --only resnet18 mobilenet_v2 bert_small mlp --threads "$NP" --runs 30 --rounds 6 > "$OUT/bench_all_cores.txt" 2>&1
grep -v "W:onnxruntime" "$OUT/bench_all_cores.txt" | tail -20
step "all $NP cores done"

for spec in "int8/resnet18 f32 1" "onnx/resnet18 bf16 1" "onnx/resnet18 bf16 2"; do
  set -- $spec
  taskset -c 0,1 timeout 60 python3 plugin-cpu/benchmarks/onednn_impls.py "/tmp/m/$1.onnx" /tmp/m/ref/resnet18.npz \
    --precision "$2" --threads "$3" --top 6
done
step "kernels listed"

for i in 1 2; do
  timeout 60 python3 -X faulthandler -m pytest -q -p no:xdist -p no:randomly -p no:cacheprovider \
    plugin-cpu/tests/test_cpu_custom_kernels.py 2>&1 | grep -v -i warn | tail -4
done
step "custom-kernel tests done"
