"""Legacy MYRIAD kernels (half arithmetic, manual DMA, __local arguments) with MVCL bindings written
from OpenVINO's VPU guide: compiled offline to .bin, run unchanged on the VPU device (PoCL here, so
through the half shim), and matching the NumPy references of their ops."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import opforge
import pytest
from myriad_ops import ALL, VpuBox, VpuGreedyDecode, VpuGrn, VpuMvn
from opforge.graph import Model, Node
from opforge.reference import evaluate_model
from opforge_vpu.binary import compile_file, read_header
from vpu_util import param, rand

DATA = Path(__file__).parent / "data" / "myriad"


@pytest.fixture
def kernels(tmp_path: Path) -> Path:
    """The MYRIAD sources and bindings, with every .cl compiled offline to the .bin the XML names."""
    for f in DATA.iterdir():
        shutil.copy(f, tmp_path / f.name)
    for cl in sorted(tmp_path.glob("*.cl")):
        compile_file(cl, cl.with_suffix(".bin"))
    return tmp_path


@pytest.fixture
def vpu(core: opforge.Core) -> opforge.Core:
    for op in ALL:
        core.add_extension(op)
    return core


def run(core: opforge.Core, model: Model, inputs: list[np.ndarray], xml: Path,
        profiling: bool = False) -> tuple[list[np.ndarray], list[np.ndarray], opforge.CompiledModel]:
    core.set_property("VPU", {"CONFIG_FILE": str(xml)})
    compiled = core.compile_model(model, "VPU", {"ENABLE_PROFILING": profiling})
    res = compiled(inputs)
    return [res[i] for i in range(len(model.outputs))], evaluate_model(model, inputs), compiled


def test_offline_binary_header_names_device_driver_and_source_hash(kernels: Path) -> None:
    h = read_header(kernels / "grn.bin")
    assert h.source == "grn.cl" and len(h.source_sha256) == 64 and h.device and h.driver
    # the DMA companions are folded into their kernel; MVCL binds the arguments by these names
    assert list(h.kernels) == ["grn_NCHW"]
    assert [a.name for a in h.kernels["grn_NCHW"]] == ["src", "dst", "local_src", "local_dst", "C", "H", "bias"]
    assert h.kernels["grn_NCHW"][2].space == "local"


def test_two_stage_normalization_through_an_inter_stage_buffer(vpu: opforge.Core, kernels: Path) -> None:
    x = param([1, 4, 6, 8])
    gamma = [0.5, 1.0, -2.0, 1.5]
    n = Node.create(VpuMvn, [x.output(0)], {"eps": 1e-3, "gamma": gamma})
    m = Model([n.output(0)], [x])
    xin = rand([1, 4, 6, 8], seed=3) + np.arange(4, dtype=np.float32).reshape(1, 4, 1, 1)
    (got,), (want,), compiled = run(vpu, m, [xin], kernels / "mvn.xml", profiling=True)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
    req = compiled.create_infer_request()
    req.infer([xin])
    rows = req.get_profiling_info()
    # one record per stage (and per reorder/conversion around them), in the common schema
    kinds = [r.exec_type for r in rows if r.node_name == n.name]
    assert "ocl:mvn_sums" in kinds and "ocl:mvn_apply" in kinds
    assert kinds.index("ocl:mvn_sums") < kinds.index("ocl:mvn_apply")
    stages = [r["source"] for r in rows if r.exec_type in ("ocl:mvn_sums", "ocl:mvn_apply")]
    assert stages[0].startswith("stage 0: ") and stages[1].startswith("stage 1: ") and "mvn.xml:" in stages[1]
    assert all(r.real_time_ms >= 0 and r.status == "EXECUTED" for r in rows)


def test_dma_preloaded_per_pixel_kernel_with_local_data(vpu: opforge.Core, kernels: Path) -> None:
    x = param([1, 5, 4, 16])
    n = Node.create(VpuGrn, [x.output(0)], {"bias": 0.5})
    m = Model([n.output(0)], [x])
    xin = rand([1, 5, 4, 16], seed=4)
    (got,), (want,), _ = run(vpu, m, [xin], kernels / "grn.xml")
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)


def test_3d_dma_transactions_and_a_wait_inside_the_kernel(vpu: opforge.Core, kernels: Path) -> None:
    x = param([1, 3, 5, 8])
    n = Node.create(VpuGrn, [x.output(0)], {"bias": 1.5})
    m = Model([n.output(0)], [x])
    xin = rand([1, 3, 5, 8], seed=7)
    (got,), (want,), _ = run(vpu, m, [xin], kernels / "grn3d.xml")
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)


def test_single_work_group_decoder(vpu: opforge.Core, kernels: Path) -> None:
    x = param([1, 12, 5])
    n = Node.create(VpuGreedyDecode, [x.output(0)], {"blank_index": 0})
    m = Model([n.output(0)], [x])
    rng = np.random.default_rng(5)
    scores = np.stack([rng.permutation(5) for _ in range(12)]).astype(np.float32)[None] / 8
    scores[0, 3] = scores[0, 2]  # a repeat to merge
    (got,), (want,), _ = run(vpu, m, [scores], kernels / "decode.xml")
    np.testing.assert_array_equal(got, want)
    assert (want == -1).any()  # blanks and repeats were dropped: the padding is exercised


def test_where_selects_between_two_layers_by_attribute(vpu: opforge.Core, kernels: Path) -> None:
    x = param([1, 3, 5, 8])
    a = Node.create(VpuBox, [x.output(0)], {"kernel": [3, 3]})
    b = Node.create(VpuBox, [x.output(0)], {"kernel": [1, 1]})
    m = Model([a.output(0), b.output(0)], [x])
    xin = rand([1, 3, 5, 8], seed=6)
    got, want, compiled = run(vpu, m, [xin], kernels / "box.xml", profiling=True)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-2, atol=1e-2)
    # kernel [1, 1] runs box1_byxf on BYXF data: reorders are inserted around it
    np.testing.assert_allclose(got[1], want[1], rtol=1e-2, atol=1e-2)
    req = compiled.create_infer_request()
    req.infer([xin])
    ran = {(r.node_name, r.exec_type) for r in req.get_profiling_info()}
    assert (a.name, "ocl:box3") in ran and (b.name, "ocl:box1_byxf") in ran
