"""Untrusted IR files: special files refused without blocking, sizes bounded by opforge.limits
(settable on a Core), the .xml parsed with memory proportional to the file."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opforge import Core
from opforge.errors import ModelFormatError, PropertyError, ResourceLimitError
from opforge.ir import read_ir
from opforge.limits import LIMITS, Limits, using
from opforge.plugins import PluginSystem

W = np.arange(4, dtype=np.float32)
LAYER = """\t\t<layer id="{i}" name="relu_{i}" type="ReLU" version="opset1">
\t\t\t<rt_info><attribute name="fused_names" version="0" value="relu_{i}" /></rt_info>
\t\t\t<input><port id="0" precision="FP32"><dim>1</dim><dim>3</dim><dim>8</dim><dim>8</dim></port></input>
\t\t\t<output><port id="1" precision="FP32" names="t{i}"><dim>1</dim><dim>3</dim><dim>8</dim><dim>8</dim></port></output>
\t\t</layer>
"""

# A Const of 4 floats that nothing reads: enough to make the reader map the .bin.
CONST_LAYER = """\t\t<layer id="99" name="w" type="Const" version="opset1">
\t\t\t<data element_type="f32" shape="4" offset="0" size="16" />
\t\t\t<output><port id="0" precision="FP32"><dim>4</dim></port></output>
\t\t</layer>
\t"""


def chain_ir(n: int) -> str:
    """Parameter -> n x ReLU -> Result."""
    head = ('<?xml version="1.0"?>\n<net name="chain" version="11">\n\t<layers>\n'
            '\t\t<layer id="0" name="x" type="Parameter" version="opset1">\n'
            '\t\t\t<data shape="1,3,8,8" element_type="f32" />\n'
            '\t\t\t<output><port id="0" precision="FP32" names="x"><dim>1</dim><dim>3</dim><dim>8</dim><dim>8</dim>'
            '</port></output>\n\t\t</layer>\n')
    body = "".join(LAYER.format(i=i) for i in range(1, n + 1))
    tail = (f'\t\t<layer id="{n + 1}" name="out" type="Result" version="opset1">\n'
            '\t\t\t<input><port id="0" precision="FP32"><dim>1</dim><dim>3</dim><dim>8</dim><dim>8</dim></port></input>\n'
            '\t\t</layer>\n\t</layers>\n\t<edges>\n')
    edges = "".join(f'\t\t<edge from-layer="{i - 1}" from-port="{0 if i == 1 else 1}" to-layer="{i}" to-port="0" />\n'
                    for i in range(1, n + 2))
    return head + body + tail + edges + "\t</edges>\n</net>\n"


def outcome(fn: Callable[[], Any], timeout: float = 10.0) -> BaseException | None:
    box: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            box.append(None)
        except BaseException as err:  # noqa: BLE001 - the test inspects it
            box.append(err)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert box, f"the read blocked for {timeout} s"
    return box[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("name", ["m.xml", "m.bin"])
def test_fifo_xml_is_refused_by_core_and_reader(tmp_path: Path, plugins: PluginSystem, name: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    readers: list[Callable[[], Any]] = [lambda: Core().read_model(fifo)]
    if name.endswith(".xml"):
        readers.append(lambda: read_ir(fifo, None, plugins))
    for read in readers:
        err = outcome(read)
        assert isinstance(err, ModelFormatError), err
        assert f"'{fifo}' is not a regular file but a FIFO" in str(err)


def test_layer_count_limit(tmp_path: Path, plugins: PluginSystem) -> None:
    p = tmp_path / "m.xml"
    p.write_text(chain_ir(20))
    with using(Limits({"MAX_NODES": 10})), \
            pytest.raises(ResourceLimitError, match=r"m\.xml: layer count 11 exceeds the limit MAX_NODES=10\. .*"
                                                    r"OPFORGE_MAX_NODES"):
        read_ir(p, None, plugins)
    assert len(read_ir(p, None, plugins).get_ordered_ops()) == 22


def test_weights_and_xml_size_limits_set_on_a_core(tmp_path: Path) -> None:
    p = tmp_path / "m.xml"
    p.write_text(chain_ir(0).replace("</layers>", CONST_LAYER + "</layers>"))
    p.with_suffix(".bin").write_bytes(W.tobytes())
    core = Core()
    core.set_property({"MAX_WEIGHTS_BYTES": 15})
    with pytest.raises(ResourceLimitError, match=r"weights file '.*m\.bin' needs 16 bytes, over the limit "
                                                 r"MAX_WEIGHTS_BYTES=15"):
        core.read_model(p)
    core.set_property({"MAX_WEIGHTS_BYTES": 16, "MAX_MODEL_FILE_BYTES": 100})
    with pytest.raises(ResourceLimitError, match=r"IR file '.*m\.xml' \(weights belong in the \.bin\) needs \d+ bytes, "
                                                 r"over the limit MAX_MODEL_FILE_BYTES=100"):
        core.read_model(p)
    core.set_property({"MAX_MODEL_FILE_BYTES": 1 << 20})
    assert core.read_model(p) is not None


def test_core_wide_properties_are_validated() -> None:
    core = Core()
    with pytest.raises(PropertyError, match=r"unknown .*property 'MAX_BANANAS'"):
        core.set_property({"MAX_BANANAS": 1})
    with pytest.raises(PropertyError, match=r"expects a non-negative integer, got -1"):
        core.set_property({"MAX_NODES": -1})
    assert core.get_property("MAX_NODES") == LIMITS["MAX_NODES"].default


def test_xml_is_parsed_with_memory_proportional_to_the_file(tmp_path: Path, plugins: PluginSystem) -> None:
    p = tmp_path / "m.xml"
    p.write_text(chain_ir(600))
    size = p.stat().st_size
    read_ir(p, None, plugins)  # warm caches (op classes, hints)
    tracemalloc.start()
    try:
        model = read_ir(p, None, plugins)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(model.get_ordered_ops()) == 602
    # The model itself takes about 3x the file; a whole-document tree (or a read buffer sized
    # for the largest allowed file) took 14x to 1000x.
    assert peak < 10 * size, f"peak {peak} bytes for a {size}-byte file ({peak / size:.1f}x)"


@pytest.mark.parametrize("doc", [
    '<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY a "aaaa">]>\n<net version="11"><layers/></net>',
    '<?xml version="1.0"?>\n<net version="11"><layers/><layers/></net>',
    "",
])
def test_hostile_xml_structure(tmp_path: Path, plugins: PluginSystem, doc: str) -> None:
    p = tmp_path / "m.xml"
    p.write_text(doc)
    with pytest.raises(ModelFormatError, match=r"m\.xml: (the XML has a DOCTYPE|the <net> has two <layers>|"
                                               r"not well-formed XML)"):
        read_ir(p, None, plugins)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="RLIMIT_AS and sparse files")
def test_weights_that_cannot_be_mapped_are_a_resource_limit_error(tmp_path: Path) -> None:
    # A .bin larger than the address space left (a sparse 16 GiB file under a 4 GiB RLIMIT_AS):
    # mmap fails with ENOMEM, which used to escape as a bare OSError.
    p = tmp_path / "m.xml"
    p.write_text(chain_ir(0).replace("</layers>", CONST_LAYER + "</layers>"))
    with open(tmp_path / "m.bin", "wb") as f:
        f.truncate(16 << 30)
    code = (
        "import resource, sys, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "from opforge.ir import read_ir\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from conftest import standard_plugins\n"  # the ops that import, one module at a time
        "plugins = standard_plugins()\n"
        "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
        "try:\n"
        f"    read_ir({str(p)!r}, None, plugins)\n"
        "except BaseException as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    env = dict(os.environ, OPFORGE_DISABLE_PLUGIN_AUTOLOAD="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env).stdout
    assert out.startswith("ResourceLimitError "), out
    assert "layer 'w' (id 99, Const): cannot map weights file" in out and "m.bin' (17179869184 bytes)" in out
