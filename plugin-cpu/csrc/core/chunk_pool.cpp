// A step split into chunks that the threads of one OpenMP region claim one at a time.
//
// oneDNN under GNU OpenMP splits a primitive statically over the team: a thread that runs slow
// (this 2-vCPU host is shared, and one vCPU at a time runs slow for seconds) holds up the whole
// step with its fixed half. Here the chunks are claimed from one atomic counter, so a thread that
// starts late or runs slow takes fewer of them. The region is OpenMP's own team, the one every
// other step uses: a separate pool of helper threads (tried first) left OpenMP's worker asleep
// after each split step, and the next OpenMP step paid its wake-up (googlenet bf16 at 2 threads
// 1.14x, unet_small 1.25x slower; tv_mnasnet1_0's depthwise convolutions 4.5 -> 6.4 ms profiled).
#include "core/chunk_pool.hpp"

#include <atomic>
#include <exception>
#include <mutex>

#include "core/threading.hpp"

namespace opforge_cpu {

void run_chunks(int chunks, int threads, const std::function<void(int, int)>& fn, bool runs_primitives) {
  if (chunks <= 0) return;
  if (threads <= 1 || chunks == 1) {
    for (int i = 0; i < chunks; ++i) fn(i, 0);
    return;
  }
  std::atomic<int> next{0};
  std::exception_ptr error;
  std::mutex error_lock;
  // A slot is a thread of the OpenMP team, or a TBB task that the caller runs itself when no
  // worker took it (it then finds the chunks all claimed, or claims the rest). Each slot runs
  // once at a time, so its scratchpad and stream are its own. Sub-primitives of chunks were
  // created for one thread: runs_primitives keeps them on one under TBB too.
  parallel_slots(
      threads,
      [&](int slot, int) {
        for (int c = next.fetch_add(1, std::memory_order_relaxed); c < chunks;
             c = next.fetch_add(1, std::memory_order_relaxed)) {
          try {
            fn(c, slot);
          } catch (...) {
            std::lock_guard<std::mutex> hold(error_lock);
            if (!error) error = std::current_exception();
          }
        }
      },
      runs_primitives);
  if (error) std::rethrow_exception(error);
}

}  // namespace opforge_cpu
