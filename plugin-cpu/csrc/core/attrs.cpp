#include "core/attrs.hpp"

namespace opforge_cpu {

bool Attrs::has(const std::string& key) const { return values_.count(key) != 0; }

bool Attrs::is_none(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() || std::holds_alternative<std::monostate>(it->second);
}

const AttrValue& Attrs::get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw CompileFailure("attribute '" + key + "' is missing");
  return it->second;
}

int64_t Attrs::i(const std::string& key) const {
  const auto& v = get(key);
  if (auto p = std::get_if<int64_t>(&v)) return *p;
  if (auto p = std::get_if<bool>(&v)) return *p ? 1 : 0;
  if (auto p = std::get_if<double>(&v)) return static_cast<int64_t>(*p);
  throw CompileFailure("attribute '" + key + "' is not an integer");
}
int64_t Attrs::i(const std::string& key, int64_t dflt) const { return is_none(key) ? dflt : i(key); }

double Attrs::f(const std::string& key) const {
  const auto& v = get(key);
  if (auto p = std::get_if<double>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  if (auto p = std::get_if<bool>(&v)) return *p ? 1.0 : 0.0;
  throw CompileFailure("attribute '" + key + "' is not a number");
}
double Attrs::f(const std::string& key, double dflt) const { return is_none(key) ? dflt : f(key); }

bool Attrs::b(const std::string& key, bool dflt) const {
  if (is_none(key)) return dflt;
  const auto& v = get(key);
  if (auto p = std::get_if<bool>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return *p != 0;
  throw CompileFailure("attribute '" + key + "' is not a bool");
}

std::string Attrs::s(const std::string& key) const {
  const auto& v = get(key);
  if (auto p = std::get_if<std::string>(&v)) return *p;
  throw CompileFailure("attribute '" + key + "' is not a string");
}
std::string Attrs::s(const std::string& key, const std::string& dflt) const { return is_none(key) ? dflt : s(key); }

std::vector<int64_t> Attrs::ints(const std::string& key) const {
  const auto& v = get(key);
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return {*p};
  if (auto p = std::get_if<std::vector<double>>(&v)) {
    std::vector<int64_t> out;
    for (double d : *p) out.push_back(static_cast<int64_t>(d));
    return out;
  }
  if (std::holds_alternative<std::vector<std::string>>(v)) {
    if (std::get<std::vector<std::string>>(v).empty()) return {};
  }
  throw CompileFailure("attribute '" + key + "' is not a list of integers");
}
std::vector<int64_t> Attrs::ints(const std::string& key, const std::vector<int64_t>& dflt) const {
  return is_none(key) ? dflt : ints(key);
}

std::vector<double> Attrs::floats(const std::string& key) const {
  const auto& v = get(key);
  if (auto p = std::get_if<std::vector<double>>(&v)) return *p;
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) return std::vector<double>(p->begin(), p->end());
  if (auto p = std::get_if<double>(&v)) return {*p};
  if (auto p = std::get_if<int64_t>(&v)) return {static_cast<double>(*p)};
  if (std::holds_alternative<std::vector<std::string>>(v)) {
    if (std::get<std::vector<std::string>>(v).empty()) return {};
  }
  throw CompileFailure("attribute '" + key + "' is not a list of numbers");
}

std::vector<std::string> Attrs::strings(const std::string& key) const {
  const auto& v = get(key);
  if (auto p = std::get_if<std::vector<std::string>>(&v)) return *p;
  if (auto p = std::get_if<std::string>(&v)) return {*p};
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) {
    if (p->empty()) return {};
  }
  throw CompileFailure("attribute '" + key + "' is not a list of strings");
}

std::vector<FusedOp> Attrs::fused_ops(const std::string& key) const {
  if (is_none(key)) return {};
  const auto& v = get(key);
  if (auto p = std::get_if<std::vector<FusedOp>>(&v)) return *p;
  // An empty Python list arrives as an empty list of integers.
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) {
    if (p->empty()) return {};
  }
  throw CompileFailure("attribute '" + key + "' is not a list of (op type, attributes) pairs");
}

}  // namespace opforge_cpu
