// IndexMap (internal): out[i] = in[map[i]], or a fill value where map[i] < 0. The compiler
// lowers data-movement ops whose parameters are constants (Slice, StridedSlice, Tile,
// Broadcast, Reverse, Roll, DepthToSpace, SpaceToDepth, Pad, ...) to this one kernel: the map
// is computed once at compile time from the op's own definition, so the semantics are exactly
// the reference's, and running it is one pass of gathers in C++.
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
template <class I> class IndexMapKernel : public Kernel {
 public:
  explicit IndexMapKernel(const NodeDesc& n) : has_fill_(n.inputs.size() > 2) {}
  std::string impl_name() const override { return "index_map"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const I* map = in[1].ptr<I>();
    dispatch_storage(out[0].dtype, [&](auto tag) {
      using T = OPF_TYPE_OF(tag);
      const T* x = in[0].ptr<T>();
      T* y = out[0].ptr<T>();
      const T fill = has_fill_ ? in[2].ptr<T>()[0] : T(0);
      parallel_range(out[0].size(), ctx.num_threads, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          I k = map[i];
          y[i] = k >= 0 ? x[k] : fill;
        }
      });
    });
  }

 private:
  bool has_fill_;
};
}  // namespace

std::unique_ptr<Kernel> make_index_map(NodeDesc& n) {
  if (n.in(1).dtype == DType::i32) return std::make_unique<IndexMapKernel<int32_t>>(n);
  return std::make_unique<IndexMapKernel<int64_t>>(n);
}

OPFORGE_KERNEL(IndexMap, make_index_map, nullptr);

}  // namespace opforge_cpu
