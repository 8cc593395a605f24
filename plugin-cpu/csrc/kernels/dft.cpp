// DFT-7: see fft_common.hpp.
#include "kernels/fft_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_dft(NodeDesc& n) { return make_fft(n, FftKind::dft); }
std::string check_dft(const NodeDesc& n) { return check_fft(n); }

OPFORGE_KERNEL(DFT, make_dft, check_dft);

}  // namespace opforge_cpu
