"""``opforge convert -o``: never overwrites the model being converted or its weights, refuses
unwritable outputs with one line (exit 2) and no orphan files, writes 0644-style files that do
not carry the converting machine's folders."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from opforge import Core
from opforge.cli import main
from opforge_onnx.testing.helpers import make_model


def add_model(external: str | None = None) -> onnx.ModelProto:
    w = onnx.numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")  # raw_data: can go external
    m = make_model([h.make_node("Add", ["x", "w"], ["y"], name="add")], [h.make_tensor_value_info("x", T.FLOAT, [4])],
                   [h.make_tensor_value_info("y", T.FLOAT, [4])], opset=17, initializers=[w])
    if external is not None:
        onnx.external_data_helper.convert_model_to_external_data(m, location=external, size_threshold=0)
    return m


@pytest.fixture()
def src(tmp_path: Path) -> Path:
    p = tmp_path / "m.onnx"
    p.write_bytes(add_model().SerializeToString())
    return p


def convert(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    rc = main(["convert", *argv])
    return rc, capsys.readouterr().err


def test_output_equal_to_the_source_is_refused(src: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = src.read_bytes()
    rc, err = convert(capsys, str(src), "-o", str(src))
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"refusing to write '{src}'" in err and "a file of the model being converted" in err
    assert src.read_bytes() == before
    assert sorted(p.name for p in src.parent.iterdir()) == ["m.onnx"]


def test_output_bin_equal_to_the_external_data_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # m.onnx keeps its weights in m.bin: converting to m.xml would replace m.bin.
    m = add_model(external="m.bin")
    onnx.save_model(m, str(tmp_path / "m.onnx"))
    weights = (tmp_path / "m.bin").read_bytes()
    rc, err = convert(capsys, str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.xml"))
    assert rc == 2 and "m.bin" in err and "a file of the model being converted" in err
    assert (tmp_path / "m.bin").read_bytes() == weights and not (tmp_path / "m.xml").exists()


def test_ir_source_and_its_bin_are_protected(src: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert convert(capsys, str(src), "-o", str(tmp_path / "ir.xml"))[0] == 0
    xml, weights = (tmp_path / "ir.xml").read_bytes(), (tmp_path / "ir.bin").read_bytes()
    rc, err = convert(capsys, str(tmp_path / "ir.xml"), "-o", str(tmp_path / "sub" / ".." / "ir.xml"))
    assert rc == 2  # "sub" does not exist
    rc, err = convert(capsys, str(tmp_path / "ir.xml"), "-o", str(tmp_path / "ir.xml"))
    assert rc == 2 and "refusing to write" in err
    (tmp_path / "other").mkdir()
    os.symlink(tmp_path / "ir.bin", tmp_path / "other" / "ir.bin")
    rc, err = convert(capsys, str(tmp_path / "ir.xml"), "-o", str(tmp_path / "other" / "ir.xml"))
    assert rc == 2 and "ir.bin" in err and "a file of the model being converted" in err
    assert (tmp_path / "ir.xml").read_bytes() == xml and (tmp_path / "ir.bin").read_bytes() == weights


@pytest.mark.parametrize("bad", ["missing-dir/out.xml", "a-dir", "locked/out.xml"])
def test_bad_output_paths_give_one_line_and_leave_nothing(src: Path, tmp_path: Path, bad: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked").chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if bad.startswith("locked") and os.access(tmp_path / "locked", os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        listing = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
        rc, err = convert(capsys, str(src), "-o", str(tmp_path / bad))
        assert rc == 2 and err.count("\n") == 1 and err.startswith("opforge: error: save_model: cannot write")
        assert "Traceback" not in err
        assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == listing  # no orphan .bin
    finally:
        (tmp_path / "locked").chmod(stat.S_IRWXU)


def test_saved_files_have_the_usual_mode_and_no_absolute_source_path(src: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    old = os.umask(0o022)
    try:
        assert convert(capsys, str(src.absolute()), "-o", str(tmp_path / "out.xml"))[0] == 0
    finally:
        os.umask(old)
    for name in ("out.xml", "out.bin"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name
    xml = (tmp_path / "out.xml").read_text()
    assert str(tmp_path) not in xml and '<source value="m.onnx" />' in xml
    out = Core().read_model(tmp_path / "out.xml")
    assert out is not None


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_failed_write_leaves_no_temporary_files(src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import opforge.ir.writer as writer

    def fail(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.os, "fsync", fail)
    rc, err = convert(capsys, str(src), "-o", str(tmp_path / "out.xml"))
    assert rc == 2 and "No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]
