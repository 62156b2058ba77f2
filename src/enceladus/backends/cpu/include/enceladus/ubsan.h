// UBSan mode (ENCELADUS_CPU_UBSAN=1): the handlers clang's -fsanitize=signed-integer-overflow,shift calls,
// implemented here on the runtime's error reporting instead of the sanitizer runtime library, so a report
// becomes the launch's error (kernel, threadgroup, MSL line) and the mode needs nothing but clang. Behaviour
// that MSL leaves undefined (signed overflow, MSL spec 4 §3.1) must not hide behind -fwrapv in the cpu twin.
// The handler ABI is compiler-rt's (ubsan_handlers.h): a source location, type descriptors, values inline.
#ifndef ENCELADUS_UBSAN_H
#define ENCELADUS_UBSAN_H
#include "sync.h"

namespace metal {
namespace __enc {
struct ubsan_location { const char* file; uint line; uint column; };
struct ubsan_type { ushort kind; ushort info; char name[1]; };  // name quoted: 'int'; info: log2(bits) << 1 | signed
struct ubsan_overflow { ubsan_location loc; const ubsan_type* type; };
struct ubsan_shift { ubsan_location loc; const ubsan_type* lhs_type; const ubsan_type* rhs_type; };

struct ubsan_text {
  char buf[320];
  unsigned n = 0;
  __ENC_INLINE void put(const char* s) { while (*s && n + 1 < sizeof buf) buf[n++] = *s++; buf[n] = 0; }
  __ENC_INLINE void num(const ubsan_type* t, ulong handle) {
    const unsigned bits = 1u << (t->info >> 1);
    const bool is_signed = (t->info & 1u) != 0;
    ulong v = bits >= 64 ? handle : (handle & ((1ul << bits) - 1ul));
    bool neg = false;
    if (is_signed && bits <= 64 && ((v >> (bits - 1)) & 1ul)) {
      neg = true;
      v = (bits >= 64 ? 0ul : (1ul << bits)) - v;  // magnitude (two's complement), computed unsigned
    }
    char d[24];
    int k = 0;
    do { d[k++] = char('0' + int(v % 10ul)); v /= 10ul; } while (v);
    if (neg) put("-");
    while (k) { char c[2] = {d[--k], 0}; put(c); }
  }
};

__ENC_INLINE void ubsan_report(const ubsan_location& loc, ubsan_text& t) {
  // lines of the kernel itself are reported by the runtime ("line N"); lines in our headers name the header
  const char* f = loc.file ? loc.file : "?";
  bool kernel_line = true;
  const char* k = "kernel.metal";
  for (unsigned i = 0; k[i] || f[i]; ++i) if (k[i] != f[i]) { kernel_line = false; break; }
  ubsan_text msg;
  msg.put("undefined behaviour in MSL (UBSan mode): ");
  msg.put(t.buf);
  if (!kernel_line) { msg.put(" [in "); msg.put(f); msg.put("]"); }
  rt->fail(msg.buf, kernel_line ? loc.line : 0u);
}

__ENC_INLINE void ubsan_arith(const ubsan_overflow* d, ulong a, ulong b, const char* op) {
  ubsan_text t;
  t.put("signed integer overflow: ");
  t.num(d->type, a); t.put(op); t.num(d->type, b);
  t.put(" cannot be represented in type "); t.put(d->type->name);
  ubsan_report(d->loc, t);
}
}  // namespace __enc
}  // namespace metal

extern "C" {
#define __ENC_UBSAN_ARITH(NAME, OP)                                                                      \
  void __ubsan_handle_##NAME(metal::__enc::ubsan_overflow* d, ulong a, ulong b) {                        \
    metal::__enc::ubsan_arith(d, a, b, OP);                                                              \
  }                                                                                                      \
  void __ubsan_handle_##NAME##_abort(metal::__enc::ubsan_overflow* d, ulong a, ulong b) {                \
    metal::__enc::ubsan_arith(d, a, b, OP);                                                              \
    __builtin_trap();                                                                                    \
  }
__ENC_UBSAN_ARITH(add_overflow, " + ")
__ENC_UBSAN_ARITH(sub_overflow, " - ")
__ENC_UBSAN_ARITH(mul_overflow, " * ")
__ENC_UBSAN_ARITH(divrem_overflow, " / ")
#undef __ENC_UBSAN_ARITH

void __ubsan_handle_negate_overflow(metal::__enc::ubsan_overflow* d, ulong v) {
  metal::__enc::ubsan_text t;
  t.put("signed integer overflow: negation of ");
  t.num(d->type, v);
  t.put(" cannot be represented in type "); t.put(d->type->name);
  metal::__enc::ubsan_report(d->loc, t);
}
void __ubsan_handle_negate_overflow_abort(metal::__enc::ubsan_overflow* d, ulong v) {
  __ubsan_handle_negate_overflow(d, v);
  __builtin_trap();
}
void __ubsan_handle_shift_out_of_bounds(metal::__enc::ubsan_shift* d, ulong a, ulong b) {
  metal::__enc::ubsan_text t;
  t.put("shift out of bounds: ");
  t.num(d->lhs_type, a); t.put(" << or >> "); t.num(d->rhs_type, b);
  t.put(" (type "); t.put(d->lhs_type->name);
  t.put(": the shift count must be below its width, and a signed left shift must not overflow)");
  metal::__enc::ubsan_report(d->loc, t);
}
void __ubsan_handle_shift_out_of_bounds_abort(metal::__enc::ubsan_shift* d, ulong a, ulong b) {
  __ubsan_handle_shift_out_of_bounds(d, a, b);
  __builtin_trap();
}
}
#endif
