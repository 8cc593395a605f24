"""An execution plan: device tensors, the kernel launches that compute them, and the memory plan.

A plan is built once per set of input shapes. Lowering a node appends launches that read and
write *tensors*; tensors that are views of others (Reshape, Squeeze...) share their storage. After
lowering, a liveness pass packs every intermediate tensor into a few reusable buffers ("slots"),
so a request allocates its memory once and tensors stay on the device from input to output.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.errors import KernelError, ResourceLimitError
from opforge.runtime.allocation import check_allocation, host_available_bytes, human_bytes

from opforge_gpu.storage import Storage

if TYPE_CHECKING:
    from opforge_gpu.opencl import DeviceContext


@dataclasses.dataclass(eq=False)
class Tensor:
    """A device tensor of a plan. ``root`` is the tensor owning the memory (itself unless a view)."""

    id: int
    shape: tuple[int, ...]
    storage: Storage
    kind: str  # "param" | "const" | "temp"
    value: np.ndarray | None = None  # host data of a constant, already in storage dtype
    root: int = -1
    offset: int = 0  # elements from the start of the root's memory (views only)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.storage.itemsize


@dataclasses.dataclass(frozen=True)
class TensorArg:
    tensor: int


@dataclasses.dataclass(frozen=True)
class BufferArg:
    """A read-only buffer created at plan time (parameter blocks, dummies)."""

    buffer: Any


@dataclasses.dataclass(frozen=True)
class LocalArg:
    nbytes: int


@dataclasses.dataclass(frozen=True)
class ScalarArg:
    value: Any  # a NumPy scalar of the kernel argument's exact type


@dataclasses.dataclass(frozen=True)
class ErrorArg:
    """The request's index-error buffer (see :class:`IndexCheck`)."""


Arg = TensorArg | BufferArg | LocalArg | ScalarArg | ErrorArg

#: int32 words of the index-error buffer: check id (0: no error), value low/high words, size, which
ERROR_WORDS = 8


@dataclasses.dataclass(frozen=True)
class IndexCheck:
    """A launch that reads or writes through indices computed at run time (Gather, scatters...).

    Its kernel never accesses memory out of bounds: an index out of range is skipped (a read gives
    0) and reported in the request's error buffer, ``report_index(err, check, value, size, which)``
    of ``index_error.cl``; the first report wins. After the inference the host reads the buffer
    and raises :class:`~opforge.errors.KernelError` with ``message`` formatted with ``value``,
    ``size``, ``which`` (a dimension or batch element the kernel names), ``low`` and ``high``
    (the valid range: ``-size``/``0`` to ``size - 1``, or ``size`` where ``inclusive``)."""

    node: str
    node_type: str
    message: str
    negative: bool = True  # negative indices count from the end
    inclusive: bool = False  # ``size`` itself is valid (sequence lengths)
    which_base: int = 0  # added to the kernel's ``which`` (GatherND's batch_dims)

    def describe(self, value: int, size: int, which: int) -> str:
        low = -size if self.negative else 0
        high = size if self.inclusive else size - 1
        return self.message.format(value=value, size=size, which=which + self.which_base, low=low, high=high)


@dataclasses.dataclass
class Launch:
    node: str  # the node (or fused nodes) this launch computes: profiling and errors
    node_type: str
    program: Any
    kernel: str
    args: list[Arg]
    gsize: tuple[int, ...]
    lsize: tuple[int, ...] | None
    source_file: str


def kernel_source(filename: str) -> str:
    """The text of a built-in kernel file shipped in ``opforge_gpu/kernels``."""
    return importlib.resources.files("opforge_gpu").joinpath("kernels", filename).read_text(encoding="utf-8")


def kernel_path(filename: str) -> str:
    return str(importlib.resources.files("opforge_gpu").joinpath("kernels", filename))


def render_defines(defines: dict[str, str | int | float]) -> str:
    lines = []
    for k, v in defines.items():
        lines.append(f"#define {k} {v}".rstrip())
    return "\n".join(lines) + "\n"


class Plan:
    """Tensors, launches, inputs/outputs, and (after :meth:`finish`) the memory slots."""

    def __init__(self, dev: DeviceContext) -> None:
        self.dev = dev
        self.tensors: dict[int, Tensor] = {}
        self.launches: list[Launch] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.output_storages: list[Storage] = []
        self.const_buffers: dict[int, Any] = {}
        #: launches that report indices out of range; check id i + 1 is ``checks[i]``
        self.checks: list[IndexCheck] = []
        self.slot_of: dict[int, int] = {}
        self.slot_sizes: list[int] = []
        #: what each tensor is ("model input 'x'", "node 'y' (Expand): output 0"), for errors
        self.labels: dict[int, str] = {}
        self._next = 1

    def new_tensor(self, shape: Sequence[int], storage: Storage, kind: str,
                   value: np.ndarray | None = None, what: str = "a tensor") -> Tensor:
        """A tensor of ``shape``; ``what`` names it ("node 'x' (Expand): output 0") for the size
        check every tensor passes here, before any buffer exists: a buffer larger than the
        device allows crashes some OpenCL drivers instead of failing."""
        info = self.dev.info
        check_allocation(shape, storage.itemsize, what=what, device=f"GPU ({info.description})",
                         limit=info.max_buffer_bytes, limit_name="the largest buffer it can allocate "
                         "(CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
        t = Tensor(self._next, tuple(int(d) for d in shape), storage, kind, value)
        t.root = t.id
        self.labels[t.id] = what
        self._next += 1
        self.tensors[t.id] = t
        return t

    def view(self, base: Tensor, shape: Sequence[int]) -> Tensor:
        """A tensor sharing ``base``'s memory with another shape (same element count)."""
        t = Tensor(self._next, tuple(int(d) for d in shape), base.storage, base.kind, base.value, base.root,
                   base.offset)
        if base.value is not None:
            t.value = base.value.reshape(t.shape)
        self._next += 1
        self.tensors[t.id] = t
        return t

    # --- memory plan -----------------------------------------------------------------------
    def finish(self) -> None:
        """Assign every temporary root to a slot by liveness (greedy best fit)."""
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        end = len(self.launches)
        for i, launch in enumerate(self.launches):
            for a in launch.args:
                if isinstance(a, TensorArg):
                    r = self.tensors[a.tensor].root
                    first.setdefault(r, i)
                    last[r] = i
        for tid in self.inputs:
            r = self.tensors[tid].root
            first[r] = -1
            last.setdefault(r, -1)
        for tid in self.outputs:
            r = self.tensors[tid].root
            first.setdefault(r, end)
            last[r] = end
        roots = sorted((r for r in first if self.tensors[r].kind != "const"), key=lambda r: (first[r], r))
        free: list[int] = []
        busy: list[tuple[int, int]] = []  # (last use, slot)
        for r in roots:
            start = first[r]
            still = []
            for lu, slot in busy:
                if lu < start:
                    free.append(slot)
                else:
                    still.append((lu, slot))
            busy = still
            need = max(self.tensors[r].nbytes, 4)
            slot = self._pick(free, need)
            self.slot_of[r] = slot
            busy.append((last[r], slot))

    def _pick(self, free: list[int], need: int) -> int:
        fits = [s for s in free if self.slot_sizes[s] >= need]
        if fits:
            s = min(fits, key=lambda s: self.slot_sizes[s])
        elif free:
            s = max(free, key=lambda s: self.slot_sizes[s])
            self.slot_sizes[s] = need
        else:
            self.slot_sizes.append(need)
            return len(self.slot_sizes) - 1
        free.remove(s)
        return s

    def memory_bytes(self) -> int:
        return sum(self.slot_sizes)


def check_request_memory(plan: Plan) -> None:
    """Before allocating a request's buffers: they must fit the device's global memory and, on a
    CPU OpenCL device (PoCL), the host memory still available, since such a driver allocates
    lazily and crashes at the first copy when memory runs out."""
    info = plan.dev.info
    total = plan.memory_bytes()
    have, where = info.global_mem_size, "its global memory"
    if info.type == "CPU":
        # the host also stages each input (a contiguous copy in the device's element type), reads
        # each output back, and converts it to the model's type where the device stores another
        # (f16 storage of f32 outputs: INFERENCE_PRECISION_HINT=f16, the VPU)
        total += sum(plan.tensors[t].nbytes for t in plan.inputs)
        for t, st in zip(plan.outputs, plan.output_storages):
            size = plan.tensors[t].size
            total += size * st.itemsize + (size * st.type.np.itemsize if st.type.np != st.np else 0)
        host = host_available_bytes()
        if host < have or not have:
            have, where = host, "the host memory available to this process (MemAvailable, RLIMIT_AS)"
    if have and total > have:
        inputs = ", ".join(f"{plan.labels.get(t, 'an input')} of shape {plan.tensors[t].shape} "
                           f"({human_bytes(plan.tensors[t].nbytes)})" for t in plan.inputs)
        raise ResourceLimitError(
            f"GPU ({info.description}): this model needs {total} bytes ({human_bytes(total)}) of memory for "
            f"these inputs [{inputs}], more than {where} ({have} bytes, {human_bytes(have)})"
        )


class RequestMemory:
    """The buffers and bound kernels of one request on one plan: set up once, reused per call."""

    def __init__(self, plan: Plan, queue: Any) -> None:
        cl = plan.dev.cl
        ctx = plan.dev.context
        self.plan = plan
        self.queue = queue
        check_request_memory(plan)
        try:
            self.slots = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size) for size in plan.slot_sizes]
        except cl.Error as err:
            raise KernelError(
                f"{plan.dev.info.description}: cannot allocate {plan.memory_bytes() / 2**20:.1f} MiB of "
                f"request memory: {err}"
            ) from err
        #: the index-error buffer (plans with index checks only): zero until a kernel reports
        self.errors: Any = None
        self.errors_host = np.zeros(ERROR_WORDS, dtype=np.int32)
        #: the device buffer may hold a report (it is zeroed before the next inference)
        self.errors_dirty = False
        if plan.checks:
            mf = cl.mem_flags
            self.errors = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=self.errors_host)
        self.kernels: list[tuple[Any, tuple[int, ...], tuple[int, ...] | None]] = []
        for launch in plan.launches:
            try:
                k = cl.Kernel(launch.program, launch.kernel)
                for i, a in enumerate(launch.args):
                    k.set_arg(i, self._arg(a, launch))
            except cl.Error as err:
                raise KernelError(
                    f"node '{launch.node}' ({launch.node_type}) on {plan.dev.info.description}: cannot set up "
                    f"OpenCL kernel {launch.kernel} ({launch.source_file or 'custom'}): {err}"
                ) from err
            self.kernels.append((k, launch.gsize, launch.lsize))

    def buffer(self, tid: int) -> Any:
        """The buffer holding tensor ``tid`` (its element offset is ``tensors[tid].offset``)."""
        t = self.plan.tensors[tid]
        if t.kind == "const":
            return self.plan.const_buffers[t.root]
        return self.slots[self.plan.slot_of[t.root]]

    def _arg(self, a: Arg, launch: Launch) -> Any:
        if isinstance(a, TensorArg):
            t = self.plan.tensors[a.tensor]
            if t.offset:
                raise KernelError(
                    f"node '{launch.node}': kernel {launch.kernel} got a tensor view with an offset; "
                    "offset views must be passed through the parameter block"
                )
            return self.buffer(a.tensor)
        if isinstance(a, BufferArg):
            return a.buffer
        if isinstance(a, LocalArg):
            return self.plan.dev.cl.LocalMemory(a.nbytes)
        if isinstance(a, ErrorArg):
            if self.errors is None:
                raise KernelError(f"node '{launch.node}': kernel {launch.kernel} reports index errors "
                                  "but its check was not declared (Lowering.index_check)")
            return self.errors
        return a.value
