"""The VPU plugin's MVCL custom-layer configuration (``CustomLayer type="MVCL"``) through
``opforge_vpu.mvcl.config.load_config``: the parse step only (defusedxml, elements, attributes,
arg-name bindings, Where, stages, the formula parser), no OpenCL. The bytes are written to a file
so the path a user takes (reading and decoding the file) is fuzzed too. Every formula that parses
(work sizes, buffer and local-data sizes) is evaluated for a few shapes, as the device does."""

from __future__ import annotations

import functools
import random
import tempfile
from pathlib import Path

from opforge_fuzz.mutate import mutate_bytes, mutate_xml, splice
from opforge_fuzz.targets import _common

NAME = "vpu_kernel_config"

_SEEDS = [
    b"""<?xml version="1.0"?>
<CustomLayer name="Mvn" type="MVCL" version="1" stage="0" max-shaves="4">
  <Kernel entry="sums"><Source filename="k.bin"/></Kernel>
  <Parameters>
    <Tensor arg-name="src" type="input" port-index="0" format="BFYX"/>
    <Tensor arg-name="sums" type="output_buffer" port-index="0" dim="input,0" size="F*8"/>
    <Scalar arg-name="W" type="int" port-index="0" source="I.X"/>
  </Parameters>
  <WorkSizes dim="input,0" global="F,1,1" local="1,1,1"/>
</CustomLayer>
<CustomLayer name="Mvn" type="MVCL" version="1" stage="1">
  <Kernel entry="apply"><Source filename="k.cl"/></Kernel>
  <Parameters>
    <Tensor arg-name="src" type="input" port-index="0" format="BYXF"/>
    <Tensor arg-name="sums" type="input_buffer" port-index="0"/>
    <Data arg-name="gamma" type="data" source="gamma"/>
    <Data arg-name="tmp" type="local_data" dim="output,0" size="X*2"/>
    <Tensor arg-name="dst" type="output" port-index="0" format="YXF"/>
    <Scalar arg-name="eps" type="float" source="1e-5"/>
  </Parameters>
  <WorkSizes dim="output,0" global="(X+7)/8*8,Y,F" local="8,1,1"/>
</CustomLayer>
""",
    b"""<layers>
<CustomLayer name="Box" type="MVCL" version="1">
  <Where kernel="3,3"/>
  <Kernel entry="box3">
    <Source filename="k.cl"/>
    <Parameters>
      <Tensor arg-name="src" type="input" port-index="0" format="FYX"/>
      <Tensor arg-name="dst" type="output" port-index="0" format="ANY"/>
      <Scalar arg-name="k" type="int" port-index="1" source="kernel"/>
    </Parameters>
    <WorkSizes dim="output,0" global="x*y,f % 3 + 1,-(-b)" local="1,1,1"/>
  </Kernel>
</CustomLayer>
</layers>
""",
]


@functools.lru_cache(maxsize=1)
def _folder() -> Path:
    d = Path(tempfile.mkdtemp(prefix="opforge-fuzz-vpucfg-"))
    (d / "k.cl").write_text("__kernel void k(__global const half* in, __global half* out) { out[0] = in[0]; }\n")
    (d / "k.bin").write_bytes(b"not parsed here: binaries are read when a model is compiled")
    return d


def seeds() -> list[bytes]:
    return list(_SEEDS) + _common.committed_seeds(NAME)


def fuzz_one(data: bytes) -> None:
    from opforge_vpu.mvcl.config import load_config

    path = _folder() / "config.xml"
    path.write_bytes(data)
    for stage in load_config(path):
        formulas = stage.global_ws + stage.local_ws + [p.size for p in stage.params if p.size is not None]
        for formula in formulas:
            for dims in ({"B": 1, "F": 3, "Y": 5, "X": 7}, {"B": 0, "F": 0, "Y": 0, "X": 0}):
                try:
                    value = formula(dims)
                except Exception as err:
                    from opforge.errors import OpforgeError

                    if isinstance(err, OpforgeError) and "divides by zero" in str(err):
                        continue  # the documented refusal of X / (Y - 5) at a shape
                    raise
                if not isinstance(value, int):
                    from opforge_fuzz.harness import OracleFailure

                    raise OracleFailure(f"formula '{formula.text}' evaluated to {value!r}, not an int")


def mutate(data: bytes, rng: random.Random, pool: list[bytes] | None = None) -> bytes:
    r = rng.random()
    if r < 0.8:
        return mutate_xml(data, rng)
    if r < 0.9 and pool:
        return splice(data, rng.choice(pool), rng)
    return mutate_bytes(data, rng)
