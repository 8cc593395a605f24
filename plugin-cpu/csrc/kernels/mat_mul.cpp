// MatMul: f32 runs as one oneDNN primitive (weights pre-packed at compile time, fused post-ops),
// see core/nn.cpp. i32/i64 (MatMulInteger, QLinearMatMul lower to i32 MatMul of zero-point-
// centred operands) run as an exact integer loop: products and sums wrap modulo 2^N like NumPy's
// integer matmul, so results are bit-exact.
#include <cstring>

#include "core/isa_clones.hpp"
#include "core/nn.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
// c[j] += a * b[j], modulo 2^32 / 2^64 (unsigned: the wrap is defined)
template <class U> __attribute__((always_inline)) inline void int_axpy_loop(U* c, const U* b, U a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) c[j] += a * b[j];
}
OPFORGE_ISA_CLONES(static, "avx512f,avx512dq", int_axpy32, int_axpy_loop<uint32_t>,
                   (uint32_t* c, const uint32_t* b, uint32_t a, int64_t n), (c, b, a, n))
OPFORGE_ISA_CLONES(static, "avx512f,avx512dq", int_axpy64, int_axpy_loop<uint64_t>,
                   (uint64_t* c, const uint64_t* b, uint64_t a, int64_t n), (c, b, a, n))
inline void int_axpy(uint32_t* c, const uint32_t* b, uint32_t a, int64_t n) { int_axpy32(c, b, a, n); }
inline void int_axpy(uint64_t* c, const uint64_t* b, uint64_t a, int64_t n) { int_axpy64(c, b, a, n); }

template <class T> class IntMatMulKernel : public Kernel {
  using U = std::make_unsigned_t<T>;  // wrapping arithmetic without signed overflow

 public:
  explicit IntMatMulKernel(const NodeDesc& n) {
    Shape a = n.in(0).shape, b = n.in(1).shape;
    bool ta = n.attrs.b("transpose_a", false), tb = n.attrs.b("transpose_b", false);
    if (a.size() == 1) { a = {1, a[0]}; ta = false; }
    if (b.size() == 1) { b = {b[0], 1}; tb = false; }
    const size_t rank = std::max(a.size(), b.size());
    a.insert(a.begin(), rank - a.size(), 1);
    b.insert(b.begin(), rank - b.size(), 1);
    M_ = ta ? a[rank - 1] : a[rank - 2];
    K_ = ta ? a[rank - 2] : a[rank - 1];
    N_ = tb ? b[rank - 2] : b[rank - 1];
    if ((tb ? b[rank - 1] : b[rank - 2]) != K_) throw CompileFailure("MatMul: inner dimensions differ");
    // element strides of one row/column step in each operand
    a_m_ = ta ? 1 : K_; a_k_ = ta ? M_ : 1;
    b_k_ = tb ? 1 : N_; b_n_ = tb ? K_ : 1;
    const Shape as = strides_of(a), bs = strides_of(b);
    batch_ = 1;
    for (size_t d = 0; d + 2 < rank; ++d) {
      const int64_t dim = std::max(a[d], b[d]);
      batch_dims_.push_back(dim);
      a_bstride_.push_back(a[d] == 1 ? 0 : as[d]);
      b_bstride_.push_back(b[d] == 1 ? 0 : bs[d]);
      batch_ *= dim;
    }
  }
  std::string impl_name() const override { return "int_matmul"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* A = in[0].ptr<T>();
    const T* B = in[1].ptr<T>();
    T* C = out[0].ptr<T>();
    parallel_range(batch_ * M_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t bi = r / M_, m = r % M_;
        int64_t ao = 0, bo = 0, rest = bi;
        for (int64_t d = static_cast<int64_t>(batch_dims_.size()) - 1; d >= 0; --d) {
          const int64_t idx = rest % batch_dims_[d];
          rest /= batch_dims_[d];
          ao += idx * a_bstride_[d];
          bo += idx * b_bstride_[d];
        }
        const T* arow = A + ao + m * a_m_;
        if (b_n_ == 1) {
          // B's rows are contiguous: C's row is the sum over k of a[k] * B[k, :], a loop over
          // contiguous memory that the clones vectorise (the dot-product order below strides
          // B by N per step: 447 ms for quantize_dynamic BERT-small's 24 GEMMs at 1 thread)
          U* crow = reinterpret_cast<U*>(C + r * N_);
          std::memset(crow, 0, static_cast<size_t>(N_) * sizeof(U));
          for (int64_t k = 0; k < K_; ++k)
            int_axpy(crow, reinterpret_cast<const U*>(B + bo + k * b_k_), static_cast<U>(arow[k * a_k_]), N_);
          continue;
        }
        for (int64_t j = 0; j < N_; ++j) {
          U acc = 0;
          const T* bcol = B + bo + j * b_n_;
          for (int64_t k = 0; k < K_; ++k) acc += static_cast<U>(arow[k * a_k_]) * static_cast<U>(bcol[k * b_k_]);
          C[r * N_ + j] = static_cast<T>(acc);
        }
      }
    }, 16);
  }

 private:
  int64_t M_ = 1, K_ = 1, N_ = 1, batch_ = 1;
  int64_t a_m_ = 0, a_k_ = 0, b_k_ = 0, b_n_ = 0;
  std::vector<int64_t> batch_dims_, a_bstride_, b_bstride_;
};

bool integer_pair(const NodeDesc& n, DType t) { return n.in(0).dtype == t && n.in(1).dtype == t; }

// The length of the summed (inner) dimension, from input 0's shape.
int64_t inner_length(const NodeDesc& n) {
  const Shape& a = n.in(0).shape;
  if (a.size() == 1) return a[0];
  return n.attrs.b("transpose_a", false) ? a[a.size() - 2] : a[a.size() - 1];
}

// An empty sum is zero: [M,0] x [0,N] gives zeros. oneDNN's matmul leaves its destination
// unwritten for K = 0, which returned whatever the planned buffer held before.
class EmptySumMatMulKernel : public Kernel {
 public:
  std::string impl_name() const override { return "zero_fill"; }
  void run(RunContext&, const TensorView*, TensorView* out, Bound*) override {
    std::memset(out[0].data, 0, out[0].bytes());
  }
};
}  // namespace

std::unique_ptr<Kernel> make_mat_mul(NodeDesc& n) {
  if (n.inputs.size() >= 2 && inner_length(n) == 0) {
    if (n.attrs.b("has_bias", false) || !n.attrs.fused_ops("post_ops").empty())
      throw CompileFailure("MatMul with an empty inner dimension (K = 0) takes no fused bias or post-ops");
    return std::make_unique<EmptySumMatMulKernel>();
  }
  if (integer_pair(n, DType::i32) || integer_pair(n, DType::i64)) {
    if (n.attrs.b("has_bias", false) || !n.attrs.fused_ops("post_ops").empty())
      throw CompileFailure("integer MatMul takes no fused bias or post-ops");
    if (n.in(0).dtype == DType::i32) return std::make_unique<IntMatMulKernel<int32_t>>(n);
    return std::make_unique<IntMatMulKernel<int64_t>>(n);
  }
  return make_dnnl_matmul(n);
}

std::string check_mat_mul(const NodeDesc& n) {
  if (n.inputs.size() >= 2 && (integer_pair(n, DType::i32) || integer_pair(n, DType::i64))) return "";
  const std::string why = check_matmul(n);
  return why.empty() ? why : why + " (or i32/i64)";
}

OPFORGE_KERNEL(MatMul, make_mat_mul, check_mat_mul);

}  // namespace opforge_cpu
