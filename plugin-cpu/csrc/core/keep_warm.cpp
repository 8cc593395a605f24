// One SCHED_IDLE spinning thread per CPU, busy while a multi-threaded inference runs (see
// keep_warm.hpp for why).
#include "core/keep_warm.hpp"

#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "core/env_switch.hpp"

namespace opforge_cpu {
namespace {

// How long the spinners go on after an inference ends: covers the caller's own work between
// back-to-back requests (a Python loop's ~20-50 us), short enough that an idle process stops
// spinning at once by human standards. CPU time spent here is SCHED_IDLE time: a CPU's spare
// cycles only.
constexpr int64_t kTailNs = 2'000'000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Whether a spinner yields its CPU between bursts of pauses: in the TBB build (whose waiting
// threads yield, see loop()); OPFORGE_CPU_KEEP_WARM_YIELD=0 turns it off there, for A/B
// measurements. The OpenMP build's threads spin without yielding: it never yields there.
bool yield_while_spinning() {
#if defined(OPFORGE_CPU_THREADING_TBB)
  static const bool on = env_switch_on("OPFORGE_CPU_KEEP_WARM_YIELD");
  return on;
#else
  return false;
#endif
}

class Spinners {
 public:
  explicit Spinners(int threads) : pid_(getpid()) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return;
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &mask)) cpus.push_back(c);
    // One a CPU the inference can use: its threads land on at most `threads` of them, but the
    // scheduler picks which, so every CPU of the mask gets one (capped at 2x the threads).
    const size_t n = std::min(cpus.size(), static_cast<size_t>(2 * threads));
    for (size_t i = 0; i < n; ++i) {
      try {
        std::thread([this, cpu = cpus[i]] { loop(cpu); }).detach();
        ++started_;
      } catch (const std::system_error&) {
        break;  // no more threads here: the ones running still help, none is needed
      }
    }
  }

  pid_t pid() const { return pid_; }
  int started() const { return started_; }

  void begin() {
    active_.fetch_add(1);
    wake_if_asleep();
  }

  void end() {
    deadline_.store(now_ns() + kTailNs);
    active_.fetch_sub(1);
  }

 private:
  bool busy() const { return active_.load() > 0 || now_ns() < deadline_.load(); }

  void wake_if_asleep() {
    if (sleepers_.load() == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    cv_.notify_all();
  }

  void loop(int cpu) {
    sched_param idle{};
    idle.sched_priority = 0;
    // SCHED_IDLE needs no privilege. If it is refused the thread must not spin at normal
    // priority (it would take CPU from real work): it just ends.
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);  // best effort: unpinned still helps
    const bool yield = yield_while_spinning();
    for (;;) {
      while (busy()) {
        for (int i = 0; i < 64; ++i) _mm_pause();
        // TBB threads that wait (a caller at a join, a worker looking for tasks) call
        // sched_yield after a few pauses; CFS then runs this SCHED_IDLE thread, which holds the
        // CPU until the next tick (~4 ms) since nothing wakes up to preempt it. Yielding back at
        // once hands the CPU straight back (stop 21: resnet18 f32 at 2 threads 1.2-1.8x the
        // OpenMP build without this, docs/kernel-library.md "oneDNN and our loops on TBB").
        if (yield) sched_yield();
      }
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      cv_.wait(lock, [this] { return busy(); });
      sleepers_.fetch_sub(1);
    }
  }

  const pid_t pid_;
  int started_ = 0;
  std::atomic<int> active_{0};
  std::atomic<int64_t> deadline_{0};
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
};

// Never destroyed: the detached spinners use it until the process ends. A forked child (whose
// copy has no threads) makes its own.
std::atomic<Spinners*> g_spinners{nullptr};
std::mutex g_start;

Spinners* spinners(int threads) {
  Spinners* s = g_spinners.load(std::memory_order_acquire);
  if (s != nullptr && s->pid() == getpid()) return s;
  std::lock_guard<std::mutex> lock(g_start);
  s = g_spinners.load(std::memory_order_acquire);
  if (s == nullptr || s->pid() != getpid()) {
    s = new Spinners(threads);  // NOLINT: intentionally leaked, see above
    g_spinners.store(s, std::memory_order_release);
  }
  return s;
}

}  // namespace

bool keep_warm_enabled() {
  static const bool on = env_switch_on("OPFORGE_CPU_KEEP_WARM");
  return on;
}

void keep_warm_begin(int threads) {
  if (!keep_warm_enabled()) return;
  spinners(threads)->begin();
}

void keep_warm_end() {
  if (!keep_warm_enabled()) return;
  Spinners* s = g_spinners.load(std::memory_order_acquire);
  if (s != nullptr && s->pid() == getpid()) s->end();
}

}  // namespace opforge_cpu
