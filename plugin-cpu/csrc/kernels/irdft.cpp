// IRDFT-9: see fft_common.hpp.
#include "kernels/fft_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_irdft(NodeDesc& n) { return make_fft(n, FftKind::irdft); }
std::string check_irdft(const NodeDesc& n) { return check_fft(n); }

OPFORGE_KERNEL(IRDFT, make_irdft, check_irdft);

}  // namespace opforge_cpu
