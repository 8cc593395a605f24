"""Lowering a specialised model into a :class:`~opforge_gpu.plan.Plan`: the context kernels use to
declare tensors and launches. What comes before (static shapes, value inputs, folding) is core's
device front half (:mod:`opforge.planning`); epilogue fusion is a planning pass (:mod:`.epilogue`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol

import numpy as np
from opforge.element_type import Type
from opforge.errors import KernelError, UnsupportedOpError
from opforge.graph import Node, Output

from opforge_gpu.epilogue import Epilogue
from opforge_gpu.opencl import DeviceContext
from opforge_gpu.plan import (
    BufferArg,
    ErrorArg,
    IndexCheck,
    Launch,
    Plan,
    ScalarArg,
    Tensor,
    TensorArg,
    kernel_path,
    kernel_source,
    render_defines,
)
from opforge_gpu.storage import Storage, storage_for


class KernelImpl(Protocol):
    """What the plugin can run a node with: a built-in kernel or a custom (XML) kernel."""

    #: shown in errors and performance counters ("builtin", "custom:file.xml")
    origin: str

    def supports(self, node: Node) -> str | None:
        """None when ``node`` can run; otherwise why not (for UnsupportedOpError)."""

    def lower(self, node: Node, lw: Lowering, epilogue: Epilogue | None = None) -> None:
        """Declare the node's output tensors and the launches computing them."""


class ConstBuffers:
    """Device copies of constants, shared by every plan (and stage) of a compiled model.

    An entry made from an array (``owner``: a Constant's value, filters before packing) is keyed
    by that array's identity and lives only as long as the array: Python reuses the id of a freed
    array, and plans (with the folded constants of their specialised models) come and go in the
    bounded plan cache. A plan keeps the buffers it uses itself (``Plan.const_buffers``)."""

    def __init__(self) -> None:
        self._buffers: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, owner: Any, make: Callable[[], Any]) -> Any:
        if owner is not None:
            try:
                weakref.ref(owner)
            except TypeError:
                return make()  # a NumPy scalar: nothing to tie an entry to, and cheap anyway
            key = (key, id(owner))
        with self._lock:
            buf = self._buffers.get(key)
            if buf is None:
                buf = self._buffers[key] = make()
                if owner is not None:
                    weakref.finalize(owner, self._buffers.pop, key, None)
            return buf

    def __len__(self) -> int:
        return len(self._buffers)


class Lowering:
    """The context kernels lower nodes with. One per plan."""

    def __init__(self, plan: Plan, dev: DeviceContext, config: dict[str, Any], half: bool,
                 const_cache: ConstBuffers, cache_dir: str | None) -> None:
        self.plan = plan
        self.dev = dev
        self.cl = dev.cl
        self.config = config
        self.half = half
        self.cache_dir = cache_dir
        self._const_cache = const_cache
        self._values: dict[tuple[int, int], Tensor] = {}
        self._params: dict[bytes, BufferArg] = {}
        self._dummy: BufferArg | None = None
        self.node: Node | None = None
        #: output ports something reads: kernels may skip computing the others
        self.used: set[tuple[int, int]] = set()
        #: the data-dependent node of a one-node stage (library/dynamic.py), and the size its
        #: outputs are planned for (None: the count pass, which sets ``probe`` to the
        #: one-element i32 tensor of the count)
        self.counted: Node | None = None
        self.count: int | None = None
        self.probe: Tensor | None = None

    # --- tensors ---------------------------------------------------------------------------
    def storage(self, t: Type, what: str = "") -> Storage:
        s = storage_for(t, self.half)
        if s is None:
            node = self.node
            raise UnsupportedOpError(
                f"node '{node.name if node else '?'}' ({node.type_name if node else '?'}): element type "
                f"{t} {what}is not supported on GPU"
            )
        return s

    def input(self, node: Node, i: int) -> Tensor:
        return self.input_of(node.inputs[i], node)

    def input_of(self, src: Output, reader: Node | None = None) -> Tensor:
        """The tensor of output port ``src`` (a constant is uploaded on first use)."""
        key = (src.node.id, src.index)
        t = self._values.get(key)
        if t is None:
            value = src.node.constant_value()
            if value is None:
                who = f"node '{reader.name}' ({reader.type_name})" if reader is not None else "a node"
                raise KernelError(
                    f"{who}: input from '{src.node.name}' has not been computed (internal ordering error)"
                )
            # Keyed by the array: clones of a model share constant arrays, so every plan of a
            # compiled model shares one device copy.
            t = self.const_tensor(value, src.element_type, key="const", owner=value)
            self._values[key] = t
        return t

    def set_output(self, node: Node, i: int, t: Tensor) -> None:
        self._values[(node.id, i)] = t

    def new_output(self, node: Node, i: int = 0) -> Tensor:
        spec = node.output_specs[i]
        t = self.plan.new_tensor(static_shape(node, i), self.storage(spec.type, f"of output {i} "), "temp",
                                 what=f"node '{node.name}' ({node.type_name}): output {i}")
        self.set_output(node, i, t)
        return t

    def temp(self, shape: Sequence[int], storage: Storage) -> Tensor:
        node = self.node
        who = f"node '{node.name}' ({node.type_name})" if node is not None else "a kernel"
        return self.plan.new_tensor(shape, storage, "temp", what=f"{who}: a temporary buffer")

    def const_tensor(self, value: np.ndarray, t: Type | None = None, key: Hashable = None,
                     exact: bool = False, owner: Any = None) -> Tensor:
        """A constant uploaded once and shared by every request and plan of the model when ``key``
        is given: a key names the value by its content (bytes, attributes), or by the array it
        was made from, ``owner`` (see :class:`ConstBuffers`). With ``exact`` it keeps its element
        type even in f16 mode (a kernel declared its type)."""
        et = t or Type.from_numpy(value.dtype)
        st = storage_for(et) if exact else self.storage(et, "of a constant ")
        if st is None:
            raise UnsupportedOpError(f"element type {et} of a constant is not supported on GPU")
        host = np.asarray(value).astype(st.np, copy=False)
        if not host.flags.c_contiguous:
            host = np.array(host, order="C")  # (ascontiguousarray would make scalars 1-D)
        tensor = self.plan.new_tensor(host.shape, st, "const", host, what="a constant")

        def upload() -> Any:
            mf = self.cl.mem_flags
            data = host if host.nbytes else np.zeros(1, st.np)
            return self.cl.Buffer(self.dev.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=data)

        buf = self._const_cache.get((key, st.ctype), owner, upload) if key is not None else upload()
        self.plan.const_buffers[tensor.root] = buf
        return tensor

    def view(self, base: Tensor, shape: Sequence[int]) -> Tensor:
        return self.plan.view(base, shape)

    # --- launches --------------------------------------------------------------------------
    def params(self, ints: Sequence[int]) -> BufferArg:
        """An int32 parameter block (deduplicated: equal blocks share one buffer)."""
        arr = np.asarray([int(v) for v in ints] or [0], dtype=np.int64)
        if arr.size and (arr.max() > 2**31 - 1 or arr.min() < -(2**31)):
            raise KernelError(
                f"node '{self.node.name if self.node else '?'}': a size or offset exceeds 32 bits; "
                "tensors over 2**31 elements are not supported on GPU"
            )
        data = arr.astype(np.int32)
        key = data.tobytes()
        got = self._params.get(key)
        if got is None:
            mf = self.cl.mem_flags
            got = BufferArg(self.cl.Buffer(self.dev.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=data))
            self._params[key] = got
        return got

    def dummy(self) -> BufferArg:
        """A tiny buffer for optional kernel arguments that are compiled out."""
        if self._dummy is None:
            self._dummy = BufferArg(self.cl.Buffer(self.dev.context, self.cl.mem_flags.READ_WRITE, 16))
        return self._dummy

    def index_check(self, message: str, *, negative: bool = True, inclusive: bool = False,
                    which_base: int = 0, node: Node | None = None) -> list[Any]:
        """The two trailing kernel arguments (``__global int* err, int check``) of a launch whose
        indices come at run time; ``message`` is the error text (see :class:`IndexCheck`).
        The kernel's file is compiled with ``index_error.cl`` (define ``INDEX_ERRORS``)."""
        n = node or self.node
        self.plan.checks.append(IndexCheck(n.name if n else "?", n.type_name if n else "?", message,
                                           negative, inclusive, which_base))
        return [ErrorArg(), ScalarArg(np.int32(len(self.plan.checks)))]

    def program(self, filename: str, defines: dict[str, Any], options: str = "") -> Any:
        head = render_defines(defines)
        if "double" in head:
            head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + head
        files = {filename: kernel_path(filename)}
        if defines.get("INDEX_ERRORS"):
            head += '#line 1 "index_error.cl"\n' + kernel_source("index_error.cl")
            files["index_error.cl"] = kernel_path("index_error.cl")
        source = head + f'#line 1 "{filename}"\n' + kernel_source(filename)
        if self.dev.info.correctly_rounded_divide:
            # OpenCL lets float `/` and sqrt be 2.5-3 ulp off unless asked; NVIDIA's driver is, and
            # QuantizeLinear's round(x / scale) then lands on the other integer at ties that NumPy
            # and ONNX Runtime resolve exactly (DynamicQuantizeLinear's backend test did, on an H100)
            options = f"{options} -cl-fp32-correctly-rounded-divide-sqrt".strip()
        return self.dev.program(source, options, self.cache_dir, what=f"built-in kernel file {filename}",
                                files=files)

    def launch(self, filename: str, kernel: str, defines: dict[str, Any], args: Sequence[Any],
               gsize: Sequence[int], lsize: Sequence[int] | None = None, *, node: Node | None = None,
               program: Any = None) -> None:
        n = node or self.node
        if any(g == 0 for g in gsize):
            return  # an empty tensor: nothing to compute
        prg = program if program is not None else self.program(filename, defines)
        g = tuple(int(x) for x in gsize)
        loc = tuple(int(x) for x in lsize) if lsize is not None else None
        if loc is not None:
            g = tuple(-(-gi // li) * li for gi, li in zip(g, loc))
        plain = [TensorArg(a.id) if isinstance(a, Tensor) else a for a in args]
        self.plan.launches.append(Launch(
            node=n.name if n else "?", node_type=n.type_name if n else "?", program=prg, kernel=kernel,
            args=plain, gsize=g, lsize=loc, source_file=filename,
        ))


def static_shape(node: Node, i: int = 0) -> tuple[int, ...]:
    shape = node.output_specs[i].shape
    if not shape.is_static:
        raise UnsupportedOpError(
            f"node '{node.name}' ({node.type_name}): output {i} has dynamic shape {shape} even with "
            "static inputs, and the op does not declare its output shape data-dependent "
            "(Op.data_dependent_shape), so the GPU cannot plan it"
        )
    return shape.to_tuple()
