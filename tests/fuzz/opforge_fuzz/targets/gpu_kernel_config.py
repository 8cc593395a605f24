"""The GPU plugin's custom-kernel configuration (OpenVINO's ``CustomLayer`` XML) through
``opforge_gpu.custom.config.load_config``: the parse step only (XML with DTDs refused, elements,
attributes, arg indices, work-size formulas), no OpenCL. The bytes are written to a file so the
path a user takes (reading and decoding the file) is fuzzed too. Work-size formulas that pass
the check are evaluated for a few shapes, as kernel.py does at compile time.

(The VPU plugin's MVCL configuration has its own target, ``vpu_kernel_config``.)
"""

from __future__ import annotations

import functools
import random
import tempfile
from pathlib import Path

from opforge_fuzz.mutate import mutate_bytes, mutate_xml, splice
from opforge_fuzz.targets import _common

NAME = "gpu_kernel_config"

_KERNEL = "__kernel void k(__global const float* in, __global float* out) { out[0] = in[0]; }\n"

_SEEDS = [
    b"""<CustomLayer name="Relu" type="SimpleGPU" version="1">
  <Kernel entry="leaky_relu">
    <Source filename="k.cl"/>
    <Define name="neg_slope" type="float" param="negative_slope" default="0.25"/>
  </Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="0" format="BFYX"/>
    <Tensor arg-index="1" type="output" port-index="0" format="BFYX"/>
  </Buffers>
  <CompilerOptions options="-cl-mad-enable"/>
  <WorkSizes global="X,Y,B*F"/>
</CustomLayer>
""",
    b"""<?xml version="1.0"?>
<!-- two layers in one file, as OpenVINO's global file has them -->
<CustomLayers>
<CustomLayer name="Identity" type="SimpleGPU" version="1">
  <Kernel entry="template_identity">
    <Source filename="k.cl"/>
    <Source filename="k2.cl"/>
    <Define name="SCALE" type="float" param="scale" default="1.0"/>
    <Define name="SIZES" type="int[]" param="sizes" default="1,2,3"/>
  </Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="0" format="BFYX"/>
    <Data arg-index="1" name="weights"/>
    <Tensor arg-index="2" type="output" port-index="0" format="BYXF"/>
  </Buffers>
  <CompilerOptions options="-cl-mad-enable"/>
  <CompilerOptions options="-DFOO=1"/>
  <WorkSizes global="X*Y,F,B" local="1,1,1" dim="input 1"/>
</CustomLayer>
<CustomLayer name="Scale" type="SimpleGPU" version="1">
  <Kernel entry="scale"><Source filename="k.cl"/></Kernel>
  <Buffers>
    <Tensor arg-index="1" type="output" port-index="0"/>
    <Tensor arg-index="0" type="input" port-index="1" format="yxfb"/>
  </Buffers>
  <WorkSizes global="(B*F*Y*X+15)/16*16" local="16" dim="output,0"/>
</CustomLayer>
</CustomLayers>
""",
]


@functools.lru_cache(maxsize=1)
def _folder() -> Path:
    d = Path(tempfile.mkdtemp(prefix="opforge-fuzz-gpucfg-"))
    (d / "k.cl").write_text(_KERNEL)
    (d / "k2.cl").write_text("#define K2 1\n")
    return d


def seeds() -> list[bytes]:
    return list(_SEEDS) + _common.committed_seeds(NAME)


def fuzz_one(data: bytes) -> None:
    from opforge_gpu.custom.config import eval_formula, load_config

    path = _folder() / "config.xml"
    path.write_bytes(data)
    for spec in load_config(path):
        for formula in spec.global_ws + spec.local_ws:
            for dims in ({"B": 1, "F": 3, "Z": 1, "Y": 5, "X": 7, "W": 1},
                         {"B": 0, "F": 0, "Z": 0, "Y": 0, "X": 0, "W": 0}):
                value = eval_formula(formula, dims)
                if not isinstance(value, int):
                    from opforge_fuzz.harness import OracleFailure

                    raise OracleFailure(f"work size '{formula}' evaluated to {value!r}, not an int")


def mutate(data: bytes, rng: random.Random, pool: list[bytes] | None = None) -> bytes:
    r = rng.random()
    if r < 0.8:
        return mutate_xml(data, rng)
    if r < 0.9 and pool:
        return splice(data, rng.choice(pool), rng)
    return mutate_bytes(data, rng)
