// Node attributes as Python passed them (OpenVINO opset names), read by kernels with defaults.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/tensor.hpp"

namespace opforge_cpu {

class Attrs;

// A node folded into another one (an activation run as a oneDNN post-op of the convolution
// before it): its op type and its own attributes, which its kernel registration reads.
struct FusedOp {
  std::string type;
  std::shared_ptr<const Attrs> attrs;
};

using AttrValue = std::variant<std::monostate, bool, int64_t, double, std::string,
                               std::vector<int64_t>, std::vector<double>, std::vector<std::string>,
                               std::vector<FusedOp>>;

class Attrs {
 public:
  void set(const std::string& key, AttrValue v) { values_[key] = std::move(v); }
  bool has(const std::string& key) const;
  bool is_none(const std::string& key) const;

  int64_t i(const std::string& key) const;
  int64_t i(const std::string& key, int64_t dflt) const;
  double f(const std::string& key) const;
  double f(const std::string& key, double dflt) const;
  bool b(const std::string& key, bool dflt) const;
  std::string s(const std::string& key) const;
  std::string s(const std::string& key, const std::string& dflt) const;
  std::vector<int64_t> ints(const std::string& key) const;
  std::vector<int64_t> ints(const std::string& key, const std::vector<int64_t>& dflt) const;
  std::vector<double> floats(const std::string& key) const;
  std::vector<std::string> strings(const std::string& key) const;
  // A list of fused nodes; empty when the key is absent or None.
  std::vector<FusedOp> fused_ops(const std::string& key) const;

  const std::map<std::string, AttrValue>& all() const { return values_; }

 private:
  const AttrValue& get(const std::string& key) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace opforge_cpu
