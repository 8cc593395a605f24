// TfIdfVectorizer: weighted n-gram counts per row of an i32/i64 sequence (semantics in
// opforge/opset/tf_idf_vectorizer.py). The pool is flattened at build time into the n-grams that
// are looked for (lengths in [min, max], a repeated n-gram keeps its last column); each row then
// tries every n-gram at every start and skip distance (1-grams at distance 1 only).
#include <map>

#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
struct Gram {
  int64_t n;    // length
  int64_t col;  // output column
  std::vector<int64_t> items;
};

class TfIdfKernel : public Kernel {
 public:
  explicit TfIdfKernel(const NodeDesc& n) : dt_(n.in(0).dtype) {
    const std::string mode = n.attrs.s("mode");
    mode_ = mode == "TF" ? 0 : mode == "IDF" ? 1 : mode == "TFIDF" ? 2 : -1;
    if (mode_ < 0) throw CompileFailure("mode '" + mode + "' is not one of TF, IDF, TFIDF");
    min_ = n.attrs.i("min_gram_length");
    max_ = n.attrs.i("max_gram_length");
    skips_ = n.attrs.i("max_skip_count");
    const auto counts = n.attrs.ints("ngram_counts");
    const auto indexes = n.attrs.ints("ngram_indexes");
    const auto pool = n.attrs.ints("pool_int64s");
    if (n.attrs.has("weights") && !n.attrs.is_none("weights")) {
      for (double w : n.attrs.floats("weights")) weights_.push_back(static_cast<float>(w));
    }
    const Shape& ys = n.outputs.at(0).shape;
    size_ = ys.back();
    const Shape& xs = n.in(0).shape;
    rows_ = xs.size() == 2 ? xs[0] : 1;
    cols_ = xs.size() == 2 ? xs[1] : (xs.empty() ? 1 : xs[0]);
    if (!weights_.empty() && static_cast<int64_t>(weights_.size()) < size_)
      throw CompileFailure("weights are indexed by output column: too few weights");
    // n-gram tuple -> position in grams_, so a repeated n-gram keeps its last column
    std::map<std::vector<int64_t>, size_t> seen;
    int64_t id = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      const int64_t len = static_cast<int64_t>(k) + 1;
      const int64_t start = counts[k];
      const int64_t end = k + 1 < counts.size() ? counts[k + 1] : static_cast<int64_t>(pool.size());
      if (start < 0 || end < start || end > static_cast<int64_t>(pool.size()))
        throw CompileFailure("ngram_counts are not offsets into the pool");
      for (int64_t j = 0; j < (end - start) / len; ++j, ++id) {
        if (id >= static_cast<int64_t>(indexes.size())) throw CompileFailure("ngram_indexes is shorter than the pool");
        if (len < min_ || len > max_) continue;
        const int64_t col = indexes[id];
        if (col < 0 || col >= size_) throw CompileFailure("ngram_indexes value out of the output's range");
        std::vector<int64_t> items(pool.begin() + start + j * len, pool.begin() + start + (j + 1) * len);
        auto it = seen.find(items);
        if (it != seen.end()) {
          grams_[it->second].col = col;
        } else {
          seen.emplace(items, grams_.size());
          grams_.push_back({len, col, std::move(items)});
        }
      }
    }
  }
  std::string impl_name() const override { return "tf_idf_vectorizer"; }
  size_t scratch_bytes() const override { return static_cast<size_t>(size_) * sizeof(int64_t); }

  template <class T> void run_typed(const T* x, float* y, int64_t* counts) const {
    for (int64_t r = 0; r < rows_; ++r) {
      const T* row = x + r * cols_;
      std::fill(counts, counts + size_, int64_t(0));
      for (int64_t d = 1; d <= skips_ + 1; ++d) {
        const int64_t shortest = std::max<int64_t>(min_, d == 1 ? 1 : 2);
        for (const Gram& g : grams_) {
          if (g.n < shortest) continue;
          for (int64_t s = 0; s + (g.n - 1) * d < cols_; ++s) {
            bool match = true;
            for (int64_t k = 0; k < g.n && match; ++k) match = static_cast<int64_t>(row[s + k * d]) == g.items[k];
            if (match) ++counts[g.col];
          }
        }
      }
      float* out = y + r * size_;
      for (int64_t c = 0; c < size_; ++c) {
        const float w = weights_.empty() ? 1.0f : weights_[c];
        const float f = static_cast<float>(counts[c]);
        out[c] = mode_ == 0 ? f : mode_ == 1 ? (counts[c] > 0 ? w : 0.0f) : w * f;
      }
    }
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    auto* counts = static_cast<int64_t*>(ctx.scratch);
    if (dt_ == DType::i32) run_typed(in[0].ptr<int32_t>(), out[0].ptr<float>(), counts);
    else run_typed(in[0].ptr<int64_t>(), out[0].ptr<float>(), counts);
  }

 private:
  DType dt_;
  int mode_ = 0;
  int64_t min_ = 1, max_ = 1, skips_ = 0, size_ = 1, rows_ = 1, cols_ = 1;
  std::vector<float> weights_;
  std::vector<Gram> grams_;
};
}  // namespace

std::unique_ptr<Kernel> make_tf_idf_vectorizer(NodeDesc& n) { return std::make_unique<TfIdfKernel>(n); }
std::string check_tf_idf_vectorizer(const NodeDesc& n) {
  const DType t = n.in(0).dtype;
  if (t != DType::i32 && t != DType::i64) return std::string("input of ") + dtype_name(t) + " (i32 or i64 only)";
  if (n.outputs.at(0).dtype != DType::f32) return "output must be f32";
  return "";
}

OPFORGE_KERNEL(TfIdfVectorizer, make_tf_idf_vectorizer, check_tf_idf_vectorizer);

}  // namespace opforge_cpu
