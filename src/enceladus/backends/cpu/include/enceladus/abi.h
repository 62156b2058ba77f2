/* The binary interface between a kernel library (MSL + generated launcher) and the Enceladus cpu
 * runtime (thread pool, fibers). Plain C so that runtime.cpp and the kernel TU agree on layout.
 * Bump ENC_ABI_VERSION on any change: both sides check it when a kernel library is bound. */
#ifndef ENCELADUS_ABI_H
#define ENCELADUS_ABI_H
#define ENC_ABI_VERSION 10u
#define ENC_MAX_BUFFERS 31
#define ENC_SIMD_WIDTH 32
#define ENC_SIMD_SLOT 32 /* bytes a lane may contribute to one SIMD-group exchange */
#define ENC_MAX_ARGS_BYTES 4096 /* packed scalar bytes carried inline by a launch (Metal's setBytes limit) */
#define ENC_NO_ARGS_SLOT 0xffffffffu
#define ENC_MAX_DIMS 8

#ifdef __cplusplus
extern "C" {
#endif
/* The element layout of a strided argument (a view whose elements do not fill the bytes they span):
 * shape and byte strides of every dimension, normalised to non-negative strides from `lo`. */
typedef struct EncLayout {
  unsigned ndim, itemsize;
  long shape[ENC_MAX_DIMS];
  long strides[ENC_MAX_DIMS];
} EncLayout;

/* What a checked pointer knows about the argument it came from (checked builds, the default). An
 * access of n bytes at address a is in bounds when lo <= a, a + n <= hi, a is aligned for its type
 * and, for a strided argument (layout != 0), every byte lies in an element of the view. */
typedef struct EncArg {
  unsigned long lo, hi;     /* the bytes the argument's elements span */
  unsigned long base;       /* address of element 0 (what the kernel receives) */
  const EncLayout* layout;  /* null: every byte of [lo, hi) belongs to an element */
  const char* name;         /* parameter or variable name, for messages */
  unsigned itemsize;        /* element size of the argument (0: unknown) */
  unsigned kind;            /* ENC_ARG_DEVICE, ENC_ARG_TG_PARAM, ENC_ARG_TG_VAR, ENC_ARG_UNKNOWN */
} EncArg;
enum { ENC_ARG_DEVICE = 0, ENC_ARG_TG_PARAM = 1, ENC_ARG_TG_VAR = 2, ENC_ARG_UNKNOWN = 3 };
/* Access kinds reported by a checked pointer. */
enum { ENC_ACC_ACCESS = 0, ENC_ACC_READ = 1, ENC_ACC_WRITE = 2, ENC_ACC_ATOMIC = 3 };

/* Per launch and slot, as packed by the Python side: the span of a buffer argument and, for a
 * strided one, where its EncLayout lies (byte offset from the start of the EncLaunch; 0: none). */
typedef struct EncExtent {
  unsigned long lo, hi;
  unsigned long info; /* itemsize in the low 16 bits, layout offset above */
} EncExtent;

/* Everything a thread needs to compute its Metal builtins. */
typedef struct EncThread {
  unsigned tpig[3];   /* thread_position_in_grid */
  unsigned tgpig[3];  /* threadgroup_position_in_grid */
  unsigned tpg[3];    /* threadgroups_per_grid */
  unsigned tptg[3];   /* threads_per_threadgroup (actual size of this, maybe partial, group) */
  unsigned tpitg[3];  /* thread_position_in_threadgroup */
  unsigned tiitg;     /* thread_index_in_threadgroup */
  unsigned lane;      /* thread_index_in_simdgroup */
  unsigned sg;        /* simdgroup_index_in_threadgroup */
  unsigned nsg;       /* simdgroups_per_threadgroup */
  unsigned gsize[3];  /* dispatchThreads grid size in threads (threadgroups * tptg otherwise) */
  void* const* buffers;    /* [[buffer(i)]] addresses */
  void* const* tg_buffers; /* [[threadgroup(i)]] addresses inside this group's threadgroup memory */
  const EncArg* args;      /* checked builds: what each [[buffer(i)]] may touch */
  const EncArg* tg_args;   /* checked builds: what each [[threadgroup(i)]] may touch */
} EncThread;

typedef void (*EncThreadFn)(const EncThread*);

/* Result of a SIMD-group rendezvous: which lanes arrived together and what each contributed. */
typedef struct EncSimdSnapshot {
  unsigned active;                                   /* bit i: lane i took part */
  unsigned memo_set;                                 /* 0 when the rendezvous resolves; see memo */
  unsigned char memo[ENC_SIMD_SLOT];                 /* a result every lane shares (a reduction), kept by the
                                                        first lane that computes it */
  unsigned char data[ENC_SIMD_WIDTH][ENC_SIMD_SLOT];
} EncSimdSnapshot;

/* Per SIMD group of the running threadgroup: the simdgroup_matrix operations its lanes executed since the
 * group last stopped (a rendezvous, a barrier or the end of all its lanes). Loads, stores and multiplies do
 * not switch fibers: every lane appends an entry (or, at the same position, marks the entry another lane
 * appended); when no lane of the group can run, the runtime checks that all 32 lanes executed every
 * entry (uniform control flow; a lane that returned without executing an entry or a multiply of the batch
 * fails the launch) and drops the entries every lane executed. Multiplies are deferred (matrix.h): their operands
 * go to `scratch`, and the first lane that needs a result computes the whole batch for all 32 lanes. */
#define ENC_SG_LOG 256
#define ENC_SG_MMA 128 /* deferred multiplies per batch */
typedef struct EncSgEntry {
  const char* what;
  unsigned line;
  unsigned mask; /* lanes that executed it */
} EncSgEntry;
typedef struct EncSgLog {
  unsigned count;                   /* entries in use */
  unsigned pos[ENC_SIMD_WIDTH];     /* each lane's next entry */
  unsigned serial;                  /* deferred-multiply batch number: advances at every flush and group */
  unsigned mma_count;               /* deferred multiplies in the batch */
  unsigned mma_pos[ENC_SIMD_WIDTH]; /* each lane's next multiply (multiplies are not in e[]) */
  unsigned mma_line[ENC_SG_MMA];    /* MSL line of each multiply of the batch */
  void* scratch;                    /* the batch's operands (matrix.h's layout), scratch_size bytes */
  unsigned long scratch_size;
  EncSgEntry e[ENC_SG_LOG];
} EncSgLog;

/* The last ENC_FIBER_TOP bytes of every fiber stack: who runs on it. Fiber stacks are fiber_stack_align
 * bytes (a power of two) aligned to that size, so kernel code finds this from any address of its stack. */
#define ENC_FIBER_TOP 64
typedef struct EncFiberTop {
  EncSgLog* sg;   /* the fiber's SIMD-group log */
  unsigned lane;  /* thread_index_in_simdgroup */
  unsigned reserved;
} EncFiberTop;

/* Services the runtime offers to kernel code (barriers, SIMD exchange, threadgroup memory). */
typedef struct EncRuntimeApi {
  unsigned abi_version;
  void (*barrier)(unsigned kind, unsigned flags, const char* what, unsigned line);
  /* Blocks until the lanes of this SIMD group that reach a SIMD call together have all arrived. */
  const EncSimdSnapshot* (*simd_exchange)(const void* data, unsigned nbytes, const char* what, unsigned line,
                                          int require_all, unsigned* my_lane);
  void* (*threadgroup_static)(unsigned slot, unsigned long size, unsigned long align, const char* name);
  void (*fail)(const char* message, unsigned line);
  /* Debug mode: a read (is_write = 0) or write (1; 2: of the value the bytes already hold) of n bytes of
   * threadgroup memory through variable `name`. */
  void (*tg_access)(const void* base, const void* addr, unsigned long n, int is_write, const char* name);
  /* The calling thread's builtins (tensor operations need their index within the execution scope). */
  const EncThread* (*current_thread)(void);
  /* Checked builds: an access of n bytes at addr (alignment `align`) failed the inline check against
   * `arg`. Returns when the access is in fact allowed (an element of a strided view); otherwise the
   * launch fails with a message naming kernel, program, thread, argument, element and line, and the
   * thread is abandoned (never returns). */
  void (*check_access)(const EncArg* arg, const void* addr, unsigned long n, unsigned long align, unsigned kind,
                       unsigned line);
  /* Checked builds: a [[buffer(i)]] reference parameter needs `n` bytes. */
  void (*check_ref)(const EncArg* arg, unsigned long n, const char* type);
  /* The calling thread's SIMD-group log (fibers only), its scratch at least scratch_bytes long; *lane
   * receives the caller's lane. */
  EncSgLog* (*sg_log)(unsigned long scratch_bytes, unsigned* lane);
  unsigned long fiber_stack_align; /* see EncFiberTop */
  /* Checked builds: int32 arithmetic feeding a pointer offset, `a op b` with op one of + - * <, gave a
   * result outside int32; the launch fails naming kernel, program, thread, values and line (never returns). */
  void (*offset_overflow)(char op, long a, long b, unsigned line);
  /* Checked builds: the live allocation (an enceladus.Tensor's memory, registered by the Python side) that
   * holds `address`, one past its end included, or null for memory Enceladus does not know. */
  const EncArg* (*live_allocation)(unsigned long address);
  /* Debug mode, compiler-generated kernels: a read (is_write = 0) or write (1) of n bytes of device memory at
   * addr, for the device-memory race check (a read of bytes another thread of the threadgroup wrote, or a write
   * of bytes another thread read or wrote, with no threadgroup_barrier(mem_device) between them). */
  void (*device_access)(const void* addr, unsigned long n, int is_write, unsigned line);
  /* Whether the dispatch in flight tracks device-memory races (set per launch; kernel code tests it before
   * calling device_access, so that debug launches without it pay one load and a branch per access). */
  int device_races;
} EncRuntimeApi;

/* Debug mode (ENCELADUS_DEBUG): faults in kernel code are reported; race_check: threadgroup-memory
 * accesses are tracked (kernels built with race.h). */
typedef struct EncDebug {
  int race_check;
  int device_races; /* ENCELADUS_DEBUG_DEVICE_RACES=1: also device-memory races (compiler-generated kernels) */
} EncDebug;

/* One dispatch, filled by the Python side (ctypes/struct mirror in library.py). The first part is
 * constant per kernel; groups..buffers change per launch; `args_size` bytes of packed scalars follow
 * the struct and are bound to [[buffer(args_slot)]]. */
typedef struct EncLaunch {
  EncThreadFn fn;
  const char* kernel_name;
  unsigned tptg[3];        /* nominal threads per threadgroup */
  int use_fibers;          /* 0: plain loop per group (no barriers or SIMD calls in the kernel); 1: fibers;
                              2: plain loop inside the kernel library: fn is enceladus_group_NAME, called once
                              per group with the builtins of thread (0,0,0), which it moves to each thread */
  unsigned n_tg_params;
  unsigned args_slot;      /* ENC_NO_ARGS_SLOT: none */
  unsigned long args_size;
  unsigned long tg_param_sizes[ENC_MAX_BUFFERS]; /* bytes for [[threadgroup(i)]] parameters */
  unsigned long tg_limit;  /* threadgroup memory limit in bytes (32 KB) */
  const EncDebug* debug;   /* null unless debug mode */
  const char* const* names; /* [[buffer(i)]] parameter names (checked builds' messages) */
  const char* const* tg_names; /* [[threadgroup(i)]] parameter names */
  unsigned long timeout_ms; /* 0: no limit; else the launch fails after this long */
  unsigned groups[3];      /* threadgroups per grid */
  unsigned gsize[3];       /* grid size in threads; edge groups are partial when not a multiple */
  void* buffers[ENC_MAX_BUFFERS];
  EncExtent extents[ENC_MAX_BUFFERS];
} EncLaunch;

/* ENC_BARRIER_SCOPE: a tensor operation with execution_simdgroups<N>: every thread of the
 * threadgroup must arrive (threads that returned make it an error, unlike threadgroup_barrier). */
enum { ENC_BARRIER_THREADGROUP = 0, ENC_BARRIER_SIMDGROUP = 1, ENC_BARRIER_SCOPE = 2 };
#ifdef __cplusplus
}
#endif
#endif
