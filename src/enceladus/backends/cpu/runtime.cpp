// Enceladus cpu runtime: a persistent pool of OS threads runs threadgroups in parallel; inside a
// threadgroup, threads run either as a plain loop (kernels without barriers or SIMD-group calls) or
// as cooperatively scheduled fibers, so that barriers and SIMD-group functions have Metal's
// semantics. Compiled once per compiler into its own cached library (this file may use the C++
// standard library; kernel translation units may not).
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "enceladus/abi.h"


namespace {

// ---- context switch ------------------------------------------------------------------------
#if defined(__x86_64__)
// Saves callee-saved registers, MXCSR and the x87 control word on the current stack, stores the
// stack pointer in *from and resumes the stack `to`. A fresh stack starts in enc_fiber_entry. The
// control registers are reloaded only when the resumed context saved other values than the current
// ones (ldmxcsr and fldcw are slow; every fiber normally runs with the same settings).
// enc_switch_fibers: the same, from one fiber to another. Kernel code never changes MXCSR or the x87 control
// word (MSL has no way to), so every fiber runs with the values init_fiber gave it and enc_switch_fibers stores
// those in the saved image instead of reading the registers: stmxcsr waits for every floating-point operation
// in flight (it reads their exception flags), which made it the most sampled instruction of a fiber switch.
// Both leave the same stack image, so either may resume a context the other saved.
extern "C" void enc_switch(void** from, void* to);
extern "C" void enc_switch_fibers(void** from, void* to);
extern "C" void enc_fiber_entry();
asm(R"(
.text
.globl enc_switch
.hidden enc_switch
.type enc_switch,@function
enc_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsp, %rax
  movq %rsi, %rsp
  movl (%rsp), %ecx
  cmpl (%rax), %ecx
  je 1f
  ldmxcsr (%rsp)
1:
  movzwl 4(%rsp), %ecx
  cmpw 4(%rax), %cx
  je 2f
  fldcw 4(%rsp)
2:
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size enc_switch,.-enc_switch
.globl enc_switch_fibers
.hidden enc_switch_fibers
.type enc_switch_fibers,@function
enc_switch_fibers:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movabsq $0x0000037f00001f80, %rax
  pushq %rax
  movq %rsp, (%rdi)
  leaq 8(%rsi), %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size enc_switch_fibers,.-enc_switch_fibers
.globl enc_fiber_entry
.hidden enc_fiber_entry
.type enc_fiber_entry,@function
enc_fiber_entry:
  movq %r12, %rdi
  callq *%r13
  ud2
.size enc_fiber_entry,.-enc_fiber_entry
)");
struct Context {
  void* sp = nullptr;
};
#else
struct Context {
  ucontext_t uc;
};
#endif

// The floating-point controls kernels run with (round to nearest, all exceptions masked, subnormals kept; see
// enter_default_fp_control). enc_switch_fibers writes the two as one immediate.
constexpr unsigned kMxcsrDefault = 0x1f80u, kMxcsrFlags = 0x3fu;
constexpr unsigned short kFpuCwDefault = 0x037f;

struct Fiber;
struct Worker;
void fiber_main(Fiber* f);

enum State : unsigned char { RUNNABLE, AT_BARRIER, AT_SIMD, DONE };

// What the scheduler reads for every fiber of a round (state, where it waits, its context) comes first: one
// cache line per fiber.
struct alignas(64) Fiber {
  Context ctx;
  State state = DONE;
  unsigned char require_all = 0;
  unsigned kind = 0;
  unsigned line = 0;
  const char* what = nullptr;  // the call this fiber is blocked in
  const EncSimdSnapshot* result = nullptr;
  Worker* worker = nullptr;
  char* stack = nullptr;
  unsigned char slot[ENC_SIMD_SLOT];
  EncThread t;
  unsigned flags = 0;  // the mem_flags of the barrier it waits at (read once per barrier, off the hot line)
};

constexpr unsigned kMaxThreads = 1024;
constexpr unsigned kMaxStaticSlots = 256;

struct Worker {
  Context sched;
  std::vector<Fiber> fibers;
  std::vector<char*> stacks;
  Fiber* cur = nullptr;
  const EncLaunch* launch = nullptr;
  unsigned group[3] = {0, 0, 0};
  unsigned long gi = ~0ul;  // the linear index of that threadgroup (which error a launch reports: record_error)
  bool in_fibers = false;
  bool aborted = false;
  // threadgroup memory of the running group
  unsigned char* tg_mem = nullptr;  // 64-byte aligned, 64 KiB
  unsigned long tg_used = 0;
  unsigned long static_off[kMaxStaticSlots];
  unsigned static_gen[kMaxStaticSlots];
  unsigned gen = 0;
  void* tg_ptrs[ENC_MAX_BUFFERS];
  unsigned running[kMaxThreads / ENC_SIMD_WIDTH];
  EncSimdSnapshot snaps[kMaxThreads / ENC_SIMD_WIDTH][2];
  unsigned snap_parity[kMaxThreads / ENC_SIMD_WIDTH];
  EncArg tg_args[ENC_MAX_BUFFERS];  // checked builds: what each [[threadgroup(i)]] parameter may touch
  // Leaving kernel code early (a failed check, an interrupt, a timeout, a debug-mode fault): work()
  // sets `jmp` once per launch; `armed` says kernel code (not a runtime lock or allocation) is running.
  sigjmp_buf jmp;
  std::atomic<int> armed{0};
  pthread_t thread;
  std::atomic<int> in_launch{0};
  unsigned long fault_addr = 0;
  int fault_write = -1;  // 1 write, 0 read, -1 unknown
  unsigned loop_tid = 0;  // thread index in the plain-loop path
  const EncThread* loop_thread = nullptr;  // its builtins
  unsigned epoch = 0;     // advances at every threadgroup barrier and group start
  unsigned group_epoch = 0;  // epoch at the start of the running group
  unsigned sepoch[kMaxThreads / ENC_SIMD_WIDTH];  // advances at every simdgroup_barrier of that group
  // per byte: the last write (epoch, SIMD-group epoch, thread) and the reads since (the first reader, and whether
  // another thread read it too), for read-after-write, write-write and write-after-read races
  struct Shadow {
    unsigned epoch, sepoch, repoch, rsepoch;
    unsigned short tid, rtid;
    unsigned char rmany;
  }* shadow = nullptr;
  // Debug mode: device memory touched by the running group, per 4-byte word (api_device_access).
  unsigned dstamp = 0;  // advances at every threadgroup_barrier with mem_device and at group start
  struct DevWord {
    unsigned long word;  // address / 4 (0: free slot)
    unsigned wstamp, rstamp;  // dstamp of the last write; epoch of the last read
    unsigned short wtid, rtid;
    unsigned char wmask, rmask, flags;  // bytes written / read; kDev* flags
  };
  std::vector<DevWord> dev;  // open addressing, power-of-two size
  std::vector<unsigned> dev_used;  // its occupied slots (cleared at group start)
  unsigned nfibers = 0;       // fibers of the running group
  bool accounted = false;     // the fiber that returned to the scheduler did its own bookkeeping
  bool chain_failed = false;  // ... and it failed (a SIMD-group check)
  EncSgLog* sglogs = nullptr;  // per SIMD group
};

thread_local Worker* tls_worker = nullptr;
size_t g_stack_size = 256 * 1024;
size_t g_page = 4096;

// ---- errors ----------------------------------------------------------------------------------
std::mutex g_err_mu;
std::atomic<bool> g_failed{false};
// Why a launch stops early without a kernel error: SIGINT or its timeout (set from signal handlers).
enum { ABORT_NONE = 0, ABORT_INTERRUPT = 1, ABORT_TIMEOUT = 2 };
std::atomic<int> g_abort{ABORT_NONE};
// The dispatch in flight (one at a time, under Pool::launch_mu): where errors go, the bound buffers.
char* g_err = nullptr;
unsigned long g_err_cap = 0;
unsigned g_err_line = 0;  // MSL line of the reported error (0: none known)
// The linear index of the threadgroup whose error is kept: when several threadgroups fail in one launch, the one
// with the lowest index is reported, whichever thread failed first, so that a launch's error does not depend on how
// the threadgroups were shared among threads. Groups are claimed in increasing order, so every group below a failed
// one has started; each runs on unless a group below it failed (failed_below).
std::atomic<unsigned long> g_err_group{~0ul};
thread_local unsigned tls_err_line = 0;  // MSL line of the error the calling thread is about to record
void* g_bufs[ENC_MAX_BUFFERS];
EncArg g_args[ENC_MAX_BUFFERS];  // checked builds: what each [[buffer(i)]] may touch

void record_error(const EncLaunch* /*L*/, const char* fmt, ...) {
  Worker* w = tls_worker;
  int armed = w ? w->armed.load() : 0;
  if (w) w->armed = 0;  // never leave kernel code while holding the lock
  const unsigned long gi = w ? w->gi : ~0ul;
  const unsigned line = tls_err_line;
  tls_err_line = 0;
  {
    std::lock_guard<std::mutex> lk(g_err_mu);
    if (!g_failed.load() || gi < g_err_group.load()) {  // the lowest threadgroup's error wins (g_err_group)
      g_err_group.store(gi);
      g_err_line = line;
      g_failed.store(true);
      va_list ap;
      va_start(ap, fmt);
      if (g_err && g_err_cap) vsnprintf(g_err, g_err_cap, fmt, ap);
      va_end(ap);
    }
  }
  if (w) w->armed = armed;
}

// Whether a threadgroup with an index at or below `gi` has failed: the group `gi` then stops (its error could not
// be the one reported); groups above it run on.
bool failed_below(unsigned long gi) {
  return g_failed.load(std::memory_order_relaxed) && g_err_group.load(std::memory_order_relaxed) <= gi;
}

// Abandons the calling thread's threadgroup: back to work(), which stops this worker.
[[noreturn]] void leave_kernel(int why) {
  Worker* w = tls_worker;
  w->armed = 0;
  siglongjmp(w->jmp, why);
}

// ---- fibers ----------------------------------------------------------------------------------
char* alloc_stack() {
  // A guard page below each stack turns an overflow into a fault instead of silent corruption. The stack
  // is aligned to its size (a power of two), so that kernel code finds its EncFiberTop (abi.h).
  size_t total = 2 * g_stack_size + g_page;
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  uintptr_t lo = reinterpret_cast<uintptr_t>(p);
  uintptr_t base = (lo + g_page + g_stack_size - 1) & ~uintptr_t(g_stack_size - 1);
  uintptr_t guard = base - g_page, end = base + g_stack_size;
  if (guard > lo) munmap(p, guard - lo);
  if (lo + total > end) munmap(reinterpret_cast<void*>(end), lo + total - end);
  mprotect(reinterpret_cast<void*>(guard), g_page, PROT_NONE);
  return reinterpret_cast<char*>(base);
}

EncFiberTop* fiber_top(char* stack) {
  return reinterpret_cast<EncFiberTop*>(stack + g_stack_size - ENC_FIBER_TOP);
}

void switch_to(Context* from, Context* to) {
#if defined(__x86_64__)
  enc_switch(&from->sp, to->sp);
#else
  swapcontext(&from->uc, &to->uc);
#endif
}

// From the running fiber to another fiber of the same worker (see enc_switch_fibers).
void switch_fibers(Context* from, Context* to) {
#if defined(__x86_64__)
  enc_switch_fibers(&from->sp, to->sp);
#else
  swapcontext(&from->uc, &to->uc);
#endif
}

#if !defined(__x86_64__)
void ucontext_entry(unsigned lo, unsigned hi) {
  fiber_main(reinterpret_cast<Fiber*>((uintptr_t(hi) << 32) | uintptr_t(lo)));
}
#endif

// The frames of fiber i start stagger(i) bytes below its stack's top. Stacks are aligned to their (power-of-two)
// size, so unstaggered, the hot tops of all of a group's stacks (the saved context, the runtime's and the kernel's
// frames) fall into the same few sets of every cache level and evict each other at every hand-over: 16 offsets,
// 2 KiB + one line apart, at most an eighth of the stack (tutorial matmul 9% less CPU time, flash attention 4%).
uintptr_t stagger(unsigned index) {
  return uintptr_t(index % 16) * (2048 + 64) % (g_stack_size / 8);
}

void init_fiber(Fiber* f, unsigned index = 0) {
#if defined(__x86_64__)
  // Stack image popped by enc_switch: [mxcsr|fpucw][r15][r14][r13][r12][rbx][rbp][ret].
  uintptr_t top = (reinterpret_cast<uintptr_t>(f->stack) + g_stack_size - ENC_FIBER_TOP - stagger(index)) &
                  ~uintptr_t(15);
  void** sp = reinterpret_cast<void**>(top);
  // After `ret` into enc_fiber_entry rsp == top (16-aligned), so its `call` enters fiber_main with
  // rsp == 8 (mod 16) as the ABI requires.
  *--sp = reinterpret_cast<void*>(&enc_fiber_entry);
  *--sp = nullptr;                                       // rbp
  *--sp = nullptr;                                       // rbx
  *--sp = f;                                             // r12: argument
  *--sp = reinterpret_cast<void*>(&fiber_main);          // r13: entry
  *--sp = nullptr;                                       // r14
  *--sp = nullptr;                                       // r15
  unsigned csr[2] = {kMxcsrDefault, kFpuCwDefault};      // default MXCSR and x87 control word
  *--sp = nullptr;
  std::memcpy(sp, csr, sizeof(csr));
  f->ctx.sp = sp;
#else
  getcontext(&f->ctx.uc);
  f->ctx.uc.uc_stack.ss_sp = f->stack;
  f->ctx.uc.uc_stack.ss_size = g_stack_size - ENC_FIBER_TOP - stagger(index);
  f->ctx.uc.uc_link = nullptr;
  uintptr_t p = reinterpret_cast<uintptr_t>(f);
  makecontext(&f->ctx.uc, reinterpret_cast<void (*)()>(ucontext_entry), 2, unsigned(p), unsigned(p >> 32));
#endif
}

bool resolve_simd(Worker* w, unsigned s, unsigned n);

// Leaves the running fiber (blocked, done or failed). A fiber that blocked or finished does the
// scheduler's bookkeeping itself and hands over directly to the next runnable fiber of the round (one
// switch instead of two through the scheduler); at the end of a round, or on a failure, it returns to
// the scheduler.
// A fiber that resumes prefetches the saved context and the top of the stack of the fiber after it (the one it
// most likely hands over to at its next stop): by then the lines are in cache instead of being fetched while
// the switch waits for them.
constexpr unsigned kPrefetchLines = 8;
__attribute__((always_inline)) inline void prefetch_next(Worker* w, Fiber* f) {
#if defined(__x86_64__)
  Fiber* fs = w->fibers.data();
  unsigned j = unsigned(f - fs) + 1;
  if (j >= w->nfibers) j = 0;
  const char* sp = static_cast<const char*>(fs[j].ctx.sp);
  for (unsigned k = 0; k < kPrefetchLines; ++k) __builtin_prefetch(sp + 64 * k, 1);
  if (j + 1 < w->nfibers) __builtin_prefetch(&fs[j + 1], 1);  // the context pointer the next prefetch reads
#else
  (void)w;
  (void)f;
#endif
}

void block_current(Worker* w) {
  Fiber* f = w->cur;
  if (w->in_fibers && !w->aborted && f->state != RUNNABLE) {
    Fiber* fs = w->fibers.data();
    unsigned i = unsigned(f - fs), n = w->nfibers, s = i / ENC_SIMD_WIDTH;
    w->accounted = true;
    if (--w->running[s] == 0 && !resolve_simd(w, s, n)) {
      w->chain_failed = true;
    } else {
      for (unsigned j = i + 1; j < n; ++j) {
        if (fs[j].state != RUNNABLE) continue;
        w->cur = &fs[j];
        switch_fibers(&f->ctx, &fs[j].ctx);
        prefetch_next(w, f);
        return;
      }
    }
  } else {
    w->accounted = false;
  }
  switch_to(&f->ctx, &w->sched);
  if (w->in_fibers) prefetch_next(w, f);
}

void fiber_main(Fiber* f) {
  f->worker->launch->fn(&f->t);
  f->state = DONE;
  block_current(f->worker);
  __builtin_trap();  // a finished fiber is never resumed
}

// ---- threadgroup execution ---------------------------------------------------------------------
void fill_thread(EncThread* t, const EncLaunch* L, const unsigned g[3], const unsigned sz[3], unsigned x,
                 unsigned y, unsigned z, void* const* tg_ptrs) {
  const unsigned p[3] = {x, y, z};
  for (int d = 0; d < 3; ++d) {
    t->tgpig[d] = g[d];
    t->tpg[d] = L->groups[d];
    t->tptg[d] = sz[d];
    t->tpitg[d] = p[d];
    t->tpig[d] = g[d] * L->tptg[d] + p[d];
    t->gsize[d] = L->gsize[d];
  }
  t->tiitg = x + sz[0] * (y + sz[1] * z);
  t->lane = t->tiitg % ENC_SIMD_WIDTH;
  t->sg = t->tiitg / ENC_SIMD_WIDTH;
  unsigned n = sz[0] * sz[1] * sz[2];
  t->nsg = (n + ENC_SIMD_WIDTH - 1) / ENC_SIMD_WIDTH;
  t->buffers = g_bufs;
  t->tg_buffers = tg_ptrs;
  t->args = g_args;
  t->tg_args = tls_worker ? tls_worker->tg_args : nullptr;
}

const char* blocked_desc(const Fiber& f) { return f.what ? f.what : "?"; }

// Resolves the SIMD calls of simdgroup `s` once none of its lanes can run: lanes waiting at the
// same call form one set of active lanes.
bool resolve_simd(Worker* w, unsigned s, unsigned n) {
  Fiber* fs = w->fibers.data();
  unsigned lo = s * ENC_SIMD_WIDTH, hi = lo + ENC_SIMD_WIDTH < n ? lo + ENC_SIMD_WIDTH : n;
  unsigned live = 0;
  for (unsigned i = lo; i < hi; ++i) if (fs[i].state != DONE) live |= 1u << (i - lo);
  if (w->sglogs && w->sglogs[s].mma_count) {
    EncSgLog& g = w->sglogs[s];
    unsigned dead = ~live, done = 0;  // lanes that executed the first multiply a returned lane did not
    for (unsigned l = 0; l < ENC_SIMD_WIDTH; ++l) {
      if (!((dead >> l) & 1u) || g.mma_pos[l] >= g.mma_count) continue;
      unsigned k = g.mma_pos[l];
      for (unsigned j = 0; j < ENC_SIMD_WIDTH; ++j) done |= (g.mma_pos[j] > k ? 1u : 0u) << j;
      record_error(w->launch,
                   "kernel '%s': simdgroup_multiply_accumulate (line %u) executed by lanes 0x%08x of simdgroup %u "
                   "in threadgroup (%u,%u,%u) but not by lanes 0x%08x (they returned or never existed): "
                   "simdgroup_matrix operations must be reached by all 32 lanes of the SIMD group (uniform control "
                   "flow)",
                   w->launch->kernel_name, g.mma_line[k], done, s, w->group[0], w->group[1], w->group[2],
                   ~done & dead);
      return false;
    }
  }
  if (w->sglogs && w->sglogs[s].count) {
    // No lane of the group can run. simdgroup_matrix operations that all 32 lanes executed leave the log;
    // one that a lane which returned (or never existed) did not execute is an error. Lanes blocked
    // elsewhere may still reach the rest (it is checked again when they next stop).
    EncSgLog& g = w->sglogs[s];
    unsigned dead = ~live, c = 0;
    while (c < g.count && g.e[c].mask == 0xffffffffu) ++c;
    for (unsigned k = c; k < g.count; ++k) {
      const EncSgEntry& e = g.e[k];
      if (!(~e.mask & dead)) continue;
      record_error(w->launch,
                   "kernel '%s': %s (line %u) executed by lanes 0x%08x of simdgroup %u in threadgroup (%u,%u,%u) "
                   "but not by lanes 0x%08x (they returned or never existed): simdgroup_matrix operations must "
                   "be reached by all 32 lanes of the SIMD group (uniform control flow)",
                   w->launch->kernel_name, e.what, e.line, e.mask, s, w->group[0], w->group[1], w->group[2],
                   ~e.mask & dead);
      return false;
    }
    if (c) {
      std::memmove(g.e, g.e + c, (g.count - c) * sizeof(EncSgEntry));
      g.count -= c;
      for (unsigned l = 0; l < ENC_SIMD_WIDTH; ++l) g.pos[l] -= c;
    }
  }
  unsigned pending = 0;
  for (unsigned i = lo; i < hi; ++i) if (fs[i].state == AT_SIMD) pending |= 1u << (i - lo);
  while (pending) {
    const Fiber& lead = fs[lo + __builtin_ctz(pending)];
    unsigned par = w->snap_parity[s] ^= 1u;  // alternate snapshots: the previous one may still be read
    EncSimdSnapshot* snap = &w->snaps[s][par];
    snap->active = 0;
    snap->memo_set = 0;
    for (unsigned i = lo; i < hi; ++i) {
      Fiber& f = fs[i];
      if (f.state == AT_SIMD && f.line == lead.line && f.what == lead.what) {
        snap->active |= 1u << (i - lo);
        std::memcpy(snap->data[i - lo], f.slot, ENC_SIMD_SLOT);
      }
    }
    if (lead.require_all && snap->active != 0xffffffffu) {
      record_error(w->launch,
                   "kernel '%s': %s (line %u) executed by lanes 0x%08x of simdgroup %u in threadgroup "
                   "(%u,%u,%u), but lanes 0x%08x are alive (others returned or never existed): simdgroup_matrix "
                   "operations and execution_simdgroup tensor operations must be reached by all 32 lanes of the "
                   "SIMD group (uniform control flow)",
                   w->launch->kernel_name, lead.what, lead.line, snap->active, s, w->group[0], w->group[1],
                   w->group[2], live);
      return false;
    }
    for (unsigned i = lo; i < hi; ++i) {
      if (snap->active & (1u << (i - lo))) {
        fs[i].state = RUNNABLE;
        fs[i].result = snap;
        w->running[s]++;
      }
    }
    if (lead.what && std::strcmp(lead.what, "simdgroup_barrier") == 0) w->sepoch[s]++;
    pending &= ~snap->active;
    if (pending) {
      // A second set in the same round would reuse the other snapshot that a lane of the first
      // set may not have read yet; resolve it in a later round instead.
      break;
    }
  }
  return true;
}

bool run_fibers(Worker* w, const EncLaunch* L, const unsigned sz[3]) {
  unsigned n = sz[0] * sz[1] * sz[2];
  w->armed = 0;  // allocations below must not be left half done by an interrupt
  if (w->fibers.size() < n) w->fibers.resize(n);
  while (w->stacks.size() < n) {
    char* s = alloc_stack();
    if (!s) {
      record_error(L, "kernel '%s': out of memory allocating fiber stacks", L->kernel_name);
      return false;
    }
    w->stacks.push_back(s);
  }
  if (!w->sglogs) {
    w->sglogs = static_cast<EncSgLog*>(std::calloc(kMaxThreads / ENC_SIMD_WIDTH, sizeof(EncSgLog)));
    if (!w->sglogs) {
      record_error(L, "kernel '%s': out of memory allocating SIMD-group state", L->kernel_name);
      return false;
    }
  }
  w->armed = 1;
  if (g_abort.load(std::memory_order_relaxed)) leave_kernel(2);
  Fiber* fs = w->fibers.data();
  unsigned nsg = (n + ENC_SIMD_WIDTH - 1) / ENC_SIMD_WIDTH;
  for (unsigned i = 0; i < n; ++i) {
    Fiber& f = fs[i];
    unsigned x = i % sz[0], y = (i / sz[0]) % sz[1], z = i / (sz[0] * sz[1]);
    fill_thread(&f.t, L, w->group, sz, x, y, z, w->tg_ptrs);
    f.stack = w->stacks[i];
    f.state = RUNNABLE;
    f.worker = w;
    f.what = nullptr;
    EncFiberTop* top = fiber_top(f.stack);
    top->sg = &w->sglogs[i / ENC_SIMD_WIDTH];
    top->lane = i % ENC_SIMD_WIDTH;
    init_fiber(&f, i);
  }
  for (unsigned s = 0; s < nsg; ++s) {
    unsigned lo = s * ENC_SIMD_WIDTH;
    w->running[s] = (lo + ENC_SIMD_WIDTH < n ? ENC_SIMD_WIDTH : n - lo);
    {
      EncSgLog& g = w->sglogs[s];
      g.count = g.mma_count = 0;
      ++g.serial;  // past every batch this SIMD group's log had (matrix.h: a batch of another serial is stale)
      std::memset(g.pos, 0, sizeof g.pos);
      std::memset(g.mma_pos, 0, sizeof g.mma_pos);
    }
  }
  w->in_fibers = true;
  bool ok = true;
  w->nfibers = n;
  w->chain_failed = false;
  for (;;) {
    // One round: the first runnable fiber runs; each fiber that stops hands over to the next runnable one
    // (block_current) and the last returns here.
    bool ran = false;
    unsigned start = 0;
    while (start < n && fs[start].state != RUNNABLE) ++start;
    if (start < n) {
      ran = true;
      w->cur = &fs[start];
      switch_to(&w->sched, &fs[start].ctx);
      Fiber& f = *w->cur;
      w->cur = nullptr;
      if (w->aborted || w->chain_failed) {
        ok = false;
      } else if (!w->accounted && f.state != RUNNABLE) {
        unsigned s = unsigned(&f - fs) / ENC_SIMD_WIDTH;
        if (--w->running[s] == 0 && !resolve_simd(w, s, n)) ok = false;
      }
    }
    if (!ok || failed_below(w->gi)) { ok = false; break; }
    if (ran) continue;
    // Nothing can run: every live thread waits at a threadgroup barrier (SIMD calls resolve eagerly).
    int first = -1;
    unsigned waiting = 0;
    for (unsigned i = 0; i < n; ++i) {
      if (fs[i].state == DONE) continue;
      if (fs[i].state != AT_BARRIER) continue;
      waiting++;
      if (first < 0) first = int(i);
    }
    if (first < 0) break;  // all threads finished
    for (unsigned i = 0; i < n; ++i) {
      if (fs[i].state == AT_BARRIER && fs[i].line != fs[first].line) {
        unsigned same = 0;
        for (unsigned j = 0; j < n; ++j) same += fs[j].state == AT_BARRIER && fs[j].line == fs[first].line;
        record_error(L,
                     "kernel '%s': threadgroup (%u,%u,%u) deadlocks: %s at line %u is reached by %u of %u "
                     "running threads while thread %u waits at %s at line %u; every still-running thread "
                     "of a threadgroup must reach the same barrier (undefined behaviour on a GPU)",
                     L->kernel_name, w->group[0], w->group[1], w->group[2], blocked_desc(fs[first]),
                     fs[first].line, same, waiting, i, blocked_desc(fs[i]), fs[i].line);
        ok = false;
        break;
      }
    }
    if (!ok) break;
    if (fs[first].kind == ENC_BARRIER_SCOPE && waiting != n) {
      unsigned gone = 0;
      while (gone < n && fs[gone].state != DONE) ++gone;
      record_error(L,
                   "kernel '%s': %s at line %u is reached by %u of the %u threads of threadgroup (%u,%u,%u) "
                   "(thread %u returned without calling it): all threads of the execution scope must call run "
                   "(undefined behaviour on a GPU)",
                   L->kernel_name, blocked_desc(fs[first]), fs[first].line, waiting, n, w->group[0], w->group[1],
                   w->group[2], gone);
      ok = false;
      break;
    }
    w->epoch++;  // a threadgroup barrier orders every earlier threadgroup-memory access
    if (fs[first].kind == ENC_BARRIER_THREADGROUP && (fs[first].flags & 1u)) w->dstamp++;  // ... mem_device: device
    for (unsigned i = 0; i < n; ++i) {
      if (fs[i].state == AT_BARRIER) {
        fs[i].state = RUNNABLE;
        w->running[i / ENC_SIMD_WIDTH]++;
      }
    }
  }
  w->in_fibers = false;
  w->aborted = false;
  return ok;
}

bool run_group(Worker* w, const EncLaunch* L, unsigned long gi) {
  w->gi = gi;
  unsigned g[3];
  g[0] = unsigned(gi % L->groups[0]);
  g[1] = unsigned((gi / L->groups[0]) % L->groups[1]);
  g[2] = unsigned(gi / (static_cast<unsigned long>(L->groups[0]) * L->groups[1]));
  unsigned sz[3];
  for (int d = 0; d < 3; ++d) {
    unsigned start = g[d] * L->tptg[d];
    unsigned rem = L->gsize[d] > start ? L->gsize[d] - start : 0;
    sz[d] = rem < L->tptg[d] ? rem : L->tptg[d];
    w->group[d] = g[d];
  }
  if (!sz[0] || !sz[1] || !sz[2]) return true;
  // Threadgroup memory: [[threadgroup(i)]] parameters first, then function-scope variables.
  w->launch = L;
  w->tg_used = 0;
  w->gen++;
  w->epoch++;
  w->group_epoch = w->epoch;
  w->dstamp++;
  for (unsigned i : w->dev_used) w->dev[i].word = 0;
  w->dev_used.clear();
  for (unsigned i = 0; i < L->n_tg_params && i < ENC_MAX_BUFFERS; ++i) {
    w->tg_ptrs[i] = w->tg_mem + w->tg_used;
    EncArg& a = w->tg_args[i];
    a.lo = a.base = reinterpret_cast<unsigned long>(w->tg_ptrs[i]);
    a.hi = a.lo + L->tg_param_sizes[i];
    a.layout = nullptr;
    a.name = L->tg_names ? L->tg_names[i] : nullptr;
    a.itemsize = 0;
    a.kind = ENC_ARG_TG_PARAM;
    w->tg_used += (L->tg_param_sizes[i] + 15) & ~15ul;
  }
  if (L->use_fibers == 2) {
    EncThread t;
    fill_thread(&t, L, g, sz, 0, 0, 0, w->tg_ptrs);
    w->loop_thread = &t;
    L->fn(&t);
    w->loop_thread = nullptr;
    return !g_failed.load(std::memory_order_relaxed);
  }
  if (!L->use_fibers) {
    EncThread t;
    for (unsigned z = 0; z < sz[2]; ++z)
      for (unsigned y = 0; y < sz[1]; ++y)
        for (unsigned x = 0; x < sz[0]; ++x) {
          fill_thread(&t, L, g, sz, x, y, z, w->tg_ptrs);
          w->loop_tid = t.tiitg;
          w->loop_thread = &t;
          L->fn(&t);
        }
    w->loop_thread = nullptr;
    return !g_failed.load(std::memory_order_relaxed);
  }
  return run_fibers(w, L, sz);
}


// ---- leaving kernel code: faults (debug mode), interrupts and timeouts ---------------------------
// Debug mode catches SIGSEGV/SIGBUS in kernel code (a fiber stack overflow, a wild access through
// memory no check covers); SIGINT and a launch's timeout stop every worker: a worker running kernel
// code is sent kAbortSignal, whose handler leaves the kernel (siglongjmp back into work()); one
// between threadgroups sees g_abort. Handlers use SA_NODEFER, so the signal mask needs no restoring.
struct sigaction g_old_segv, g_old_bus, g_old_int;
thread_local bool tls_altstack = false;
int g_abort_signal = 0;

void on_fault(int sig, siginfo_t* si, void* uc) {
  Worker* w = tls_worker;
  if (w && w->armed && w->launch && w->launch->debug) {
    w->armed = 0;
    w->fault_addr = reinterpret_cast<unsigned long>(si->si_addr);
#if defined(__x86_64__) && defined(REG_ERR)
    w->fault_write = (static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
    w->fault_write = -1;
#endif
    siglongjmp(w->jmp, 1);
  }
  // Not a kernel fault of a debug launch: hand it to whoever was installed before (e.g. faulthandler).
  struct sigaction* old = sig == SIGSEGV ? &g_old_segv : &g_old_bus;
  if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
    old->sa_sigaction(sig, si, uc);
    return;
  }
  if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler != SIG_IGN && old->sa_handler != SIG_DFL) {
    old->sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);  // the faulting instruction runs again and the default action ends the process
}

void install_fault_handler() {
  for (int sig : {SIGSEGV, SIGBUS}) {
    struct sigaction cur;
    sigaction(sig, nullptr, &cur);
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fault) continue;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, sig == SIGSEGV ? &g_old_segv : &g_old_bus);
  }
}

void on_abort_signal(int, siginfo_t*, void*) {
  Worker* w = tls_worker;
  if (w && w->armed && g_abort.load()) {
    w->armed = 0;
    siglongjmp(w->jmp, 2);
  }
}

void kick_workers();

// SIGINT while a launch runs: stop it. A launch made by the main thread then raises KeyboardInterrupt
// itself; one made by another thread (a stream's worker) also passes SIGINT on to Python's handler,
// so that the main thread, waiting for the stream, is interrupted.
std::atomic<bool> g_launch_on_main{true};
void on_sigint(int sig, siginfo_t* si, void* uc) {
  int expected = ABORT_NONE;
  g_abort.compare_exchange_strong(expected, ABORT_INTERRUPT);
  kick_workers();
  if (g_launch_on_main.load()) return;
  if ((g_old_int.sa_flags & SA_SIGINFO) && g_old_int.sa_sigaction) {
    g_old_int.sa_sigaction(sig, si, uc);
  } else if (!(g_old_int.sa_flags & SA_SIGINFO) && g_old_int.sa_handler != SIG_IGN &&
             g_old_int.sa_handler != SIG_DFL) {
    g_old_int.sa_handler(sig);
  }
}

void ensure_altstack() {
  // A fiber that overflows its stack can only be reported from another stack.
  if (tls_altstack) return;
  tls_altstack = true;
  size_t size = 64 * 1024;
  void* mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return;
  stack_t st;
  st.ss_sp = mem;
  st.ss_size = size;
  st.ss_flags = 0;
  sigaltstack(&st, nullptr);
}

bool in_fiber_guard(Worker* w, unsigned long a) {
  for (char* s : w->stacks) {
    unsigned long lo = reinterpret_cast<unsigned long>(s) - g_page;
    if (a >= lo && a < lo + g_page) return true;
  }
  return false;
}

unsigned current_tid(Worker* w) {
  return w->cur ? unsigned(w->cur - w->fibers.data()) : w->loop_thread ? w->loop_thread->tiitg : w->loop_tid;
}

void report_fault(Worker* w, const EncLaunch* L) {
  unsigned long a = w->fault_addr;
  const char* op = w->fault_write == 1 ? "write" : w->fault_write == 0 ? "read" : "access";
  if (in_fiber_guard(w, a)) {
    record_error(L,
                 "kernel '%s', program (%u,%u,%u): a thread overflowed its %lu-byte fiber stack (deep "
                 "recursion or a huge local array); raise ENCELADUS_CPU_FIBER_STACK",
                 L->kernel_name, w->group[0], w->group[1], w->group[2], static_cast<unsigned long>(g_stack_size));
    return;
  }
  record_error(L,
               "kernel '%s', program (%u,%u,%u): invalid %s of address 0x%lx, which belongs to no argument "
               "(memory reached through a pointer the checks do not cover, e.g. an integer made into a pointer)",
               L->kernel_name, w->group[0], w->group[1], w->group[2], op, a);
}

// ---- checked builds: the slow path of an access check ----------------------------------------------
// Whether the byte at offset `off` from layout origin lies in an element (greedy decomposition over the
// dimensions, largest stride first: exact for views whose elements do not overlap); *start gets the
// offset of that element's first byte.
bool element_at(const EncLayout* l, long off, long* start) {
  long rem = off;
  for (unsigned d = 0; d < l->ndim; ++d) {
    long st = l->strides[d];
    if (st <= 0 || l->shape[d] <= 1) continue;
    long k = rem / st;
    if (k >= l->shape[d]) k = l->shape[d] - 1;
    rem -= k * st;
  }
  if (rem < 0 || rem >= long(l->itemsize)) return false;
  *start = off - rem;
  return true;
}

const char* access_word(unsigned kind) {
  switch (kind) {
    case ENC_ACC_READ: return "read";
    case ENC_ACC_WRITE: return "write";
    case ENC_ACC_ATOMIC: return "atomic";
    default: return "access";
  }
}

void api_check_access(const EncArg* arg, const void* addr, unsigned long n, unsigned long align, unsigned kind,
                      unsigned line) {
  Worker* w = tls_worker;
  const EncLaunch* L = w->launch;
  unsigned long a = reinterpret_cast<unsigned long>(addr);
  if (!arg) return;  // memory Enceladus does not know (a pointer made from an integer)
  const char* what = arg->kind == ENC_ARG_DEVICE ? "argument" : arg->kind == ENC_ARG_TG_VAR
                     ? "threadgroup variable" : "threadgroup parameter";
  char name[96];
  if (arg->name) snprintf(name, sizeof name, "%s", arg->name);
  else snprintf(name, sizeof name, "[[%s(%ld)]]", arg->kind == ENC_ARG_DEVICE ? "buffer" : "threadgroup",
                arg->kind == ENC_ARG_DEVICE ? long(arg - g_args) : long(arg - w->tg_args));
  char where[160];
  snprintf(where, sizeof where, "kernel '%s', program (%u,%u,%u), thread %u", L->kernel_name, w->group[0],
           w->group[1], w->group[2], current_tid(w));
  unsigned isz = arg->itemsize ? arg->itemsize : n ? unsigned(n) : 1;  // unknown: in units of the access
  long rel = long(a - arg->base);
  long elem = rel >= 0 ? rel / long(isz) : -((-rel + long(isz) - 1) / long(isz));
  unsigned long span = arg->hi - arg->lo;
  bool inside = a >= arg->lo && n <= span && a - arg->lo <= span - n;
  if (align > 1 && (a & (align - 1)) != 0) {
    tls_err_line = line;
    record_error(L,
                 "%s: misaligned %lu-byte %s through %s '%s' at element index %ld (byte offset %ld): the "
                 "address is not a multiple of %lu, which Metal requires for this type (pass a view whose "
                 "start is aligned, or load narrower elements)",
                 where, n, access_word(kind), what, name, elem, rel, align);
    leave_kernel(3);
  }
  if (inside && n > 0) {
    if (!arg->layout) return;
    long off = long(a - arg->lo), end = off + long(n), start = 0;
    bool ok = true;
    while (off < end) {
      if (!element_at(arg->layout, off, &start)) { ok = false; break; }
      off = start + long(arg->layout->itemsize);
    }
    if (ok) return;
    tls_err_line = line;
    record_error(L,
                 "%s: out-of-bounds %s of %lu bytes through %s '%s' at byte offset %ld from its element 0: "
                 "the bytes lie between the elements of the strided view (shape and strides of '%s' do not "
                 "reach them)",
                 where, access_word(kind), n, what, name, rel, name);
    leave_kernel(3);
  }
  tls_err_line = line;
  if (arg->kind == ENC_ARG_DEVICE)
    record_error(L,
                 "%s: out-of-bounds %s of %lu bytes through %s '%s' at element index %ld (byte offset %ld); "
                 "'%s' has %lu elements of %u bytes",
                 where, access_word(kind), n, what, name, elem, rel, name, span / isz, isz);  // NOLINT
  else
    record_error(L,
                 "%s: out-of-bounds %s of %lu bytes through %s '%s' at element index %ld (byte offset %ld); "
                 "'%s' has %lu bytes of threadgroup memory",
                 where, access_word(kind), n, what, name, elem, rel, name, span);
  leave_kernel(3);
}

void api_check_ref(const EncArg* arg, unsigned long n, const char* type) {
  Worker* w = tls_worker;
  const EncLaunch* L = w->launch;
  char name[96];
  if (arg->name) snprintf(name, sizeof name, "%s", arg->name);
  else snprintf(name, sizeof name, "[[buffer(%ld)]]", long(arg - g_args));
  record_error(L,
               "kernel '%s': parameter '%s' is a reference to %s (%lu bytes), but the argument bound to it has "
               "%lu bytes; pass a value (or an array) of that type",
               L->kernel_name, name, type, n, arg->hi - arg->lo);
  leave_kernel(3);
}

void api_offset_overflow(char op, long a, long b, unsigned line) {
  Worker* w = tls_worker;
  const EncLaunch* L = w->launch;
  const char* sym = op == '+' ? "+" : op == '-' ? "-" : op == '*' ? "*" : "<<";
  // the exact result: |a|, |b| < 2^31 (and b < 32 for a shift), so it fits in 64 bits
  long exact = op == '+' ? a + b : op == '-' ? a - b : op == '*' ? a * b : a * (1L << b);
  int wrapped = int(static_cast<unsigned>(static_cast<unsigned long>(exact) & 0xffffffffUL));
  tls_err_line = line;
  record_error(L,
               "kernel '%s', program (%u,%u,%u), thread %u: int32 overflow in pointer-offset arithmetic: %ld %s "
               "%ld = %ld does not fit in int32 (compiled code would wrap it to %d and address the wrong "
               "element); compute the offset in int64, e.g. row.to(tl.int64) * stride, or pass the stride as "
               "an int64",
               L->kernel_name, w->group[0], w->group[1], w->group[2], current_tid(w), a, sym, b, exact, wrapped);
  leave_kernel(3);
}

// ---- live allocations: what a pointer made from an integer may touch besides the launch's arguments --------
// enceladus.Tensor memory, registered and unregistered by the Python side (backends/cpu/memory.py). An entry
// unregistered while a launch may hold it is freed when the next launch starts (one dispatch at a time).
struct Allocation {
  EncArg arg;
  char name[64];
};
std::mutex g_alloc_mu;
std::map<unsigned long, Allocation*> g_allocs;  // by first byte
std::vector<Allocation*> g_dead_allocs;

const EncArg* api_live_allocation(unsigned long address) {
  Worker* w = tls_worker;
  int armed = w ? w->armed.exchange(0) : 0;  // never leave kernel code while holding the lock
  const EncArg* found = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_alloc_mu);
    auto it = g_allocs.upper_bound(address);
    if (it != g_allocs.begin() && address <= (--it)->second->arg.hi) found = &it->second->arg;
  }
  if (w) w->armed = armed;
  return found;
}

void free_dead_allocations() {
  std::lock_guard<std::mutex> lk(g_alloc_mu);
  for (Allocation* a : g_dead_allocs) delete a;
  g_dead_allocs.clear();
}

// ---- thread pool -----------------------------------------------------------------------------
struct Pool {
  std::mutex mu;
  std::condition_variable cv_work, cv_done;
  std::vector<std::thread> threads;
  std::vector<Worker*> workers;  // workers[0] belongs to the launching thread
  const EncLaunch* job = nullptr;
  unsigned long total = 0;
  std::atomic<unsigned long> next{0};
  unsigned long generation = 0;
  bool open = false;  // the current job takes helpers (until the launching thread has claimed its last group)
  unsigned busy = 0;  // helpers that joined the current job and have not finished it
  unsigned wanted = 0;
  bool stop = false;
  std::mutex launch_mu;  // one dispatch at a time
};
Pool* g_pool = nullptr;

Worker* new_worker() {
  Worker* w = new Worker();
  void* mem = nullptr;
  if (posix_memalign(&mem, 64, 64 * 1024) != 0) std::abort();
  w->tg_mem = static_cast<unsigned char*>(mem);
  std::memset(w->static_gen, 0, sizeof(w->static_gen));
  return w;
}

// Kernels run with the default floating-point controls (round to nearest, subnormals kept: docs/floating_point.md),
// the values every fiber starts with (init_fiber), whatever the thread that runs them has set: a library built
// with -ffast-math sets flush-to-zero when it is loaded, and a helper thread inherits its creator's settings. A
// worker sets them for its part of a launch (for the plain loops; the fibers' switches with it then reload nothing)
// and gets its own back after. Only the control bits are compared; restoring drops the exception flags raised
// by kernel code, which no caller reads.
struct FpControl {
  unsigned mxcsr = 0;
  unsigned short cw = 0;
};
FpControl enter_default_fp_control() {
  FpControl saved;
#if defined(__x86_64__)
  __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(saved.mxcsr), "=m"(saved.cw));
  if ((saved.mxcsr & ~kMxcsrFlags) != kMxcsrDefault) __asm__ volatile("ldmxcsr %0" : : "m"(kMxcsrDefault));
  if (saved.cw != kFpuCwDefault) __asm__ volatile("fldcw %0" : : "m"(kFpuCwDefault));
#endif
  return saved;
}

void leave_default_fp_control(const FpControl& saved) {
#if defined(__x86_64__)
  if ((saved.mxcsr & ~kMxcsrFlags) != kMxcsrDefault) __asm__ volatile("ldmxcsr %0" : : "m"(saved.mxcsr));
  if (saved.cw != kFpuCwDefault) __asm__ volatile("fldcw %0" : : "m"(saved.cw));
#else
  (void)saved;
#endif
}

void work(Worker* w, const EncLaunch* L) {
  tls_worker = w;
  w->launch = L;
  if (L->debug) ensure_altstack();
  w->in_launch = 1;
  const FpControl fp = enter_default_fp_control();
  int why = sigsetjmp(w->jmp, 0);
  if (why) {
    // Left kernel code early: the group's fibers are abandoned (re-created by the next launch).
    w->armed = 0;
    w->in_fibers = false;
    w->aborted = false;
    w->cur = nullptr;
    if (why == 1) report_fault(w, L);
    leave_default_fp_control(fp);
    w->in_launch = 0;
    return;
  }
  for (;;) {
    if (g_failed.load(std::memory_order_relaxed) || g_abort.load(std::memory_order_relaxed)) break;
    unsigned long gi = g_pool->next.fetch_add(1, std::memory_order_relaxed);
    if (gi >= g_pool->total) break;
    w->armed = 1;
    if (g_abort.load()) break;  // pairs with kick_workers: either it sees `armed` or this sees g_abort
    bool ok = run_group(w, L, gi);
    w->armed = 0;
    if (!ok) break;
  }
  leave_default_fp_control(fp);
  w->in_launch = 0;
}

void kick_workers() {
  // Called from signal handlers and the watchdog: pthread_kill is async-signal-safe.
  if (!g_pool || !g_abort_signal) return;
  for (Worker* w : g_pool->workers)
    if (w && w->in_launch && w->armed) pthread_kill(w->thread, g_abort_signal);
}

// `seen`: the pool's generation when the thread was started (under launch_mu); it takes the jobs after it. A helper
// joins a job only while it is open (counted in `busy`, which the launching thread waits for): one that wakes after
// the launching thread has claimed the last group leaves the job alone, and the launch did not wait for it.
void worker_loop(unsigned idx, unsigned long seen) {
  // the helper's worker is made here, on its own thread (not by the launch that starts it: #26); the slot is written
  // once, and kick_workers skips it while empty (a helper without a worker is in no launch)
  Worker* w = g_pool->workers[idx];
  if (!w) w = g_pool->workers[idx] = new_worker();
  w->thread = pthread_self();
  for (;;) {
    const EncLaunch* L;
    {
      std::unique_lock<std::mutex> lk(g_pool->mu);
      g_pool->cv_work.wait(lk, [&] { return g_pool->stop || (g_pool->generation != seen && idx < g_pool->wanted); });
      if (g_pool->stop) return;
      seen = g_pool->generation;
      if (!g_pool->open) continue;
      ++g_pool->busy;
      L = g_pool->job;
    }
    work(w, L);
    std::lock_guard<std::mutex> lk(g_pool->mu);
    if (--g_pool->busy == 0) g_pool->cv_done.notify_all();
  }
}

// ---- kernel-side services --------------------------------------------------------------------
void api_barrier(unsigned kind, unsigned flags, const char* what, unsigned line);
const EncSimdSnapshot* api_simd(const void* data, unsigned nbytes, const char* what, unsigned line, int require_all,
                                unsigned* my_lane);

void api_fail(const char* message, unsigned line) {
  Worker* w = tls_worker;
  if (line)
    record_error(w->launch, "kernel '%s', threadgroup (%u,%u,%u), line %u: %s", w->launch->kernel_name, w->group[0],
                 w->group[1], w->group[2], line, message);
  else
    record_error(w->launch, "kernel '%s', threadgroup (%u,%u,%u): %s", w->launch->kernel_name, w->group[0],
                 w->group[1], w->group[2], message);
  if (w->in_fibers) {
    w->aborted = true;
    block_current(w);
  }
}

void api_barrier(unsigned kind, unsigned flags, const char* what, unsigned line) {
  Worker* w = tls_worker;
  if (!w->in_fibers) {
    api_fail("internal: barrier in a kernel launched without fibers", line);
    return;
  }
  if (kind == ENC_BARRIER_SIMDGROUP) {
    unsigned lane;
    api_simd(nullptr, 0, what, line, 0, &lane);
    return;
  }
  Fiber* f = w->cur;
  f->state = AT_BARRIER;
  f->what = what;
  f->line = line;
  f->kind = kind;
  f->flags = flags;
  block_current(w);
}

const EncSimdSnapshot* api_simd(const void* data, unsigned nbytes, const char* what, unsigned line, int require_all,
                                unsigned* my_lane) {
  Worker* w = tls_worker;
  if (!w->in_fibers) {
    static thread_local EncSimdSnapshot solo;
    api_fail("internal: SIMD-group function in a kernel launched without fibers", line);
    solo.active = 1;
    solo.memo_set = 0;
    if (nbytes) std::memcpy(solo.data[0], data, nbytes);
    *my_lane = 0;
    return &solo;
  }
  Fiber* f = w->cur;
  if (nbytes) std::memcpy(f->slot, data, nbytes);
  f->state = AT_SIMD;
  f->what = what;
  f->line = line;
  f->require_all = require_all != 0;
  block_current(w);
  *my_lane = f->t.lane;
  return f->result;
}

void* api_tg_static(unsigned slot, unsigned long size, unsigned long align, const char* name) {
  Worker* w = tls_worker;
  if (slot >= kMaxStaticSlots) {
    api_fail("too many function-scope threadgroup variables (limit 256)", 0);
    return w->tg_mem;
  }
  if (w->static_gen[slot] != w->gen) {
    unsigned long off = (w->tg_used + align - 1) & ~(align - 1);
    if (off + size > w->launch->tg_limit) {
      char msg[256];
      snprintf(msg, sizeof msg,
               "threadgroup memory exceeds the limit: variable '%s' needs %lu bytes at offset %lu, limit %lu bytes",
               name, size, off, w->launch->tg_limit);
      api_fail(msg, 0);
      return w->tg_mem;  // only reached without fibers; the launch already reports the error
    }
    w->static_off[slot] = off;
    w->static_gen[slot] = w->gen;
    w->tg_used = off + size;
  }
  return w->tg_mem + w->static_off[slot];
}


constexpr unsigned long kTgMemBytes = 64 * 1024;

void api_tg_access(const void* base, const void* addr, unsigned long n, int is_write, const char* name) {
  Worker* w = tls_worker;
  const EncLaunch* L = w->launch;
  if (!L->debug || !L->debug->race_check) return;
  unsigned long off = static_cast<unsigned long>(static_cast<const unsigned char*>(addr) - w->tg_mem);
  if (off >= kTgMemBytes || n > kTgMemBytes - off) return;  // not threadgroup memory
  if (!w->shadow) {
    int armed = w->armed.exchange(0);  // an interrupt must not leave calloc half done
    w->shadow = static_cast<Worker::Shadow*>(std::calloc(kTgMemBytes, sizeof(Worker::Shadow)));
    w->armed = armed;
    if (!w->shadow) return;
  }
  unsigned me = current_tid(w);
  unsigned sg = me / ENC_SIMD_WIDTH;
  for (unsigned long i = 0; i < n; ++i) {
    Worker::Shadow& s = w->shadow[off + i];
    // Epochs are unique per group: bytes last written before this group started are uninitialised here.
    bool written = s.epoch - w->group_epoch < 0x80000000u;
    bool synced_in_simdgroup = s.tid / ENC_SIMD_WIDTH == sg && s.sepoch != w->sepoch[sg];
    bool unordered = written && s.epoch == w->epoch && s.tid != me && !synced_in_simdgroup;
    long rel = static_cast<const unsigned char*>(addr) + i - static_cast<const unsigned char*>(base);
    char msg[512];
    if (is_write) {
      bool read_here = s.repoch == w->epoch && s.repoch - w->group_epoch < 0x80000000u;
      bool reader_synced = s.rtid / ENC_SIMD_WIDTH == sg && s.rsepoch != w->sepoch[sg];
      if (is_write == 1 && read_here && (s.rmany || (s.rtid != me && !reader_synced))) {
        char who[48];  // the first reader, or "other threads" when this thread read it first
        if (s.rtid != me) snprintf(who, sizeof who, "thread %u", unsigned(s.rtid));
        else snprintf(who, sizeof who, "other threads");
        snprintf(msg, sizeof msg,
                 "threadgroup-memory race on '%s': thread %u writes byte %ld of it, which %s read since the last "
                 "threadgroup_barrier (write-after-read race: a reader may see the new value; put a "
                 "threadgroup_barrier(mem_flags::mem_threadgroup) between the read and the write)",
                 name, me, rel, who);
        api_fail(msg, 0);
        return;
      }
      if (unordered && is_write == 1) {
        snprintf(msg, sizeof msg,
                 "threadgroup-memory race on '%s': thread %u writes byte %ld of it, which thread %u also wrote "
                 "since the last threadgroup_barrier, with another value (write-write race: the value left depends "
                 "on timing; let one thread write, or put a threadgroup_barrier between the writes)",
                 name, me, rel, unsigned(s.tid));
        api_fail(msg, 0);
        return;
      }
      s.epoch = w->epoch;
      s.sepoch = w->sepoch[sg];
      s.tid = static_cast<unsigned short>(me);
      continue;
    }
    if (!written) {
      snprintf(msg, sizeof msg,
               "read of uninitialised threadgroup memory: thread %u reads byte %ld of '%s', which no thread of this "
               "threadgroup has written (threadgroup memory starts undefined in every threadgroup)",
               me, rel, name);
      api_fail(msg, 0);
      return;
    }
    if (unordered) {
      snprintf(msg, sizeof msg,
               "threadgroup-memory race on '%s': thread %u reads byte %ld of it, which thread %u wrote since the "
               "last threadgroup_barrier (add threadgroup_barrier(mem_flags::mem_threadgroup) between the write "
               "and the read)",
               name, me, rel, unsigned(s.tid));
      api_fail(msg, 0);
      return;
    }
    if (s.repoch != w->epoch) {  // the first read since the last barrier
      s.repoch = w->epoch;
      s.rsepoch = w->sepoch[sg];
      s.rtid = static_cast<unsigned short>(me);
      s.rmany = 0;
    } else if (s.rtid != me) {
      s.rmany = 1;
    }
  }
}

// ---- debug mode: device-memory races inside a threadgroup ------------------------------------------------
enum { kDevMixedWrite = 1, kDevMixedRead = 2, kDevManyReaders = 4 };

Worker::DevWord* dev_word(Worker* w, unsigned long word) {
  if (w->dev.empty() || 2 * (w->dev_used.size() + 1) > w->dev.size()) {
    int armed = w->armed.exchange(0);  // an interrupt must not leave the table half built
    std::vector<Worker::DevWord> old;
    old.swap(w->dev);
    w->dev.assign(old.empty() ? 4096 : 2 * old.size(), Worker::DevWord{});
    w->dev_used.clear();
    for (const Worker::DevWord& e : old) {
      if (!e.word) continue;
      unsigned long i = (e.word * 0x9E3779B97F4A7C15ul) >> 20;
      for (i &= w->dev.size() - 1; w->dev[i].word; i = (i + 1) & (w->dev.size() - 1)) {}
      w->dev[i] = e;
      w->dev_used.push_back(unsigned(i));
    }
    w->armed = armed;
  }
  unsigned long mask = w->dev.size() - 1;
  unsigned long i = ((word * 0x9E3779B97F4A7C15ul) >> 20) & mask;
  while (w->dev[i].word && w->dev[i].word != word) i = (i + 1) & mask;
  Worker::DevWord* e = &w->dev[i];
  if (!e->word) {
    *e = Worker::DevWord{};
    e->word = word;
    e->wstamp = w->dstamp - 1;  // never written or read in this group
    e->rstamp = w->epoch - 1;
    w->dev_used.push_back(unsigned(i));
  }
  return e;
}

// Where a device address is, for messages: "element 5 of argument 'x'" or the raw address.
void describe_device(unsigned long a, char* out, unsigned long cap) {
  for (unsigned i = 0; i < ENC_MAX_BUFFERS; ++i) {
    const EncArg& g = g_args[i];
    if (g.kind == ENC_ARG_DEVICE && g.hi > g.lo && a >= g.lo && a < g.hi) {
      unsigned isz = g.itemsize ? g.itemsize : 1;
      snprintf(out, cap, "element %ld of argument '%s'", long(a - g.base) / long(isz), g.name ? g.name : "?");
      return;
    }
  }
  snprintf(out, cap, "address 0x%lx", a);
}

void api_device_access(const void* addr, unsigned long n, int is_write, unsigned line) {
  Worker* w = tls_worker;
  const EncLaunch* L = w->launch;
  if (!L->debug || !L->debug->race_check || !L->debug->device_races || n == 0) return;
  unsigned me = current_tid(w);
  unsigned long a = reinterpret_cast<unsigned long>(addr);
  for (unsigned long word = a >> 2; word <= (a + n - 1) >> 2; ++word) {
    unsigned long lo = word << 2 < a ? a - (word << 2) : 0, hi = (word << 2) + 4 > a + n ? a + n - (word << 2) : 4;
    unsigned char m = static_cast<unsigned char>(((1u << hi) - 1) & ~((1u << lo) - 1));
    Worker::DevWord* e = dev_word(w, word);
    bool written = e->wstamp == w->dstamp && !(e->flags & kDevMixedWrite) && (e->wmask & m);
    bool read = e->rstamp == w->epoch && !(e->flags & kDevMixedRead) && (e->rmask & m);
    const char* race = nullptr;
    unsigned other = 0;
    if (written && e->wtid != me && is_write != 2) {
      race = is_write ? "writes %s, which thread %u also wrote" : "reads %s, which thread %u wrote";
      other = e->wtid;
    } else if (is_write == 1 && read && e->rtid != me) {
      race = "writes %s, which thread %u read";
      other = e->rtid;
    } else if (is_write == 1 && read && (e->flags & kDevManyReaders)) {
      race = "writes %s, which other threads read%.0u";
    }
    if (race) {
      char where[128], what[256], msg[640];
      describe_device((word << 2) + __builtin_ctz(m & (is_write && !written ? e->rmask : e->wmask)), where,
                      sizeof where);
      snprintf(what, sizeof what, race, where, other);
      snprintf(msg, sizeof msg,
               "device-memory race: thread %u %s since the last threadgroup_barrier%s (within one program, global "
               "accesses take effect in program order: put threadgroup_barrier(mem_flags::mem_device) between the "
               "two accesses)",
               me, what, written ? " with mem_flags::mem_device" : "");
      tls_err_line = line;
      api_fail(msg, line);
      return;
    }
    if (is_write) {
      if (e->wstamp != w->dstamp) {
        e->wstamp = w->dstamp;
        e->wtid = static_cast<unsigned short>(me);
        e->wmask = m;
        e->flags &= ~kDevMixedWrite;
      } else if (e->wtid != me) {
        e->flags |= kDevMixedWrite;  // bytes of one word written by two threads: no longer tracked here
      } else {
        e->wmask |= m;
      }
    } else if (e->rstamp != w->epoch) {
      e->rstamp = w->epoch;
      e->rtid = static_cast<unsigned short>(me);
      e->rmask = m;
      e->flags &= ~(kDevMixedRead | kDevManyReaders);
    } else if (e->rtid != me) {
      e->flags |= (e->rmask & m) ? kDevManyReaders : kDevMixedRead;
      e->rmask |= m;
    } else {
      e->rmask |= m;
    }
  }
}

EncSgLog* api_sg_log_slow(Worker* w, unsigned long scratch_bytes, unsigned* lane);
EncSgLog* api_sg_log(unsigned long scratch_bytes, unsigned* lane) {
  Worker* w = tls_worker;
  Fiber* f = w->cur;
  if (__builtin_expect(f && w->sglogs != nullptr, 1)) {
    EncSgLog* g = &w->sglogs[f->t.sg];
    if (__builtin_expect(g->scratch_size >= scratch_bytes, 1)) {
      *lane = f->t.lane;
      return g;
    }
  }
  return api_sg_log_slow(w, scratch_bytes, lane);
}

EncSgLog* api_sg_log_slow(Worker* w, unsigned long scratch_bytes, unsigned* lane) {
  static thread_local EncSgLog solo;
  if (!w->in_fibers || !w->cur) {
    api_fail("internal: simdgroup_matrix operation in a kernel launched without fibers", 0);
    *lane = 0;
    return &solo;
  }
  const EncThread& t = w->cur->t;
  *lane = t.lane;
  int armed = w->armed.exchange(0);  // an interrupt must not leave an allocation half done
  EncSgLog* g = &w->sglogs[t.sg];
  if (g->scratch_size < scratch_bytes) {
    std::free(g->scratch);
    g->scratch = std::calloc(1, scratch_bytes);
    g->scratch_size = g->scratch ? scratch_bytes : 0;
    if (!g->scratch) {
      w->armed = armed;
      api_fail("out of memory allocating SIMD-group state", 0);
      return &solo;
    }
  }
  w->armed = armed;
  return g;
}

const EncThread* api_current_thread() {
  Worker* w = tls_worker;
  return w->cur ? &w->cur->t : w->loop_thread;
}

EncRuntimeApi g_api = {ENC_ABI_VERSION, api_barrier,   api_simd,           api_tg_static,
                             api_fail,        api_tg_access, api_current_thread, api_check_access,
                             api_check_ref,   api_sg_log,         256 * 1024,
                             api_offset_overflow, api_live_allocation, api_device_access, 0};

}  // namespace

// ---- timeouts: one watchdog thread, started by the first launch that has a timeout -----------------
// Never destroyed: the detached watchdog still waits on them when the process exits, and destroying a condition
// variable with a waiter blocks exit() for ever (glibc's pthread_cond_destroy waits for its waiters).
std::mutex& g_wd_mu = *new std::mutex;
std::condition_variable& g_wd_cv = *new std::condition_variable;
std::chrono::steady_clock::time_point g_wd_deadline;
bool g_wd_active = false;
unsigned long g_wd_gen = 0;
bool g_wd_started = false;

void watchdog_main() {
  std::unique_lock<std::mutex> lk(g_wd_mu);
  for (;;) {
    if (!g_wd_active) {
      g_wd_cv.wait(lk);
      continue;
    }
    unsigned long gen = g_wd_gen;
    if (g_wd_cv.wait_until(lk, g_wd_deadline) == std::cv_status::timeout && g_wd_active && gen == g_wd_gen) {
      int expected = ABORT_NONE;
      g_abort.compare_exchange_strong(expected, ABORT_TIMEOUT);
      kick_workers();
      g_wd_active = false;
    }
  }
}

void watchdog_start(unsigned long ms) {
  std::lock_guard<std::mutex> lk(g_wd_mu);
  if (!g_wd_started) {
    std::thread(watchdog_main).detach();
    g_wd_started = true;
  }
  g_wd_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  g_wd_active = true;
  g_wd_gen++;
  g_wd_cv.notify_all();
}

void watchdog_stop() {
  std::lock_guard<std::mutex> lk(g_wd_mu);
  g_wd_active = false;
  g_wd_gen++;
  g_wd_cv.notify_all();
}

extern "C" {
__attribute__((visibility("default"))) const EncRuntimeApi* enc_runtime_api() { return &g_api; }

// The live allocations a pointer made from an integer is checked against (enceladus.Tensor memory; memory.py).
__attribute__((visibility("default"))) void enc_register_allocation(unsigned long lo, unsigned long nbytes) {
  Allocation* a = new Allocation();
  snprintf(a->name, sizeof a->name, "enceladus.Tensor memory at 0x%lx", lo);
  a->arg.lo = a->arg.base = lo;
  a->arg.hi = lo + nbytes;
  a->arg.layout = nullptr;
  a->arg.name = a->name;
  a->arg.itemsize = 0;
  a->arg.kind = ENC_ARG_DEVICE;
  std::lock_guard<std::mutex> lk(g_alloc_mu);
  auto it = g_allocs.find(lo);
  if (it != g_allocs.end()) g_dead_allocs.push_back(it->second);
  g_allocs[lo] = a;
}

__attribute__((visibility("default"))) void enc_unregister_allocation(unsigned long lo) {
  std::lock_guard<std::mutex> lk(g_alloc_mu);
  auto it = g_allocs.find(lo);
  if (it == g_allocs.end()) return;
  g_dead_allocs.push_back(it->second);
  g_allocs.erase(it);
}
__attribute__((visibility("default"))) unsigned enc_abi_version() { return ENC_ABI_VERSION; }

// Starts helper threads (held under launch_mu) until `wanted` run; returns how many run (fewer if the system
// refuses a thread: the launch then runs on those).
unsigned start_helpers(unsigned wanted) {
  while (g_pool->threads.size() < wanted) {
    unsigned idx = unsigned(g_pool->threads.size()) + 1;
    try {
      g_pool->threads.emplace_back(worker_loop, idx, g_pool->generation);
    } catch (const std::system_error&) {
      break;
    }
  }
  return std::min(wanted, unsigned(g_pool->threads.size()));
}

__attribute__((visibility("default"))) int enc_runtime_init(unsigned nthreads, unsigned long stack_size) {
  if (g_pool) return 0;
  g_page = size_t(sysconf(_SC_PAGESIZE));
  if (stack_size) {  // a power of two (fiber stacks are aligned to their size), at least 4 pages
    size_t s = 4 * g_page;
    while (s < stack_size) s *= 2;
    g_stack_size = s;
  }
  g_api.fiber_stack_align = g_stack_size;
  g_pool = new Pool();
  if (nthreads < 1) nthreads = 1;
  // Only the launching thread's worker now: a helper's (~72 KiB, zeroed) is made when its thread starts, so a process
  // on a many-core host that runs small grids does not pay for the others. The slots exist from here on (never
  // reallocated: kick_workers reads them from signal handlers and skips the empty ones).
  g_pool->workers.assign(nthreads, nullptr);
  g_pool->workers[0] = new_worker();
  // The signal that makes a worker leave kernel code (SIGINT, timeouts); workers block nothing.
  g_abort_signal = SIGRTMIN + 4;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_abort_signal;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(g_abort_signal, &sa, nullptr);
  // the helper threads start on the first launch that has work for them (start_helpers): a process that runs
  // small grids never pays for the others
  return 0;
}

// Runs one dispatch to completion. Returns 0; 1 with a message in err (the first 8 bytes hold the MSL
// line of the error as a uint32 and a reserved word, the message follows); 2 when SIGINT stopped it; 3
// when it ran past L->timeout_ms. The packed scalar bytes (L->args_size of them) follow the EncLaunch
// struct and may be unaligned: they are copied here.
__attribute__((visibility("default"))) int enc_launch(const EncLaunch* L, char* err, unsigned long err_cap) {
  if (!g_pool) enc_runtime_init(1, 0);
  if (err_cap < 16) return 1;
  std::memset(err, 0, 8);
  char* msg = err + 8;
  unsigned long msg_cap = err_cap - 8;
  msg[0] = 0;
  if (L->args_size > ENC_MAX_ARGS_BYTES) {
    snprintf(msg, msg_cap, "kernel '%s': %lu bytes of scalar arguments exceed %u", L->kernel_name, L->args_size,
             ENC_MAX_ARGS_BYTES);
    return 1;
  }
  alignas(64) unsigned char args[ENC_MAX_ARGS_BYTES];
  std::lock_guard<std::mutex> guard(g_pool->launch_mu);
  free_dead_allocations();  // no launch holds them now
  g_failed.store(false);
  g_err_group.store(~0ul);
  g_abort.store(ABORT_NONE);
  g_err = msg;
  g_err_cap = msg_cap;
  g_err_line = 0;
  std::memcpy(g_bufs, L->buffers, sizeof g_bufs);
  const char* base = reinterpret_cast<const char*>(L);
  for (unsigned i = 0; i < ENC_MAX_BUFFERS; ++i) {
    EncArg& a = g_args[i];
    const EncExtent& e = L->extents[i];
    a.lo = e.lo;
    a.hi = e.hi;
    a.base = reinterpret_cast<unsigned long>(L->buffers[i]);
    a.itemsize = unsigned(e.info & 0xffff);
    a.layout = (e.info >> 16) ? reinterpret_cast<const EncLayout*>(base + (e.info >> 16)) : nullptr;
    a.name = L->names ? L->names[i] : nullptr;
    a.kind = ENC_ARG_DEVICE;
  }
  if (L->args_slot < ENC_MAX_BUFFERS) {
    std::memcpy(args, reinterpret_cast<const unsigned char*>(L + 1), L->args_size);
    g_bufs[L->args_slot] = args;
    EncArg& a = g_args[L->args_slot];
    a.lo = a.base = reinterpret_cast<unsigned long>(args);
    a.hi = a.lo + L->args_size;
    a.layout = nullptr;
    a.itemsize = 1;
  }
  if (L->debug) install_fault_handler();
  g_api.device_races = L->debug && L->debug->race_check && L->debug->device_races;  // one dispatch at a time
  unsigned long total = static_cast<unsigned long>(L->groups[0]) * L->groups[1] * L->groups[2];
  if (total == 0) return 0;
  unsigned n = unsigned(g_pool->workers.size());
  unsigned helpers = start_helpers(total - 1 < n - 1 ? unsigned(total - 1) : n - 1);
  g_pool->workers[0]->thread = pthread_self();
  // SIGINT stops this launch (see on_sigint); an ignored SIGINT stays ignored.
  g_launch_on_main.store(syscall(SYS_gettid) == getpid());
  struct sigaction sa_int;
  std::memset(&sa_int, 0, sizeof sa_int);
  sa_int.sa_sigaction = on_sigint;
  sa_int.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa_int.sa_mask);
  sigaction(SIGINT, &sa_int, &g_old_int);
  bool int_installed = true;
  if (!(g_old_int.sa_flags & SA_SIGINFO) && g_old_int.sa_handler == SIG_IGN) {
    sigaction(SIGINT, &g_old_int, nullptr);
    int_installed = false;
  }
  if (L->timeout_ms) watchdog_start(L->timeout_ms);
  {
    std::lock_guard<std::mutex> lk(g_pool->mu);
    g_pool->job = L;
    g_pool->total = total;
    g_pool->next.store(0);
    g_pool->open = helpers > 0;
    g_pool->busy = 0;
    g_pool->wanted = helpers + 1;
    g_pool->generation++;
  }
  if (helpers) g_pool->cv_work.notify_all();
  work(g_pool->workers[0], L);
  if (helpers) {
    // every group is claimed (or the launch stops): close the job to helpers that have not joined it yet (a helper
    // thread started by this launch may still be starting: #26, a fresh process's first launch waited for it), then
    // wait for those that did
    std::unique_lock<std::mutex> lk(g_pool->mu);
    g_pool->open = false;
    g_pool->cv_done.wait(lk, [] { return g_pool->busy == 0; });
  }
  if (L->timeout_ms) watchdog_stop();
  if (int_installed) sigaction(SIGINT, &g_old_int, nullptr);
  g_err = nullptr;
  int why = g_abort.load();
  if (why == ABORT_INTERRUPT) return 2;
  if (why == ABORT_TIMEOUT) return 3;
  if (!g_failed.load()) return 0;
  std::memcpy(err, &g_err_line, 4);
  return 1;
}

}

namespace {
unsigned g_pingpong_iters = 0;
void pingpong(const EncThread*) {
  for (unsigned i = 0; i < g_pingpong_iters; ++i) block_current(tls_worker);
}
}  // namespace

// Measures the raw fiber switch: nanoseconds per one-way switch (scheduler <-> fiber).
extern "C" __attribute__((visibility("default"))) double enc_measure_switch_ns(unsigned iterations) {
  Worker* w = new_worker();
  Worker* saved = tls_worker;
  tls_worker = w;
  EncLaunch L;
  std::memset(&L, 0, sizeof L);
  L.fn = pingpong;
  w->launch = &L;
  Fiber f;
  f.stack = alloc_stack();
  f.worker = w;
  init_fiber(&f);
  g_pingpong_iters = iterations;
  w->cur = &f;
  auto t0 = std::chrono::steady_clock::now();
  for (unsigned i = 0; i <= iterations; ++i) switch_to(&w->sched, &f.ctx);
  auto t1 = std::chrono::steady_clock::now();
  tls_worker = saved;
  munmap(f.stack - g_page, g_stack_size + g_page);  // alloc_stack kept exactly these pages
  std::free(w->tg_mem);
  delete w;
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / (2.0 * (iterations + 1));
}

// Lets the Python side check its packing of EncLaunch against the compiler's layout.
extern "C" __attribute__((visibility("default"))) unsigned long enc_launch_struct_size() { return sizeof(EncLaunch); }
