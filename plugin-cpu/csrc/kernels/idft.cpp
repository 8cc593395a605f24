// IDFT-7: see fft_common.hpp.
#include "kernels/fft_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_idft(NodeDesc& n) { return make_fft(n, FftKind::idft); }
std::string check_idft(const NodeDesc& n) { return check_fft(n); }

OPFORGE_KERNEL(IDFT, make_idft, check_idft);

}  // namespace opforge_cpu
