"""The main job (``opforge demo``): the bundled sample model, which contains a custom op that
only a plugin knows, converted to IR, read back, and run on every available device.

Each step checks its result against the NumPy reference (the oracle), so the demo fails loudly
instead of printing plausible numbers.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from opforge.errors import OpforgeError


def run_demo(out: Path, devices: list[str] | None = None) -> int:
    from opforge import Core, save_model
    from opforge.reference import evaluate_model
    from opforge.samples import CUSTOM_DOMAIN, CUSTOM_OP, SAMPLE_ONNX

    out.mkdir(parents=True, exist_ok=True)
    core = Core()
    print(f"[1/5] sample model: {SAMPLE_ONNX.name} (custom op {CUSTOM_DOMAIN}::{CUSTOM_OP})")
    try:
        model = core.read_model(SAMPLE_ONNX)
    except OpforgeError as err:
        raise OpforgeError(
            f"{err}\nThe demo needs the ONNX frontend and the template extension: "
            "pip install -e frontends/onnx -e plugins/template-extension (scripts/demo does this)."
        ) from err
    custom = [n for n in model.get_ordered_ops() if not n.op.is_standard]
    for n in custom:
        reg = core.plugins.ops.registration(n.op.key())
        print(f"      node '{n.name}' -> op {n.type_name} of opset '{n.version}' from plugin {reg.plugin if reg else '?'}")
    if not custom:
        raise OpforgeError("the sample's custom op was not converted to a plugin op; is the template extension installed?")

    xml = out / "sample_custom_op.xml"
    print(f"[2/5] saving IR: {xml} (+ .bin)")
    save_model(model, xml)
    print("[3/5] reading the IR back (the custom opset resolves through the installed plugin)")
    ir_model = core.read_model(xml)

    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = evaluate_model(model, [x])[0]
    got_ir = evaluate_model(ir_model, [x])[0]
    np.testing.assert_allclose(got_ir, want, rtol=1e-6, atol=1e-6)
    print(f"[4/5] IR round trip matches the reference: logits[:4] = {np.round(want.ravel()[:4], 4).tolist()}")

    targets = devices or core.available_devices
    if not targets:
        print("[5/5] no device plugin is installed or available: nothing to run on "
              f"(unavailable: {core.unavailable_devices() or 'none'}). Install opforge-cpu.")
        return 0
    failed = 0
    for dev in targets:
        try:
            compiled = core.compile_model(ir_model, dev)
            compiled([x])  # warm-up: first runs build kernels
            times = []
            for _ in range(20):
                t0 = time.perf_counter()
                res = compiled([x])
                times.append((time.perf_counter() - t0) * 1e3)
            diff = float(np.max(np.abs(res[0] - want)))
            # A device that computes in half precision (the VPU) is held to what f16 can represent
            # (11 significant bits), one computing in bf16 by default (CPU on a host with bf16
            # arithmetic, as OpenVINO) to what bf16 operands give (8 bits, f32 sums), every
            # other device to f32 accumulation noise.
            precision = str(compiled.get_property("INFERENCE_PRECISION_HINT")).lower()
            rel = {"f16": 2e-3, "bf16": 2e-2}.get(precision, 1e-4)
            ok = diff <= rel * max(1.0, float(np.max(np.abs(want))))
            low = f" ({precision})" if precision in ("f16", "bf16") else ""
            print(f"[5/5] {dev:<16} median {np.median(times):7.3f} ms   max |diff| vs reference {diff:.2e}  "
                  f"{'OK' if ok else 'MISMATCH'}{low}")
            failed += not ok
        except OpforgeError as e:
            print(f"[5/5] {dev:<16} FAILED: {e}")
            failed += 1
    return 1 if failed else 0
