/*
 * elem/scatter.h - the scatter family's index arithmetic (ScatterND, ScatterElements and their
 * gradients), written once for both targets: where each element of the updates lands in data. The CPU
 * loops (cpu/scatter.h) and the CUDA kernels (cuda/scatter.cuh) call it; the compiler checks constant
 * indices with the same function (ir/ops/scatter.c). Pure C99, no I/O, no state.
 *
 * Source: ONNX Operators "ScatterND" (11, 13, 16, 18) and "ScatterElements" (11, 13, 16, 18):
 *   ScatterND: indices (i0, ..., i(q-2), k) hold index tuples into data's first k dims; updates
 *     (i0, ..., i(q-2), data[k:]...) holds one slice of data[k:] per tuple (a row of `inner` elements);
 *   ScatterElements: indices and updates of one shape, rank r = data's; the update at (c0, ..., c(r-1))
 *     lands at those coordinates with c_axis replaced by the index there.
 * Indices may be negative (counted from the back of their dim). All tensors are row-major.
 */
#ifndef VCC_ELEM_SCATTER_H
#define VCC_ELEM_SCATTER_H

#include "base.h"

#define VCC_SCATTER_MAXDIM 8

/* VccScatter: where update element u (0 <= u < n, row-major in the updates) lands in data.
 *   nd 1 (ScatterND): rank = k, dims = data's first k dims, xs = their strides in data, inner = the
 *     elements of one row (prod data[k:]); row u / inner reads its tuple at indices + (u / inner) * k.
 *   nd 0 (ScatterElements): rank = r, dims = the updates' dims, xs = data's strides, axis, len = data's
 *     dims[axis]; the index of u is indices[u].
 * Both: u = (o * m + j) * inner_run + i splits the updates into outer * inner_run columns of m elements
 * each, such that two updates that land on one element of data always share a column (ScatterND: one
 * column per element of a row, m = the rows; ScatterElements: m = dims[axis]); a column summed in j
 * order adds duplicates in the order of u. */
typedef struct VccScatter {
    int nd, rank, axis;
    int64_t dims[VCC_SCATTER_MAXDIM];
    int64_t xs[VCC_SCATTER_MAXDIM];
    int64_t len, inner, n;
    int64_t outer, m, inner_run;
} VccScatter;

/* vcc_scatter_index: index v on a dim of len elements, negative counting from the back; -1 outside it
 * (the compiler refuses such constants; the kernels skip them). */
VCC_HD int64_t vcc_scatter_index(int64_t v, int64_t len)
{
    if (v < 0) v += len;
    return v >= 0 && v < len ? v : -1;
}

/* vcc_scatter_offset: the element of data update u lands on (see VccScatter), -1 when one of its
 * indices lies outside its dim. */
VCC_HD int64_t vcc_scatter_offset(const VccScatter *d, const int64_t *idx, int64_t u)
{
    int64_t off = 0, r = u, c;
    int a;
    if (d->nd) {
        const int64_t *t = idx + (u / d->inner) * d->rank;
        for (a = 0; a < d->rank; a++) {
            if ((c = vcc_scatter_index(t[a], d->dims[a])) < 0) return -1;
            off += c * d->xs[a];
        }
        return off + u % d->inner;
    }
    for (a = d->rank - 1; a >= 0; a--) {
        const int64_t q = r / d->dims[a];
        c = a == d->axis ? vcc_scatter_index(idx[u], d->len) : r - q * d->dims[a];
        if (c < 0) return -1;
        off += c * d->xs[a];
        r = q;
    }
    return off;
}

/* vcc_scatter_column_element: update u of column c (0 <= c < outer * inner_run) at step j (0 <= j < m). */
VCC_HD int64_t vcc_scatter_column_element(const VccScatter *d, int64_t c, int64_t j)
{
    return ((c / d->inner_run) * d->m + j) * d->inner_run + c % d->inner_run;
}

#endif /* VCC_ELEM_SCATTER_H */
