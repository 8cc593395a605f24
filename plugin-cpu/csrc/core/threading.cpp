#include "core/threading.hpp"

#include "core/tbb_contention.hpp"

#include <sched.h>

#include <map>
#include <memory>

#if defined(OPFORGE_CPU_THREADING_TBB)
#include <oneapi/tbb/info.h>
#endif

namespace opforge_cpu {

#if defined(OPFORGE_CPU_THREADING_TBB)

const char* threading_runtime() { return "tbb"; }

int threading_num_procs() {
  // omp_get_num_procs() in the OpenMP build: the CPUs of the affinity mask
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return tbb::info::default_concurrency();
}

tbb::task_arena& threading_arena(int threads) {
  // Per calling thread (and TBB worker: a chunk task enters its thread's one-slot arena): two
  // Python threads running programs at once each get their own arenas, whose workers TBB's
  // scheduler shares out (never more than the machine's concurrency in all).
  // An arena of more than one slot gets an observer that records the workers entering it, so
  // that Program::run can see one waiting for a CPU (core/tbb_contention.hpp). Member order:
  // the observer is destroyed before its arena.
  struct Scope {
    std::unique_ptr<tbb::task_arena> arena;
    std::unique_ptr<tbb::task_scheduler_observer> watch;
  };
  thread_local std::map<int, Scope> arenas;
  auto& a = arenas[threads];
  if (!a.arena) {
    a.arena = std::make_unique<tbb::task_arena>(threads, 1);
    if (threads > 1) a.watch = tbb_contention_watch(*a.arena);
  }
  return *a.arena;
}

#else

const char* threading_runtime() { return "omp"; }

int threading_num_procs() { return omp_get_num_procs(); }

#endif

}  // namespace opforge_cpu
