// A step split into chunks that threads claim one at a time, with no fork/join.
//
// oneDNN under GNU OpenMP splits a primitive statically over the team and the step ends at the
// team's barrier: when the second vCPU is busy (this 2-vCPU host is shared, and one vCPU at a time
// runs slow for seconds) the calling thread finishes its half and then waits for the other half,
// so a bf16 convolution ran no faster, often slower, at 2 threads than at 1. Here the calling
// thread claims chunks itself until none is left and waits only for the chunks a helper has
// already claimed: a helper that is not running leaves its share to the caller, as TBB's work
// stealing does for OpenVINO. One helper pool per process (steps of one program run one after
// another; two programs running at once share it through a lock).
#include "core/chunk_pool.hpp"

#include <immintrin.h>
#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace opforge_cpu {

namespace {

// The job word: generation (32 bits) | chunk count (16) | next chunk to claim (16).
constexpr int kCountShift = 16;
constexpr uint64_t kMask16 = 0xffff;

// A helper spins this many pauses (~15 ns each here, ~4.5 us, as GOMP_SPINCOUNT=300 does for
// OpenMP's worker) for the next job before it sleeps: a longer spin takes the CPU from OpenMP's
// own worker and from the other processes of a shared host (2000 spins: tv_resnet50 bf16 at 2
// threads 1.42x slower than 300 at load 3.7, tv_regnet_y_800mf 1.11x).
// OPFORGE_CPU_POOL_SPINS overrides it, for measuring.
int helper_spins() {
  static const int value = [] {
    const char* env = std::getenv("OPFORGE_CPU_POOL_SPINS");
    return env ? std::atoi(env) : 300;
  }();
  return value;
}

class Pool {
 public:
  static Pool& get() {
    static Pool* pool = new Pool();  // never destroyed: helpers may outlive static destructors
    return *pool;
  }

  void run(int chunks, int threads, const std::function<void(int, int)>& fn) {
    std::lock_guard<std::mutex> one_job(run_mutex_);
    grow(threads - 1);
    fn_ = &fn;
    error_ = nullptr;
    done_.store(0, std::memory_order_relaxed);
    const uint64_t gen = ++generation_;
    // (seq_cst with the helper's sleepers_ increment: one of the two sees the other)
    word_.store(gen << 32 | static_cast<uint64_t>(chunks) << kCountShift, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lk(sleep_mutex_);
      wake_.notify_all();
    }
    work(gen, 0);
    for (int spins = 0; done_.load(std::memory_order_acquire) < chunks; ++spins) {
      // a helper is inside a chunk it claimed: its end is near unless it lost its CPU
      if (spins < 4000) _mm_pause();
      else sched_yield();
    }
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Claims and runs chunks of job `gen` until none is left.
  void work(uint64_t gen, int slot) {
    for (;;) {
      uint64_t w = word_.load(std::memory_order_acquire);
      if ((w >> 32) != gen || (w & kMask16) >= ((w >> kCountShift) & kMask16)) return;
      if (!word_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel)) continue;
      // (the job cannot end while this chunk is claimed and not done, so fn_ is this job's)
      try {
        (*fn_)(static_cast<int>(w & kMask16), slot);
      } catch (...) {
        std::lock_guard<std::mutex> lk(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  void grow(int helpers) {
    while (static_cast<int>(helpers_.size()) < helpers) {
      const int slot = static_cast<int>(helpers_.size()) + 1;
      helpers_.emplace_back([this, slot] { helper(slot); });
      helpers_.back().detach();
    }
  }

  void helper(int slot) {
    uint64_t seen = word_.load(std::memory_order_acquire) >> 32;
    for (;;) {
      uint64_t gen = seen;
      for (int i = 0, spins = helper_spins(); i < spins && gen == seen; ++i) {
        _mm_pause();
        gen = word_.load(std::memory_order_acquire) >> 32;
      }
      if (gen == seen) {
        std::unique_lock<std::mutex> lk(sleep_mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        wake_.wait(lk, [&] { return (word_.load(std::memory_order_seq_cst) >> 32) != seen; });
        sleepers_.fetch_sub(1, std::memory_order_acq_rel);
        gen = word_.load(std::memory_order_acquire) >> 32;
      }
      seen = gen;
      work(gen, slot);
    }
  }

  std::mutex run_mutex_;
  std::atomic<uint64_t> word_{0};
  std::atomic<int> done_{0};
  uint64_t generation_ = 0;
  const std::function<void(int, int)>* fn_ = nullptr;
  std::exception_ptr error_;
  std::mutex error_mutex_;
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::vector<std::thread> helpers_;
};

}  // namespace

void run_chunks(int chunks, int threads, const std::function<void(int, int)>& fn) {
  if (chunks <= 0) return;
  if (threads <= 1 || chunks == 1) {
    for (int i = 0; i < chunks; ++i) fn(i, 0);
    return;
  }
  if (chunks > static_cast<int>(kMask16)) throw std::out_of_range("run_chunks: too many chunks");
  Pool::get().run(chunks, threads, fn);
}

}  // namespace opforge_cpu
