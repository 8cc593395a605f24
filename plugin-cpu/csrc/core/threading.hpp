// The one place the CPU plugin talks to its threading runtime: OpenMP (GNU libgomp, the default
// build) or oneTBB (OPFORGE_CPU_THREADING=tbb at build time, against the TBB build of oneDNN).
//
// oneDNN sizes a primitive's thread partition when it is created, from the runtime's current
// thread count: omp_get_max_threads() under OpenMP, the current task arena's concurrency under
// TBB (which ignores omp_set_num_threads). A thread count is therefore a *scope* here:
// with_threads(n, f) runs f so that oneDNN sees n threads, both when it creates primitives and
// when it runs them. Under OpenMP that is omp_set_num_threads(n) around f (what the code did
// before this layer); under TBB it is f executed inside a task arena of n slots (one reserved for
// the caller), kept per calling thread and per n.
//
// Why TBB at all: an OpenMP region splits its work statically, so at 2 threads a step waits for
// the half whose vCPU another process holds; in a TBB parallel_for the caller takes the tasks a
// descheduled worker has not started (docs/kernel-library.md, "oneDNN and our loops on TBB").
#pragma once

#include <dnnl_config.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#if defined(OPFORGE_CPU_THREADING_TBB)
#if DNNL_CPU_THREADING_RUNTIME != DNNL_RUNTIME_TBB
#error "OPFORGE_CPU_THREADING=tbb needs the TBB build of oneDNN (onednn-devel-cpu-tbb)"
#endif
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#else
#if DNNL_CPU_THREADING_RUNTIME != DNNL_RUNTIME_OMP
#error "OPFORGE_CPU_THREADING=omp needs the OpenMP build of oneDNN (onednn-devel-cpu-gomp)"
#endif
#include <omp.h>
#endif

namespace opforge_cpu {

// "omp" or "tbb": what this build runs on.
const char* threading_runtime();

// The processors this process may use (its affinity mask).
int threading_num_procs();

#if defined(OPFORGE_CPU_THREADING_TBB)

// The arena of `threads` slots (one reserved for the caller, so no worker runs it alone) that
// the calling thread enters for a scope of `threads`. Per thread: an arena of one slot shared by
// two threads would make the second wait for the first (TBB lets one thread in per slot).
tbb::task_arena& threading_arena(int threads);

// The thread count oneDNN sizes a primitive for when it is created now.
inline int threading_max_threads() { return tbb::this_task_arena::max_concurrency(); }

// Runs f() with `threads` threads for oneDNN and our loops and returns its result. Already in an
// arena of that concurrency (the common case: a run of steps of one count), it calls f directly.
template <class F> auto with_threads(int threads, F&& f) -> decltype(f()) {
  if (threads < 1) threads = 1;
  if (tbb::this_task_arena::max_concurrency() == threads) return f();
  return threading_arena(threads).execute(std::forward<F>(f));
}

// Calls f(slot, slots) for every slot in [0, slots), concurrently where threads are free. A
// slot is a loop index, not a thread: the caller runs the slots that no worker has started (a
// descheduled worker delays nothing), and a slot may index per-slot buffers, since each runs
// once. `runs_primitives`: f runs oneDNN primitives created for one thread; each slot then runs
// inside its thread's one-slot arena, where oneDNN sees one thread (OpenMP: a nested region
// gets one thread by itself), so a primitive that asks for the current thread count at run time
// neither forks again nor indexes its one-thread scratchpad past its end.
template <class F> void parallel_slots(int slots, F&& f, bool runs_primitives = false) {
  if (slots <= 1) {
    if (slots == 1) f(0, 1);
    return;
  }
  tbb::parallel_for(
      0, slots,
      [&](int i) {
        if (runs_primitives)
          with_threads(1, [&] { f(i, slots); });
        else
          f(i, slots);
      },
      tbb::static_partitioner());
}

#else  // OpenMP

inline int threading_max_threads() { return omp_get_max_threads(); }

// Sets the calling thread's OpenMP count for f and puts the previous one back (also when f
// throws).
template <class F> auto with_threads(int threads, F&& f) -> decltype(f()) {
  struct Restore {
    int count;
    ~Restore() { omp_set_num_threads(count); }
  } restore{omp_get_max_threads()};
  omp_set_num_threads(threads < 1 ? 1 : threads);
  return f();
}

// One OpenMP region of `slots` threads, each calling f(thread, team size): OpenMP may give a
// smaller team, so f must cover [0, slots) by striding over the team (as every caller does).
template <class F> void parallel_slots(int slots, F&& f, bool runs_primitives = false) {
  (void)runs_primitives;  // a nested region is one thread under OpenMP anyway
  if (slots <= 1) {
    if (slots == 1) f(0, 1);
    return;
  }
#pragma omp parallel num_threads(slots)
  f(omp_get_thread_num(), omp_get_num_threads());
}

#endif

// Calls f(begin, end) on `threads` contiguous blocks of [0, n) in parallel (the static split of
// `#pragma omp parallel for schedule(static)`); one call on the caller for threads <= 1.
template <class F> void parallel_blocks(int64_t n, int threads, F&& f) {
  if (n <= 0) return;
  if (threads <= 1) {
    f(int64_t{0}, n);
    return;
  }
  parallel_slots(threads, [&](int id, int cnt) {
    const int64_t chunk = (n + cnt - 1) / cnt;
    const int64_t b = std::min<int64_t>(n, chunk * id), e = std::min<int64_t>(n, b + chunk);
    if (b < e) f(b, e);
  });
}

}  // namespace opforge_cpu
