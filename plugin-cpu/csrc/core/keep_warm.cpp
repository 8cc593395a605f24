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
#include <cstddef>
#include <cstdint>
#include <memory>
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

// Why the TBB build waits, at a cold start, for a spinner to run on another CPU (stop 22,
// docs/kernel-library.md "oneDNN and our loops on TBB", stop 22 part). When a run starts after
// the spinners went to sleep, the other vCPU is halted. The caller then wakes TBB's worker for
// the first parallel step, and on this VM the kernel placed that wake-up on the *caller's* CPU
// (perf sched: the worker migrated from the idle vCPU to the busy one at the wake-up; a halted
// vCPU is not an "available" idle CPU to the wake-up path, a vCPU running a SCHED_IDLE thread
// is). OpenMP's workers sleep after every region, so the next region's wake-up places them
// again; TBB's workers never sleep inside a run (they spin and sched_yield between tasks: 0
// voluntary context switches in a 16 ms round), so the worker stayed queued behind the caller
// for the whole run, getting ~20 us per 4 ms tick, and the run took its 1-thread time
// (mobilenet_v2 f32 at 2 threads 3.2-3.4 ms instead of 1.7-2.4, in 1 to 3 of every 4 rounds).
// The load balancer did not move it within 16 ms. Waiting until a spinner runs on another CPU
// before the first step costs a halted vCPU's wake-up (15-35 us), once per cold start.
constexpr int64_t kWaitNs = 100'000;

bool wait_for_other_cpu() {
#if defined(OPFORGE_CPU_THREADING_TBB)
  static const bool on = env_switch_on("OPFORGE_CPU_KEEP_WARM_WAIT");
  return on;
#else
  return false;  // the OpenMP build is unchanged (its workers are placed again at every region)
#endif
}

std::atomic<long long> g_checked{0};
std::atomic<long long> g_waited{0};
std::atomic<long long> g_timed_out{0};

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
    cpus_.assign(cpus.begin(), cpus.begin() + static_cast<std::ptrdiff_t>(n));
    // sized before any spinner starts: loop(i) indexes it, and it never grows afterwards
    awake_ = std::make_unique<std::atomic<int>[]>(n);
    for (size_t i = 0; i < n; ++i) awake_[i].store(0);
    for (size_t i = 0; i < n; ++i) {
      try {
        std::thread([this, i] { loop(i); }).detach();
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
    if (wait_for_other_cpu()) wait_until_other_cpu_awake();
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

  // Whether a spinner pinned to a CPU other than `mine` is out of its sleep (running, or
  // runnable behind another tenant's thread: then that vCPU is not halted either).
  bool other_cpu_awake(int mine) const {
    for (int i = 0; i < started_; ++i)
      if (cpus_[i] != mine && awake_[i].load(std::memory_order_acquire) != 0) return true;
    return false;
  }

  // See "Why the TBB build waits" above. Warm (the tail of the previous run, back-to-back
  // requests) this is one sched_getcpu and a load or two. With one CPU, or no spinner on
  // another CPU, there is nothing to wait for.
  void wait_until_other_cpu_awake() {
    const int mine = sched_getcpu();
    bool any_other = false;
    for (int i = 0; i < started_; ++i) any_other = any_other || cpus_[i] != mine;
    if (!any_other) return;
    g_checked.fetch_add(1, std::memory_order_relaxed);
    // Found awake is not a miss: its vCPU is running (a spinner still in its loop, starved by
    // another tenant's thread, or one that woke before we looked), so it is not halted.
    if (other_cpu_awake(mine)) return;
    g_waited.fetch_add(1, std::memory_order_relaxed);
    const int64_t until = now_ns() + kWaitNs;
    for (;;) {
      for (int i = 0; i < 16; ++i) _mm_pause();
      if (other_cpu_awake(mine)) return;
      if (now_ns() > until) break;  // that vCPU is slow to come back (or held by the host)
    }
    g_timed_out.fetch_add(1, std::memory_order_relaxed);
  }

  void loop(size_t index) {
    const int cpu = cpus_[index];
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
      // running now (just started, or out of the wait below): this vCPU is not halted
      awake_[index].store(1, std::memory_order_release);
      while (busy()) {
        for (int i = 0; i < 64; ++i) _mm_pause();
        // TBB threads that wait (a caller at a join, a worker looking for tasks) call
        // sched_yield after a few pauses; CFS then runs this SCHED_IDLE thread, which holds the
        // CPU until the next tick (~4 ms) since nothing wakes up to preempt it. Yielding back at
        // once hands the CPU straight back (stop 21: resnet18 f32 at 2 threads 1.2-1.8x the
        // OpenMP build without this, docs/kernel-library.md "oneDNN and our loops on TBB").
        if (yield) sched_yield();
      }
      awake_[index].store(0, std::memory_order_release);
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      cv_.wait(lock, [this] { return busy(); });
      sleepers_.fetch_sub(1);
    }
  }

  const pid_t pid_;
  std::vector<int> cpus_;                       // the CPU spinner i is pinned to
  std::unique_ptr<std::atomic<int>[]> awake_;   // 1 while spinner i is out of its sleep
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

KeepWarmWaits keep_warm_waits() {
  KeepWarmWaits w;
  w.checked = g_checked.load(std::memory_order_relaxed);
  w.waited = g_waited.load(std::memory_order_relaxed);
  w.timed_out = g_timed_out.load(std::memory_order_relaxed);
  return w;
}

}  // namespace opforge_cpu
