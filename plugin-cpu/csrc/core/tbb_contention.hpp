// The TBB build when the host has no CPU to spare: TBB's waiting threads stop calling sched_yield
// while its workers are seen waiting for a CPU (TBB build only).
//
// Why (stop 23, docs/kernel-library.md "oneDNN and our loops on TBB", stop 23 part): oneTBB's
// threads never sleep inside a run. A worker between tasks, and the caller at a join, spin a few
// pauses and then call sched_yield, again and again. On the EEVDF scheduler of current Linux
// kernels (6.6 and later; this VM runs 6.18) a sched_yield forfeits the rest of the caller's
// time slice: its virtual runtime jumps to its deadline. A TBB thread that shares its CPU with a
// busy thread of another process therefore gives its turn away at every yield, runs ~0.1 ms per
// 4 ms tick, and, never having slept, is never woken, so it never preempts the busy thread when
// a step hands it work. With two busy loops on the 2-vCPU VM the worker ran 3-5 ms of a 120 ms
// round (runnable the rest, on the *other* vCPU: not stacked on the caller's), the caller ran
// both halves of every static split at 1-thread speed on its shared vCPU, and resnet18 f32 at 2
// threads took 1.4x the OpenMP build, whose threads spin briefly and then sleep on a futex (a
// wake-up keeps their share).
//
// What this does: every 20 ms of multi-threaded steps the caller reads one worker's and its own
// /proc schedstat; when *both* waited (runnable, not running) for more than 40 % of that time,
// *loaded mode* starts for kLoadedModeNs (renewed while it lasts). Both: with one busy loop the
// caller has a CPU of its own, and there a yielding worker is the better one (the caller takes
// every chunk at full speed; a spinning worker starts chunks and is preempted inside them, and
// the caller waits for them: resnet18 1.5x with the worker's wait alone as the rule). In the
// mode the sched_yield calls of libtbb (its one import of it, redirected at the first multi-threaded run
// by rewriting libtbb's GOT entry) spin 32 pauses instead, so TBB's waiting threads keep their
// fair share of the CPU they are queued on; outside it they call sched_yield as before, so a
// quiet host runs exactly what it ran (spinning instead of yielding costs 10-28 % there: TBB's
// workers then give up and sleep sooner, and each step pays a wake-up).
//
// OPFORGE_CPU_TBB_LOADED_SPIN=0 turns it off (no redirect, no look), =always keeps loaded mode
// on (measuring what it costs a quiet host; tests). Read once a process. The OpenMP build has
// none of it (its threads do not yield).
#pragma once

#include <cstdint>

#if defined(OPFORGE_CPU_THREADING_TBB)
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_scheduler_observer.h>

#include <memory>
#endif

namespace opforge_cpu {

#if defined(OPFORGE_CPU_THREADING_TBB)
// An observer that records the workers entering `arena` (threading.cpp keeps one beside each
// arena of more than one slot it creates, destroyed before the arena); nullptr with the switch
// off.
std::unique_ptr<tbb::task_scheduler_observer> tbb_contention_watch(tbb::task_arena& arena);
#endif

// At a multi-threaded run's start: redirects libtbb's sched_yield (once a process) and watches
// the calling thread's implicit arena (oneTBB has no global observer: each watches one arena;
// once per thread). A no-op in the OpenMP build and with the switch off.
void tbb_contention_observe();

// Before each step that runs on more than one thread: a clock read, and every 20 ms one
// worker's /proc schedstat (round robin over the workers seen) and the calling thread's.
void tbb_contention_before_step();

// Whether the switch is on (TBB build) / libtbb's sched_yield is redirected now.
bool tbb_contention_enabled();
bool tbb_contention_redirected();

// Counters for tests and measurements: looks at a worker's schedstat, times loaded mode began,
// yields spun instead of made, and workers known now.
struct TbbContentionStats {
  int64_t checks = 0;
  int64_t loaded_modes = 0;
  int64_t spun_yields = 0;
  int64_t workers = 0;
};
TbbContentionStats tbb_contention_stats();

}  // namespace opforge_cpu
