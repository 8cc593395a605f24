// How many OpenMP threads one step of a program runs with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/kernel.hpp"

namespace opforge_cpu {

// A step's work, roughly in multiply-adds or elements touched (see step_threads.cpp).
double step_work(const NodeDesc& d);

// The threads a built-in kernel of node `d` gets out of `max_threads`: 1 when its work is too
// small to pay for splitting it, else max_threads.
int step_threads(const NodeDesc& d, int max_threads);

// The thread counts of a program's steps, in order: step_threads() of each (`keep_all[i]`: a
// third-party kernel, every thread), then a lone small step, whose nearest neighbours that do
// work (views such as Reshape do not count) both run on every thread, gets every thread back.
std::vector<int> plan_step_threads(const std::vector<NodeDesc>& nodes, const std::vector<char>& keep_all,
                                   int max_threads);

// The same for a reorder of a tensor of `elements` elements that the executor inserts.
int reorder_threads(int64_t elements, int max_threads);

}  // namespace opforge_cpu
