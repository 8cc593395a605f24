// GRUSequence-5: see rnn_common.hpp for the layouts and the time loop.
#include "kernels/rnn_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_gru_sequence(NodeDesc& n) { return make_sequence<Cell::gru>(n); }
std::string check_gru_sequence(const NodeDesc& n) { return check_sequence(n); }

OPFORGE_KERNEL(GRUSequence, make_gru_sequence, check_gru_sequence);

}  // namespace opforge_cpu
