// RNNSequence-5: see rnn_common.hpp for the layouts and the time loop.
#include "kernels/rnn_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_rnn_sequence(NodeDesc& n) { return make_sequence<Cell::rnn>(n); }
std::string check_rnn_sequence(const NodeDesc& n) { return check_sequence(n); }

OPFORGE_KERNEL(RNNSequence, make_rnn_sequence, check_rnn_sequence);

}  // namespace opforge_cpu
