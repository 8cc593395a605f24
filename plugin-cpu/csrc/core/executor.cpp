#include "core/executor.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <map>

#include "core/dnnl_util.hpp"
#include "core/keep_warm.hpp"
#include "core/nn.hpp"  // fuse_attention
#include "core/primitive_log.hpp"
#include "core/step_threads.hpp"
#include "core/threading.hpp"
#include "core/tbb_contention.hpp"

namespace opforge_cpu {

namespace {
constexpr size_t kAlign = 64;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
}  // namespace

size_t TensorInfo::bytes() const {
  if (blocked) return md.get_size();
  return static_cast<size_t>(numel(shape)) * dtype_size(dtype);
}

int Program::add_tensor(DType dtype, const Shape& shape, const void* const_data) {
  ProgTensor t;
  t.info.dtype = dtype;
  t.info.shape = shape;
  t.const_data = const_data;
  tensors_.push_back(std::move(t));
  return static_cast<int>(tensors_.size()) - 1;
}

void Program::add_node(NodeSpec spec) { specs_.push_back(std::move(spec)); }

void Program::set_io(const std::vector<int>& inputs, const std::vector<int>& outputs) {
  inputs_ = inputs;
  outputs_ = outputs;
  for (int t : inputs) tensors_.at(t).is_input = true;
  for (int t : outputs) tensors_.at(t).is_output = true;
}

void Program::finalize(int num_threads, bool profiling) {
  num_threads_ = std::max(1, num_threads);
  profiling_ = profiling;
  // oneDNN sizes its thread partitioning when primitives are created: create them with the
  // thread count they will run with (each step's own count, set around its creation).
  with_threads(num_threads_, [&] {
    build_kernels();
    plan_memory();
  });
  finalized_ = true;
}

void Program::build_kernels() {
  // Readers of each tensor, by kernel type, to decide where blocked layouts may flow.
  std::vector<std::vector<int>> readers(tensors_.size());
  for (size_t s = 0; s < specs_.size(); ++s)
    for (int t : specs_[s].inputs)
      if (t >= 0) readers[t].push_back(static_cast<int>(s));
  // Constants still to be built by a reader, and whether every reader so far packed them.
  std::vector<int> pending(tensors_.size(), 0);
  std::vector<char> all_packed(tensors_.size(), 1);
  for (size_t t = 0; t < tensors_.size(); ++t) pending[t] = static_cast<int>(readers[t].size());

  // Each step's thread count, from every step's size and its neighbours' (step_threads.hpp).
  std::vector<int> spec_threads;
  {
    std::vector<NodeDesc> light(specs_.size());
    std::vector<char> keep_all(specs_.size(), 0);
    for (size_t s = 0; s < specs_.size(); ++s) {
      light[s].type = specs_[s].type;
      light[s].attrs = specs_[s].attrs;
      for (int t : specs_[s].inputs) {
        InputDesc in;
        if (t >= 0) in.info.shape = tensors_[t].info.shape;
        light[s].inputs.push_back(in);
      }
      for (int t : specs_[s].outputs) {
        TensorInfo out;
        out.shape = tensors_[t].info.shape;
        light[s].outputs.push_back(out);
      }
      keep_all[s] = specs_[s].maker ? 1 : 0;
    }
    spec_threads = plan_step_threads(light, keep_all, num_threads_);
  }

  auto flexible = [&](int spec_index) {
    const auto& sp = specs_[spec_index];
    if (sp.maker) return false;
    if (sp.attrs.b("plain_layout", false)) return false;
    const KernelEntry* e = find_kernel(sp.type);
    return e && e->layout_flexible;
  };
  // Whether step `spec_index` takes tensor `t` in its producer's layout: a flexible kernel, or
  // input 0 of a node the lowering marked (attribute takes_blocked: a bf16 MatMul reading the
  // bf16 result of the MatMul before it or a LayerNorm's bf16 output or copy; its other inputs
  // get plain data as usual)
  auto takes_as_is = [&](int spec_index, int t) {
    const auto& sp = specs_[spec_index];
    return flexible(spec_index) ||
           (!sp.maker && sp.attrs.b("takes_blocked", false) && !sp.inputs.empty() && sp.inputs[0] == t);
  };

  for (size_t s = 0; s < specs_.size(); ++s) {
    NodeSpec& sp = specs_[s];
    // A step must never read a buffer nothing wrote: a lowering that fused away the producer of
    // one of its inputs (a Transpose both written by one MatMul and folded into the next) read
    // unplanned memory and crashed. Refuse the program instead.
    for (int t : sp.inputs) {
      const ProgTensor& in = tensors_.at(static_cast<size_t>(t < 0 ? 0 : t));
      if (t >= 0 && !in.is_input && !in.released && in.const_data == nullptr && in.producer < 0 &&
          numel(in.info.shape) > 0)
        throw NodeCompileFailure(sp.name, sp.type,
                                 "reads tensor #" + std::to_string(t) + ", which no earlier step writes (an internal "
                                 "error of the CPU lowering; please report it with the model)");
    }
    // Non-flexible readers get plain data: insert a reorder for each blocked input.
    for (auto& t : sp.inputs) {
      if (t < 0 || !tensors_[t].info.blocked || takes_as_is(static_cast<int>(s), t)) continue;
      TensorInfo plain = tensors_[t].info;
      plain.blocked = false;
      plain.md = dnnl::memory::desc();
      int nt = add_tensor(plain.dtype, plain.shape, nullptr);
      Step st;
      st.name = sp.name + "/reorder_input";
      st.type = "Reorder";
      st.threads = reorder_threads(numel(plain.shape), num_threads_);
      with_threads(st.threads, [&] {
        PrimitiveLogScope log(&primitives_, st.name, st.type);
        st.kernel = make_reorder_kernel(tensors_[t].info, plain);
      });
      st.ins = {t};
      st.outs = {nt};
      tensors_[nt].producer = static_cast<int>(steps_.size());
      steps_.push_back(std::move(st));
      t = nt;
    }

    NodeDesc d;
    d.name = sp.name;
    d.type = sp.type;
    d.version = sp.version;
    d.attrs = sp.attrs;
    d.num_threads = num_threads_;
    for (int t : sp.inputs) {
      InputDesc in;
      if (t >= 0) {
        in.info = tensors_[t].info;
        in.const_data = tensors_[t].const_data;
      }
      d.inputs.push_back(in);
    }
    for (int t : sp.outputs) {
      d.outputs.push_back(tensors_[t].info);
      bool allow = !tensors_[t].is_output && !readers[t].empty();
      for (int r : readers[t]) allow = allow && takes_as_is(r, t);
      d.allow_blocked_output.push_back(allow);
    }
    // A small step's primitives are created for one thread (oneDNN fixes a primitive's split
    // when it is created) and it runs with one; third-party kernels keep every thread.
    const int step_nt = spec_threads[s];
    d.num_threads = step_nt;
    std::unique_ptr<Kernel> k;
    try {
      k = with_threads(step_nt, [&]() -> std::unique_ptr<Kernel> {
        PrimitiveLogScope log(&primitives_, sp.name, sp.type);
        if (sp.maker) return sp.maker(d);
        const KernelEntry* e = find_kernel(sp.type);
        if (!e) throw CompileFailure("the CPU device has no kernel for " + sp.type);
        if (e->check) {
          std::string why = e->check(d);
          if (!why.empty()) throw CompileFailure(why);
        }
        return e->make(d);
      });
    } catch (const NodeCompileFailure&) {
      throw;
    } catch (const dnnl::error& err) {
      throw NodeCompileFailure(sp.name, sp.type, std::string("oneDNN: ") + err.what());
    } catch (const std::exception& err) {
      throw NodeCompileFailure(sp.name, sp.type, err.what());
    }
    for (size_t i = 0; i < sp.outputs.size(); ++i) {
      auto& info = tensors_[sp.outputs[i]].info;
      info.blocked = d.outputs[i].blocked;
      info.md = d.outputs[i].md;
      tensors_[sp.outputs[i]].producer = static_cast<int>(steps_.size());
    }
    // Release constants that every reader has now packed (the peak holds one copy, not two).
    for (size_t i = 0; i < sp.inputs.size(); ++i) {
      int t = sp.inputs[i];
      if (t < 0 || t >= static_cast<int>(pending.size()) || !tensors_[t].const_data) continue;
      if (!k->packs_input(static_cast<int>(i))) all_packed[t] = 0;
      if (--pending[t] == 0 && all_packed[t] && !tensors_[t].is_output && !tensors_[t].is_input) {
        tensors_[t].const_data = nullptr;
        tensors_[t].released = true;
        if (on_release) on_release(t);
      }
    }
    std::vector<int> step_ins = sp.inputs;
    // A fused attention (nn.hpp fuse_attention): a bf16 P x V whose scores come from the Q x K^T
    // step before, read by it alone, runs that step's work in its own parallel region; the
    // Q x K^T step is left doing nothing, and its inputs become this step's too (so that the
    // memory plan keeps them alive until this step runs).
    if (!sp.maker && sp.type == "MatMul" && step_nt > 1 && !sp.inputs.empty() && sp.inputs[0] >= 0) {
      const int t = sp.inputs[0];
      const int a = tensors_[t].producer;
      if (a >= 0 && !tensors_[t].is_output && readers[t].size() == 1 && steps_[a].type == "MatMul" &&
          steps_[a].threads == step_nt && steps_[a].outs.size() == 1 &&
          fuse_attention(steps_[a].kernel, k.get(), static_cast<int>(sp.inputs.size())))
        step_ins.insert(step_ins.end(), steps_[a].ins.begin(), steps_[a].ins.end());
    }
    Step st;
    st.name = sp.name;
    st.type = sp.type;
    st.fused_names = sp.fused_names;
    st.kernel = std::move(k);
    st.ins = step_ins;
    st.outs = sp.outputs;
    st.threads = step_nt;
    steps_.push_back(std::move(st));
  }

  // Model outputs must be plain: reorder blocked ones into new plain tensors.
  for (auto& o : outputs_) {
    if (!tensors_[o].info.blocked) continue;
    TensorInfo plain = tensors_[o].info;
    plain.blocked = false;
    plain.md = dnnl::memory::desc();
    int nt = add_tensor(plain.dtype, plain.shape, nullptr);
    Step st;
    st.name = "output_reorder";
    st.type = "Reorder";
    st.threads = reorder_threads(numel(plain.shape), num_threads_);
    with_threads(st.threads, [&] {
      PrimitiveLogScope log(&primitives_, st.name, st.type);
      st.kernel = make_reorder_kernel(tensors_[o].info, plain);
    });
    st.ins = {o};
    st.outs = {nt};
    tensors_[nt].producer = static_cast<int>(steps_.size());
    tensors_[o].is_output = false;
    tensors_[nt].is_output = true;
    steps_.push_back(std::move(st));
    o = nt;
  }
  specs_.clear();
}

void Program::plan_memory() {
  const int n_steps = static_cast<int>(steps_.size());
  for (auto& t : tensors_) t.last_use = -1;
  for (int s = 0; s < n_steps; ++s)
    for (int t : steps_[s].ins)
      if (t >= 0) tensors_[t].last_use = std::max(tensors_[t].last_use, s);

  // Buffers: [first step, last step] lifetimes; a tensor written in place joins its input's buffer.
  struct Buf { size_t size; int start; int end; };
  std::vector<Buf> bufs;
  auto new_buf = [&](int t, int start) {
    tensors_[t].buffer = static_cast<int>(bufs.size());
    bufs.push_back({tensors_[t].info.bytes(), start, start});
  };
  auto end_of = [&](int t) { return tensors_[t].is_output ? n_steps : std::max(tensors_[t].last_use, tensors_[t].producer); };

  // Model inputs are read where the caller has them: no buffer, so never written over in place.
  for (int t : inputs_) tensors_[t].in_caller = true;
  for (int s = 0; s < n_steps; ++s) {
    Step& st = steps_[s];
    for (size_t o = 0; o < st.outs.size(); ++o) {
      int t = st.outs[o];
      int req = st.kernel->required_inplace_input(static_cast<int>(o));
      if (tensors_[t].is_output) {
        // Written straight into the array handed back to the caller (no arena copy); a kernel
        // that must write over its input gets that input copied there first.
        tensors_[t].in_caller = true;
        if (req >= 0) st.precopy_from = st.ins[req];
        continue;
      }
      int opt = st.kernel->inplace_input(static_cast<int>(o));
      int cand = req >= 0 ? req : opt;
      bool done = false;
      if (cand >= 0 && cand < static_cast<int>(st.ins.size())) {
        int src = st.ins[cand];
        const ProgTensor& ts = tensors_[src];
        // Legal when nobody reads the input later, it is not a constant or a model output, and
        // no other output of this step already took that buffer.
        bool taken = false;
        for (size_t o2 = 0; o2 < o; ++o2) taken = taken || tensors_[st.outs[o2]].buffer == ts.buffer;
        // A kernel that must write over an input (oneDNN sum) while reading the same tensor
        // through another input (conv(x) + x) would read what it already overwrote.
        if (req >= 0)
          for (size_t j = 0; j < st.ins.size(); ++j)
            taken = taken || (static_cast<int>(j) != cand && st.ins[j] >= 0 && tensors_[st.ins[j]].buffer == ts.buffer);
        if (src >= 0 && !ts.const_data && ts.buffer >= 0 && ts.last_use == s && !ts.is_output && !taken &&
            ts.info.bytes() == tensors_[t].info.bytes()) {
          tensors_[t].buffer = ts.buffer;
          done = true;
        }
      }
      if (!done) {
        new_buf(t, s);
        if (req >= 0) st.precopy_from = st.ins[req];
      }
    }
    // Extend lifetimes now that this step's outputs have buffers.
    for (int t : st.ins)
      if (t >= 0 && tensors_[t].buffer >= 0) bufs[tensors_[t].buffer].end = std::max(bufs[tensors_[t].buffer].end, s);
    for (int t : st.outs)
      if (tensors_[t].buffer >= 0) bufs[tensors_[t].buffer].end = std::max(bufs[tensors_[t].buffer].end, end_of(t));
  }
  for (int t : outputs_)
    if (tensors_[t].buffer >= 0) bufs[tensors_[t].buffer].end = n_steps;

  // The views Program::run points at the caller's arrays, and which outputs it writes there.
  io_slots_.assign(tensors_.size(), {});
  for (int s = 0; s < n_steps; ++s) {
    for (size_t k = 0; k < steps_[s].ins.size(); ++k) {
      int t = steps_[s].ins[k];
      if (t >= 0 && tensors_[t].in_caller) io_slots_[t].push_back({s, static_cast<int>(k), false});
    }
    for (size_t k = 0; k < steps_[s].outs.size(); ++k) {
      int t = steps_[s].outs[k];
      if (tensors_[t].in_caller) io_slots_[t].push_back({s, static_cast<int>(k), true});
    }
  }
  output_direct_.assign(outputs_.size(), 0);
  for (size_t j = 0; j < outputs_.size(); ++j) {
    const ProgTensor& t = tensors_[outputs_[j]];
    bool first = std::find(outputs_.begin(), outputs_.begin() + j, outputs_[j]) == outputs_.begin() + j;
    output_direct_[j] = t.in_caller && !t.is_input && t.producer >= 0 && first;
  }

  // Greedy placement, largest first, at the lowest offset free during the buffer's lifetime.
  std::vector<int> order(bufs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return bufs[a].size != bufs[b].size ? bufs[a].size > bufs[b].size : a < b;
  });
  buffer_size_.assign(bufs.size(), 0);
  buffer_offset_.assign(bufs.size(), 0);
  std::vector<int> placed;
  arena_bytes_ = 0;
  for (int b : order) {
    size_t size = align_up(std::max<size_t>(bufs[b].size, 1));
    std::vector<std::pair<size_t, size_t>> busy;
    for (int p : placed)
      if (!(bufs[p].end < bufs[b].start || bufs[b].end < bufs[p].start))
        busy.emplace_back(buffer_offset_[p], buffer_offset_[p] + buffer_size_[p]);
    std::sort(busy.begin(), busy.end());
    size_t off = 0;
    for (auto& iv : busy) {
      if (off + size <= iv.first) break;
      off = std::max(off, iv.second);
    }
    buffer_offset_[b] = off;
    buffer_size_[b] = size;
    arena_bytes_ = std::max(arena_bytes_, off + size);
    placed.push_back(b);
  }
  scratch_bytes_ = 0;
  for (auto& st : steps_) scratch_bytes_ = std::max(scratch_bytes_, st.kernel->scratch_bytes());
}

// The buffers are owning handles (RunBuffer): if anything below throws (a kernel's bind, an
// allocation), the members built so far are destroyed and give both buffers back.
State::State(const Program& p)
    // large ones in advised 2 MB pages (dnnl_util.hpp alloc_run_buffer, OPFORGE_CPU_HUGE_ARENA=0)
    : arena(make_run_buffer(p.arena_bytes())), scratch(make_run_buffer(p.scratch_bytes())), stream(cpu_engine()) {
  const auto& ts = p.tensors();
  views.resize(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    views[i].dtype = ts[i].info.dtype;
    views[i].shape = ts[i].info.shape;
    if (ts[i].const_data) views[i].data = const_cast<void*>(ts[i].const_data);
    else if (ts[i].buffer >= 0) views[i].data = static_cast<char*>(arena.get()) + p.offsets()[ts[i].buffer];
  }
  const auto& steps = p.steps();
  step_in.resize(steps.size());
  step_out.resize(steps.size());
  bound.resize(steps.size());
  times_ms.assign(steps.size(), 0.0);
  for (size_t s = 0; s < steps.size(); ++s) {
    for (int t : steps[s].ins) step_in[s].push_back(t >= 0 ? views[t] : TensorView{});
    for (int t : steps[s].outs) step_out[s].push_back(views[t]);
    bound[s] = steps[s].kernel->bind(step_in[s].data(), step_in[s].size(), step_out[s].data(),
                                     step_out[s].size(), scratch.get());
  }
}

// The members go in reverse order: the Bounds first, the arena and scratchpad last.
State::~State() = default;

std::unique_ptr<State> Program::create_state() const { return std::make_unique<State>(*this); }

void Program::run(State& st, const std::vector<const void*>& inputs, const std::vector<void*>& outputs) const {
  if (inputs.size() != inputs_.size() || outputs.size() != outputs_.size())
    throw std::invalid_argument("Program::run: expected " + std::to_string(inputs_.size()) + " inputs and " +
                                std::to_string(outputs_.size()) + " output arrays");
  // Point the views of the caller's arrays; steps whose views changed update what they bound.
  st.rebind.clear();
  auto point = [&](int t, void* p) {
    if (st.views[t].data == p) return;
    st.views[t].data = p;
    for (const IoSlot& u : io_slots_[t]) {
      (u.out ? st.step_out[u.step][u.slot] : st.step_in[u.step][u.slot]).data = p;
      st.rebind.push_back(u.step);
    }
  };
  for (size_t i = 0; i < inputs_.size(); ++i) point(inputs_[i], const_cast<void*>(inputs[i]));
  for (size_t j = 0; j < outputs_.size(); ++j) {
    if (!output_direct_[j]) continue;
    if (!outputs[j] && st.views[outputs_[j]].bytes()) throw std::invalid_argument("Program::run: no array for output " + std::to_string(j));
    point(outputs_[j], outputs[j]);
  }
  if (!st.rebind.empty()) {
    std::sort(st.rebind.begin(), st.rebind.end());
    st.rebind.erase(std::unique(st.rebind.begin(), st.rebind.end()), st.rebind.end());
    for (int s : st.rebind) {
      const Step& step = steps_[s];
      auto& in = st.step_in[s];
      auto& out = st.step_out[s];
      try {
        if (!step.kernel->rebind(st.bound[s].get(), in.data(), in.size(), out.data(), out.size()))
          st.bound[s] = step.kernel->bind(in.data(), in.size(), out.data(), out.size(), st.scratch.get());
      } catch (const dnnl::error& err) {
        throw NodeFailure(step.name, step.type, std::string("oneDNN: ") + err.what());
      } catch (const std::exception& err) {
        throw NodeFailure(step.name, step.type, err.what());
      }
    }
  }
  RunContext ctx;
  ctx.stream = &st.stream;
  ctx.scratch = st.scratch.get();
  ctx.python_calls = &python_calls_;
  // The other vCPUs stay busy (SCHED_IDLE) while the steps run, so waking the runtime's worker
  // for the next parallel step does not pay a halted vCPU's wake-up (keep_warm.hpp).
  KeepWarmScope warm(num_threads_);
  // TBB build: record the workers that join this thread's arenas, and look before multi-threaded
  // steps whether they wait for a CPU; while they do, TBB's waiting threads spin instead of
  // calling sched_yield (tbb_contention.hpp).
  if (num_threads_ > 1) tbb_contention_observe();
  auto run_step = [&](size_t s) {
    const Step& step = steps_[s];
    ctx.num_threads = step.threads;
    auto t0 = profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    try {
      // (the tensor's own size: a blocked or bf16 one is sized by its descriptor, not by its
      // f32 element count, which overran a bf16 residual's buffer)
      if (step.precopy_from >= 0)
        std::memcpy(st.step_out[s][0].data, st.views[step.precopy_from].data, tensors_[step.outs[0]].info.bytes());
      step.kernel->run(ctx, st.step_in[s].data(), st.step_out[s].data(), st.bound[s].get());
    } catch (const NodeFailure&) {
      throw;
    } catch (const dnnl::error& err) {
      throw NodeFailure(step.name, step.type, std::string("oneDNN: ") + err.what());
    } catch (const std::exception& err) {
      throw NodeFailure(step.name, step.type, err.what());
    }
    if (profiling_)
      st.times_ms[s] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  // Each step runs with the thread count its primitives were created for: a primitive split for
  // one thread that asks the runtime for the current count must not get two (its scratchpad and
  // partition are sized for one). A run of consecutive steps of one count is one scope (under
  // TBB one entry into that count's arena).
  for (size_t s = 0; s < steps_.size();) {
    size_t end = s + 1;
    while (end < steps_.size() && steps_[end].threads == steps_[s].threads) ++end;
    with_threads(steps_[s].threads, [&] {
      for (size_t i = s; i < end; ++i) {
        if (steps_[i].threads > 1) tbb_contention_before_step();
        run_step(i);
      }
    });
    s = end;
  }
}

}  // namespace opforge_cpu
