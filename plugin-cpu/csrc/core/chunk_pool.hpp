// A work-sharing loop for steps that a busy second vCPU must not hold up (see chunk_pool.cpp).
#pragma once

#include <functional>

namespace opforge_cpu {

// Calls fn(chunk, slot) once for every chunk in [0, chunks), on the calling thread (slot 0) and
// up to threads - 1 helper threads (slots 1 ..), each taking the next chunk when it is free.
// Returns when every chunk is done; a helper that has not woken up by then takes none, so the
// call never waits for a thread that got no CPU. fn must be safe to run concurrently for
// different chunks; the slot numbers a caller's per-thread scratch. An exception thrown by fn is
// rethrown here (the other chunks still run).
void run_chunks(int chunks, int threads, const std::function<void(int chunk, int slot)>& fn);

}  // namespace opforge_cpu
