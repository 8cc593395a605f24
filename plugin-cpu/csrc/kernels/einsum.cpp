// Einsum-7: Einstein summation by direct iteration over every label (output labels outer,
// summed labels inner). "..." becomes one label per broadcast dimension (right-aligned, size-1
// dimensions broadcast); a label repeated within an operand takes its diagonal; without "->" the
// output is the ellipsis then the labels seen once, sorted (capitals first, as ASCII sorts).
#include <map>
#include <vector>

#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
// Labels: letters as themselves; ellipsis dimension k as 256 + k (k counted from the right).
std::vector<int> parse_subscript(const std::string& s, int64_t rank, int64_t& ell_rank) {
  std::vector<int> out;
  size_t pos = s.find("...");
  int64_t letters = 0;
  for (char c : s) letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
  if (pos == std::string::npos) {
    for (char c : s) out.push_back(static_cast<unsigned char>(c));
    return out;
  }
  const int64_t ne = rank - letters;
  ell_rank = std::max(ell_rank, ne);
  for (size_t i = 0; i < pos; ++i) out.push_back(static_cast<unsigned char>(s[i]));
  for (int64_t k = ne - 1; k >= 0; --k) out.push_back(256 + static_cast<int>(k));
  for (size_t i = pos + 3; i < s.size(); ++i) out.push_back(static_cast<unsigned char>(s[i]));
  return out;
}

template <class T> class EinsumKernel : public Kernel {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

 public:
  explicit EinsumKernel(const NodeDesc& n) {
    std::string eq;
    for (char c : n.attrs.s("equation")) if (c != ' ') eq += c;
    const size_t arrow = eq.find("->");
    const std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
    std::vector<std::string> subs;
    size_t start = 0;
    while (true) {
      size_t comma = lhs.find(',', start);
      subs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (subs.size() != n.inputs.size()) n.fail("equation names " + std::to_string(subs.size()) + " operands");
    int64_t ell = 0;
    std::map<int, int64_t> size;
    for (size_t i = 0; i < subs.size(); ++i) {
      const Shape& s = n.in(static_cast<int>(i)).shape;
      ops_.push_back(parse_subscript(subs[i], static_cast<int64_t>(s.size()), ell));
      if (ops_.back().size() != s.size()) n.fail("subscript '" + subs[i] + "' does not match the rank of its operand");
      strides_.push_back(strides_of(s));
      shapes_.push_back(s);
      for (size_t d = 0; d < s.size(); ++d) {
        int64_t& z = size[ops_.back()[d]];
        z = std::max(z, s[d]);
      }
    }
    std::vector<int> out;
    if (arrow != std::string::npos) {
      int64_t dummy = ell;
      out = parse_subscript(eq.substr(arrow + 2), ell + static_cast<int64_t>(std::count_if(eq.begin() + arrow + 2, eq.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })), dummy);
    } else {
      for (int64_t k = ell - 1; k >= 0; --k) out.push_back(256 + static_cast<int>(k));
      std::map<int, int> count;
      for (char c : lhs) if (std::isalpha(static_cast<unsigned char>(c))) ++count[static_cast<unsigned char>(c)];
      for (auto& [c, k] : count) if (k == 1) out.push_back(c);
    }
    // all labels: output first, then summed ones
    labels_ = out;
    n_out_ = out.size();
    for (auto& [l, z] : size)
      if (std::find(out.begin(), out.end(), l) == out.end()) labels_.push_back(l);
    for (int l : labels_) dims_.push_back(size.count(l) ? size[l] : 1);
    // per operand: stride of each label position (0 where the dimension broadcasts)
    for (size_t i = 0; i < ops_.size(); ++i) {
      std::vector<int64_t> st(labels_.size(), 0);
      for (size_t d = 0; d < ops_[i].size(); ++d) {
        const size_t li = std::find(labels_.begin(), labels_.end(), ops_[i][d]) - labels_.begin();
        if (shapes_[i][d] != 1) st[li] += strides_[i][d];
      }
      label_strides_.push_back(st);
    }
  }
  std::string impl_name() const override { return "einsum"; }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const size_t nl = labels_.size(), no = ops_.size();
    int64_t n_outer = 1, n_inner = 1;
    for (size_t i = 0; i < n_out_; ++i) n_outer *= dims_[i];
    for (size_t i = n_out_; i < nl; ++i) n_inner *= dims_[i];
    T* y = out[0].ptr<T>();
    std::vector<int64_t> idx(nl);
    for (int64_t o = 0; o < n_outer; ++o) {
      int64_t r = o;
      for (int64_t i = static_cast<int64_t>(n_out_) - 1; i >= 0; --i) {
        idx[i] = r % dims_[i];
        r /= dims_[i];
      }
      Acc acc = 0;
      for (int64_t q = 0; q < n_inner; ++q) {
        int64_t rq = q;
        for (int64_t i = static_cast<int64_t>(nl) - 1; i >= static_cast<int64_t>(n_out_); --i) {
          idx[i] = rq % dims_[i];
          rq /= dims_[i];
        }
        Acc p = 1;
        for (size_t k = 0; k < no; ++k) {
          int64_t off = 0;
          for (size_t i = 0; i < nl; ++i) off += idx[i] * label_strides_[k][i];
          p = static_cast<Acc>(p * static_cast<Acc>(in[k].ptr<T>()[off]));
        }
        acc = static_cast<Acc>(acc + p);
      }
      y[o] = static_cast<T>(acc);
    }
  }

 private:
  std::vector<std::vector<int>> ops_;
  std::vector<Shape> strides_, shapes_;
  std::vector<int> labels_;
  size_t n_out_ = 0;
  std::vector<int64_t> dims_;
  std::vector<std::vector<int64_t>> label_strides_;
};
}  // namespace

std::unique_ptr<Kernel> make_einsum(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_numeric(n.in(0).dtype, [&](auto tag) { k = std::make_unique<EinsumKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}
std::string check_einsum(const NodeDesc& n) { return check_numeric(n); }

OPFORGE_KERNEL(Einsum, make_einsum, check_einsum);

}  // namespace opforge_cpu
