// Which oneDNN implementation each primitive of a compiled program got, and which of those are
// oneDNN's reference (slow, scalar C++) fallbacks.
//
// oneDNN 3.2 has no switch that refuses its reference implementations: when no optimised kernel
// fits a descriptor (a post-op it cannot fuse, a layout, a data type the ISA lacks) it silently
// returns "ref:any", 5-30x slower. Stop 12 found two such MatMuls only because real models ran
// slow. Every kernel that creates a primitive calls note_primitive() with the descriptor it runs
// (not with the ones it probed and rejected); while Program::build_kernels builds a step, a
// PrimitiveLogScope collects those notes under the step's name, and the program hands them to
// Python (Program.primitives), which warns once per compile about heavy ones on a reference path.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <vector>

namespace opforge_cpu {

struct PrimitiveRecord {
  std::string node, node_type;  // the step that created it
  std::string kind;             // "convolution", "matmul", "reorder"...
  std::string impl;             // primitive_desc::impl_info_str(): "brg:avx512_core_amx", "ref:any"
  std::string src, weights, dst;  // "f32[1,64,56,56]" (+ ":blocked" for a oneDNN-chosen layout)
  bool reference = false;       // impl is one of oneDNN's reference implementations
  bool heavy = false;           // a kind whose reference implementation costs a model real time
};

// oneDNN's reference implementations by name: "ref:any", "ref_int8:any", "ref_fused:any",
// "gemm:ref" (a gemm-based convolution over the reference GEMM), "ref" (an RNN's cell loop).
bool is_reference_impl_name(const std::string& impl);

// Kinds whose work grows with the product of their dimensions (convolution, deconvolution,
// matmul, inner product, pooling): on a reference implementation they dominate a model's time.
// An RNN's "ref" is not flagged: oneDNN names its gemm-driven (jit sgemm) RNN "ref".
bool is_heavy_kind(dnnl::primitive::kind kind);

// Records pd (the descriptor of a primitive the kernel being built will run) in the log of the
// current PrimitiveLogScope on this thread; nothing without one (kernels built outside a program).
void note_primitive(const dnnl::primitive_desc_base& pd);

// While alive, note_primitive() on this thread appends to `log` under node/type.
class PrimitiveLogScope {
 public:
  PrimitiveLogScope(std::vector<PrimitiveRecord>* log, const std::string& node, const std::string& type);
  ~PrimitiveLogScope();
  PrimitiveLogScope(const PrimitiveLogScope&) = delete;
  PrimitiveLogScope& operator=(const PrimitiveLogScope&) = delete;

 private:
  struct Frame {
    std::vector<PrimitiveRecord>* log;
    std::string node, type;
  };
  Frame saved_;
};

}  // namespace opforge_cpu
