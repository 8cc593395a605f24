"""Exported CPU blobs move between hosts with and without bf16 arithmetic: a model compiled
without a precision hint runs in the importing host's default (bf16 where it has bf16, f32
elsewhere); one compiled with an explicit bf16 hint is refused where there is no bf16, naming the
blob, the precision and what to do. Each host is a subprocess without the suite's pinned
OPFORGE_CPU_DEFAULT_PRECISION; ONEDNN_MAX_CPU_ISA=AVX2 stands in for a host without bf16."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opforge_cpu._loader import load_core

NATIVE_BF16 = bool(load_core().native_bf16())
needs_bf16 = pytest.mark.skipif(not NATIVE_BF16, reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")

#: commands ``export:PATH:HINT`` (HINT none, f32 or bf16) and ``import:PATH`` on one host: a
#: MatMul with constant weights (bf16 where the precision is bf16); each prints the compiled
#: model's precision and whether its error against the f32 product is f32's or bf16's
SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np, opforge
    from opforge.errors import PropertyError
    from opforge.graph import Model
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    core = opforge.Core()

    def report(compiled):
        err = float(np.abs(compiled([x])[0] - x.astype(np.float64) @ w).max())
        return f"{compiled.get_property('INFERENCE_PRECISION_HINT')} {'f32-error' if err < 1e-4 else 'bf16-error'}"

    for command in sys.argv[1:]:
        what, path, *hint = command.split(":")
        if what == "export":
            p = opforge.op("Parameter", shape=[8, 64], element_type="f32", name="x")
            model = Model([opforge.op("MatMul", p, opforge.op("Constant", value=w), name="fc")], [p], name="fc")
            compiled = core.compile_model(model, "CPU", None if hint[0] == "none" else {"INFERENCE_PRECISION_HINT": hint[0]})
            compiled.export_model(path)
            print(command, report(compiled))
        else:
            try:
                print(command, report(core.import_model(path)))
            except PropertyError as err:
                print(command, "REFUSED", err)
""")


def host(*commands: str, bf16: bool) -> dict[str, str]:
    """Run ``commands`` on a host with (this one) or without bf16 (oneDNN capped at AVX2), with
    the CPU's own default precision; what each printed, by command."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPFORGE_CPU_DEFAULT_PRECISION", "DNNL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA")}
    if not bf16:
        env["ONEDNN_MAX_CPU_ISA"] = "AVX2"
    out = subprocess.run([sys.executable, "-c", SCRIPT, *commands], env=env, capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" ", 1) for line in out.stdout.strip().splitlines())
    assert list(lines) == list(commands), out.stdout
    return lines


@needs_bf16
def test_blobs_move_between_hosts_with_and_without_bf16(tmp_path: Path) -> None:
    default, bf16, f32, avx2_default = (str(tmp_path / f"{n}.ofblob") for n in ("default", "bf16", "f32", "avx2"))
    made = host(f"export:{default}:none", f"export:{bf16}:bf16", f"export:{f32}:f32", bf16=True)
    assert list(made.values()) == ["bf16 bf16-error", "bf16 bf16-error", "f32 f32-error"]

    there = host(f"import:{default}", f"import:{bf16}", f"import:{f32}", f"export:{avx2_default}:none", bf16=False)
    # no hint: this host's default, f32 (the blob was refused here before format version 2)
    assert there[f"import:{default}"] == "f32 f32-error"
    assert there[f"import:{f32}"] == "f32 f32-error"
    assert there[f"export:{avx2_default}:none"] == "f32 f32-error"
    # an explicit bf16: refused, naming the blob, the precision and the ways out
    refused = there[f"import:{bf16}"]
    assert refused.startswith(f"REFUSED '{bf16}' cannot be imported on this host: device CPU: "
                              "INFERENCE_PRECISION_HINT=bf16 needs a CPU with bf16 arithmetic"), refused
    assert "this host's oneDNN ISA is avx2" in refused
    assert "Its compile set INFERENCE_PRECISION_HINT=bf16" in refused
    assert "config={'INFERENCE_PRECISION_HINT': 'f32'}" in refused and "compile the model again for CPU" in refused

    back = host(f"import:{default}", f"import:{bf16}", f"import:{f32}", f"import:{avx2_default}", bf16=True)
    # the defaults resolve to bf16 again, whichever host exported them; the explicit ones stay
    assert list(back.values()) == ["bf16 bf16-error", "bf16 bf16-error", "f32 f32-error", "bf16 bf16-error"]
