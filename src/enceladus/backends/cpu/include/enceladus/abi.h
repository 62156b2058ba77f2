/* The binary interface between a kernel library (MSL + generated launcher) and the Enceladus cpu
 * runtime (thread pool, fibers). Plain C so that runtime.cpp and the kernel TU agree on layout.
 * Bump ENC_ABI_VERSION on any change: both sides check it when a kernel library is bound. */
#ifndef ENCELADUS_ABI_H
#define ENCELADUS_ABI_H
#define ENC_ABI_VERSION 5u
#define ENC_MAX_BUFFERS 31
#define ENC_SIMD_WIDTH 32
#define ENC_SIMD_SLOT 32 /* bytes a lane may contribute to one SIMD-group exchange */
#define ENC_MAX_ARGS_BYTES 4096 /* packed scalar bytes carried inline by a launch (Metal's setBytes limit) */
#define ENC_NO_ARGS_SLOT 0xffffffffu

#ifdef __cplusplus
extern "C" {
#endif
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
} EncThread;

typedef void (*EncThreadFn)(const EncThread*);

/* Result of a SIMD-group rendezvous: which lanes arrived together and what each contributed. */
typedef struct EncSimdSnapshot {
  unsigned active;                                   /* bit i: lane i took part */
  unsigned char data[ENC_SIMD_WIDTH][ENC_SIMD_SLOT];
} EncSimdSnapshot;

/* Services the runtime offers to kernel code (barriers, SIMD exchange, threadgroup memory). */
typedef struct EncRuntimeApi {
  unsigned abi_version;
  void (*barrier)(unsigned kind, unsigned flags, const char* what, unsigned line);
  /* Blocks until the lanes of this SIMD group that reach a SIMD call together have all arrived. */
  const EncSimdSnapshot* (*simd_exchange)(const void* data, unsigned nbytes, const char* what, unsigned line,
                                          int require_all, unsigned* my_lane);
  void* (*threadgroup_static)(unsigned slot, unsigned long size, unsigned long align, const char* name);
  void (*fail)(const char* message, unsigned line);
  /* Debug mode: a read (is_write = 0) or write of n bytes of threadgroup memory through variable `name`. */
  void (*tg_access)(const void* base, const void* addr, unsigned long n, int is_write, const char* name);
  /* The calling thread's builtins (tensor operations need their index within the execution scope). */
  const EncThread* (*current_thread)(void);
} EncRuntimeApi;

/* Debug mode: one buffer copied into a region with PROT_NONE guard pages on both sides. */
typedef struct EncGuard {
  unsigned long region_lo, region_hi; /* the whole mapping, guard pages included */
  unsigned long data_lo, data_hi;     /* the bytes that belong to the argument(s) */
  const char* name;                   /* argument name(s) for messages */
} EncGuard;

typedef struct EncDebug {
  unsigned n_guards;
  int race_check; /* track threadgroup-memory accesses (kernels built with ENC_RACE_CHECK) */
  const EncGuard* guards;
} EncDebug;

/* One dispatch, filled by the Python side (ctypes/struct mirror in library.py). The first part is
 * constant per kernel; groups..buffers change per launch; `args_size` bytes of packed scalars follow
 * the struct and are bound to [[buffer(args_slot)]]. */
typedef struct EncLaunch {
  EncThreadFn fn;
  const char* kernel_name;
  unsigned tptg[3];        /* nominal threads per threadgroup */
  int use_fibers;          /* 0: plain loop per group (no barriers or SIMD calls in the kernel) */
  unsigned n_tg_params;
  unsigned args_slot;      /* ENC_NO_ARGS_SLOT: none */
  unsigned long args_size;
  unsigned long tg_param_sizes[ENC_MAX_BUFFERS]; /* bytes for [[threadgroup(i)]] parameters */
  unsigned long tg_limit;  /* threadgroup memory limit in bytes (32 KB) */
  const EncDebug* debug;   /* null unless debug mode */
  unsigned groups[3];      /* threadgroups per grid */
  unsigned gsize[3];       /* grid size in threads; edge groups are partial when not a multiple */
  void* buffers[ENC_MAX_BUFFERS];
} EncLaunch;

/* ENC_BARRIER_SCOPE: a tensor operation with execution_simdgroups<N>: every thread of the
 * threadgroup must arrive (threads that returned make it an error, unlike threadgroup_barrier). */
enum { ENC_BARRIER_THREADGROUP = 0, ENC_BARRIER_SIMDGROUP = 1, ENC_BARRIER_SCOPE = 2 };
#ifdef __cplusplus
}
#endif
#endif
