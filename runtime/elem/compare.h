/*
 * elem/compare.h - the compare family's per-element bodies (Equal, Less, LessOrEqual, Greater,
 * GreaterOrEqual, And, Or, Xor, Not, Where and Where's gradient) and Where's three-operand broadcast
 * index map, written once for both targets: the CPU loops (cpu/compare.h) call these directly, the CUDA
 * kernels (cuda/compare.cuh) from device code. Pure C99, no I/O, no state.
 *
 * Elements of any type vcc has are read with elem/typed.h: integers as int64 (uint64 compared as
 * unsigned), floats as double (exact for float32), so a comparison of two NaN-free values is exact and
 * any comparison with a NaN is false but for "not equal" (IEEE 754, numpy, ONNX's reference). Bool
 * results are one byte, 0 or 1 (ONNX BOOL, numpy bool_).
 */
#ifndef VCC_ELEM_COMPARE_H
#define VCC_ELEM_COMPARE_H

#include "base.h"
#include "binary.h"
#include "typed.h"

/* The comparison and logic ops of two operands (the `op` argument of compare_forward). */
enum {
    VCC_CMP_EQ = 0, VCC_CMP_LT = 1, VCC_CMP_LE = 2, VCC_CMP_GT = 3, VCC_CMP_GE = 4,
    VCC_CMP_AND = 5, VCC_CMP_OR = 6, VCC_CMP_XOR = 7
};

/* VccWhereDesc: out (dims[0..rank-1]) = Where(C, X, Y) with the elements of out's flat index i at
 * sum(idx_k * sc[k]) in C, sum(idx_k * sx[k]) in X and sum(idx_k * sy[k]) in Y (strides in elements,
 * 0 along a dim the operand is broadcast in); n = out's element count. */
typedef struct VccWhereDesc {
    int rank;
    int64_t n;
    int64_t dims[VCC_BCAST_RANK];
    int64_t sc[VCC_BCAST_RANK], sx[VCC_BCAST_RANK], sy[VCC_BCAST_RANK];
} VccWhereDesc;

/* vcc_compare: op (VCC_CMP_*) of a[ia] and b[ib], both of element type t, as 0 or 1. EQ, LT, LE, GT, GE:
 * the comparison (ONNX Equal, Less, LessOrEqual, Greater, GreaterOrEqual; floats by IEEE rules: false
 * when either is NaN); AND, OR, XOR: the logic of the two truths (ONNX And, Or, Xor on bool). */
VCC_HD int vcc_compare(int op, int t, const void *a, int64_t ia, const void *b, int64_t ib)
{
    if (op >= VCC_CMP_AND) {
        const int x = vcc_et_geti(a, t, ia) != 0, z = vcc_et_geti(b, t, ib) != 0;
        return op == VCC_CMP_AND ? (x && z) : op == VCC_CMP_OR ? (x || z) : (x != z);
    }
    if (vcc_et_float(t)) {
        const double x = vcc_et_getf(a, t, ia), z = vcc_et_getf(b, t, ib);
        switch (op) {
        case VCC_CMP_EQ: return x == z;
        case VCC_CMP_LT: return x < z;
        case VCC_CMP_LE: return x <= z;
        case VCC_CMP_GT: return x > z;
        default: return x >= z;
        }
    }
    switch (op) {
    case VCC_CMP_EQ: return vcc_et_geti(a, t, ia) == vcc_et_geti(b, t, ib);
    case VCC_CMP_LT: return vcc_typed_less(t, a, ia, b, ib);
    case VCC_CMP_LE: return !vcc_typed_less(t, b, ib, a, ia);
    case VCC_CMP_GT: return vcc_typed_less(t, b, ib, a, ia);
    default: return !vcc_typed_less(t, a, ia, b, ib);
    }
}

/* vcc_where_index: the offsets *ic, *ix, *iy in C, X and Y of out's flat index i. */
VCC_HD void vcc_where_index(const VccWhereDesc *d, int64_t i, int64_t *ic, int64_t *ix, int64_t *iy)
{
    int64_t c = 0, x = 0, y = 0;
    int k;
    for (k = d->rank - 1; k >= 0; k--) {
        const int64_t j = i % d->dims[k];
        i /= d->dims[k];
        c += j * d->sc[k];
        x += j * d->sx[k];
        y += j * d->sy[k];
    }
    *ic = c;
    *ix = x;
    *iy = y;
}

/* vcc_where: out[i] (type t) = X's element if C's is true, else Y's, for out's flat index i (ONNX Where,
 * torch.where); the element's bytes as they are. */
VCC_HD void vcc_where(int t, const VccWhereDesc *d, const uint8_t *c, const void *x, const void *y, void *out,
                      int64_t i)
{
    int64_t ic, ix, iy;
    vcc_where_index(d, i, &ic, &ix, &iy);
    if (c[ic]) vcc_typed_copy(t, x, ix, out, i);
    else vcc_typed_copy(t, y, iy, out, i);
}

/* vcc_where_grad: the gradient of out = Where(C, X, Y) at out's flat index i (PyTorch where_backward):
 * dx[i] = dout[i] where C is true, else 0; dy[i] = dout[i] where C is false, else 0 (dx, dy of out's
 * shape; either NULL when not wanted). d: A = C's strides (B unused; dout is contiguous). */
VCC_HD void vcc_where_grad(const VccBcast *d, const uint8_t *c, const float *dout, float *dx, float *dy, int64_t i)
{
    int64_t ic, unused;
    vcc_bcast_index(d, i, &ic, &unused);
    if (dx) dx[i] = c[ic] ? dout[i] : 0.0f;
    if (dy) dy[i] = c[ic] ? 0.0f : dout[i];
}

#endif /* VCC_ELEM_COMPARE_H */
