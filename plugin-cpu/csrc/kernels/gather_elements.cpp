// GatherElements-6: out[i0..in] = data[i0.., indices[i0..in], ..in] along `axis`; negative
// indices count from the end.
//
// Rows of the indices' last axis are shared among the threads, each row's source offset found
// once and its elements copied in a typed loop. Until stop 25 this was one serial loop that
// rebuilt every element's offset over all axes: DeBERTa-v2's 8 relative-position gathers
// ([1, 12, 128, 128] from [1, 12, 128, 256]) took 3.47 ms at 1 *and* 2 threads, 1.8x OpenVINO's
// time at 1 thread.
#include <atomic>
#include <cstring>

#include "core/elementwise.hpp"
#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
template <class I> class GatherElementsKernel : public Kernel {
 public:
  explicit GatherElementsKernel(const NodeDesc& n) {
    ds_ = n.in(0).shape;
    is_ = n.in(1).shape;
    const int64_t rank = static_cast<int64_t>(is_.size());
    axis_ = rank == 0 ? 0 : normalize_axis(n.attrs.i("axis"), static_cast<int64_t>(ds_.size()));
    esize_ = dtype_size(n.in(0).dtype);
    // the copy reads data at the indices' own coordinates off the axis: they must match (the
    // op's shape inference says so; checked again so no shape can make the loop read outside)
    bool same = ds_.size() == is_.size();
    for (int64_t d = 0; same && d < rank; ++d) same = d == axis_ || ds_[d] == is_[d];
    if (!same)
      throw CompileFailure("GatherElements: data " + shape_str(ds_) + " and indices " + shape_str(is_) +
                           " must have the same rank and agree off axis " + std::to_string(axis_));
    last_ = rank == 0 ? 1 : is_.back();
    rows_ = last_ > 0 ? numel(is_) / last_ : 0;
  }
  std::string impl_name() const override { return "gather_elements"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    if (rows_ == 0 || last_ == 0) return;
    switch (esize_) {
      case 1: gather<uint8_t>(ctx, in, out); return;
      case 2: gather<uint16_t>(ctx, in, out); return;
      case 4: gather<uint32_t>(ctx, in, out); return;
      case 8: gather<uint64_t>(ctx, in, out); return;
      default: throw KernelFailure("GatherElements: elements of " + std::to_string(esize_) + " bytes are not supported");
    }
  }

 private:
  // (T: an unsigned integer of the element's size: the bytes are copied, never interpreted)
  template <class T> void gather(RunContext& ctx, const TensorView* in, TensorView* out) {
    const T* x = static_cast<const T*>(in[0].data);
    const I* idx = static_cast<const I*>(in[1].data);
    T* y = static_cast<T*>(out[0].data);
    const int rank = static_cast<int>(is_.size());
    const Shape dstr = strides_of(ds_);
    const int64_t axis_dim = rank == 0 ? 1 : ds_[axis_];
    const int64_t axis_stride = rank == 0 ? 0 : dstr[axis_];
    const bool along_last = rank == 0 || axis_ == rank - 1;
    std::atomic<bool> failed{false};
    std::atomic<int64_t> bad{0};
    parallel_range(rows_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      // the coordinates of row r0 over the axes before the last one
      std::vector<int64_t> c(rank > 0 ? rank - 1 : 0, 0);
      for (int64_t d = rank - 2, r = r0; d >= 0; --d) {
        c[d] = r % is_[d];
        r /= is_[d];
      }
      for (int64_t r = r0; r < r1; ++r) {
        int64_t base = 0;  // the row's source offset, the gathered axis left out
        for (int d = 0; d < rank - 1; ++d)
          if (d != axis_) base += c[d] * dstr[d];
        const I* ip = idx + r * last_;
        T* yp = y + r * last_;
        for (int64_t j = 0; j < last_; ++j) {
          int64_t k = static_cast<int64_t>(ip[j]);
          if (k < 0) k += axis_dim;
          if (k < 0 || k >= axis_dim) {  // zero here, the error after the loop
            bad.store(static_cast<int64_t>(ip[j]), std::memory_order_relaxed);
            failed.store(true, std::memory_order_relaxed);
            yp[j] = T(0);
            continue;
          }
          yp[j] = along_last ? x[base + k] : x[base + k * axis_stride + j];
        }
        for (int d = rank - 2; d >= 0; --d) {
          if (++c[d] < is_[d]) break;
          c[d] = 0;
        }
      }
    }, std::max<int64_t>(1, 16384 / last_));
    if (failed.load())
      throw KernelFailure("GatherElements: index " + std::to_string(bad.load()) +
                          " is out of range for an axis of size " + std::to_string(axis_dim));
  }

  Shape ds_, is_;
  int64_t axis_ = 0, last_ = 1, rows_ = 0;
  size_t esize_ = 4;
};
}  // namespace

std::unique_ptr<Kernel> make_gather_elements(NodeDesc& n) {
  switch (n.in(1).dtype) {
    case DType::i32: return std::make_unique<GatherElementsKernel<int32_t>>(n);
    case DType::i64: return std::make_unique<GatherElementsKernel<int64_t>>(n);
    default: throw CompileFailure("GatherElements indices must be i32 or i64");
  }
}
std::string check_gather_elements(const NodeDesc& n) { return check_index_input(n, 1); }

OPFORGE_KERNEL(GatherElements, make_gather_elements, check_gather_elements);

}  // namespace opforge_cpu
