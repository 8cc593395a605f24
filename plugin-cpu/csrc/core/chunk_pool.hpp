// A work-sharing loop over chunks for steps split into one-thread primitives (chunk_pool.cpp).
#pragma once

#include <functional>

namespace opforge_cpu {

// Calls fn(chunk, slot) once for every chunk in [0, chunks) on up to `threads` threads of one
// OpenMP region (slot = the thread's number, for per-thread scratch), each thread taking the
// next chunk when it is free. fn must be safe to run concurrently for different chunks (a
// oneDNN primitive created for one thread runs inline in the region). An exception thrown by fn
// is rethrown here once every chunk is done. `runs_primitives`: fn runs oneDNN primitives
// (created for one thread); false for chunks of our own code, which under TBB then skip
// entering their thread's one-slot arena (threading.hpp parallel_slots), a cost a step pays per
// slot.
void run_chunks(int chunks, int threads, const std::function<void(int chunk, int slot)>& fn,
                bool runs_primitives = true);

}  // namespace opforge_cpu
