#include "core/primitive_log.hpp"

#include <oneapi/dnnl/dnnl_debug.h>

namespace opforge_cpu {

namespace {
// The scope active on this thread: compiles on several Python threads each log their own program.
thread_local std::vector<PrimitiveRecord>* t_log = nullptr;
thread_local std::string t_node, t_type;

// "f32[1,64,56,56]", ":blocked" for a layout with inner blocks (nChw16c, a packed weight), "" when
// the primitive has no such argument.
std::string describe(const dnnl::memory::desc& md) {
  if (!md || md.get_ndims() == 0) return "";
  std::string s = dnnl_dt2str(static_cast<dnnl_data_type_t>(md.get_data_type()));
  s += "[";
  const auto dims = md.get_dims();
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  s += "]";
  if (md.get_format_kind() == dnnl::memory::format_kind::blocked && md.get_inner_nblks() > 0) s += ":blocked";
  return s;
}

std::string query(const dnnl::primitive_desc_base& pd, dnnl::query what) {
  try {
    return describe(pd.query_md(what, 0));
  } catch (const dnnl::error&) {
    return "";
  }
}
}  // namespace

bool is_reference_impl_name(const std::string& impl) {
  // Split on ':' ("gemm:ref", "ref_int8:any"): any part that is or begins with "ref".
  size_t start = 0;
  while (start <= impl.size()) {
    size_t end = impl.find(':', start);
    if (end == std::string::npos) end = impl.size();
    if (impl.compare(start, 3, "ref") == 0) return true;
    start = end + 1;
  }
  return impl.empty();
}

bool is_heavy_kind(dnnl::primitive::kind kind) {
  using k = dnnl::primitive::kind;
  return kind == k::convolution || kind == k::deconvolution || kind == k::matmul || kind == k::inner_product ||
         kind == k::pooling;
}

void note_primitive(const dnnl::primitive_desc_base& pd) {
  if (t_log == nullptr) return;
  PrimitiveRecord r;
  r.node = t_node;
  r.node_type = t_type;
  const dnnl::primitive::kind kind = pd.get_kind();
  r.kind = dnnl_prim_kind2str(static_cast<dnnl_primitive_kind_t>(kind));
  const char* info = pd.impl_info_str();
  r.impl = info ? info : "";
  r.src = query(pd, dnnl::query::src_md);
  r.weights = query(pd, dnnl::query::weights_md);
  r.dst = query(pd, dnnl::query::dst_md);
  r.reference = is_reference_impl_name(r.impl);
  r.heavy = is_heavy_kind(kind);
  t_log->push_back(std::move(r));
}

PrimitiveLogScope::PrimitiveLogScope(std::vector<PrimitiveRecord>* log, const std::string& node,
                                     const std::string& type)
    : saved_{t_log, t_node, t_type} {
  t_log = log;
  t_node = node;
  t_type = type;
}

PrimitiveLogScope::~PrimitiveLogScope() {
  t_log = saved_.log;
  t_node = std::move(saved_.node);
  t_type = std::move(saved_.type);
}

}  // namespace opforge_cpu
