// What RNNSequence-5, GRUSequence-5 and LSTMSequence-5 share: the kernels are built by
// core/recurrent.cpp (oneDNN RNN primitives for the common configuration, a GEMM-based path for
// the rest; see core/recurrent.hpp for layouts, gate orders and sequence-length semantics).
#pragma once

#include "core/recurrent.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

template <Cell C> std::unique_ptr<Kernel> make_sequence(NodeDesc& n) { return make_recurrent(n, C); }

inline std::string check_sequence(const NodeDesc& n) { return check_recurrent(n); }

}  // namespace opforge_cpu
