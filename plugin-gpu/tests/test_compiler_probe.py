"""A device whose OpenCL compiler cannot build a one-line kernel is left out of the numbering,
with the reason and, for an LLVM older than the CPU, what to install."""

from __future__ import annotations

from typing import Any

import pytest
from opforge_gpu import opencl
from opforge_gpu.compiler_probe import compiler_problem

OLD_LLVM_LOG = "error: unknown target CPU 'generic'\nDevice pthread-AMD EPYC failed to build the program\n"


class _FakeCL:
    """The corner of pyopencl the probe touches: Context, Program(...).build, the build log."""

    class program_build_info:
        LOG = "LOG"

    def __init__(self, build_log: str | None) -> None:
        self.build_log = build_log  # None: the build succeeds

    def Context(self, devices: list[Any]) -> object:
        return object()

    def Program(self, context: object, source: str) -> Any:
        fake = self

        class _Program:
            def build(self, devices: list[Any]) -> None:
                if fake.build_log is not None:
                    raise RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE")

            def get_build_info(self, device: Any, what: str) -> str:
                return fake.build_log or ""

        return _Program()


def test_a_working_compiler_passes() -> None:
    assert compiler_problem(_FakeCL(None), object()) is None


def test_an_llvm_older_than_the_cpu_is_named_with_the_remedy() -> None:
    problem = compiler_problem(_FakeCL(OLD_LLVM_LOG), object())
    assert problem is not None
    assert "unknown target CPU 'generic'" in problem
    assert "apt-get install pocl-opencl-icd" in problem


def test_another_compiler_failure_is_quoted_without_the_remedy() -> None:
    problem = compiler_problem(_FakeCL("<source>:1:1: error: out of host memory\n"), object())
    assert problem is not None and "out of host memory" in problem
    assert "pocl-opencl-icd" not in problem


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name


def test_enumeration_numbers_only_devices_that_build(monkeypatch: pytest.MonkeyPatch) -> None:
    from opforge_gpu.opencl import OpenCLUnavailable

    class _Platform:
        name, version = "Fake OpenCL", "OpenCL 3.0 fake"

        def get_devices(self) -> list[_Named]:
            return [_Named("broken"), _Named("fine")]

    class _CL:
        @staticmethod
        def get_platforms() -> list[_Platform]:
            return [_Platform()]

    monkeypatch.setattr(opencl, "_skipped", [])  # the process's own table comes back afterwards
    monkeypatch.setattr(opencl, "_import_cl", lambda: _CL)
    monkeypatch.setattr(opencl, "compiler_problem",
                        lambda cl, dev: "its OpenCL compiler fails" if dev.name == "broken" else None)
    monkeypatch.setattr(opencl, "DeviceInfo", lambda **kw: kw)
    monkeypatch.setattr(opencl, "_type_name", lambda cl, dev: "CPU")
    for attr in ("driver_version", "version", "extensions", "max_compute_units", "max_work_group_size",
                 "local_mem_size", "global_mem_size", "mem_base_addr_align", "max_mem_alloc_size"):
        monkeypatch.setattr(_Named, attr, "1" if attr not in ("extensions",) else "", raising=False)
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    found = opencl.enumerate_devices()
    assert [d["name"] for d in found] == ["fine"]
    assert [d["index"] for d in found] == [0]
    assert len(opencl._skipped) == 1 and "'broken'" in opencl._skipped[0]

    monkeypatch.setattr(opencl, "compiler_problem", lambda cl, dev: "its OpenCL compiler fails")
    with pytest.raises(OpenCLUnavailable, match=r"no usable device.*'broken'.*'fine'"):
        opencl.enumerate_devices()


def test_the_gpu_device_reports_what_it_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # `opforge devices` prints Availability.left_out: the devices the probe refused, with why
    from opforge_gpu import device as gpu_device

    reason = "device 'broken' of platform 'Fake OpenCL' (OpenCL 3.0 fake) left out: its OpenCL compiler fails"
    monkeypatch.setattr(gpu_device, "devices", lambda: [])
    monkeypatch.setattr(gpu_device, "skipped_devices", lambda: [reason])
    av = gpu_device.GpuDevice("GPU").availability()
    assert av.ok and av.left_out == (reason,)
