// How many OpenMP threads one step of a program runs with.
#pragma once

#include <cstdint>
#include <string>

#include "core/kernel.hpp"

namespace opforge_cpu {

// A step's work, roughly in multiply-adds or elements touched (see step_threads.cpp).
double step_work(const NodeDesc& d);

// The threads a built-in kernel of node `d` gets out of `max_threads`: 1 when its work is too
// small to pay for splitting it, else max_threads.
int step_threads(const NodeDesc& d, int max_threads);

// The same for a reorder of a tensor of `elements` elements that the executor inserts.
int reorder_threads(int64_t elements, int max_threads);

}  // namespace opforge_cpu
