// LSTMSequence-5: see rnn_common.hpp for the layouts and the time loop.
#include "kernels/rnn_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_lstm_sequence(NodeDesc& n) { return make_sequence<Cell::lstm>(n); }
std::string check_lstm_sequence(const NodeDesc& n) { return check_sequence(n); }

OPFORGE_KERNEL(LSTMSequence, make_lstm_sequence, check_lstm_sequence);

}  // namespace opforge_cpu
