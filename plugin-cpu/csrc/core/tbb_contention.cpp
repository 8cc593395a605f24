// TBB's waiting threads spin instead of yielding while its workers wait for a CPU (see
// tbb_contention.hpp for why).
#include "core/tbb_contention.hpp"

#include "core/env_switch.hpp"

#if defined(OPFORGE_CPU_THREADING_TBB)
#include <elf.h>
#include <fcntl.h>
#include <immintrin.h>
#include <link.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#endif

namespace opforge_cpu {

#if defined(OPFORGE_CPU_THREADING_TBB)

namespace {

// How often the caller looks (two /proc reads, a few us): every 20 ms of multi-threaded steps.
// Shorter windows are too coarse to judge: the scheduler switches at 4 ms ticks here, so a 1 ms
// window reads a thread as waiting all or none of it. 20 ms is also the most a run loses
// before loaded mode starts.
constexpr int64_t kIntervalNs = 20'000'000;
// How long loaded mode lasts after a worker was last seen waiting: renewed at every look that
// sees it again (a spinning worker on a busy CPU waits about half the time), so the mode ends
// half a second after the other process's load does.
constexpr int64_t kLoadedModeNs = 500'000'000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// 0: off, 1: loaded mode when a worker is seen waiting (the default), 2: always loaded mode.
int setting() {
  static const int s = [] {
    const std::string v = env_string("OPFORGE_CPU_TBB_LOADED_SPIN", "1");
    if (v == "0") return 0;
    if (v == "always") return 2;
    return 1;
  }();
  return s;
}

std::atomic<int64_t> g_loaded_until{0};
std::atomic<int64_t> g_checks{0};
std::atomic<int64_t> g_loaded_modes{0};
std::atomic<int64_t> g_spun{0};
std::atomic<bool> g_redirected{false};

bool loaded_now() {
  const int s = setting();
  return s == 2 || (s == 1 && now_ns() < g_loaded_until.load(std::memory_order_relaxed));
}

// What libtbb calls instead of sched_yield. Outside loaded mode exactly the call it made.
extern "C" int opforge_tbb_sched_yield() {
  if (!loaded_now()) return sched_yield();
  // About half a microsecond of pauses: a waiting TBB thread goes on checking for work at
  // the same rate, without handing its turn (and its virtual runtime) to another process.
  for (int i = 0; i < 32; ++i) _mm_pause();
  g_spun.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

// Rewrites the GOT entry through which libtbb calls sched_yield (an R_X86_64_JUMP_SLOT or
// GLOB_DAT relocation of the symbol in its dynamic section; with BIND_NOW the entry is already
// resolved, and read-only under RELRO: the page is made writable for the store and read-only
// again). Only libtbb's own calls change: oneDNN, OpenMP-free code and libc are untouched.
int redirect_in(struct dl_phdr_info* info, size_t, void* data) {
  const char* name = info->dlpi_name;
  const char* base = name ? std::strrchr(name, '/') : nullptr;
  base = base ? base + 1 : name;
  if (base == nullptr || std::strncmp(base, "libtbb.so", 9) != 0) return 0;
  const ElfW(Addr) load = info->dlpi_addr;
  const ElfW(Dyn)* dyn = nullptr;
  uintptr_t relro_begin = 0, relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(load + ph.p_vaddr);
    if (ph.p_type == PT_GNU_RELRO) {
      relro_begin = load + ph.p_vaddr;
      relro_end = relro_begin + ph.p_memsz;
    }
  }
  if (dyn == nullptr) return 0;
  // glibc relocates the d_ptr entries of a loaded object's dynamic section in place on x86-64;
  // an address below the load base is still relative
  auto addr = [load](ElfW(Addr) p) { return p < load ? p + load : p; };
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)* tables[2] = {nullptr, nullptr};
  size_t sizes[2] = {0, 0};
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = reinterpret_cast<const ElfW(Sym)*>(addr(d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(addr(d->d_un.d_ptr)); break;
      case DT_JMPREL: tables[0] = reinterpret_cast<const ElfW(Rela)*>(addr(d->d_un.d_ptr)); break;
      case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
      case DT_RELA: tables[1] = reinterpret_cast<const ElfW(Rela)*>(addr(d->d_un.d_ptr)); break;
      case DT_RELASZ: sizes[1] = d->d_un.d_val; break;
      default: break;
    }
  }
  if (symtab == nullptr || strtab == nullptr) return 0;
  const long page = sysconf(_SC_PAGESIZE);
  int* patched = static_cast<int*>(data);
  for (int t = 0; t < 2; ++t) {
    if (tables[t] == nullptr) continue;
    for (size_t k = 0; k < sizes[t] / sizeof(ElfW(Rela)); ++k) {
      const ElfW(Rela)& r = tables[t][k];
      const auto type = ELF64_R_TYPE(r.r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      const ElfW(Sym)& s = symtab[ELF64_R_SYM(r.r_info)];
      if (std::strcmp(strtab + s.st_name, "sched_yield") != 0) continue;
      auto* slot = reinterpret_cast<void**>(load + r.r_offset);
      const auto at = reinterpret_cast<uintptr_t>(slot);
      // Under RELRO (libtbb is linked with it and BIND_NOW) the entry's page is read-only: made
      // writable for the store and read-only again. Outside RELRO it is writable already and
      // its protection is left alone (the page may hold data the library writes).
      const bool relro = at >= relro_begin && at + sizeof(void*) <= relro_end;
      auto* first = reinterpret_cast<char*>(at & ~static_cast<uintptr_t>(page - 1));
      if (relro && mprotect(first, static_cast<size_t>(page), PROT_READ | PROT_WRITE) != 0) continue;
      __atomic_store_n(slot, reinterpret_cast<void*>(&opforge_tbb_sched_yield), __ATOMIC_RELEASE);
      if (relro) mprotect(first, static_cast<size_t>(page), PROT_READ);
      ++*patched;
    }
  }
  return 0;
}

void redirect_tbb_yield() {
  static std::once_flag once;
  std::call_once(once, [] {
    int patched = 0;
    dl_iterate_phdr(redirect_in, &patched);
    g_redirected.store(patched > 0);
  });
}

struct Worker {
  pid_t tid;
  int schedstat_fd;     // /proc/thread-self/schedstat opened by the worker: ns run, ns waiting, slices
  int64_t seen_ns = 0;  // when it was last read (0: never)
  int64_t wait_ns = 0;  // its waiting time then
};

// The workers seen entering an observed arena. Leaked on purpose: a worker's thread-exit hook
// (below) uses it, and workers may outlive static destruction at process exit.
struct Registry {
  std::mutex mutex;
  pid_t pid = getpid();  // a forked child's copy lists its parent's threads: cleared there
  std::vector<Worker> workers;
  size_t next = 0;  // round robin: one worker per look, whatever the worker count
};

Registry& registry() {
  static Registry* r = new Registry();  // NOLINT: intentionally leaked, see above
  return *r;
}

// Takes the worker out of the registry when its thread ends (its descriptor is closed there).
struct Registration {
  pid_t tid = 0;
  ~Registration() {
    if (tid <= 0) return;
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.pid != getpid()) return;
    for (size_t i = 0; i < r.workers.size(); ++i) {
      if (r.workers[i].tid != tid) continue;
      close(r.workers[i].schedstat_fd);
      r.workers.erase(r.workers.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
};

void register_this_worker() {
  thread_local Registration reg;
  if (reg.tid != 0) return;  // every later arena entry of this worker: one load
  const int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    reg.tid = -1;  // no /proc (or no schedstats) here: this worker is never looked at
    return;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.pid != getpid()) {  // the first worker of a forked child
    for (const Worker& w : r.workers) close(w.schedstat_fd);
    r.workers.clear();
    r.pid = getpid();
  }
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  r.workers.push_back(Worker{tid, fd});
  reg.tid = tid;
}

// Records every worker that enters the arena it watches.
class Observer : public tbb::task_scheduler_observer {
 public:
  Observer() = default;
  explicit Observer(tbb::task_arena& arena) : tbb::task_scheduler_observer(arena) {}
  ~Observer() override { observe(false); }  // before this object is partly destroyed
  void on_scheduler_entry(bool is_worker) override {
    if (is_worker) register_this_worker();
  }
};

// Whether a thread waited (runnable, not running) for more than 40 % of the time since it was
// last looked at, from its schedstat (`fd`); updates the last reading. Quiet, TBB's threads
// wait ~0 (the keep-warm spinners are SCHED_IDLE: any other thread preempts them); on a CPU
// shared with a busy thread a yielding one waits nearly all the time, a spinning one about half
// (two busy loops: four CPU-bound threads on two CPUs). With one busy loop and both of ours
// spinning, three share two CPUs, a third each: below the bar, so loaded mode does not keep
// itself going there.
bool waited(int fd, int64_t now, int64_t* seen_ns, int64_t* wait_ns) {
  char buf[128];
  const ssize_t len = pread(fd, buf, sizeof(buf) - 1, 0);
  if (len <= 0) return false;
  buf[len] = '\0';
  char* end = nullptr;
  std::strtoll(buf, &end, 10);  // ns run: not needed, the wait is measured against wall time
  const int64_t wait = std::strtoll(end, nullptr, 10);
  const int64_t since = now - *seen_ns;
  // a window much longer than the interval spans time outside runs (between requests): no verdict
  const bool yes = *seen_ns != 0 && since > 0 && since < 10 * kIntervalNs && 5 * (wait - *wait_ns) > 2 * since;
  *seen_ns = now;
  *wait_ns = wait;
  return yes;
}

// Loaded mode needs the worker *and* the caller to wait. With one busy loop the caller has a CPU
// to itself and the worker shares the other: there the yielding worker is the better one (it
// seldom starts a chunk, the caller takes them all at full speed), while a spinning worker
// starts chunks and is preempted inside them by the busy thread, and the caller waits for them
// at the join (measured: resnet18 f32 24.1 ms against 15.7 with the worker's wait alone as the
// rule). With no CPU to spare both wait, and both yielding starves the split.
void look(int64_t now) {
  thread_local struct Caller {
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    int64_t seen_ns = 0, wait_ns = 0;
    ~Caller() {
      if (fd >= 0) close(fd);
    }
  } caller;
  if (caller.fd < 0) return;
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mutex, std::try_to_lock);
  if (!lock.owns_lock() || r.pid != getpid() || r.workers.empty()) return;
  Worker& w = r.workers[r.next++ % r.workers.size()];
  g_checks.fetch_add(1, std::memory_order_relaxed);
  const bool worker_waited = waited(w.schedstat_fd, now, &w.seen_ns, &w.wait_ns);
  const bool caller_waited = waited(caller.fd, now, &caller.seen_ns, &caller.wait_ns);
  if (!worker_waited || !caller_waited) return;
  if (now >= g_loaded_until.load(std::memory_order_relaxed))
    g_loaded_modes.fetch_add(1, std::memory_order_relaxed);
  g_loaded_until.store(now + kLoadedModeNs, std::memory_order_relaxed);
}

}  // namespace

bool tbb_contention_enabled() { return setting() != 0; }

bool tbb_contention_redirected() { return g_redirected.load(); }

std::unique_ptr<tbb::task_scheduler_observer> tbb_contention_watch(tbb::task_arena& arena) {
  if (setting() != 1) return nullptr;  // off, or always loaded: nothing to look at
  auto obs = std::make_unique<Observer>(arena);
  obs->observe(true);
  return obs;
}

void tbb_contention_observe() {
  if (setting() == 0) return;
  redirect_tbb_yield();
  if (setting() != 1) return;
  // The arena of a run of the default count from a thread outside any arena is the thread's
  // implicit one (threading.hpp's with_threads enters none): a default-constructed observer
  // watches the arena of the thread that activates it. One per calling thread, ended with it.
  thread_local std::unique_ptr<Observer> implicit_arena;
  if (implicit_arena) return;
  implicit_arena = std::make_unique<Observer>();
  implicit_arena->observe(true);
}

void tbb_contention_before_step() {
  if (setting() != 1) return;
  static std::atomic<int64_t> next_ns{0};
  const int64_t now = now_ns();
  int64_t due = next_ns.load(std::memory_order_relaxed);
  if (now < due) return;
  // one caller looks per interval (two Python threads running programs do not both look)
  if (!next_ns.compare_exchange_strong(due, now + kIntervalNs, std::memory_order_relaxed)) return;
  look(now);
}

TbbContentionStats tbb_contention_stats() {
  TbbContentionStats s;
  s.checks = g_checks.load(std::memory_order_relaxed);
  s.loaded_modes = g_loaded_modes.load(std::memory_order_relaxed);
  s.spun_yields = g_spun.load(std::memory_order_relaxed);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  s.workers = r.pid == getpid() ? static_cast<int64_t>(r.workers.size()) : 0;
  return s;
}

#else  // OpenMP: its threads spin GOMP_SPINCOUNT times and then sleep; they do not yield

bool tbb_contention_enabled() { return false; }
bool tbb_contention_redirected() { return false; }
void tbb_contention_observe() {}
void tbb_contention_before_step() {}
TbbContentionStats tbb_contention_stats() { return {}; }

#endif

}  // namespace opforge_cpu
