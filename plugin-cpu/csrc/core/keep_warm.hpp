// Keeps the vCPUs of a multi-threaded inference from going idle while it runs.
//
// Why: on the virtual machines these hosts are (KVM, Firecracker), a vCPU with nothing to run
// halts, and waking a thread on a halted vCPU costs a VM exit and an interrupt: on the AMD EPYC
// Zen 5 VM of stop 18 a futex wake-up took 15-35 us there against 2-3 us on a vCPU that was
// running something. OpenMP's workers sleep after GOMP_SPINCOUNT spins, so at 2 threads every
// op whose start found the worker asleep paid that wake-up, and every benchmark model ran at its
// 1-thread speed. Spinning longer in libgomp hides it on a quiet host but is ruinous on a loaded
// one (the spinners look like CPU hogs to the scheduler and lose their turn when they have work:
// bf16 mobilenet_v2 9.7-16x OpenVINO with 10000 spins at load 4-6). So the spinning is done here
// instead, by one SCHED_IDLE thread per CPU: the scheduling class that runs only when nothing
// else wants the CPU and is preempted at once by any other thread's wake-up. On a quiet host it
// keeps the vCPU running, so the OpenMP worker's wake-up is cheap; on a loaded one it gets
// (almost) no CPU and costs nothing. It spins only while an inference runs and for a short tail
// after it (back-to-back requests), and sleeps otherwise.
//
// OPFORGE_CPU_KEEP_WARM=0 turns it off (read once a process), for A/B measurements.
#pragma once

namespace opforge_cpu {

// Called by Program::run around a run on `threads` > 1 threads: begin() before the first step,
// end() after the last (also on an exception). Cheap: two atomic operations, and a futex wake
// only when the spinners were asleep.
void keep_warm_begin(int threads);
void keep_warm_end();

// Whether the spinners are used in this process (the switch, and SCHED_IDLE being available).
bool keep_warm_enabled();

// The TBB build's cold-start wait (keep_warm.cpp, "Why the TBB build waits"): how many runs
// looked for a spinner awake on another CPU, how many found none and waited for one, and how
// many of those waits ran out (kWaitNs) before one was running. Always 0 in the OpenMP build and under
// OPFORGE_CPU_KEEP_WARM_WAIT=0. For tests and measurements.
struct KeepWarmWaits {
  long long checked = 0;  // runs that looked for a spinner awake on another CPU
  long long waited = 0;
  long long timed_out = 0;
};
KeepWarmWaits keep_warm_waits();

// RAII form of begin/end.
class KeepWarmScope {
 public:
  explicit KeepWarmScope(int threads) : active_(threads > 1) {
    if (active_) keep_warm_begin(threads);
  }
  ~KeepWarmScope() {
    if (active_) keep_warm_end();
  }
  KeepWarmScope(const KeepWarmScope&) = delete;
  KeepWarmScope& operator=(const KeepWarmScope&) = delete;

 private:
  bool active_;
};

}  // namespace opforge_cpu
