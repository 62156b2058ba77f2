"""MSL of the ``libdevice`` functions Metal has no form of: directed rounding, conversions with a rounding mode,
bit functions. Emitted once (helper ``enc_libdevice``) into kernels that call one (``enc_ld_<name>``).

Directed rounding is exact: the operation is carried out on the integer significands (the product in 48 bits,
the sum aligned in 64 bits with a sticky bit, the quotient and square root by integer division and root with
the remainder as sticky bit) and rounded once by ``enc_ld_round`` in the requested mode, subnormals and
overflow included. Rounding modes: 0 to nearest even, 1 toward zero, 2 down, 3 up.
"""

from __future__ import annotations

MODES = {"rn": 0, "rz": 1, "rd": 2, "ru": 3}

LIBDEVICE_MSL = r"""// libdevice functions without a Metal form. Modes: 0 nearest even, 1 toward zero, 2 down, 3 up.
// (-1)^neg * (m + a fraction in (0, 1) if sticky) * 2^e, rounded once to float. When sticky is set, m has
// at least 26 significant bits, so the fraction lies below the rounding position.
static inline float enc_ld_round(bool neg, ulong m, int e, bool sticky, int mode) {
    const uint sign = neg ? 0x80000000u : 0u;
    if (m == 0ul && !sticky) return as_type<float>(sign);
    const int E = e + 63 - int(clz(m));          // value in [2^E, 2^(E+1))
    int lsb = max(E - 23, -149);                 // exponent of the result's last bit
    const int shift = lsb - e;
    ulong q = 0ul, rem = 0ul, half = 0ul;
    if (shift <= 0) {
        q = m << uint(-shift);
    } else if (shift < 64) {
        q = m >> uint(shift);
        rem = m & ((1ul << uint(shift)) - 1ul);
        half = 1ul << uint(shift - 1);
    } else {
        rem = m;                                 // all of m is below the last bit
        half = shift == 64 ? (1ul << 63) : 0ul;
        if (shift > 64) { rem = 1ul; half = 2ul; } // below half, inexact
    }
    const bool inexact = rem != 0ul || sticky;
    const bool up_dir = (mode == 3 && !neg) || (mode == 2 && neg);  // rounds the magnitude up
    bool up = false;
    if (mode == 0) up = rem > half || (rem == half && half != 0ul && (sticky || (q & 1ul) != 0ul));
    else if (up_dir) up = inexact;
    q += up ? 1ul : 0ul;
    if (q == (1ul << 24)) { q >>= 1; lsb += 1; }
    if (q >= (1ul << 23)) {
        const int biased = lsb + 150;
        if (biased >= 255) return as_type<float>(sign | ((mode == 0 || up_dir) ? 0x7F800000u : 0x7F7FFFFFu));
        return as_type<float>(sign | (uint(biased) << 23) | (uint(q) & 0x7FFFFFu));
    }
    return as_type<float>(sign | uint(q));       // subnormal (lsb == -149)
}
// |x| = m * 2^e with m < 2^24 (finite x)
static inline ulong enc_ld_split(float x, thread int& e) {
    const uint b = as_type<uint>(x);
    const uint ex = (b >> 23) & 0xFFu;
    e = ex == 0u ? -149 : int(ex) - 150;
    return ulong(b & 0x7FFFFFu) | (ex == 0u ? 0ul : 0x800000ul);
}
static inline bool enc_ld_special(float x) { return isnan(x) || isinf(x) || x == 0.0f; }
// (-1)^na ma 2^ea + (-1)^nb mb 2^eb (ma, mb < 2^49, not both zero), rounded once
static inline float enc_ld_sum(bool na, ulong ma, int ea, bool nb, ulong mb, int eb, int mode) {
    if (ma == 0ul) return enc_ld_round(nb, mb, eb, false, mode);
    if (mb == 0ul) return enc_ld_round(na, ma, ea, false, mode);
    const int ta = ea + 63 - int(clz(ma)), tb = eb + 63 - int(clz(mb));
    if (ta < tb) {                                 // the larger top bit first
        bool n = na; na = nb; nb = n; ulong m = ma; ma = mb; mb = m; int x = ea; ea = eb; eb = x;
    }
    const int up = 61 - (63 - int(clz(ma)));
    ma <<= uint(up); ea -= up;                   // the larger one at bit 61
    const int d = eb - ea;
    bool sticky = false;
    if (d >= 0) { mb <<= uint(d); }
    else if (d > -64) { sticky = (mb & ((1ul << uint(-d)) - 1ul)) != 0ul; mb >>= uint(-d); }
    else { sticky = true; mb = 0ul; }
    ulong m;
    if (na == nb) m = ma + mb;
    else {
        if (mb > ma) { bool n = na; na = nb; nb = n; ulong t = ma; ma = mb; mb = t; }  // same top bit (no sticky)
        m = ma - mb - (sticky ? 1ul : 0ul);
    }
    if (m == 0ul && !sticky) return mode == 2 ? -0.0f : 0.0f;   // exact cancellation
    return enc_ld_round(na, m, ea, sticky, mode);
}
static inline float enc_ld_add(float a, float b, int mode) {
    if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) return a + b;
    if (a == 0.0f && b == 0.0f) {
        const bool na = signbit(a), nb = signbit(b);
        return (na == nb) ? a : (mode == 2 ? -0.0f : 0.0f);
    }
    int ea, eb;
    const ulong ma = enc_ld_split(a, ea), mb = enc_ld_split(b, eb);
    return enc_ld_sum(signbit(a), ma, ea, signbit(b), mb, eb, mode);
}
static inline float enc_ld_mul(float a, float b, int mode) {
    if (enc_ld_special(a) || enc_ld_special(b)) return a * b;
    int ea, eb;
    const ulong ma = enc_ld_split(a, ea), mb = enc_ld_split(b, eb);
    return enc_ld_round(signbit(a) != signbit(b), ma * mb, ea + eb, false, mode);
}
static inline float enc_ld_fma(float a, float b, float c, int mode) {
    if (isnan(a) || isnan(b) || isnan(c) || isinf(a) || isinf(b) || isinf(c)) return fma(a, b, c);
    if (a == 0.0f || b == 0.0f) return enc_ld_add(a * b, c, mode);  // the product is an exact signed zero
    if (c == 0.0f) return enc_ld_mul(a, b, mode);
    int ea, eb, ec;
    const ulong ma = enc_ld_split(a, ea), mb = enc_ld_split(b, eb), mc = enc_ld_split(c, ec);
    return enc_ld_sum(signbit(a) != signbit(b), ma * mb, ea + eb, signbit(c), mc, ec, mode);
}
static inline ulong enc_ld_norm(float x, thread int& e) {  // |x| = m * 2^e with m in [2^23, 2^24)
    ulong m = enc_ld_split(x, e);
    const int s = int(clz(m)) - 40;
    e -= s;
    return m << uint(s);
}
static inline float enc_ld_div(float a, float b, int mode) {
    if (enc_ld_special(a) || enc_ld_special(b)) return a / b;
    int ea, eb;
    const ulong ma = enc_ld_norm(a, ea), mb = enc_ld_norm(b, eb);
    const ulong n = ma << 40;
    return enc_ld_round(signbit(a) != signbit(b), n / mb, ea - eb - 40, (n % mb) != 0ul, mode);
}
static inline float enc_ld_sqrt(float a, int mode) {
    if (isnan(a) || a <= 0.0f || isinf(a)) return sqrt(a);
    int e;
    ulong m = enc_ld_norm(a, e);
    if ((e & 1) != 0) { m <<= 1; e -= 1; }
    m <<= 38; e -= 38;                            // m in [2^61, 2^63), e even
    ulong r = ulong(sqrt(float(m)));
    r = (r + m / r) >> 1;
    while (r * r > m) r -= 1ul;
    while ((r + 1ul) * (r + 1ul) <= m) r += 1ul;
    return enc_ld_round(false, r, e / 2, r * r != m, mode);
}
// float -> integer with a rounding mode; NaN gives 0, out-of-range values saturate (as CUDA's cvt)
static inline float enc_ld_rint_mode(float x, int mode) {
    return mode == 0 ? rint(x) : (mode == 1 ? trunc(x) : (mode == 2 ? floor(x) : ceil(x)));
}
static inline int enc_ld_f2i(float x, int mode) {
    const float r = enc_ld_rint_mode(x, mode);
    if (isnan(r)) return 0;
    if (r >= 2147483648.0f) return 2147483647;
    if (r < -2147483648.0f) return int(0x80000000u);
    return int(r);
}
static inline int enc_ld_f2u(float x, int mode) {
    const float r = enc_ld_rint_mode(x, mode);
    if (isnan(r) || r <= 0.0f) return 0;
    if (r >= 4294967296.0f) return int(0xFFFFFFFFu);
    return as_type<int>(uint(r));
}
static inline long enc_ld_f2ll(float x, int mode) {
    const float r = enc_ld_rint_mode(x, mode);
    if (isnan(r)) return long(0);
    if (r >= 9223372036854775808.0f) return long(0x7FFFFFFFFFFFFFFFul);
    if (r < -9223372036854775808.0f) return as_type<long>(0x8000000000000000ul);
    return long(r);
}
static inline long enc_ld_f2ull(float x, int mode) {
    const float r = enc_ld_rint_mode(x, mode);
    if (isnan(r) || r <= 0.0f) return long(0);
    if (r >= 18446744073709551616.0f) return as_type<long>(0xFFFFFFFFFFFFFFFFul);
    return as_type<long>(ulong(r));
}
static inline float enc_ld_i2f(long v, int mode) {
    const bool neg = v < long(0);
    return enc_ld_round(neg, neg ? 0ul - as_type<ulong>(v) : ulong(v), 0, false, mode);
}
static inline float enc_ld_u2f(ulong v, int mode) { return enc_ld_round(false, v, 0, false, mode); }
// bits
static inline uint enc_ld_brev(uint x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
    x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
    return (x >> 16) | (x << 16);
}
static inline int enc_ld_brev(int x) { return as_type<int>(enc_ld_brev(as_type<uint>(x))); }
static inline long enc_ld_brev(long x) {
    const ulong u = as_type<ulong>(x);
    return as_type<long>((ulong(enc_ld_brev(uint(u))) << 32) | ulong(enc_ld_brev(uint(u >> 32))));
}
static inline int enc_ld_clz(int x) { return int(clz(as_type<uint>(x))); }
static inline int enc_ld_clz(long x) { return int(clz(as_type<ulong>(x))); }
static inline int enc_ld_popc(int x) { return int(popcount(as_type<uint>(x))); }
static inline int enc_ld_popc(long x) { return int(popcount(as_type<ulong>(x))); }
static inline int enc_ld_ffs(int x) { return x == 0 ? 0 : int(ctz(as_type<uint>(x))) + 1; }
static inline int enc_ld_ffs(long x) { return x == long(0) ? 0 : int(ctz(as_type<ulong>(x))) + 1; }
static inline int enc_ld_mul24(int a, int b) {
    const int x = as_type<int>(as_type<uint>(a) << 8) >> 8, y = as_type<int>(as_type<uint>(b) << 8) >> 8;
    return as_type<int>(uint(as_type<ulong>(long(x) * long(y))));
}
static inline uint enc_ld_mul24(uint a, uint b) { return uint((ulong(a & 0xFFFFFFu) * ulong(b & 0xFFFFFFu))); }
static inline int enc_ld_hadd(int a, int b) { return int((long(a) + long(b)) >> 1); }
static inline uint enc_ld_hadd(uint a, uint b) { return uint((ulong(a) + ulong(b)) >> 1); }
static inline int enc_ld_rhadd(int a, int b) { return int((long(a) + long(b) + long(1)) >> 1); }
static inline uint enc_ld_rhadd(uint a, uint b) { return uint((ulong(a) + ulong(b) + 1ul) >> 1); }
static inline int enc_ld_sad(int a, int b, uint c) {
    const uint d = a > b ? as_type<uint>(a) - as_type<uint>(b) : as_type<uint>(b) - as_type<uint>(a);
    return as_type<int>(d + c);
}
static inline uint enc_ld_sad(uint a, uint b, uint c) { return (a > b ? a - b : b - a) + c; }
static inline int enc_ld_byte_perm(int x, int y, int s) {
    const ulong both = (ulong(as_type<uint>(y)) << 32) | ulong(as_type<uint>(x));
    uint r = 0u;
    for (uint i = 0u; i < 4u; ++i) r |= uint((both >> (8u * ((as_type<uint>(s) >> (4u * i)) & 7u))) & 0xFFul) << (8u * i);
    return as_type<int>(r);
}
// float functions
static inline float enc_ld_nextafter(float x, float y) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == y) return y;
    if (x == 0.0f) return as_type<float>((signbit(y) ? 0x80000000u : 0u) | 1u);
    const uint b = as_type<uint>(x);
    return as_type<float>(((x < y) == (x > 0.0f)) ? b + 1u : b - 1u);
}
static inline float enc_ld_ldexp(float x, int n) {
    if (enc_ld_special(x)) return x;
    int e;
    const ulong m = enc_ld_split(x, e);
    return enc_ld_round(signbit(x), m, e + clamp(n, -400, 400), false, 0);
}
static inline int enc_ld_ilogb(float x) {
    if (isnan(x) || x == 0.0f) return int(0x80000000u);
    if (isinf(x)) return 2147483647;
    int e;
    const ulong m = enc_ld_split(x, e);
    return e + 63 - int(clz(m));
}
static inline float enc_ld_logb(float x) {
    if (isnan(x)) return x;
    if (isinf(x)) return INFINITY;
    if (x == 0.0f) return -INFINITY;
    return float(enc_ld_ilogb(x));
}
static inline float enc_ld_remainder(float x, float y) {
    float r = fmod(x, y);                         // exact, |r| < |y|, the sign of x
    if (isnan(r) || isinf(y) || r == 0.0f) return r;
    const float ar = fabs(r), ay = fabs(y);
    const float rest = ay - ar;                   // exact when ar >= ay / 2
    bool odd;                                     // the parity of trunc(x / y)
    if (ay > 1.7014117e38f) odd = fabs(x) >= ay;
    else odd = fabs(fmod(x, 2.0f * y)) >= ay;
    if (ar > rest || (ar == rest && odd)) r = r > 0.0f ? r - ay : r + ay;
    return r;
}
static inline float enc_ld_fdim(float x, float y) {
    if (isnan(x) || isnan(y)) return x + y;
    return x > y ? x - y : 0.0f;
}
static inline float enc_ld_saturatef(float x) { return isnan(x) ? 0.0f : clamp(x, 0.0f, 1.0f); }
static inline float enc_ld_sinpi(float x) {
    if (isinf(x) || isnan(x)) return x - x;
    float r = x - 2.0f * rint(0.5f * x);          // exact, in [-1, 1]
    if (r == 0.0f) return x * 0.0f;               // the sign of x
    if (r > 0.5f) r = 1.0f - r; else if (r < -0.5f) r = -1.0f - r;
    return precise::sin(r * 3.14159265358979323846f);
}
static inline float enc_ld_cospi(float x) {
    if (isinf(x) || isnan(x)) return x - x;
    float r = fabs(x - 2.0f * rint(0.5f * x));    // in [0, 1]
    if (r == 0.5f) return 0.0f;
    return r < 0.5f ? precise::cos(r * 3.14159265358979323846f) : -precise::cos((1.0f - r) * 3.14159265358979323846f);
}
static inline float enc_ld_norm3d(float a, float b, float c) {
    a = fabs(a); b = fabs(b); c = fabs(c);
    if (isinf(a) || isinf(b) || isinf(c)) return INFINITY;
    const float m = max(max(a, b), c);
    if (m == 0.0f || isnan(m)) return m + a + b + c;
    a /= m; b /= m; c /= m;
    return m * precise::sqrt(a * a + b * b + c * c);
}
static inline float enc_ld_norm4d(float a, float b, float c, float d) {
    a = fabs(a); b = fabs(b); c = fabs(c); d = fabs(d);
    if (isinf(a) || isinf(b) || isinf(c) || isinf(d)) return INFINITY;
    const float m = max(max(a, b), max(c, d));
    if (m == 0.0f || isnan(m)) return m + a + b + c + d;
    a /= m; b /= m; c /= m; d /= m;
    return m * precise::sqrt(a * a + b * b + c * c + d * d);
}
"""

# erfinv, erfcinv, erfcx, normcdf(inv), gamma functions, Bessel I0/I1 and rsqrt_rn (uses enc_erf, enc_libdevice)
LIBDEVICE_SPECIAL_MSL = r"""// 1 / sqrt(a) correctly rounded: a candidate, moved until the exact result lies between its midpoints.
// enc_ld_cmp_mid: the sign of M^2 * 2^(2 eM) * a - 1, exactly (M < 2^26, a > 0 finite).
static inline int enc_ld_cmp_mid(ulong M, int eM, float a) {
    int ea;
    const ulong ma = enc_ld_split(a, ea);
    const ulong P = M * M;
    const ulong hi = mulhi(P, ma), lo = P * ma;
    const int t = -(2 * eM + ea);
    const int top = hi != 0ul ? 127 - int(clz(hi)) : 63 - int(clz(lo));  // the highest set bit of hi:lo
    if (top != t) return top > t ? 1 : -1;
    return (popcount(hi) + popcount(lo)) == 1ul ? 0 : 1;
}
static inline float enc_ld_rsqrt_rn(float a) {
    if (isnan(a) || a < 0.0f) return NAN;
    if (a == 0.0f) return signbit(a) ? -INFINITY : INFINITY;
    if (isinf(a)) return 0.0f;
    float c = 1.0f / sqrt(a);
    for (int i = 0; i < 4; ++i) {
        int e;
        const ulong m = enc_ld_split(c, e);
        if (enc_ld_cmp_mid(2ul * m + 1ul, e - 1, a) < 0) { c = as_type<float>(as_type<uint>(c) + 1u); continue; }
        const bool pow2 = m == 0x800000ul;
        const bool below = pow2 ? enc_ld_cmp_mid(4ul * m - 1ul, e - 2, a) > 0 : enc_ld_cmp_mid(2ul * m - 1ul, e - 1, a) > 0;
        if (below) { c = as_type<float>(as_type<uint>(c) - 1u); continue; }
        break;
    }
    return c;
}
// exp(x*x) * erfc(x), without overflow or underflow: a continued fraction from x = 2 on
static inline float enc_ld_erfcx_pos(float x) {
    if (x < 2.0f) return precise::exp(x * x) * enc_erfc(x);
    if (isinf(x)) return 0.0f;
    float t = x;
    for (int k = 24; k >= 1; --k) t = x + (0.5f * float(k)) / t;
    return 0.5641895835477563f / t;  // 1 / (sqrt(pi) * t)
}
static inline float enc_ld_erfcx(float x) {
    if (isnan(x)) return x;
    if (x >= 0.0f) return enc_ld_erfcx_pos(x);
    if (x < -9.3f) return INFINITY;
    const float h = x * x, l = fma(x, x, -h);  // x*x == h + l exactly
    return 2.0f * precise::exp(h) * (1.0f + l) - enc_ld_erfcx_pos(-x);
}
// erfcinv for z in (0, 0.5]: Newton's method on log(erfc(x)) = log(erfcx(x)) - x*x, from an asymptotic start
static inline float enc_ld_erfcinv_tail(float z) {
    const float w = -precise::log(z);
    float x = precise::sqrt(w);
    for (int i = 0; i < 2; ++i) x = precise::sqrt(max(w - precise::log(1.7724538509f * x), 0.01f));
    for (int i = 0; i < 5; ++i) {
        const float ex = enc_ld_erfcx(x);
        const float h = x * x, l = fma(x, x, -h);
        const float g = precise::log(ex) - h - l + w;  // log(erfc(x)) - log(z)
        x += g * ex * 0.886226925452758f;               // g / (2 / sqrt(pi) / erfcx(x))
    }
    return x;
}
// erfinv for |y| <= 0.5: Newton's method on erf
static inline float enc_ld_erfinv_mid(float y) {
    float x = y * 0.886226925f * (1.0f + 0.2617993878f * y * y);
    for (int i = 0; i < 4; ++i) x -= (enc_erf(x) - y) * precise::exp(x * x) * 0.886226925452758f;
    return x;
}
static inline float enc_ld_erfcinv(float z) {
    if (isnan(z) || z < 0.0f || z > 2.0f) return NAN;
    if (z == 0.0f) return INFINITY;
    if (z == 2.0f) return -INFINITY;
    if (z < 0.5f) return enc_ld_erfcinv_tail(z);
    if (z > 1.5f) return -enc_ld_erfcinv_tail(2.0f - z);
    return enc_ld_erfinv_mid(1.0f - z);  // exact: 1 - z
}
static inline float enc_ld_erfinv(float y) {
    if (isnan(y) || fabs(y) > 1.0f) return NAN;
    if (fabs(y) == 1.0f) return copysign(INFINITY, y);
    if (fabs(y) > 0.5f) return copysign(enc_ld_erfcinv_tail(1.0f - fabs(y)), y);
    return enc_ld_erfinv_mid(y);
}
static inline float enc_ld_normcdf(float x) {
    if (isnan(x)) return x;
    if (isinf(x)) return x > 0.0f ? 1.0f : 0.0f;
    if (x >= -1.0f) return 0.5f * enc_erfc(-x * 0.70710678118654752f);
    const float h = x * x, l = fma(x, x, -h);  // exp(-x*x/2) from the exact square
    return 0.5f * enc_ld_erfcx_pos(-x * 0.70710678118654752f) * precise::exp(-0.5f * h) * (1.0f - 0.5f * l);
}
static inline float enc_ld_normcdfinv(float p) { return -1.41421356237309505f * enc_ld_erfcinv(2.0f * p); }
// Gamma. lgamma(2 + z), |z| <= 1/2, by its Taylor series (1 - euler_gamma) z + sum over k >= 2 of
// (-1)^k (zeta(k) - 1) / k z^k, to k = 14
// (the next term is below 3e-10 of the result): accurate relative to the result where lgamma vanishes (x = 1, 2),
// with no log of a value near 1 and no pow (Apple allows precise::pow 16 ulp).
static inline float enc_ld_lgamma2(float z) {
    float s = 4.374866789907486e-06f;
    s = fma(s, z, -9.439488275268395e-06f);
    s = fma(s, z, 2.0507212775670674e-05f);
    s = fma(s, z, -4.492623673813315e-05f);
    s = fma(s, z, 9.945751278180861e-05f);
    s = fma(s, z, -0.00022315475845357936f);
    s = fma(s, z, 0.0005096695247430426f);
    s = fma(s, z, -0.00119275391170326f);
    s = fma(s, z, 0.002890510330741523f);
    s = fma(s, z, -0.007385551028673986f);
    s = fma(s, z, 0.020580808427784526f);
    s = fma(s, z, -0.06735230105319737f);
    s = fma(s, z, 0.3224670334241132f);
    s = fma(s, z, 0.42278433509846713f);
    return s * z;
}
// Stirling's correction to log(Gamma) from x >= 10: 1/(12x) - 1/(360x^3) + 1/(1260x^5)
static inline float enc_ld_stirling(float x) {
    const float r = 1.0f / x, r2 = r * r;
    return r * (0.0833333333f - r2 * (0.00277777778f - r2 * 0.000793650794f));
}
// Gamma(x), 0.5 <= x: x < 1.5 from Gamma(x + 1) / x; above, Gamma(y) for y = x - n in [1.5, 2.5) times
// y (y + 1) ... (x - 1), smallest factor first so no partial product overflows before the result does
// (every y + k is exact: x - n and its successors lie on x's grid)
static inline float enc_ld_tgamma_pos(float x) {
    if (x > 35.1f) return INFINITY;
    if (x < 1.5f) return precise::exp(enc_ld_lgamma2(x - 1.0f)) / x;  // x - 1 exact (Sterbenz)
    float y = x;
    while (y >= 2.5f) y -= 1.0f;
    float g = precise::exp(enc_ld_lgamma2(y - 2.0f));
    for (float t = y; t < x; t += 1.0f) g *= t;
    return g;
}
static inline float enc_ld_tgamma(float x) {
    if (isnan(x) || x == INFINITY) return x;
    if (x == 0.0f) return copysign(INFINITY, x);
    if (x < 0.0f && (isinf(x) || x == floor(x))) return NAN;
    if (x >= 0.5f) return enc_ld_tgamma_pos(x);
    if (x < -42.0f) return copysign(0.0f, enc_ld_sinpi(x)) * -1.0f;
    const float s = enc_ld_sinpi(x);
    const float g = enc_ld_tgamma_pos(1.0f - x);
    return 3.14159265358979323846f / (s * g);  // Euler's reflection
}
// log(Gamma(x)), x > 0: below 2.5 by the series (1/2 <= x < 3/2 through Gamma(x + 1) / x, x < 1/2 through
// Gamma(x + 2) / (x (x + 1))); to 10 as log((x - 1) ... y) + lgamma(y), y in [1.5, 2.5); Stirling above
static inline float enc_ld_lgamma_pos(float x) {
    if (x < 0.5f) return enc_ld_lgamma2(x) - precise::log(x * (1.0f + x));
    if (x < 1.5f) return enc_ld_lgamma2(x - 1.0f) - precise::log(x);
    if (x < 10.0f) {
        float y = x, p = 1.0f;
        while (y >= 2.5f) { y -= 1.0f; p *= y; }
        return precise::log(p) + enc_ld_lgamma2(y - 2.0f);
    }
    return (x - 0.5f) * precise::log(x) - x + 0.9189385332046727f + enc_ld_stirling(x);
}
static inline float enc_ld_lgamma(float x) {
    if (isnan(x)) return x;
    if (isinf(x)) return INFINITY;
    if (x <= 0.0f && x == floor(x)) return INFINITY;
    if (x > 0.0f) return enc_ld_lgamma_pos(x);
    return precise::log(3.14159265358979323846f / fabs(enc_ld_sinpi(x))) - enc_ld_lgamma_pos(-x + 1.0f) + 0.0f;
}
// modified Bessel functions of the first kind: the power series to |x| = 15, the asymptotic series above
static inline float enc_ld_bessel_i(float x, int n) {  // n = 0 or 1
    const float ax = fabs(x);
    if (isnan(x)) return x;
    float r;
    if (ax <= 15.0f) {
        const float q = 0.25f * ax * ax;
        float term = n == 0 ? 1.0f : 0.5f * ax, sum = term;
        for (int k = 1; k < 60; ++k) {
            term *= q / (float(k) * float(k + n));
            sum += term;
            if (term < sum * 1e-9f) break;
        }
        r = sum;
    } else {
        if (ax > 92.0f) return n == 1 && x < 0.0f ? -INFINITY : INFINITY;
        const float mu = 4.0f * float(n * n), z = 8.0f * ax;
        float term = 1.0f, sum = 1.0f;
        for (int k = 1; k < 12; ++k) {
            const float odd = float(2 * k - 1);
            term *= -(mu - odd * odd) / (float(k) * z);
            sum += term;
        }
        const float h = precise::exp(0.5f * ax);
        r = h * (h * sum / precise::sqrt(6.283185307179586f * ax));
    }
    return (n == 1 && x < 0.0f) ? -r : r;
}
// Bessel functions of the first and second kind. x <= 25: Miller's backward recurrence normalised by
// J0 + 2 (J2 + J4 + ...) = 1, Y0 and Y1 from Neumann's series over the same J_k; x > 25: Hankel's asymptotic
// series with cos/sin of x itself (no rounding of x - phase); Y_n by forward recurrence, J_n forward while n < x.
static inline void enc_ld_miller(float x, int n, thread float& j0, thread float& j1, thread float& jn,
                                 thread float& s0, thread float& s1) {
    const float m = max(x, float(n));
    const int N = 2 * int((m + 16.0f + precise::sqrt(40.0f * m)) * 0.5f) + 2;
    float jp1 = 0.0f, j = 1e-30f, norm = 0.0f, a1 = 0.0f, an = 0.0f, sum0 = 0.0f, sum1 = 0.0f;
    for (int k = N; k >= 1; --k) {  // j holds J_k (not normalised)
        if (k == n) an = j;
        if (k == 1) a1 = j;
        if ((k & 1) == 0) {
            const int h = k / 2;
            norm += 2.0f * j;
            sum0 += ((h & 1) != 0 ? -j : j) / float(h);   // S0 = sum (-1)^h J_2h / h
        } else {
            const int hu = (k + 1) / 2, hd = (k - 1) / 2;  // S1 = sum (-1)^h (J_2h-1 - J_2h+1) / h
            float c = ((hu & 1) != 0 ? -1.0f : 1.0f) / float(hu);
            if (hd >= 1) c -= ((hd & 1) != 0 ? -1.0f : 1.0f) / float(hd);
            sum1 += c * j;
        }
        const float jm1 = (2.0f * float(k) / x) * j - jp1;
        jp1 = j;
        j = jm1;
        if (fabs(j) > 1e15f) {
            j *= 1e-15f; jp1 *= 1e-15f; norm *= 1e-15f; a1 *= 1e-15f; an *= 1e-15f; sum0 *= 1e-15f; sum1 *= 1e-15f;
        }
    }
    if (n == 0) an = j;
    norm += j;
    j0 = j / norm; j1 = a1 / norm; jn = an / norm; s0 = sum0 / norm; s1 = sum1 / norm;
}
static inline void enc_ld_hankel(float x, int nu, thread float& J, thread float& Y) {
    const float mu = 4.0f * float(nu * nu), z = 8.0f * x;
    float P = 1.0f, Q = 0.0f, a = 1.0f;
    for (int k = 1; k <= 8; ++k) {
        const float odd = float(2 * k - 1);
        a *= (mu - odd * odd) / (float(k) * z);
        if ((k & 1) != 0) Q += (((k - 1) / 2) & 1) != 0 ? -a : a;
        else P += ((k / 2) & 1) != 0 ? -a : a;
    }
    const float c = precise::cos(x), s = precise::sin(x);
    const float cc = nu == 0 ? (c + s) * 0.70710678118654752f : (s - c) * 0.70710678118654752f;  // cos(chi)
    const float ss = nu == 0 ? (s - c) * 0.70710678118654752f : -(s + c) * 0.70710678118654752f; // sin(chi)
    const float amp = precise::sqrt(0.63661977236758134f / x);
    J = amp * (P * cc - Q * ss);
    Y = amp * (P * ss + Q * cc);
}
static inline float enc_ld_bessel(int n, float x, bool second_kind) {
    if (isnan(x)) return x;
    float sign = 1.0f;
    if (n < 0) { n = -n; if ((n & 1) != 0) sign = -1.0f; }
    if (second_kind) {
        if (x < 0.0f) return NAN;
        if (x == 0.0f) return -INFINITY;
    } else if (x < 0.0f) {
        x = -x;
        if ((n & 1) != 0) sign = -sign;
    }
    if (isinf(x)) return 0.0f;
    float j0, j1, jn = 0.0f, y0, y1;
    const float l = precise::log(0.5f * x) + 0.57721566490153286f;  // log(x/2) + Euler's gamma
    if (x < 1e-4f) {  // two terms of the power series
        if (!second_kind) {
            if (x == 0.0f) return n == 0 ? 1.0f : 0.0f;
            float t = 1.0f;
            for (int k = 1; k <= n && t != 0.0f; ++k) t *= 0.5f * x / float(k);
            return sign * t * (1.0f - 0.25f * x * x / float(n + 1));
        }
        y0 = 0.63661977236758134f * l * (1.0f - 0.25f * x * x) + 0.15915494309189534f * x * x;
        y1 = -0.63661977236758134f / x + 0.31830988618379067f * x * (l - 0.5f);
    } else if (x > 25.0f) {
        enc_ld_hankel(x, 0, j0, y0);
        enc_ld_hankel(x, 1, j1, y1);
        if (!second_kind) {
            if (float(n) < x) {  // forward recurrence: stable while n < x
                float a = j0, b = j1;
                if (n == 0) return sign * a;
                for (int k = 1; k < n; ++k) { const float c = (2.0f * float(k) / x) * b - a; a = b; b = c; }
                return sign * b;
            }
            float s0, s1;
            enc_ld_miller(x, n, j0, j1, jn, s0, s1);
            return sign * jn;
        }
    } else {
        float s0, s1;
        enc_ld_miller(x, second_kind ? 0 : n, j0, j1, jn, s0, s1);
        if (!second_kind) return sign * jn;
        y0 = 0.63661977236758134f * (l * j0 - 2.0f * s0);
        y1 = 0.63661977236758134f * (-j0 / x + l * j1 + s1);
    }
    if (n == 0) return sign * y0;
    float a = y0, b = y1;
    for (int k = 1; k < n && !isinf(b); ++k) { const float c = (2.0f * float(k) / x) * b - a; a = b; b = c; }
    return sign * b;
}
"""


def _call_table() -> dict[str, str]:
    calls = {}
    for op, n in (("add", 2), ("sub", 2), ("mul", 2), ("div", 2), ("fma", 3), ("rcp", 1), ("sqrt", 1)):
        for m, code in MODES.items():
            args = ", ".join(f"{{{i}}}" for i in range(n))
            calls[f"{op}_{m}"] = {"sub": f"enc_ld_add({{0}}, -({{1}}), {code})", "rcp": f"enc_ld_div(1.0f, {{0}}, {code})",
                                  }.get(op, f"enc_ld_{op}({args}, {code})")
    for t, fn in (("int", "f2i"), ("uint", "f2u"), ("ll", "f2ll"), ("ull", "f2ull")):
        for m, code in MODES.items():
            calls[f"float2{t}_{m}"] = f"enc_ld_{fn}({{0}}, {code})"
    for t, fn in (("int", "i2f"), ("uint", "u2f"), ("ll", "i2f"), ("ull", "u2f")):
        for m, code in MODES.items():
            calls[f"{t}2float_{m}"] = f"enc_ld_{fn}({{0}}, {code})"
    for name in ("clz", "popc", "ffs", "brev", "mul24", "hadd", "rhadd", "sad", "byte_perm", "nextafter", "remainder",
                 "fdim", "ldexp", "ilogb", "logb", "saturatef", "sinpi", "cospi", "norm3d", "norm4d"):
        calls[name] = f"enc_ld_{name}(" + ", ".join(f"{{{i}}}" for i in range(_ARITY.get(name, 1))) + ")"
    calls.update({
        "mulhi": "mulhi({0}, {1})", "scalbn": "enc_ld_ldexp({0}, {1})", "finitef": "int(isfinite({0}))",
        "llrint": "enc_ld_f2ll({0}, 0)", "llround": "enc_ld_f2ll(round({0}), 1)", "rcbrt": "(1.0f / enc_cbrt({0}))",
        "rhypot": "(1.0f / enc_hypot({0}, {1}))", "rnorm3d": "(1.0f / enc_ld_norm3d({0}, {1}, {2}))",
        "rnorm4d": "(1.0f / enc_ld_norm4d({0}, {1}, {2}, {3}))", "rsqrt_rn": "enc_ld_rsqrt_rn({0})",
        "erfcx": "enc_ld_erfcx({0})", "erfinv": "enc_ld_erfinv({0})", "erfcinv": "enc_ld_erfcinv({0})",
        "normcdf": "enc_ld_normcdf({0})", "normcdfinv": "enc_ld_normcdfinv({0})", "tgamma": "enc_ld_tgamma({0})",
        "lgamma": "enc_ld_lgamma({0})", "cyl_bessel_i0": "enc_ld_bessel_i({0}, 0)",
        "cyl_bessel_i1": "enc_ld_bessel_i({0}, 1)", "j0": "enc_ld_bessel(0, {0}, false)",
        "j1": "enc_ld_bessel(1, {0}, false)", "y0": "enc_ld_bessel(0, {0}, true)", "y1": "enc_ld_bessel(1, {0}, true)",
        "jn": "enc_ld_bessel({0}, {1}, false)", "yn": "enc_ld_bessel({0}, {1}, true)",
    })
    return calls


_ARITY = {"mul24": 2, "hadd": 2, "rhadd": 2, "sad": 3, "byte_perm": 3, "nextafter": 2, "remainder": 2, "fdim": 2,
          "ldexp": 2, "norm3d": 3, "norm4d": 4}
CALLS = _call_table()
# helpers of codegen_msl/tables.py a call needs besides enc_libdevice
EXTRA_HELPERS = {"rcbrt": ("enc_extra",), "rhypot": ("enc_extra",),
                 **dict.fromkeys(("rsqrt_rn", "erfcx", "erfinv", "erfcinv", "normcdf", "normcdfinv", "tgamma", "lgamma",
                                  "cyl_bessel_i0", "cyl_bessel_i1", "j0", "j1", "y0", "y1", "jn", "yn"),
                                 ("enc_erf", "enc_libdevice_special"))}
