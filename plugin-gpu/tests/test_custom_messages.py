"""A CONFIG_FILE kernel that is not used, or that reads an attribute the op does not have, says
so (OpenVINO falls back and defaults silently)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import opforge
import pytest
from gpu_util import param, rand
from opforge.graph import Model
from opforge_gpu.device import CustomKernelWarning

HERE = Path(__file__).parent
LEAKY_CL = (HERE / "data" / "leaky.cl").read_text()


def relu_model() -> Model:
    x = param([1, 2, 3, 4])
    return Model([opforge.op("Relu", x, name="act")], [x])


def test_define_param_the_op_does_not_have_is_reported(core: opforge.Core) -> None:
    gpu = opforge.Core()
    gpu.set_property("GPU", {"CONFIG_FILE": str(HERE / "data" / "leaky.xml")})
    data = rand([1, 2, 3, 4])
    with pytest.warns(CustomKernelWarning) as record:
        got = gpu.compile_model(relu_model(), "GPU")([data])[0]
    msg = str(record[0].message)
    assert "node 'act': custom kernel leaky_relu" in msg and "leaky.xml:4" in msg
    assert "<Define name=\"neg_slope\" param=\"negative_slope\">: Relu has no attribute 'negative_slope'" in msg
    assert "Relu has no attribute 'negative_slope' (its attributes: none); the default '0.25' is used" in msg
    np.testing.assert_allclose(got, np.where(data < 0, data * 0.25, data), rtol=1e-6)  # the kernel still ran


def test_skipped_config_file_kernel_says_why_and_what_runs_instead(core: opforge.Core, tmp_path: Path) -> None:
    (tmp_path / "leaky.cl").write_text(LEAKY_CL)
    # binds an input port 1 that Relu does not have: unusable for this node
    (tmp_path / "k.xml").write_text("""<CustomLayer name="Relu" type="SimpleGPU" version="1">
  <Kernel entry="leaky_relu"><Source filename="leaky.cl"/></Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="1" format="BFYX"/>
    <Tensor arg-index="1" type="output" port-index="0" format="BFYX"/>
  </Buffers>
  <WorkSizes global="X,Y,B*F"/>
</CustomLayer>""")
    gpu = opforge.Core()
    gpu.set_property("GPU", {"CONFIG_FILE": str(tmp_path / "k.xml")})
    data = rand([1, 2, 3, 4])
    with pytest.warns(CustomKernelWarning, match=r"node 'act' \(Relu\): custom kernel leaky_relu \(.*k.xml.*\) binds "
                                                 r"input port 1, but the node has 1 inputs; the built-in kernel runs "
                                                 r"it instead"):
        got = gpu.compile_model(relu_model(), "GPU")([data])[0]
    np.testing.assert_array_equal(got, np.maximum(data, 0))
