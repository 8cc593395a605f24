"""Emission: a static, specialized model -> one C++ program (``_core.Program``).

Tensors and kernel steps, element-wise tails fused into oneDNN post-ops of the convolution or
MatMul before them (bias, residual sum, activations), the LayerNorm tail fused into MVN, and
data-movement ops with constant parameters lowered to one IndexMap gather. Runs once per plan;
nothing here runs during inference.
"""

from __future__ import annotations

import enum
import math
import os
import types
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.errors import PluginValidationError, UnsupportedOpError
from opforge.graph import WEIGHTS_RELEASED, Model, Node, Output
from opforge.op import STRUCTURAL
from opforge.opset._rnn import DYNAMIC_QUANTIZED_INPUT, DYNAMIC_QUANTIZED_RECURRENCE
from opforge.opset.constant import ConstantAttrs
from opforge.shape import PartialShape

from opforge_cpu import bf16_se
from opforge_cpu.ops import emit_cpu_op
from opforge_cpu.passes.noop_moves import index_image

#: a folded Softmax's Add takes any addend that broadcasts by rows (Emitter._softmax_add); read once
_WIDE_SOFTMAX_ADD = os.environ.get("OPFORGE_CPU_WIDE_SOFTMAX_ADD", "1") != "0"
#: a bf16 Q x K^T takes the constant scale of its Q as its scale post-op (Emitter._folded_prescale)
_QSCALE_FOLD = os.environ.get("OPFORGE_CPU_QSCALE_FOLD", "1") != "0"
#: a MaxPool of u8/i8 bytes (no indices read) runs as QuantizedMaxPool (Emitter.emit); 0 keeps
#: the plain integer loop (over nchw data); read once
_INT8_MAX_POOL = os.environ.get("OPFORGE_CPU_INT8_MAX_POOL", "1") != "0"
#: a bf16 program's Clamp takes a bf16 input and passes bf16 on (Emitter._bf16_passes); read once
_BF16_CLAMP = os.environ.get("OPFORGE_CPU_BF16_CLAMP", "1") != "0"
#: a constant Slice of consecutive channels of a 4-D tensor runs ChannelSlice, not IndexMap
#: (Emitter.emit_index_map); 0 keeps the IndexMap; read once
_CHANNEL_SLICE = os.environ.get("OPFORGE_CPU_CHANNEL_SLICE", "1") != "0"


def _qkv_pick() -> bool:
    """A bf16 attention MatMul reads Swin's qkv[i] Gather in place (Emitter._folded_pick); read
    at each compile, as passes/qkv_split.py reads OPFORGE_CPU_QKV_SPLIT."""
    return os.environ.get("OPFORGE_CPU_QKV_PICK", "1") != "0"


def index_mapped(node: Node, builtin: Collection[str]) -> bool:
    """Whether standard ``node`` is lowered to one IndexMap kernel (when its parameters are
    constants): an op that only rearranges its input 0 (``Op.rearranges_input``) and has no C++
    kernel of its own, evaluated on element indices (``Emitter.emit_index_map``)."""
    return node.op.rearranges_input and node.type_name not in builtin


def row_scales(node: Node, key: str, index: int) -> list[float] | None:
    """The row scales of weights input ``index`` that a recurrent sequence carries in ``rt_info``
    under ``key`` (the ONNX frontend's DynamicQuantizeLSTM; a space-separated string once read
    back from IR), or None where it carries none, or they are not one finite positive scale per
    row of that input (the kernel checks that they reproduce its values, core/rnn_gemv.cpp)."""
    value = node.rt_info.get(key)
    if value is None or index >= len(node.inputs):
        return None
    try:
        scales = [float(v) for v in (value.split() if isinstance(value, str) else value)]
    except (TypeError, ValueError):
        return None
    shape = node.inputs[index].partial_shape
    if not shape.is_static or len(shape.to_tuple()) != 3:
        return None
    dirs, rows, _ = (int(d) for d in shape.to_tuple())
    if len(scales) != dirs * rows or not all(math.isfinite(s) and s > 0 for s in scales):
        return None
    return scales


def channel_slice_begin(src: tuple[int, ...], out: tuple[int, ...], flat: np.ndarray) -> int | None:
    """The first channel when index image ``flat`` (passes/noop_moves.py ``index_image``) of a
    4-D ``src`` takes the consecutive channels [begin, begin + out[1]) of every image and pixel,
    as a Slice of the channels does; else None."""
    if len(src) != 4 or len(out) != 4 or (out[0], out[2], out[3]) != (src[0], src[2], src[3]):
        return None
    if not 0 < out[1] < src[1] or flat.size == 0 or flat.size != int(np.prod(out)):
        return None
    begin = int(flat[0]) // (src[2] * src[3])
    if not 0 <= begin <= src[1] - out[1]:
        return None
    want = np.arange(int(np.prod(src)), dtype=np.int64).reshape(src)[:, begin:begin + out[1]].reshape(-1)
    return begin if np.array_equal(flat, want) else None


def contiguous(value: Any) -> np.ndarray:
    """``value`` as a C-contiguous array of its own rank (``np.ascontiguousarray`` turns a 0-d
    array into a 1-d one, which made scalar value inputs [1]-shaped constants)."""
    a = np.asarray(value)
    return a if a.flags.c_contiguous else a.copy(order="C")


def find_plugin_kernel(kernels: Mapping[tuple[str, str | None], Any], node: Node) -> Any:
    return kernels.get((node.type_name, node.version)) or kernels.get((node.type_name, None))


def single_user(uses: dict[Output, list[tuple[Node, int]]], out: Output) -> Node | None:
    """The one node reading ``out``, or None when it has no reader or several."""
    u = uses.get(out, [])
    return u[0][0] if len(u) == 1 else None


def attrs_dict(node: Node) -> dict[str, Any]:
    """The node's attributes as plain Python values a kernel can read."""
    out: dict[str, Any] = {}
    for k in type(node.attrs).model_fields:
        v = getattr(node.attrs, k)
        if isinstance(v, dict):
            continue  # no C++ kernel reads a mapping (FrameworkNode's attributes); Python ones get node.attrs
        out[k] = _plain(v)
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, Type):
        return v.ir
    if isinstance(v, PartialShape):
        return [(-1 if d is None else int(d)) for d in v.dims] if v.rank is not None else None
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def capsule_of(kernel: Any) -> Any:
    """The PyCapsule of a compiled kernel (the capsule itself, or an object exposing one as
    ``opforge_cpu_kernel``), else None."""
    cap = getattr(kernel, "opforge_cpu_kernel", kernel)
    if callable(cap) and not _is_capsule(cap):
        try:
            cap = cap()
        except TypeError:
            return None
    return cap if _is_capsule(cap) else None


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


class Emitter:
    """Builds one ``_core.Program`` from a static, rewritten model."""

    def __init__(self, core: types.ModuleType, model: Model, kernels: Mapping[tuple[str, str | None], Any],
                 kernel_plugins: Mapping[tuple[str, str | None], str], bf16: bool = False) -> None:
        self.core = core
        #: INFERENCE_PRECISION_HINT=bf16: convolutions and dense MatMuls compute in bf16
        self.bf16 = bf16
        self.model = model
        self.kernels = kernels
        self.kernel_plugins = kernel_plugins
        self.prog = core.Program()
        self.tid: dict[Output, int] = {}
        self.uses = model.consumers()
        self.absorbed: set[int] = set()
        self.done: set[int] = set()
        self.python_nodes: list[str] = []
        self.abi_nodes: list[str] = []
        #: tensor -> the Constant node whose array the program reads (see ``_lend_constants``)
        self.const_nodes: dict[int, Node] = {}
        #: node id -> its place in the emission order (where its step runs)
        self.order: dict[int, int] = {}
        #: tensors written in bf16 for the bf16 MatMuls that read them as their source or
        #: residual: MatMul results (_bf16_matmul_output), LayerNorm/RMSNorm outputs
        #: (_bf16_norm_output)
        self.bf16_matmul_results: set[Output] = set()
        #: LayerNorm output -> the tensor of its bf16 copy, which its bf16 MatMuls read while
        #: the residual Adds read the f32 output (_bf16_norm_copy)
        self.bf16_copies: dict[Output, int] = {}

    # --- tensors ---------------------------------------------------------------------------
    def tensor(self, out: Output) -> int:
        if out in self.tid:
            return self.tid[out]
        spec = out.spec
        if not spec.shape.is_static:
            raise UnsupportedOpError(
                f"node '{out.node.name}' ({out.node.type_name}): output shape {spec.shape} is not known at "
                "compile time; the CPU device needs shapes that follow from the input shapes"
            )
        value = out.node.constant_value()
        arr = None if value is None else contiguous(value)
        t = self.prog.add_tensor(spec.type.ir, list(spec.shape.to_tuple()), arr)
        self.tid[out] = t
        if arr is not None and arr is value and out.node.type_name == "Constant":
            self.const_nodes[t] = out.node
        return t

    def const_tensor(self, value: np.ndarray) -> int:
        arr = contiguous(value)
        return int(self.prog.add_tensor(Type.from_numpy(arr.dtype).ir, list(arr.shape), arr))

    # --- program ---------------------------------------------------------------------------
    def build(self, num_threads: int, profiling: bool) -> Any:
        m = self.model
        inputs = [self.tensor(p.output(0)) for p in m.parameters]
        ordered = m.get_ordered_ops()
        self.order = {n.id: i for i, n in enumerate(ordered)}
        for node in ordered:
            if node.type_name in STRUCTURAL or node.id in self.absorbed:
                continue
            self.emit(node)
            self.done.add(node.id)
            self.done.update(self.absorbed)
        outputs = [self.tensor(r.inputs[0]) for r in m.results]
        self.prog.set_io(inputs, outputs)
        self._lend_constants()
        try:
            self.prog.finalize(num_threads, profiling)
        finally:
            self._take_back_constants()
        return self.prog

    def _lend_constants(self) -> None:
        """While the program packs weights, it holds the only reference to each constant array
        the model gave it, so an array every reader packed is freed as soon as it is packed
        (the peak holds the packed copy, not the packed copy plus the graph's)."""
        for node in self.const_nodes.values():
            v = node.attrs.value  # type: ignore[attr-defined]
            node.attrs = ConstantAttrs(value=np.broadcast_to(np.zeros((), v.dtype), v.shape))

    def _take_back_constants(self) -> None:
        """Constants the program did not release go back into the graph; released ones keep
        a zero-byte stand-in of their shape and type, and the model is marked (it can no longer
        be specialized again: dynamic models keep their unspecialized original for that)."""
        released = False
        for t, node in self.const_nodes.items():
            v = self.prog.constant(t)
            if v is None:
                node.rt_info[WEIGHTS_RELEASED] = "the CPU device"
                released = True
            else:
                node.attrs = ConstantAttrs(value=v)
        if released:
            self.model.rt_info[WEIGHTS_RELEASED] = "the CPU device"
        self.const_nodes = {}

    def add(self, node: Node, type_name: str, attrs: dict[str, Any], inputs: list[int], outputs: list[Output],
            fused: list[str], **extra: Any) -> None:
        self.prog.add_node(node.name, type_name, node.version, attrs, inputs,
                           [self.tensor(o) for o in outputs], fused, **extra)

    def emit(self, node: Node) -> None:
        plugin_kernel = find_plugin_kernel(self.kernels, node)
        if plugin_kernel is not None:
            self.emit_plugin(node, plugin_kernel)
            return
        if emit_cpu_op(self, node):  # the CPU's own ops (opforge_cpu.ops: int8 kernels)
            return
        if not node.op.is_standard:
            raise UnsupportedOpError(
                f"node '{node.name}' ({node.type_name}-{node.version}): the CPU device has no kernel for this "
                "op; its plugin can add one through opforge_register_kernels(register) with "
                f"register('CPU', '{node.type_name}', kernel, version='{node.version}')"
            )
        t = node.type_name
        if t in ("Convolution", "GroupConvolution", "MatMul") and node.inputs[0].element_type is Type.f32:
            self.emit_fused(node)
            return
        if t == "Transpose" and (reader := single_user(self.uses, node.output(0))) is not None and \
                self._folded_transpose(reader, node.output(0)) is not None:
            return  # its MatMul reads the input through permuted strides (emit_fused)
        if t == "Softmax" and (reader := single_user(self.uses, node.output(0))) is not None and \
                self._folded_softmax(reader, node.output(0)):
            return  # its bf16 MatMul computes it into its own bf16 source (emit_fused)
        if t == "Add" and self._add_before_folded_softmax(node):
            return  # that MatMul adds it to the scores as it computes the softmax
        if t in ("Multiply", "Divide") and self._prescale_reader(node) is not None:
            return  # its bf16 MatMul scales its result instead (emit_fused)
        if t == "Gather" and self._pick_reader(node) is not None:
            return  # its bf16 MatMul reads the slice in place (emit_fused, _folded_pick)
        if t == "MaxPool":
            need = len(node.output_specs) > 1 and bool(self.uses.get(node.output(1)))
            src_type = node.inputs[0].element_type
            if not need and src_type in (Type.u8, Type.i8) and _INT8_MAX_POOL:
                # A max pool of u8/i8 bytes (ONNX Runtime's QOperator models pool the QLinearConv
                # output as it is): QuantizedMaxPool is exactly that op (the QDQ pass makes it from
                # DequantizeLinear -> MaxPool -> QuantizeLinear), oneDNN's int8 pooling in the
                # producer's channels-last layout instead of the plain integer loop below.
                self.add(node, "QuantizedMaxPool", attrs_dict(node), [self.tensor(node.inputs[0])], [node.output(0)],
                         [node.name])
                return
            # The integer loop (and the indices) read plain nchw: an integer tensor a quantized
            # convolution wrote channels-last is reordered first (without this the loop read the
            # nhwc bytes as nchw: resnet18's QOperator copy pooled garbage)
            attrs = attrs_dict(node) | {"need_indices": need, "plain_layout": need or src_type is not Type.f32}
            self.add(node, t, attrs, [self.tensor(i) for i in node.inputs], node.outputs(), [node.name])
            return
        if t == "MVN":
            self.emit_mvn(node)
            return
        if t == "BatchNormInference" and node.inputs[0].element_type is Type.f32:
            self.emit_batch_norm(node)
            return
        if (t in ("ConvolutionBackpropData", "GroupConvolutionBackpropData") and len(node.inputs) == 2
                and node.inputs[0].element_type is Type.f32):
            self.emit_deconv(node)
            return
        if index_mapped(node, self.core.kernel_types()) and self.emit_index_map(node):
            return
        ins = [self.tensor(i) for i in node.inputs]
        attrs = attrs_dict(node)
        if self._bf16_output(node, node.output(0)):
            attrs["bf16_output"] = True  # a bf16 input stays bf16 (Concat, Relu: _bf16_passes)
        if self.bf16 and t == "Interpolate" and self._bf16_storable(node.output(0), self.order.get(node.id, -1)):
            attrs["bf16_output"] = True  # a bf16 nhwc input resized into bf16 (core/resample.cpp)
        if t == "RMSNormalization" and self._bf16_norm_output(node.output(0), self.order.get(node.id, -1)):
            attrs["bf16_output"] = True  # T5/LLaMA's RMSNorm read by the next projections only
            self.bf16_matmul_results.add(node.output(0))
        if self.bf16 and t in ("RNNSequence", "GRUSequence", "LSTMSequence"):
            # the recurrence's weights in bf16, f32 accumulation (core/rnn_gemv.cpp), as
            # OpenVINO runs its recurrent sequences under the bf16 hint
            attrs["bf16_weights"] = True
        if t == "LSTMSequence":
            # a DynamicQuantizeLSTM: multiplied on the integers where W and R are exactly those
            # multiples and the host has VNNI (core/rnn_gemv.hpp), as ONNX Runtime runs it
            r_scales = row_scales(node, DYNAMIC_QUANTIZED_RECURRENCE, 5)
            w_scales = row_scales(node, DYNAMIC_QUANTIZED_INPUT, 4)
            if r_scales is not None and w_scales is not None:
                attrs["int8_recurrence_scales"] = r_scales
                attrs["int8_input_scales"] = w_scales
        self.add(node, t, attrs, ins, node.outputs(), [node.name])

    def emit_plugin(self, node: Node, kernel: Any) -> None:
        plugin = self.kernel_plugins.get((node.type_name, node.version)) or self.kernel_plugins.get(
            (node.type_name, None), "?")
        ins = [self.tensor(i) for i in node.inputs]
        cap = capsule_of(kernel)
        if cap is not None:
            got = int(self.core.capsule_abi_version(cap))
            want = int(self.core.abi_version())
            if got != want:
                from opforge_cpu import __version__

                raise PluginValidationError(
                    f"plugin {plugin}: its compiled CPU kernel for {node.type_name}-{node.version} was built "
                    f"against opforge-cpu kernel ABI {got}, but opforge-cpu {__version__} speaks ABI {want}. "
                    "Rebuild the plugin against this opforge-cpu (pip install --force-reinstall --no-binary :all: "
                    "<plugin>)."
                )
            self.abi_nodes.append(node.name)
            self.add(node, node.type_name, attrs_dict(node), ins, node.outputs(), [node.name], capsule=cap)
            return
        if not callable(kernel):
            raise PluginValidationError(
                f"plugin {plugin}: the CPU kernel registered for {node.type_name}-{node.version} is a "
                f"{type(kernel).__name__}, neither a callable kernel(attrs, inputs) nor a kernel capsule"
            )
        self.python_nodes.append(node.name)
        self.add(node, node.type_name, attrs_dict(node), ins, node.outputs(), [node.name],
                 python_kernel=kernel, attrs_object=node.attrs)

    def emit_fused(self, node: Node) -> None:
        """Conv/GroupConv/MatMul plus what follows it: a bias Add, a residual Add (oneDNN sum)
        and element-wise activations, as long as each intermediate has one reader."""
        is_mm = node.type_name == "MatMul"
        cur = node.output(0)
        out_shape = cur.shape
        fused = [node.name]
        extra: list[int] = []
        # fused activations as (type, attributes): the C++ kernel of each type registered the
        # oneDNN post-op it becomes (_core.post_op_types() lists them)
        post: list[tuple[str, dict[str, Any]]] = []
        fusable = set(self.core.post_op_types())
        has_bias = False
        # one residual operand at most (oneDNN's sum post-op): a second run-time Add after it,
        # (m + a) + x as GPT-NeoX's parallel attention/MLP residual writes it, ends the chain
        # (taken as a second sum it was dropped: hf_gpt_neox_small 1.2 of max|y| off)
        has_sum = False
        scale: float | None = None  # a constant scalar Multiply/Divide (oneDNN eltwise_linear)
        # timm's q * scale (and k's) before Q x K^T, applied to the result as the scale post-op
        # (first in the chain, so no bias or sum comes after it: the chain below sees a scale)
        prescales: dict[int, tuple[Output, float]] = {}
        for k in (0, 1) if is_mm else ():
            read = node.inputs[k]
            if (folded := self._folded_transpose(node, read)) is not None:
                read = folded[0]
            if (ps := self._folded_prescale(node, k, read)) is not None:
                prescales[k] = ps
                fused.insert(0, read.node.name)
        if prescales:
            scale = float(np.prod([c for _, c in prescales.values()]))
        mask: Output | None = None  # a broadcast Add of a run-time tensor (oneDNN binary add)
        perm_out: list[int] | None = None  # a Transpose of the result, written through strides
        gate: Output | None = None  # a gated FFN's other half, multiplied in last (binary mul)
        base = len(node.inputs)
        while gate is None:
            user = single_user(self.uses, cur)
            if user is None or user.id in self.absorbed or user.output_specs[0].type is not Type.f32:
                break
            if user.type_name == "Add" and getattr(user.attrs, "auto_broadcast", "numpy") == "numpy":
                other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
                if user.inputs[0] == user.inputs[1] or mask is not None:
                    break
                # (a bias or sum comes before the scale in oneDNN's chain: not after one)
                bias = self._bias_value(other, out_shape, is_mm) if scale is None else None
                if bias is not None and not has_bias and not has_sum and not post:
                    has_bias = True
                    extra.insert(0, self.const_tensor(bias))
                elif (scale is None and other.node.constant_value() is None and tuple(other.shape) == tuple(out_shape)
                      and not has_sum and not post and self._computed(other)):
                    extra.append(self.tensor(other))  # oneDNN's sum post-op, first in the chain
                    has_sum = True  # its input position is resolved below, after the bias's
                elif (is_mm and not has_sum and not post
                      and self._mask_operand(node, other, out_shape)):
                    # attention's mask after Q x K^T (/ sqrt(d)): a binary add post-op of the
                    # MatMul, after the scale (bert_small: 4 Add steps of 0.015-0.02 ms saved)
                    mask = other
                else:
                    break
            elif (is_mm and scale is None and not has_sum and not post
                  and (s := self._scalar_factor(user, cur)) is not None):
                # attention's Q x K^T / sqrt(d): the scale becomes a post-op of the MatMul
                # (x * (1/c) for x / c: within one f32 rounding, exact for sqrt(64) = 8)
                scale = s
            elif is_mm and not has_sum and (p := self._output_transpose(node, user)) is not None:
                # attention's head merge after P x V: the MatMul writes [B, S, H, D] directly
                # (oneDNN's f32 and bf16 MatMuls take the permuted destination: brg, no
                # reference kernel); last in the chain, so a post-op never sees the permuted layout
                perm_out = p
                self.absorbed.add(user.id)
                fused.append(user.name)
                cur = user.output(0)
                break
            elif is_mm and mask is None and (g := self._gate_operand(node, user, cur)) is not None:
                # a gated FFN (T5's gelu(x W0) * (x W1), Llama's silu(x Wg) * (x Wu)): the second
                # projection multiplies the first's result in as its last post-op; the chain ends
                gate = g
            elif user.type_name in fusable and user.op.is_standard and len(user.inputs) == 1:
                # one input only: a post-op is built from attributes, so an input such as
                # Swish's beta would be lost
                post.append((user.type_name, attrs_dict(user)))
            else:
                break
            self.absorbed.add(user.id)
            fused.append(user.name)
            cur = user.output(0)
        operands = list(node.inputs)
        perms: dict[str, list[int]] = {}
        softmax_a = False
        addend: Output | None = None  # an Add before the folded Softmax: its other operand
        if is_mm:
            for k, key in ((0, "perm_a"), (1, "perm_b")):
                if (folded := self._folded_transpose(node, node.inputs[k])) is not None:
                    operands[k], perms[key] = folded
            for k, (x, _) in prescales.items():
                operands[k] = x
            if self._folded_softmax(node, node.inputs[0]):
                softmax_a = True
                softmax = node.inputs[0].node
                operands[0] = softmax.inputs[0]
                fused.insert(0, softmax.name)
                if (add := self._softmax_add(softmax)) is not None:
                    operands[0], addend = add
                    fused.insert(0, softmax.inputs[0].node.name)
            for k, key in ((0, "pick_a"), (1, "pick_b")):
                if not (k == 0 and softmax_a) and (pick := self._folded_pick(node, operands[k])) is not None:
                    fused.insert(0, operands[k].node.name)
                    operands[k], perms[key] = pick
        ins = [self.tensor(i) for i in operands] + extra
        sum_input = base + (1 if has_bias else 0) if has_sum else -1
        attrs = attrs_dict(node) | {"has_bias": has_bias, "sum_input": sum_input, "post_ops": post} | perms
        if scale is not None:
            attrs["out_scale"] = scale
        if mask is not None:
            attrs["add_input"] = len(ins)
            ins.append(self.tensor(mask))
        if perm_out is not None:
            attrs["perm_out"] = perm_out
        if gate is not None:
            attrs["mul_input"] = len(ins)
            ins.append(self.tensor(gate))
        if self._runs_bf16(node):
            # bf16 operands, f32 accumulation and output (see core/nn.cpp); constant weights
            # packed as bf16 once
            attrs["bf16"] = True
            attrs["bf16_output"] = (self._bf16_matmul_output(cur, perm_out, sum_input) if is_mm
                                    else self._bf16_storable(cur, self.order.get(node.id, -1)))
            if is_mm and attrs["bf16_output"]:
                self.bf16_matmul_results.add(cur)
            if is_mm and operands[0] in self.bf16_matmul_results:
                attrs["takes_blocked"] = True  # that bf16 result as it is (core/executor.cpp)
            if is_mm and operands[0] in self.bf16_copies:
                # a post-LN block's LayerNorm output: its bf16 copy (_bf16_norm_copy)
                ins[0] = self.bf16_copies[operands[0]]
                attrs["takes_blocked"] = True
            if softmax_a:
                attrs["softmax_a"] = True
                if addend is not None:
                    attrs["softmax_add_input"] = len(ins)
                    ins.append(self.tensor(addend))
        self.prog.add_node(fused[-1] if len(fused) > 1 else node.name, node.type_name, node.version, attrs, ins,
                           [self.tensor(cur)], fused)

    def _mask_operand(self, node: Node, other: Output, out_shape: tuple[int, ...]) -> bool:
        """Whether ``other`` can be added to MatMul ``node``'s result as a binary post-op:
        attention's mask ([1, 1, 1, S] over [B, H, S, S]), an f32 row computed before the MatMul's
        step, on a MatMul of two run-time operands (a dense one falls back to the inner product,
        which takes no binary operand)."""
        if node.inputs[1].node.constant_value() is not None or other.element_type is not Type.f32:
            return False
        if other.node.constant_value() is None and not self._computed(other):
            return False
        # only a row vector broadcast over the rows and batches ([..., 1, N] or a scalar): the
        # bf16 brgemm MatMul takes no other broadcast (a [B, H, S, 1] operand made it oneDNN's
        # reference kernel)
        shape = tuple(other.shape)
        lead = (1,) * (len(out_shape) - len(shape)) + shape
        if (not self.bf16 and len(out_shape) >= 3 and len(lead) == len(out_shape)
                and lead[-2:] == tuple(out_shape[-2:]) and lead[-3] in (1, out_shape[-3])
                and all(d == 1 for d in lead[:-3]) and all(d == 1 for d in out_shape[:-3])):
            # f32: also GPT-2's causal mask [1, 1, S, S] and T5's position bias [1, H, S, S]
            # (one batch): the f32 brgemm MatMul takes them (brg:avx512_core, checked in
            # test_cpu_attention_f32.py). Not over several batches: Swin's relative position
            # bias [1, H, 49, 49] over 64 windows [64, H, 49, 49] got oneDNN's reference
            # kernel (tv_swin_t f32 3.6 s where the MatMul and an Add step take ~0.1)
            return True
        if len(shape) > len(out_shape) or any(d != 1 for d in shape[:-1]):
            return False
        return not shape or shape[-1] in (1, out_shape[-1])

    def _gate_operand(self, mm: Node, user: Node, cur: Output) -> Output | None:
        """The other operand of Multiply ``user`` of MatMul ``mm``'s result ``cur``, when it can be
        multiplied in as a binary post-op (mul_input, core/nn.cpp): a gated FFN's gate or up half,
        an f32 tensor of the result's own shape (no broadcast) computed before this step, on a
        projection with constant weights (f32 and bf16 brgemm MatMuls take it; the MatMul's
        2-D fully connected form takes no binary operand and is then not used).
        ``OPFORGE_CPU_GATED_FFN=0`` turns this off (a Multiply step, as before), for measuring it."""
        if (os.environ.get("OPFORGE_CPU_GATED_FFN", "1") == "0" or user.type_name != "Multiply"
                or not user.op.is_standard or find_plugin_kernel(self.kernels, user) is not None
                or getattr(user.attrs, "auto_broadcast", "numpy") != "numpy" or user.inputs[0] == user.inputs[1]
                or mm.inputs[1].node.constant_value() is None):
            return None
        other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
        if (other.element_type is not Type.f32 or other.node.constant_value() is not None
                or tuple(other.shape) != tuple(cur.shape) or tuple(user.output(0).shape) != tuple(cur.shape)
                or not self._computed(other)):
            return None
        return other

    def _output_transpose(self, mm: Node, t: Node) -> list[int] | None:
        """The order of Transpose ``t`` of MatMul ``mm``'s result (its only reader), when both
        operands have at least two dimensions (the result is then the full-rank one); in f32 only
        for a MatMul of two run-time operands (attention's P x V: one with constant weights keeps
        the inner-product path, which writes no strides)."""
        if (t.type_name != "Transpose" or not t.op.is_standard or find_plugin_kernel(self.kernels, t) is not None
                or not (self.bf16 or mm.inputs[1].node.constant_value() is None)
                or any(len(i.shape) < 2 for i in mm.inputs[:2])):
            return None
        order = t.inputs[1].node.constant_value()
        rank = len(mm.output(0).shape)
        if order is None:
            return None
        perm = [int(v) for v in np.asarray(order).reshape(-1)] or list(range(rank))[::-1]
        # the result's last axis must stay the innermost one: oneDNN's brgemm MatMul writes rows
        # of N contiguous elements at any row/batch strides, but a destination whose N elements
        # are strided (EdgeNeXt's cross-covariance attention, [B, H, D, N] -> [B, N, H, D]) gets
        # only its reference kernel: 59 ms for one 16x16 x 16x1024 product where the MatMul and
        # a separate Transpose take well under 1
        return perm if sorted(perm) == list(range(rank)) and perm[-1] == rank - 1 else None

    def _folded_transpose(self, mm: Node, operand: Output) -> tuple[Output, list[int]] | None:
        """(the input, the permutation) of a Transpose that produces ``operand`` of MatMul ``mm``
        and is read by nothing else: attention's head split ([B, S, H, D] -> [B, H, S, D], K's ->
        [B, H, D, S]). The MatMul reads that input through permuted strides (in bf16 its f32 ->
        bf16 conversion, which it does anyway, moves the values): the Transpose's own pass over
        the tensor is saved. In f32 only for a MatMul of two run-time operands (attention's; one
        with constant weights keeps the inner-product path)."""
        t = operand.node
        if t.id in self.absorbed:
            # already the head merge of the MatMul before (perm_out, _output_transpose), which
            # writes this Transpose's output: its input is never produced (Resize by matrices on
            # two axes: MatMul -> Transpose -> MatMul read an unwritten tensor and crashed)
            return None
        if (mm.type_name != "MatMul" or not mm.op.is_standard
                or not (self.bf16 or mm.inputs[1].node.constant_value() is None)
                or find_plugin_kernel(self.kernels, mm) is not None or mm.inputs[0].element_type is not Type.f32
                or t.type_name != "Transpose" or not t.op.is_standard or find_plugin_kernel(self.kernels, t) is not None
                or getattr(single_user(self.uses, operand), "id", None) != mm.id or mm.inputs[0] == mm.inputs[1]):
            return None
        order = t.inputs[1].node.constant_value()
        src = t.inputs[0]
        rank = len(src.shape)
        if order is None or src.element_type is not Type.f32 or src.node.constant_value() is not None or rank < 2:
            return None
        perm = [int(v) for v in np.asarray(order).reshape(-1)] or list(range(rank))[::-1]
        if sorted(perm) != list(range(rank)):
            return None
        return src, perm

    def _prescale_reader(self, m: Node) -> Node | None:
        """The bf16 MatMul that takes Multiply/Divide ``m`` as its scale (``_folded_prescale``),
        reading it directly or through a folded head-split Transpose."""
        reader = single_user(self.uses, m.output(0))
        if reader is not None and reader.type_name == "Transpose":
            reader = single_user(self.uses, reader.output(0))
        if reader is None or reader.type_name != "MatMul" or len(reader.inputs) != 2:
            # only a MatMul takes the scale (a Softmax or Reshape reading the Multiply has one
            # input: indexing its second crashed compiling ONNX's attention node tests)
            return None
        for k in (0, 1):
            read = reader.inputs[k]
            if (folded := self._folded_transpose(reader, read)) is not None:
                read = folded[0]
            if read == m.output(0) and self._folded_prescale(reader, k, read) is not None:
                return reader
        return None

    def _folded_prescale(self, mm: Node, k: int, operand: Output) -> tuple[Output, float] | None:
        """(the input, the factor) of a Multiply/Divide by a constant scalar that produces
        operand ``k`` of bf16 MatMul ``mm`` of two run-time operands (``operand``: what ``mm``
        reads, the input of a folded head-split Transpose included) and is read by nothing else:
        timm's ``q * scale`` (and the ``k * scale`` of torch's scaled_dot_product_attention
        export) before Q x K^T, each a 'ref' step of its own, slower at 2 threads than at 1 in
        deit. The MatMul scales its result instead: (a q)(b k)^T = ab (q k^T), exact for powers
        of two (deit's 1/8), else within bf16 rounding. OPFORGE_CPU_QSCALE_FOLD=0: not folded."""
        m = operand.node
        if (not _QSCALE_FOLD or not self.bf16 or mm.type_name != "MatMul" or not mm.op.is_standard
                or find_plugin_kernel(self.kernels, mm) is not None
                or mm.inputs[0] == mm.inputs[1] or mm.inputs[1].node.constant_value() is not None
                or m.type_name not in ("Multiply", "Divide")
                or m.id in self.absorbed or not m.op.is_standard or find_plugin_kernel(self.kernels, m) is not None
                or operand.element_type is not Type.f32 or mm.inputs[0].element_type is not Type.f32):
            return None
        reader = single_user(self.uses, operand)
        direct = reader is not None and reader.id == mm.id and mm.inputs[k] == operand
        through = (reader is not None and reader.type_name == "Transpose" and mm.inputs[k] == reader.output(0)
                   and self._folded_transpose(mm, reader.output(0)) is not None)
        if not (direct or through):
            return None
        for x in m.inputs:
            if (x.element_type is Type.f32 and x.node.constant_value() is None
                    and (c := self._scalar_factor(m, x)) is not None):
                return x, c
        return None

    def _folded_pick(self, mm: Node, operand: Output) -> tuple[Output, list[int]] | None:
        """(the stored tensor, [axis, index]) of a Gather of one constant scalar index that
        produces ``operand`` (what bf16 MatMul ``mm`` of two run-time operands reads, after its
        folded Transpose and prescale) and is read by nothing else: torchvision Swin's qkv[0],
        qkv[1], qkv[2] (taken from the projection's own axis by passes/qkv_split.py), each a copy
        of a third of the projection, 1.3 ms of tv_swin_t's 18.8 at 2 threads in bf16. The
        MatMul reads the slice in place through the stored tensor's strides (core/nn.cpp
        picked_operand); its conversion to bf16, which it does anyway, moves the values.
        OPFORGE_CPU_QKV_PICK=0: not folded."""
        g = operand.node
        if (not _qkv_pick() or not self.bf16 or mm.type_name != "MatMul" or not mm.op.is_standard
                or find_plugin_kernel(self.kernels, mm) is not None or mm.inputs[0] == mm.inputs[1]
                or any(x.node.constant_value() is not None or x.element_type is not Type.f32 for x in mm.inputs)
                or g.type_name != "Gather" or not g.op.is_standard or g.id in self.absorbed
                or find_plugin_kernel(self.kernels, g) is not None or int(getattr(g.attrs, "batch_dims", 0)) != 0
                or len(self.uses.get(operand, [])) != 1):
            return None
        data = g.inputs[0]
        shape = data.partial_shape
        if (data.element_type is not Type.f32 or data.node.constant_value() is not None or not shape.is_static
                or data in self.bf16_matmul_results or data in self.bf16_copies):
            return None
        dims = [int(d) for d in shape.to_tuple()]
        index, axis = g.inputs[1].node.constant_value(), g.inputs[2].node.constant_value()
        if index is None or axis is None or np.asarray(index).ndim != 0 or np.asarray(axis).size != 1 or len(dims) < 3:
            return None
        a, i = int(np.asarray(axis).reshape(-1)[0]), int(index)
        a = a + len(dims) if a < 0 else a
        if not 0 <= a < len(dims):
            return None
        i = i + dims[a] if i < 0 else i
        if not 0 <= i < dims[a]:
            return None
        return data, [a, i]

    def _pick_reader(self, g: Node) -> Node | None:
        """The bf16 MatMul that reads Gather ``g``'s slice in place (``_folded_pick``), through
        the Multiply and Transpose it folds in (``_folded_prescale``, ``_folded_transpose``)."""
        if not _qkv_pick() or not self.bf16 or g.type_name != "Gather":
            return None
        cur = g.output(0)
        for _ in range(3):
            u = single_user(self.uses, cur)
            if u is None:
                return None
            if u.type_name == "MatMul":
                for k in (0, 1):
                    if k == 0 and self._folded_softmax(u, u.inputs[0]):
                        continue
                    read = u.inputs[k]
                    if (folded := self._folded_transpose(u, read)) is not None:
                        read = folded[0]
                    if (ps := self._folded_prescale(u, k, read)) is not None:
                        read = ps[0]
                    if read == g.output(0) and self._folded_pick(u, read) is not None:
                        return u
                return None
            if u.type_name not in ("Transpose", "Multiply", "Divide"):
                return None
            cur = u.output(0)
        return None

    def _folded_softmax(self, mm: Node, operand: Output) -> bool:
        """Whether MatMul ``mm`` computes the Softmax that produces its first operand ``operand``
        itself (attention's P x V under the bf16 hint): a Softmax over the last axis of an f32
        run-time tensor, read by nothing else. The bf16 MatMul converts its f32 source to bf16
        anyway; with the Softmax folded it writes the softmax's rows (f32 arithmetic) as bf16
        straight into that source (core/nn.cpp softmax_source), the same numbers as the Softmax
        step followed by the conversion, without P's f32 write and its re-read (OpenVINO computes
        its attention's softmax inside its fused MHA kernel)."""
        t = operand.node
        if (not self.bf16 or mm.type_name != "MatMul" or not mm.op.is_standard or operand != mm.inputs[0]
                or mm.inputs[1] == operand or find_plugin_kernel(self.kernels, mm) is not None
                or bool(getattr(mm.attrs, "transpose_a", False))
                or t.type_name != "Softmax" or not t.op.is_standard or find_plugin_kernel(self.kernels, t) is not None
                or getattr(single_user(self.uses, operand), "id", None) != mm.id):
            return False
        src = t.inputs[0]
        if not src.partial_shape.is_static or not mm.inputs[1].partial_shape.is_static:
            return False
        rank = len(src.shape)
        if (src.element_type is not Type.f32 or operand.element_type is not Type.f32 or rank < 2
                or src.shape[-1] <= 0 or src.node.constant_value() is not None or len(mm.inputs[1].shape) < 2):
            return False
        axis = int(getattr(t.attrs, "axis", 1))
        return (axis + rank if axis < 0 else axis) == rank - 1

    def _bf16_matmul_output(self, out: Output, perm_out: list[int] | None, sum_input: int) -> bool:
        """Whether a bf16 MatMul writes its result ``out`` in bf16: it is no model output and
        every reader is a bf16 MatMul with constant weights reading it as its plain source (a
        transformer's FFN: the GELU'd expansion read by the projection back), which then takes it
        as it is instead of converting an f32 tensor (half the bytes written and read). Not with a
        sum post-op (in place over the f32 residual) or a permuted destination."""
        readers = self.uses.get(out, [])
        if not self.bf16 or perm_out is not None or sum_input >= 0 or not readers or len(out.shape) < 2:
            return False
        for r, i in readers:
            if (r.type_name != "MatMul" or not r.op.is_standard or find_plugin_kernel(self.kernels, r) is not None
                    or i != 0 or r.inputs[1] == out or r.inputs[1].node.constant_value() is None
                    or bool(getattr(r.attrs, "transpose_a", False)) or len(r.inputs[1].shape) > len(out.shape)
                    or out.element_type is not Type.f32):
                return False
        return True

    def _bf16_norm_output(self, out: Output, at: int) -> bool:
        """Whether a LayerNorm (MVN with its tail) or RMSNorm writes ``out`` in bf16: it is no
        model output and every reader is a MatMul with constant weights reading it as its source
        (a pre-norm block's Q/K/V projections, the FFN's expansion), which then takes it as it is
        (``takes_blocked``) instead of converting an f32 copy with a oneDNN reorder of its own
        (one per projection, split across threads differently from the MatMul). The statistics
        and arithmetic stay f32; the output is rounded to nearest even once, the same rounding
        the MatMuls' conversion did (so the same numbers), as OpenVINO's bf16 LayerNorm."""
        readers = self.uses.get(out, [])
        return (self.bf16 and bool(readers) and out.element_type is Type.f32 and len(out.shape) >= 2
                and all(self._bf16_source_reader(r, i, out) for r, i in readers))

    def _bf16_source_reader(self, r: Node, i: int, out: Output) -> bool:
        """Whether ``r`` is a bf16 MatMul with constant weights reading ``out`` as its source."""
        return (r.type_name == "MatMul" and r.op.is_standard and find_plugin_kernel(self.kernels, r) is None
                and i == 0 and r.inputs[1] != out and r.inputs[1].node.constant_value() is not None
                and not bool(getattr(r.attrs, "transpose_a", False)) and len(r.inputs[1].shape) <= len(out.shape)
                and r.output_specs[0].type is Type.f32)

    def _bf16_norm_copy(self, out: Output, at: int) -> bool:
        """Whether a LayerNorm writes a bf16 copy of ``out`` besides it (attribute ``bf16_copy``,
        a second output): a post-LN block (BERT), whose output is read by the next projections
        and as the residual of a later MatMul's sum post-op. The projections read the copy as it
        is; the residual stays f32. (Rounding the residual stream to bf16 as well made
        bert_small's bf16 error 9.7e-3 against f32, 4x OpenVINO's 2.2e-3: 8 LayerNorms each
        round the whole signal once more.)"""
        readers = self.uses.get(out, [])
        if not self.bf16 or out.element_type is not Type.f32 or len(out.shape) < 2 or self._bf16_norm_output(out, at):
            return False
        if any(r.type_name == "Result" for r, _ in readers):
            return False
        mm = [r for r, i in readers if self._bf16_source_reader(r, i, out)]
        rest = [r for r, i in readers if not self._bf16_source_reader(r, i, out)]
        return bool(mm) and all(r.type_name == "Add" and r.op.is_standard and find_plugin_kernel(self.kernels, r) is None
                                and self._residual_matmul(r, out, at) for r in rest)

    def _residual_matmul(self, add: Node, out: Output, at: int) -> bool:
        """Whether ``add`` (``out`` + a MatMul's result, same shape) is going to be the sum
        post-op of that MatMul, one with constant weights whose step comes after ``out`` exists:
        the MatMul's result (or its constant-bias Add's) has ``add`` as its only reader, as
        ``emit_fused`` walks the chain."""
        if getattr(add.attrs, "auto_broadcast", "numpy") != "numpy" or add.inputs[0] == add.inputs[1]:
            return False
        other = add.inputs[1] if add.inputs[0] == out else add.inputs[0]
        if (tuple(other.shape) != tuple(out.shape) or tuple(add.output(0).shape) != tuple(out.shape)
                or add.output_specs[0].type is not Type.f32 or single_user(self.uses, other) is not add
                or add.id in self.absorbed):
            return False
        mm = other.node
        if mm.type_name == "Add" and mm.op.is_standard and find_plugin_kernel(self.kernels, mm) is None:
            a, b = mm.inputs  # the MatMul's bias, then the residual
            src, bias = (a, b) if b.node.constant_value() is not None else (b, a)
            if (self._bias_value(bias, tuple(other.shape), True) is None or single_user(self.uses, src) is not mm
                    or mm.output_specs[0].type is not Type.f32):
                return False
            mm = src.node
        return (mm.type_name == "MatMul" and mm.op.is_standard and find_plugin_kernel(self.kernels, mm) is None
                and mm.inputs[0].element_type is Type.f32 and mm.inputs[1].node.constant_value() is not None
                and mm.inputs[0] != out and mm.id not in self.done and self.order.get(mm.id, -1) > at)

    def _softmax_add(self, softmax: Node) -> tuple[Output, Output] | None:
        """(the scores, the addend) when the input of a folded ``softmax`` is an Add of run-time
        scores and a mask or position bias that the bf16 Q x K^T did not take as its post-op
        (GPT-2's causal [1, 1, S, S], T5's [1, H, S, S]) and the Add has no other reader: the
        MatMul adds its rows as it computes the softmax (core/nn.cpp softmax_source), in f32 as
        the Add step would. The addend broadcasts by rows only: after its leading ones it is the
        scores' trailing shape ([1, 1, 1, K], [1, 1, S, K], Swin's [1, H, S, K], the scores' own)."""
        add = softmax.inputs[0].node
        if (add.type_name != "Add" or not add.op.is_standard or find_plugin_kernel(self.kernels, add) is not None
                or add.id in self.absorbed or getattr(add.attrs, "auto_broadcast", "numpy") != "numpy"
                or getattr(single_user(self.uses, add.output(0)), "id", None) != softmax.id
                or add.inputs[0] == add.inputs[1]):
            return None
        shape = tuple(add.output(0).shape)
        for x, a in ((add.inputs[0], add.inputs[1]), (add.inputs[1], add.inputs[0])):
            if (tuple(x.shape) != shape or x.element_type is not Type.f32 or x.node.constant_value() is not None
                    or a.element_type is not Type.f32 or not a.partial_shape.is_static):
                continue
            if a.node.constant_value() is None and not self._computed(a):
                continue
            ashape = tuple(a.shape)
            if not ashape or len(ashape) > len(shape) or ashape[-1] != shape[-1]:
                continue
            if ashape == shape[len(shape) - len(ashape):] and all(d == 1 for d in shape[:len(shape) - len(ashape)]):
                return x, a
            if len(ashape) >= 2 and all(d == 1 for d in ashape[:-2]) and ashape[-2] in (1, shape[-2]):
                return x, a
            # (stop 16) after its leading ones, the scores' trailing dims: Swin's [1, H, S, S]
            # bias over [windows, H, S, S], whose Add step ran as a 'ref' step of its own; row r
            # of the scores takes the addend's row r mod its rows. OPFORGE_CPU_WIDE_SOFTMAX_ADD=0:
            # not folded (for A/Bs)
            lead = next((i for i, d in enumerate(ashape[:-1]) if d != 1), len(ashape) - 1)
            if _WIDE_SOFTMAX_ADD and ashape[lead:] == shape[len(shape) - (len(ashape) - lead):]:
                return x, a
        return None

    def _add_before_folded_softmax(self, add: Node) -> bool:
        """Whether ``add`` is the Add that a folded Softmax's MatMul computes (``_softmax_add``)."""
        sm = single_user(self.uses, add.output(0))
        if sm is None or sm.type_name != "Softmax":
            return False
        mm = single_user(self.uses, sm.output(0))
        return (mm is not None and self._folded_softmax(mm, sm.output(0)) and self._softmax_add(sm) is not None
                and sm.inputs[0].node.id == add.id)

    @staticmethod
    def _scalar_factor(user: Node, cur: Output) -> float | None:
        """The factor of ``user`` when it is ``cur * c``, ``c * cur`` or ``cur / c`` for a finite
        constant scalar ``c`` (non-zero to divide) that leaves ``cur``'s shape as it is."""
        if user.type_name not in ("Multiply", "Divide") or not user.op.is_standard or user.inputs[0] == user.inputs[1]:
            return None
        if user.type_name == "Divide" and user.inputs[0] != cur:
            return None
        other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
        v = other.node.constant_value()
        if v is None or v.size != 1 or v.dtype.kind != "f" or tuple(user.output(0).shape) != tuple(cur.shape):
            return None
        c = float(np.asarray(v).reshape(()))
        if not np.isfinite(c) or (user.type_name == "Divide" and c == 0.0):
            return None
        return c if user.type_name == "Multiply" else 1.0 / c

    def _runs_bf16(self, node: Node) -> bool:
        """Whether a Convolution/GroupConvolution/MatMul runs in bf16 under the bf16 hint: every
        MatMul (run-time operands are converted per run, as OpenVINO's attention does), and
        convolutions with constant weights, depthwise ones included: MobileNet's expand ->
        depthwise -> project chain then keeps its tensors in bf16 (no f32 -> bf16 conversion
        in the project convolution, half the bytes). core/nn.cpp runs a depthwise convolution
        in f32 after all where oneDNN offers only its slow bf16 kernel (jit_dw)."""
        if not self.bf16:
            return False
        if node.type_name == "MatMul":
            return True
        return node.inputs[1].node.constant_value() is not None

    def _bf16_storable(self, out: Output, at: int) -> bool:
        """Whether ``out`` (available from step ``at`` of the order on) can be stored in bf16
        (see make_dnnl_conv): it is no model output and every reader takes bf16 as it is, so
        bf16 flows through a CNN as in OpenVINO, without a conversion at each block:

        * a convolution that will run in bf16 (constant weights), reading it as its data input;
        * a MaxPool (values only) whose own output is bf16-storable: it pools bf16 into bf16
          (oneDNN pools in one type; ResNet's stem: 0.5 -> ~0.15 ms, half the bytes);
        * a residual Add that a later bf16 convolution takes as its post-op, reading ``out`` in
          place of its f32 copy (the convolution writes whatever its own readers take, see
          ``_residual_conv``);
        * an op that passes bf16 on (``_bf16_passes``): Concat, AvgPool, Relu and BatchNorm,
          whose own output is bf16-storable in turn, so an Inception/Dense/Fire block has no f32
          round trip between its convolutions.

        Anything else reads f32 (a reader that got bf16 anyway would get a converting reorder:
        slower, never wrong)."""
        readers = self.uses.get(out, [])
        if not readers or any(r.type_name == "Result" for r, _ in readers):
            return False
        for r, i in readers:
            if r.type_name == "ShuffleChannels" and getattr(r.op, "cpu_internal", False):
                if not self._shuffle_bf16(r):
                    return False
                continue
            if not r.op.is_standard or find_plugin_kernel(self.kernels, r) is not None:
                return False
            if r.type_name in ("Convolution", "GroupConvolution"):
                if not (i == 0 and r.inputs[1] != out and self._runs_bf16(r) and r.inputs[0].element_type is Type.f32):
                    return False
            elif r.type_name == "MaxPool":
                if (i != 0 or len(out.shape) != 4 or r.output_specs[0].type is not Type.f32
                        or (len(r.output_specs) > 1 and self.uses.get(r.output(1)))
                        or not self._bf16_storable(r.output(0), self.order.get(r.id, -1))):
                    return False
            elif r.type_name == "Add":
                if not self._residual_conv(r, out, at):
                    return False
            elif r.type_name in ("Interpolate", "ConvolutionBackpropData", "GroupConvolutionBackpropData"):
                if not self._bf16_upsampling(r, i, out):
                    return False
            elif not self._bf16_passes(r, i, out):
                return False
        return True

    def _shuffle_bf16(self, node: Node) -> bool:
        """Whether ShuffleChannels ``node`` (passes/shuffle_channels.py) moves bf16 branches into
        bf16 parts (attribute ``bf16_output``): every part is bf16-storable in turn (the next
        block's convolution, or the next shuffle whose parts are)."""
        at = self.order.get(node.id, -1)
        return self.bf16 and all(self._bf16_storable(o, at) for o in node.outputs())

    def _bf16_passes(self, r: Node, i: int, out: Output) -> bool:
        """Whether reader ``r`` takes ``out`` (its input ``i``) in bf16:

        * a Concat or AvgPool whose own output is bf16-storable: oneDNN concatenates bf16 inputs
          of one layout into bf16 (an input of another type or layout makes the whole Concat
          f32, still right) and pools in one type;
        * a Relu (a select on the bit patterns) or BatchNormInference (DenseNet's
          pre-activation, ReLU fused; f32 arithmetic, rounded to bf16) on a 4-D data input:
          they write bf16 where their output is bf16-storable (``_bf16_output``), else f32, so
          the last block before a global pooling or a classifier stays bf16 up to them;
        * likewise a Clamp (RexNet's ReLU6 after its squeeze-excitation scale, which no
          convolution takes as a post-op): clamped in f32, rounded to bf16 (kernels/clamp.cpp).
          Before, the scale wrote f32 for it, which oneDNN's binary has no JIT kernel for from
          a bf16 nhwc source (reorder+ref, 0.64 ms of timm_rexnet_100's 5.9 at one thread).
          OPFORGE_CPU_BF16_CLAMP=0: the Clamp reads f32, as before;
        * a squeeze-and-excitation's global pool (ReduceMean, f32 result) or channel scale
          (Multiply, bf16 where its output is bf16-storable, else f32): ``bf16_se``."""
        t = r.type_name
        if t in ("ReduceMean", "Multiply"):
            return self.bf16 and bf16_se.takes_bf16(r, i, out)
        if t == "Clamp" and (not _BF16_CLAMP or len(r.inputs) != 1):
            return False
        if t not in ("Concat", "AvgPool", "Relu", "Clamp", "BatchNormInference") or r.output_specs[0].type is not Type.f32:
            return False
        if t != "Concat" and (i != 0 or len(out.shape) != 4):
            return False
        if t == "BatchNormInference":
            return all(p.node.constant_value() is not None for p in r.inputs[1:])
        return t in ("Relu", "Clamp") or self._bf16_storable(r.output(0), self.order.get(r.id, -1))

    def _bf16_output(self, node: Node, out: Output) -> bool:
        """Whether Concat/Relu/Clamp/BatchNormInference/Multiply ``node``, writing ``out`` (a fused
        ReLU's), keeps a bf16 input in bf16 (attribute ``bf16_output``): every reader of ``out``
        takes bf16. (A squeeze-and-excitation Multiply gets bf16 only from ``bf16_se``'s
        readers; with an f32 input the attribute does nothing.)"""
        return (self.bf16 and node.type_name in ("Concat", "Relu", "Clamp", "BatchNormInference", "Multiply")
                and self._bf16_storable(out, self.order.get(node.id, -1)))

    def _bf16_upsampling(self, r: Node, i: int, out: Output) -> bool:
        """Whether a UNet decoder's upsampling ``r`` reads ``out`` (its input ``i``) in bf16:
        an Interpolate of a 4-D tensor (the nhwc bf16 resampler of core/resample.cpp; the C++
        kernel converts any other case to f32 planes first: slower, never wrong), or a transposed
        convolution with constant weights (no output_shape), which runs in bf16 (emit_deconv)."""
        if i != 0 or len(out.shape) != 4 or r.output_specs[0].type is not Type.f32:
            return False
        if r.type_name == "Interpolate":
            return True
        return self._deconv_bf16(r)

    def _deconv_bf16(self, node: Node) -> bool:
        """Whether transposed convolution ``node`` runs in bf16 under the bf16 hint: constant
        weights, no output_shape input, an f32 data input (core/nn.cpp make_dnnl_deconv keeps f32
        where oneDNN has only its reference kernel)."""
        return (self.bf16 and len(node.inputs) == 2 and node.inputs[0].element_type is Type.f32
                and node.inputs[1].node.constant_value() is not None and node.op.is_standard
                and find_plugin_kernel(self.kernels, node) is None)

    def _residual_conv(self, add: Node, out: Output, at: int) -> bool:
        """Whether ``add`` (``out`` + the output of a convolution, same shape) is going to be the
        residual post-op of that convolution, a bf16 one whose step comes after ``out`` exists:
        the convolution's own output (or its constant-bias Add's) has ``add`` as its only
        reader, as ``emit_fused`` walks the chain."""
        if getattr(add.attrs, "auto_broadcast", "numpy") != "numpy" or add.inputs[0] == add.inputs[1]:
            return False
        other = add.inputs[1] if add.inputs[0] == out else add.inputs[0]
        if (tuple(other.shape) != tuple(out.shape) or tuple(add.output(0).shape) != tuple(out.shape)
                or add.output_specs[0].type is not Type.f32 or single_user(self.uses, other) is not add):
            return False
        conv = other.node
        if conv.type_name == "Add" and conv.op.is_standard:  # the convolution's bias, then the residual
            a, b = conv.inputs
            src, bias = (a, b) if b.node.constant_value() is not None else (b, a)
            if self._bias_value(bias, tuple(other.shape), False) is None or single_user(self.uses, src) is not conv:
                return False
            conv = src.node
        return (conv.type_name in ("Convolution", "GroupConvolution") and conv.op.is_standard
                and find_plugin_kernel(self.kernels, conv) is None and self._runs_bf16(conv)
                and conv.inputs[0].element_type is Type.f32 and conv.id not in self.done
                and self.order.get(conv.id, -1) > at)

    def _computed(self, out: Output) -> bool:
        # The fused step runs where its first node is; an operand produced later in the order
        # (the shortcut branch of a residual block) cannot be read there. That branch's own
        # convolution will take the Add instead, when its turn comes.
        return out.node.type_name in STRUCTURAL or out.node.id in self.done

    @staticmethod
    def _bias_value(other: Output, out_shape: tuple[int, ...], is_mm: bool) -> np.ndarray | None:
        v = other.node.constant_value()
        if v is None or v.dtype != np.float32:
            return None
        rank = len(out_shape)
        s = (1,) * (rank - v.ndim) + tuple(v.shape)
        if len(s) != rank:
            return None
        if is_mm:
            # per-output-column bias: [..., 1, N]
            if all(d == 1 for d in s[:-1]) and s[-1] in (out_shape[-1],):
                return contiguous(v.reshape(-1).astype(np.float32))
            return None
        if rank >= 3 and s[0] == 1 and s[1] == out_shape[1] and all(d == 1 for d in s[2:]):
            return contiguous(v.reshape(-1).astype(np.float32))
        return None

    def emit_deconv(self, node: Node) -> None:
        """A transposed convolution (no output_shape input) with the constant per-channel bias
        Add that is its only reader folded in as oneDNN's bias (``has_bias``): ONNX
        ConvTranspose's B arrives as a separate broadcast Add over the whole output (a UNet
        decoder's upsampling, 0.3 ms of unet_small)."""
        cur = node.output(0)
        fused = [node.name]
        ins = [self.tensor(i) for i in node.inputs]
        attrs = attrs_dict(node) | {"has_bias": False, "sum_input": -1, "post_ops": []}
        user = single_user(self.uses, cur)
        if (user is not None and user.type_name == "Add" and user.op.is_standard and user.id not in self.absorbed
                and getattr(user.attrs, "auto_broadcast", "numpy") == "numpy" and user.inputs[0] != user.inputs[1]
                and find_plugin_kernel(self.kernels, user) is None and user.output_specs[0].type is Type.f32
                and tuple(user.output(0).shape) == tuple(cur.shape)):
            other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
            bias = self._bias_value(other, cur.shape, False)
            if bias is not None:
                attrs["has_bias"] = True
                ins.append(self.const_tensor(bias))
                self.absorbed.add(user.id)
                fused.append(user.name)
                cur = user.output(0)
        if self._deconv_bf16(node):
            attrs["bf16"] = True
            attrs["bf16_output"] = self._bf16_storable(cur, self.order.get(node.id, -1))
        self.prog.add_node(fused[-1] if len(fused) > 1 else node.name, node.type_name, node.version, attrs, ins,
                           [self.tensor(cur)], fused)

    def emit_batch_norm(self, node: Node) -> None:
        """BatchNormInference (what no convolution before it absorbed), with the standard Relu
        that is its only reader fused (``fused_relu``): DenseNet's pre-activation BN -> ReLU in
        one pass over the tensor instead of two."""
        out = node.output(0)
        fused = [node.name]
        attrs = attrs_dict(node)
        user = single_user(self.uses, out)
        if (user is not None and user.type_name == "Relu" and user.op.is_standard and user.id not in self.absorbed
                and find_plugin_kernel(self.kernels, user) is None and user.output_specs[0].type is Type.f32):
            attrs["fused_relu"] = True
            self.absorbed.add(user.id)
            fused.append(user.name)
            out = user.output(0)
        if self._bf16_output(node, out):
            attrs["bf16_output"] = True  # DenseNet's pre-activation on a bf16 concatenation
        self.prog.add_node(fused[-1] if len(fused) > 1 else node.name, node.type_name, node.version, attrs,
                           [self.tensor(i) for i in node.inputs], [self.tensor(out)], fused)

    def emit_mvn(self, node: Node) -> None:
        """MVN, and the LayerNorm tail MVN * gamma + beta when gamma/beta are constants over the
        normalised (last) axis."""
        cur = node.output(0)
        fused = [node.name]
        extra: list[int] = []
        has_scale = has_shift = False
        for op_name in ("Multiply", "Add"):
            user = single_user(self.uses, cur)
            if user is None or user.type_name != op_name or not user.op.is_standard:
                break
            other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
            v = other.node.constant_value()
            if v is None or v.dtype != cur.element_type.np or v.size not in (1, cur.shape[-1]):
                break
            if v.size != 1 and tuple(v.shape)[-1:] != tuple(cur.shape)[-1:]:
                break
            if user.output_specs[0].shape != cur.partial_shape:
                break
            if op_name == "Multiply":
                has_scale = True
                extra.append(self.const_tensor(v.reshape(-1)))
            else:
                has_shift = True
                if not has_scale:
                    extra.append(self.const_tensor(np.ones(1, v.dtype)))
                extra.append(self.const_tensor(v.reshape(-1)))
            self.absorbed.add(user.id)
            fused.append(user.name)
            cur = user.output(0)
        ins = [self.tensor(i) for i in node.inputs] + extra
        attrs = attrs_dict(node) | {"has_scale": has_scale or has_shift, "has_shift": has_shift}
        outs = [self.tensor(cur)]
        at = self.order.get(node.id, -1)
        trailing = self._trailing_norm(node)
        if trailing and self._bf16_norm_output(cur, at):
            attrs["bf16_output"] = True  # read by bf16 projections only
            self.bf16_matmul_results.add(cur)
        elif trailing and self._bf16_norm_copy(cur, at):
            attrs["bf16_copy"] = True  # a post-LN LayerNorm: + a bf16 copy for the projections
            self.bf16_copies[cur] = int(self.prog.add_tensor(Type.f32.ir, list(cur.shape), None))
            outs.append(self.bf16_copies[cur])
        self.prog.add_node(fused[-1] if len(fused) > 1 else node.name, "MVN", node.version, attrs, ins, outs, fused)

    @staticmethod
    def _trailing_norm(node: Node) -> bool:
        """Whether MVN ``node`` normalises over trailing axes (a LayerNorm; the C++ kernel's bf16
        output and bf16 copy are for those)."""
        axes = node.inputs[1].node.constant_value() if len(node.inputs) > 1 else None
        rank = len(node.inputs[0].shape)
        if axes is None or rank == 0:
            return False
        got = sorted({int(a) % rank for a in np.asarray(axes).reshape(-1)})
        return bool(got) and got == list(range(rank - len(got), rank))

    def emit_index_map(self, node: Node) -> bool:
        """Lower a constant-parameter data-movement op to IndexMap: evaluate the op itself on
        the flat indices of its input (plus one, so that 0 marks padding)."""
        flat = index_image(node)  # (None: a parameter is not constant, or the op refused int64)
        if flat is None:
            return False
        data = node.inputs[0]
        n = int(np.prod(data.shape, dtype=np.int64))
        fill: int | None = None
        if node.type_name == "Pad" and len(node.inputs) > 3:
            fill = self.tensor(node.inputs[3])
        if flat.size == n and np.array_equal(flat, np.arange(n, dtype=np.int64)):
            # the op moves nothing (torchvision Swin pads each stage to a multiple of its window
            # and slices back, by zero here: 97 such gathers, 7 ms of tv_swin_t's 38 at 1
            # thread): a copy, which the planner may turn into an alias of the input. (The
            # planning pass passes/noop_moves.py takes such nodes out of the graph before, unless
            # a model output reads them or OPFORGE_CPU_NOOP_MOVES=0.)
            self.add(node, "Identity", {}, [self.tensor(data)], node.outputs(), [node.name])
            return True
        begin = channel_slice_begin(tuple(data.shape), tuple(node.output(0).shape), flat) if _CHANNEL_SLICE else None
        if begin is not None:
            # consecutive channels of a 4-D tensor (RexNet's partial-channel residual): sliced in
            # the producer's channels-last layout where it has one (kernels/channel_slice.cpp)
            self.add(node, "ChannelSlice", {"begin": begin}, [self.tensor(data)], node.outputs(), [node.name])
            return True
        dt = np.int32 if n < 2**31 - 1 else np.int64
        ins = [self.tensor(data), self.const_tensor(flat.astype(dt))]
        if fill is not None:
            ins.append(fill)
        self.add(node, "IndexMap", {}, ins, node.outputs(), [node.name])
        return True
