// RDFT-9: see fft_common.hpp.
#include "kernels/fft_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_rdft(NodeDesc& n) { return make_fft(n, FftKind::rdft); }
std::string check_rdft(const NodeDesc& n) { return check_fft(n); }

OPFORGE_KERNEL(RDFT, make_rdft, check_rdft);

}  // namespace opforge_cpu
