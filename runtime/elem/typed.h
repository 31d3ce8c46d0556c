/*
 * elem/typed.h - elementwise arithmetic on every ONNX element type vcc has, written once for both
 * targets: the CPU loops (cpu/typed.h) call these directly, the CUDA kernels (cuda/typed.cuh) from
 * device code. Pure C99, no I/O, no state.
 *
 * Training runs in float32 on the per-family kernels. The typed kernels are the forward forms of the ops
 * ONNX also defines on other element types (Add, Sub, Mul, Div, Pow, Clip, MaxPool, Pad), used where a
 * node's data are not float32: float64, int8/16/32/64, uint8/16/32/64, bool. An element is read into a
 * wide value, computed there and stored back in its type:
 *   - integers as int64 (uint64 as its bits): Add, Sub and Mul wrap modulo 2^bits (two's complement),
 *     as numpy's integer arithmetic; Div truncates toward zero (C, ONNX's reference `np.trunc`); a
 *     division by zero gives 0 (numpy: 0 with a warning);
 *   - floats as double: Add, Sub, Mul and Div of two float32 values rounded once to float32 are the
 *     float32 results (double has more than 2 * 24 + 2 bits), Pow is the double pow rounded once.
 * Pow's exponent may have another type than its base (ONNX Pow-12+: T and T1): with a float on either
 * side it is the double pow, stored in the base's type (truncated toward zero for an integer base, as
 * numpy's `astype`); two integers use exact integer powers, wrapping like numpy.
 */
#ifndef VCC_ELEM_TYPED_H
#define VCC_ELEM_TYPED_H

#include "base.h"
#include "binary.h"
#include "pad.h"
#include "pool.h"

/* The element types (the values of the compiler's VccDType, ir/ir.h). */
enum {
    VCC_ET_F32 = 1, VCC_ET_I64 = 2, VCC_ET_BOOL = 3, VCC_ET_I32 = 4, VCC_ET_F64 = 5, VCC_ET_I8 = 6,
    VCC_ET_I16 = 7, VCC_ET_U8 = 8, VCC_ET_U16 = 9, VCC_ET_U32 = 10, VCC_ET_U64 = 11
};

/* vcc_et_float: whether element type t is float32 or float64. */
VCC_HD int vcc_et_float(int t) { return t == VCC_ET_F32 || t == VCC_ET_F64; }

/* vcc_et_unsigned: whether integer type t is unsigned (bool counts as unsigned). */
VCC_HD int vcc_et_unsigned(int t)
{
    return t == VCC_ET_U8 || t == VCC_ET_U16 || t == VCC_ET_U32 || t == VCC_ET_U64 || t == VCC_ET_BOOL;
}

/* vcc_et_size: bytes per element of type t. */
VCC_HD int vcc_et_size(int t)
{
    switch (t) {
    case VCC_ET_I8: case VCC_ET_U8: case VCC_ET_BOOL: return 1;
    case VCC_ET_I16: case VCC_ET_U16: return 2;
    case VCC_ET_F32: case VCC_ET_I32: case VCC_ET_U32: return 4;
    default: return 8;
    }
}

/* vcc_et_geti: element i of p (type t, an integer or bool type) as int64, sign- or zero-extended (uint64:
 * its bits). */
VCC_HD int64_t vcc_et_geti(const void *p, int t, int64_t i)
{
    switch (t) {
    case VCC_ET_I8: return ((const int8_t *)p)[i];
    case VCC_ET_I16: return ((const int16_t *)p)[i];
    case VCC_ET_I32: return ((const int32_t *)p)[i];
    case VCC_ET_U8: return ((const uint8_t *)p)[i];
    case VCC_ET_BOOL: return ((const uint8_t *)p)[i] != 0;
    case VCC_ET_U16: return ((const uint16_t *)p)[i];
    case VCC_ET_U32: return ((const uint32_t *)p)[i];
    case VCC_ET_U64: return (int64_t)((const uint64_t *)p)[i];
    case VCC_ET_F32: return (int64_t)((const float *)p)[i];
    case VCC_ET_F64: return (int64_t)((const double *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}

/* vcc_et_getf: element i of p (type t) as double (exact but for 64-bit integers beyond 2^53). */
VCC_HD double vcc_et_getf(const void *p, int t, int64_t i)
{
    switch (t) {
    case VCC_ET_F32: return ((const float *)p)[i];
    case VCC_ET_F64: return ((const double *)p)[i];
    case VCC_ET_U64: return (double)((const uint64_t *)p)[i];
    default: return (double)vcc_et_geti(p, t, i);
    }
}

/* vcc_et_seti: store integer v as element i of p (type t): its low bits for an integer type, its truth
 * for bool, the nearest value for a float type. */
VCC_HD void vcc_et_seti(void *p, int t, int64_t i, int64_t v)
{
    const uint64_t u = (uint64_t)v;
    switch (t) {
    case VCC_ET_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)u; break;
    case VCC_ET_I16: ((int16_t *)p)[i] = (int16_t)(uint16_t)u; break;
    case VCC_ET_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)u; break;
    case VCC_ET_U8: ((uint8_t *)p)[i] = (uint8_t)u; break;
    case VCC_ET_BOOL: ((uint8_t *)p)[i] = u != 0; break;
    case VCC_ET_U16: ((uint16_t *)p)[i] = (uint16_t)u; break;
    case VCC_ET_U32: ((uint32_t *)p)[i] = (uint32_t)u; break;
    case VCC_ET_U64: ((uint64_t *)p)[i] = u; break;
    case VCC_ET_F32: ((float *)p)[i] = (float)v; break;
    case VCC_ET_F64: ((double *)p)[i] = (double)v; break;
    default: ((int64_t *)p)[i] = v; break;
    }
}

/* vcc_et_setf: store double v as element i of p (type t): rounded once for a float type; for an integer
 * type truncated toward zero and then wrapped to its bits (numpy's astype); NaN and values past +-2^63
 * store 0 (undefined in C and numpy alike). */
VCC_HD void vcc_et_setf(void *p, int t, int64_t i, double v)
{
    if (t == VCC_ET_F32) {
        ((float *)p)[i] = (float)v;
    } else if (t == VCC_ET_F64) {
        ((double *)p)[i] = v;
    } else if (t == VCC_ET_U64 && v >= 9223372036854775808.0 && v < 18446744073709551616.0) {
        ((uint64_t *)p)[i] = (uint64_t)v;
    } else {
        vcc_et_seti(p, t, i, v > -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : 0);
    }
}

/* vcc_ipow: x ** z for integers, wrapping modulo 2^64 (the store keeps the low bits): exact powers by
 * squaring; a negative exponent gives 1 / x ** -z truncated (1 for x = 1, +-1 for x = -1, else 0). */
VCC_HD int64_t vcc_ipow(int64_t x, int64_t z, int z_unsigned)
{
    uint64_t r = 1, b = (uint64_t)x, e = (uint64_t)z;
    if (!z_unsigned && z < 0) return x == 1 ? 1 : x == -1 ? ((z & 1) ? -1 : 1) : 0;
    while (e) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

/* vcc_typed_binary: y[i] (type ta) = op(a[ia] (type ta), b[ib] (type tb)), op a VCC_BIN_* (elem/binary.h);
 * tb == ta but for Pow. */
VCC_HD void vcc_typed_binary(int op, int ta, int tb, const void *a, int64_t ia, const void *b, int64_t ib,
                             void *y, int64_t i)
{
    if (vcc_et_float(ta) || vcc_et_float(tb)) {
        const double x = vcc_et_getf(a, ta, ia), z = vcc_et_getf(b, tb, ib);
        double r;
        switch (op) {
        case VCC_BIN_ADD: r = x + z; break;
        case VCC_BIN_SUB: r = x - z; break;
        case VCC_BIN_MUL: r = x * z; break;
        case VCC_BIN_DIV: r = x / z; break;
        default: r = pow(x, z); break;
        }
        vcc_et_setf(y, ta, i, r);
    } else {
        const int64_t x = vcc_et_geti(a, ta, ia), z = vcc_et_geti(b, tb, ib);
        const uint64_t ux = (uint64_t)x, uz = (uint64_t)z;
        int64_t r;
        switch (op) {
        case VCC_BIN_ADD: r = (int64_t)(ux + uz); break;
        case VCC_BIN_SUB: r = (int64_t)(ux - uz); break;
        case VCC_BIN_MUL: r = (int64_t)(ux * uz); break;
        case VCC_BIN_DIV:
            if (z == 0) r = 0;
            else if (ta == VCC_ET_U64) r = (int64_t)(ux / uz);
            else if (x == INT64_MIN && z == -1) r = x;
            else r = x / z;
            break;
        default: r = vcc_ipow(x, z, vcc_et_unsigned(tb)); break;
        }
        vcc_et_seti(y, ta, i, r);
    }
}

/* vcc_typed_less: whether a[ia] < b[jb], both of type t (floats: false when either is NaN). */
VCC_HD int vcc_typed_less(int t, const void *a, int64_t ia, const void *b, int64_t ib)
{
    if (vcc_et_float(t)) return vcc_et_getf(a, t, ia) < vcc_et_getf(b, t, ib);
    if (t == VCC_ET_U64) return (uint64_t)vcc_et_geti(a, t, ia) < (uint64_t)vcc_et_geti(b, t, ib);
    return vcc_et_geti(a, t, ia) < vcc_et_geti(b, t, ib);
}

/* vcc_typed_copy: element j of x into element i of y, both of type t (the bytes as they are). */
VCC_HD void vcc_typed_copy(int t, const void *x, int64_t j, void *y, int64_t i)
{
    const int s = vcc_et_size(t);
    const unsigned char *src = (const unsigned char *)x + j * s;
    unsigned char *dst = (unsigned char *)y + i * s;
    int k;
    for (k = 0; k < s; k++) dst[k] = src[k];
}

/* vcc_typed_clip: y[i] = x[i] clamped to [lo, hi] (ONNX Clip-11+; lo[0] and hi[0] are one element each
 * of type t, or NULL for no bound); a float NaN stays NaN. */
VCC_HD void vcc_typed_clip(int t, const void *x, const void *lo, const void *hi, void *y, int64_t i)
{
    if (lo && vcc_typed_less(t, x, i, lo, 0)) vcc_typed_copy(t, lo, 0, y, i);
    else if (hi && vcc_typed_less(t, hi, 0, x, i)) vcc_typed_copy(t, hi, 0, y, i);
    else vcc_typed_copy(t, x, i, y, i);
}

/* vcc_typed_maxpool: output o of plane p (x and y of type t, geometry d: elem/pool.h) = the max of its
 * window's taps in the input, ties to the first tap in window order, a NaN winning as in
 * vcc_pool_window; a window with no tap in the input gets the type's lowest value (-inf for floats). */
VCC_HD void vcc_typed_maxpool(int t, const VccPoolDesc *d, const void *x, void *y, int64_t p, int64_t o)
{
    const int64_t S = d->in[0] * d->in[1] * d->in[2], K = d->kernel[0] * d->kernel[1] * d->kernel[2];
    int64_t oc[3], s[3], j, arg = -1;
    int a;
    vcc_pool_coords(d->out, o, oc);
    for (a = 0; a < 3; a++) s[a] = oc[a] * d->stride[a] - d->pad_begin[a];
    for (j = 0; j < K; j++) {
        const int64_t idx = vcc_pool_tap(d, s, j);
        if (idx < 0) continue;
        if (arg < 0 || vcc_typed_less(t, x, p * S + arg, x, p * S + idx) ||
            (vcc_et_float(t) && vcc_et_getf(x, t, p * S + idx) != vcc_et_getf(x, t, p * S + idx)))
            arg = idx;
    }
    if (arg >= 0) vcc_typed_copy(t, x, p * S + arg, y, p * d->out[0] * d->out[1] * d->out[2] + o);
    else if (vcc_et_float(t)) vcc_et_setf(y, t, p * d->out[0] * d->out[1] * d->out[2] + o, -INFINITY);
    else vcc_et_seti(y, t, p * d->out[0] * d->out[1] * d->out[2] + o,
                     vcc_et_unsigned(t) ? 0 : -(int64_t)(((uint64_t)1 << (8 * vcc_et_size(t) - 1)) - 1) - 1);
}

/* vcc_typed_pad: y at flat index k (row-major over d->out; x and y of type t, elem/pad.h) = x at the
 * element it reads, or the constant: cbits, the value's bits in type t (an integer type: the value itself,
 * float64: its IEEE bit pattern). */
VCC_HD void vcc_typed_pad(int t, const VccPadDesc *d, const void *x, int64_t cbits, void *y, int64_t k)
{
    const int64_t src = vcc_pad_src_at(d, k);
    if (src >= 0) vcc_typed_copy(t, x, src, y, k);
    else if (t == VCC_ET_F64) vcc_typed_copy(t, &cbits, 0, y, k);
    else vcc_et_seti(y, t, k, cbits);
}

#endif /* VCC_ELEM_TYPED_H */
