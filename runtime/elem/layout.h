/*
 * elem/layout.h - the layout family's per-element arithmetic, written once for both targets: the
 * index map of the strided copy (Concat, Split, Slice, Transpose, Expand, Tile, the scatter of
 * SliceGrad), the sum over the copies of one element (SumToShape: the gradient of Expand and Tile),
 * Resize's sampling (nearest, n-linear and n-cubic, antialiasing filters, tf_crop_and_resize; ONNX
 * Resize 10-19, as ONNX's reference implementation onnx/reference/ops/op_resize.py samples) and its
 * adjoint (ResizeGrad), and the element casts (Cast). The CPU loops (cpu/layout.h) call these directly,
 * the CUDA kernels (cuda/layout.cuh) from device code; the compiler evaluates Resize's coordinate map
 * and filter windows with the same functions (ir/ops/layout.c). Pure C99, no I/O, no state.
 *
 * Shape legend: N batch, C channels, T time, H height, W width; r a tensor's rank. All tensors are
 * row-major. Offsets and strides count elements of the pointer's type (32-bit words for the copies:
 * an int64 tensor moves as pairs of words).
 */
#ifndef VCC_ELEM_LAYOUT_H
#define VCC_ELEM_LAYOUT_H

#include "base.h"

/* Dims of a strided walk: a rank-8 tensor's dims, each split in two by Tile (repeat, extent), and the
 * word pair of an int64 element. */
#define VCC_LAYOUT_MAXDIM 18

/* VccStrided: the walk over every index (i0, ..., i(rank-1)) of dims, row-major, with the element
 * offset sum_a i_a * xs[a] in x and sum_a i_a * ys[a] in y. A stride 0 repeats an element (Expand,
 * Tile); strides of a permutation transpose. rank >= 1; dims past rank are unused. */
typedef struct VccStrided {
    int rank;
    int64_t dims[VCC_LAYOUT_MAXDIM];
    int64_t xs[VCC_LAYOUT_MAXDIM];
    int64_t ys[VCC_LAYOUT_MAXDIM];
} VccStrided;

/* vcc_strided_offsets: the x and y offsets of the i-th index (row-major) of the first `rank` dims of d
 * (the CPU loops walk rows: the first rank-1 dims, the last one in their inner loop). */
VCC_HD void vcc_strided_offsets(const VccStrided *d, int rank, int64_t i, int64_t *xo, int64_t *yo)
{
    int64_t x = 0, y = 0;
    int a;
    for (a = rank - 1; a >= 0; a--) {
        const int64_t q = i / d->dims[a], r = i - q * d->dims[a];
        x += r * d->xs[a];
        y += r * d->ys[a];
        i = q;
    }
    *xo = x;
    *yo = y;
}

/* VccSumTo: dx = the sum of dy over the copies of each dx element (the adjoint of a broadcast or a
 * tiling). keep walks dx: its i-th element is at keep's y offset in dx, and its first copy at keep's x
 * offset in dy; sum walks the copies (its xs: their dy strides; its ys are unused). */
typedef struct VccSumTo {
    VccStrided keep, sum;
} VccSumTo;

/* vcc_sum_to_element: the sum in double of dy[base + every offset of d->sum] (one dx element). */
VCC_ELEM_IN VCC_HD double vcc_sum_to_element(const VccSumTo *d, const VCC_IN *dy, int64_t base)
{
    const VccStrided *s = &d->sum;
    const int64_t inner = s->dims[s->rank - 1], step = s->xs[s->rank - 1];
    int64_t rows = 1, r, j, xo, unused;
    double acc = 0.0;
    int a;
    for (a = 0; a < s->rank - 1; a++) rows *= s->dims[a];
    for (r = 0; r < rows; r++) {
        vcc_strided_offsets(s, s->rank - 1, r, &xo, &unused);
        for (j = 0; j < inner; j++) acc += (double)vcc_ld(dy, base + xo + j * step);
    }
    return acc;
}

/* ------------------------------------------------------------------ Resize */

/* ONNX Resize's mode (cubic from opset 11). */
enum {
    VCC_RESIZE_NEAREST = 0,
    VCC_RESIZE_LINEAR = 1,
    VCC_RESIZE_CUBIC = 2
};
/* ONNX Resize's coordinate_transformation_mode (opset 11+; opset 10 is asymmetric). */
enum {
    VCC_RESIZE_HALF_PIXEL = 0,
    VCC_RESIZE_PYTORCH_HALF_PIXEL = 1,
    VCC_RESIZE_ALIGN_CORNERS = 2,
    VCC_RESIZE_ASYMMETRIC = 3,
    VCC_RESIZE_TF_HALF_PIXEL_FOR_NEAREST = 4,
    VCC_RESIZE_HALF_PIXEL_SYMMETRIC = 5,
    VCC_RESIZE_TF_CROP_AND_RESIZE = 6
};
/* ONNX Resize's nearest_mode (opset 11+). Opset 10's per axis: ceil when the axis shrinks (scale < 1),
 * floor otherwise (onnxruntime's reading of Resize-10, which the spec leaves open). */
enum {
    VCC_RESIZE_ROUND_PREFER_FLOOR = 0,
    VCC_RESIZE_ROUND_PREFER_CEIL = 1,
    VCC_RESIZE_FLOOR = 2,
    VCC_RESIZE_CEIL = 3
};

/* VccResize: Resize of x (in[0], ..., in[rank-1]) to y (out[0], ..., out[rank-1]), e.g. (N, C, T, H, W).
 * Per axis a: scale[a] is the scale factor (the scales input, or out/in when sizes are given), length[a]
 * the target length scale[a] * in[a] (ONNX's output_width, a fraction when scales are given),
 * nearest[a] the rounding of nearest mode. active[a] = 0 marks an axis whose map is the identity
 * (the compiler checks it with these functions); it is then walked directly, which keeps the taps of
 * the other modes (2 per active axis for n-linear, 4 for n-cubic) few. tf_crop_and_resize samples
 * [roi_start[a], roi_end[a]] of each axis (fractions of in[a] - 1; 0 and 1 on an axis the roi leaves
 * out), and an output whose x_original lies outside [0, in[a] - 1] on any axis is extrapolation. */
typedef struct VccResize {
    int rank;
    int mode;                    /* VCC_RESIZE_NEAREST, _LINEAR, _CUBIC */
    int coord;                   /* VCC_RESIZE_HALF_PIXEL, ... */
    int nearest[8];              /* VCC_RESIZE_ROUND_PREFER_FLOOR, ... */
    int active[8];
    int64_t in[8], out[8];
    double scale[8], length[8];
    int antialias;               /* linear, cubic: the filter stretched by 1 / scale where scale < 1 */
    int exclude_outside;         /* linear, cubic: taps outside the axis weigh 0, the rest renormalized */
    double cubic_a;              /* cubic_coeff_a, the cubic kernel's a (ONNX default -0.75) */
    double extrapolation;        /* tf_crop_and_resize: the value of an output sampled outside x */
    double roi_start[8], roi_end[8];
} VccResize;

/* vcc_resize_coord: x_original of output index o on axis a (ONNX Resize, coordinate_transformation_mode,
 * with length_resized the output's integer length as the spec's formulas say; only half_pixel_symmetric
 * reads the fractional output_width, as its formula does). */
VCC_HD double vcc_resize_coord(const VccResize *d, int a, int64_t o)
{
    const double x = (double)o, s = d->scale[a];
    const int64_t out = d->out[a];
    switch (d->coord) {
    case VCC_RESIZE_PYTORCH_HALF_PIXEL: return out > 1 ? (x + 0.5) / s - 0.5 : 0.0;
    case VCC_RESIZE_ALIGN_CORNERS: return out > 1 ? (double)(o * (d->in[a] - 1)) / (double)(out - 1) : 0.0;
    case VCC_RESIZE_ASYMMETRIC: return x / s;
    case VCC_RESIZE_TF_HALF_PIXEL_FOR_NEAREST: return (x + 0.5) / s;
    case VCC_RESIZE_HALF_PIXEL_SYMMETRIC: {
        const double adjustment = (double)out / d->length[a], center = (double)d->in[a] / 2.0;
        return center * (1.0 - adjustment) + (x + 0.5) / s - 0.5;
    }
    case VCC_RESIZE_TF_CROP_AND_RESIZE: {
        /* the crop's extent subtracted in float, as ONNX's reference subtracts the float roi values (which
         * decides whether an end of 1 samples the last element or just past it) */
        const double span = (double)(d->in[a] - 1), lo = d->roi_start[a];
        const double extent = (double)((float)d->roi_end[a] - (float)lo);
        return (out > 1 ? x * extent * span / (double)(out - 1) : extent * span / 2.0) + lo * span;
    }
    default: return (x + 0.5) / s - 0.5; /* half_pixel */
    }
}

/* vcc_resize_outside: output index o of axis a samples outside the input (tf_crop_and_resize with
 * x_original outside [0, in[a] - 1]: the output is the extrapolation value; other modes never do). */
VCC_HD int vcc_resize_outside(const VccResize *d, int a, int64_t o)
{
    double x;
    if (d->coord != VCC_RESIZE_TF_CROP_AND_RESIZE) return 0;
    x = vcc_resize_coord(d, a, o);
    return x < 0.0 || x > (double)(d->in[a] - 1);
}

/* vcc_resize_clamp: index i limited to [0, n - 1] (ONNX's reference pads the input with its edge). */
VCC_HD int64_t vcc_resize_clamp(double i, int64_t n)
{
    return i <= 0.0 ? 0 : i >= (double)(n - 1) ? n - 1 : (int64_t)i;
}

/* vcc_resize_filtered: d samples through a filter window (VccResizeWindow): cubic mode, or linear with
 * antialias. Nearest and plain linear take their taps from vcc_resize_taps. */
VCC_HD int vcc_resize_filtered(const VccResize *d)
{
    return d->mode == VCC_RESIZE_CUBIC || (d->mode == VCC_RESIZE_LINEAR && d->antialias);
}

/* vcc_resize_taps: the input taps of output index o on axis a: nearest mode, one index *i0 (= *i1, *w1 =
 * 0); linear, *i0 with weight 1 - *w1 and *i1 with weight *w1 (the two neighbours of x_original,
 * clamped to the axis). An integer x_original takes its own index only, in either mode. */
VCC_HD void vcc_resize_taps(const VccResize *d, int a, int64_t o, int64_t *i0, int64_t *i1, double *w1)
{
    const double x = vcc_resize_coord(d, a, o), f = floor(x), r = x - f;
    const int64_t n = d->in[a];
    double pick = f;
    if (d->mode == VCC_RESIZE_LINEAR) {
        *i0 = vcc_resize_clamp(f, n);
        *i1 = vcc_resize_clamp(f + 1.0, n);
        *w1 = r;
        return;
    }
    if (r != 0.0) {
        switch (d->nearest[a]) {
        case VCC_RESIZE_ROUND_PREFER_CEIL: pick = r < 0.5 ? f : f + 1.0; break;
        case VCC_RESIZE_FLOOR: pick = f; break;
        case VCC_RESIZE_CEIL: pick = f + 1.0; break;
        default: pick = r <= 0.5 ? f : f + 1.0; break; /* round_prefer_floor */
        }
    }
    *i0 = *i1 = vcc_resize_clamp(pick, n);
    *w1 = 0.0;
}

/* vcc_resize_kernel: the interpolation kernel at distance t (in input steps of the unstretched filter):
 * linear, the triangle max(0, 1 - |t|); cubic, Keys' cubic convolution kernel with a = cubic_a,
 * (a+2)|t|^3 - (a+3)|t|^2 + 1 for |t| <= 1, a|t|^3 - 5a|t|^2 + 8a|t| - 4a for 1 < |t| < 2, else 0
 * (ONNX's reference, op_resize.py: _linear_coeffs_antialias, _cubic_coeffs_antialias). */
VCC_HD double vcc_resize_kernel(const VccResize *d, double t)
{
    const double x = fabs(t), A = d->cubic_a;
    if (d->mode != VCC_RESIZE_CUBIC) return x < 1.0 ? 1.0 - x : 0.0;
    if (x <= 1.0) return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    if (x < 2.0) return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    return 0.0;
}

/* VccResizeWindow: the taps of one output index on one axis of a filtered Resize: indices lo .. lo + n -
 * 1 around x_original (unclamped: an index outside the axis reads its edge element, as ONNX's reference
 * pads the input with its edge), tap j weighing kernel(s * (j - x)) / norm. */
typedef struct VccResizeWindow {
    double x;       /* x_original, limited to [-1, in] (further out, tf_crop_and_resize extrapolates) */
    double s;       /* the filter's stretch (vcc_resize_stretch) */
    double norm;    /* the sum of the weights (antialias, exclude_outside), else 1 */
    int64_t lo, n;  /* the first tap and their number */
    int outside;    /* tf_crop_and_resize: x_original lies outside the input (vcc_resize_outside) */
} VccResizeWindow;

/* vcc_resize_raw: the weight of tap j in window w of axis a before normalization (0 for an index outside
 * the axis under exclude_outside). */
VCC_HD double vcc_resize_raw(const VccResize *d, int a, const VccResizeWindow *w, int64_t j)
{
    if (d->exclude_outside && (j < 0 || j >= d->in[a])) return 0.0;
    return vcc_resize_kernel(d, w->s * ((double)j - w->x));
}

/* vcc_resize_stretch: the filter's stretch on axis a: its scale where antialias shrinks it, else 1. */
VCC_HD double vcc_resize_stretch(const VccResize *d, int a)
{
    return d->antialias && d->scale[a] < 1.0 ? d->scale[a] : 1.0;
}

/* vcc_resize_half: half the taps of a filter window on axis a, m = ceil(support / stretch), support 1
 * (linear) or 2 (cubic): ONNX's reference takes 2m taps (_linear_coeffs_antialias's footprint,
 * _cubic_coeffs_antialias's i_start .. i_end; 2 and 4 unstretched). */
VCC_HD int64_t vcc_resize_half(const VccResize *d, int a)
{
    return (int64_t)ceil((d->mode == VCC_RESIZE_CUBIC ? 2.0 : 1.0) / vcc_resize_stretch(d, a));
}

/* vcc_resize_window: the filter window of output index o on axis a: the 2m indices nearest x_original,
 * the lower ones preferred (ceil(x) - m .. ceil(x) + m - 1; the reference's _get_neighbor_idxes), their
 * weights normalized to sum 1 under antialias and exclude_outside (the reference divides by their sum
 * there, and leaves the cubic coefficients as they are otherwise). */
VCC_HD void vcc_resize_window(const VccResize *d, int a, int64_t o, VccResizeWindow *w)
{
    const double x = vcc_resize_coord(d, a, o), top = (double)d->in[a];
    const int64_t m = vcc_resize_half(d, a);
    int64_t j;
    w->outside = d->coord == VCC_RESIZE_TF_CROP_AND_RESIZE && (x < 0.0 || x > top - 1.0);
    w->x = x < -1.0 ? -1.0 : x > top ? top : x;
    w->s = vcc_resize_stretch(d, a);
    w->lo = (int64_t)ceil(w->x) - m;
    w->n = 2 * m;
    w->norm = 1.0;
    if (d->antialias || d->exclude_outside) {
        double sum = 0.0;
        for (j = w->lo; j < w->lo + w->n; j++) sum += vcc_resize_raw(d, a, w, j);
        w->norm = sum;
    }
}

/* vcc_resize_split: element i, row-major over the dims idx (out forward, in backward), as one index per
 * axis in pos, with the row-major strides over the dims other (of the tensor read: in forward, out
 * backward) in stride; returns the offset in the tensor read of the inactive axes' indices (their map is
 * the identity). */
VCC_HD int64_t vcc_resize_split(const VccResize *d, const int64_t *idx, const int64_t *other, int64_t i,
                                int64_t *pos, int64_t *stride)
{
    int64_t base = 0;
    int a;
    for (a = d->rank - 1; a >= 0; a--) {
        pos[a] = i % idx[a];
        i /= idx[a];
        stride[a] = a == d->rank - 1 ? 1 : stride[a + 1] * other[a + 1];
        if (!d->active[a]) base += pos[a] * stride[a];
    }
    return base;
}

/* vcc_resize_fwd_filtered: y element i (row-major over out) of a filtered Resize (cubic, antialias): the
 * sum, in double, over the box of every active axis's window of the product of the taps' weights times x
 * at the taps clamped into the axes; the extrapolation value where an axis samples outside. */
VCC_ELEM_IN VCC_HD float vcc_resize_fwd_filtered(const VccResize *d, const VCC_IN *x, int64_t i)
{
    VccResizeWindow w[8];
    int64_t o[8], stride[8], jk[8], total = 1, t;
    int act[8], nact = 0, a, k;
    double wk[8], acc = 0.0;
    const int64_t base = vcc_resize_split(d, d->out, d->in, i, o, stride);
    for (a = d->rank - 1; a >= 0; a--) {
        if (!d->active[a]) continue;
        vcc_resize_window(d, a, o[a], &w[a]);
        if (w[a].outside) return (float)d->extrapolation;
        total *= w[a].n;
        act[nact++] = a;
    }
    for (t = 0; t < total; t++) { /* every tap in the box, the last active axis fastest */
        int64_t rem = t, off = base;
        double wt = 1.0;
        for (k = 0; k < nact; k++) {
            const int aa = act[k];
            const int64_t j = w[aa].lo + rem % w[aa].n;
            rem /= w[aa].n;
            if (t == 0 || j != jk[k]) { /* an axis's weight is computed again only when its tap moves */
                jk[k] = j;
                wk[k] = vcc_resize_raw(d, aa, &w[aa], j) / w[aa].norm;
            }
            wt *= wk[k];
            off += vcc_resize_clamp((double)j, d->in[aa]) * stride[aa];
        }
        if (wt != 0.0) acc += wt * (double)vcc_ld(x, off);
    }
    return (float)acc;
}

/* vcc_resize_fwd: y element i (row-major over out) = the weighted sum, in double, of its taps in x
 * (nearest: one; linear: 2 per active axis, the product of the axes' weights; filtered:
 * vcc_resize_fwd_filtered), or the extrapolation value where tf_crop_and_resize samples outside. */
VCC_ELEM_IN VCC_HD float vcc_resize_fwd(const VccResize *d, const VCC_IN *x, int64_t i)
{
    int64_t i0[8], i1[8], o[8], stride[8], base;
    double w1[8], acc = 0.0;
    int act[8], nact = 0, a, c;
    const int linear = d->mode == VCC_RESIZE_LINEAR;
    if (vcc_resize_filtered(d)) return vcc_resize_fwd_filtered(d, x, i);
    base = vcc_resize_split(d, d->out, d->in, i, o, stride);
    for (a = d->rank - 1; a >= 0; a--) {
        if (!d->active[a]) continue;
        if (vcc_resize_outside(d, a, o[a])) return (float)d->extrapolation;
        vcc_resize_taps(d, a, o[a], &i0[a], &i1[a], &w1[a]);
        if (!linear) base += i0[a] * stride[a];
        else act[nact++] = a;
    }
    if (!linear) return vcc_ld(x, base);
    for (c = 0; c < (1 << nact); c++) {
        double w = 1.0;
        int64_t off = base;
        int k;
        for (k = 0; k < nact; k++) {
            const int aa = act[k], hi = (c >> k) & 1;
            w *= hi ? w1[aa] : 1.0 - w1[aa];
            off += (hi ? i1[aa] : i0[aa]) * stride[aa];
        }
        acc += w * (double)vcc_ld(x, off);
    }
    return (float)acc;
}

/* vcc_resize_key: non-decreasing in o: the index sampled by output o of axis a (linear: its first tap);
 * filtered: the first tap of its window, unclamped. */
VCC_HD int64_t vcc_resize_key(const VccResize *d, int a, int64_t o)
{
    int64_t i0, i1;
    double w1;
    if (vcc_resize_filtered(d)) {
        VccResizeWindow w;
        vcc_resize_window(d, a, o, &w);
        return w.lo;
    }
    vcc_resize_taps(d, a, o, &i0, &i1, &w1);
    return i0;
}

/* vcc_resize_first: the first output index o of axis a whose key is >= k (out[a] if none): a binary
 * search, the key being monotone. */
VCC_HD int64_t vcc_resize_first(const VccResize *d, int a, int64_t k)
{
    int64_t lo = 0, hi = d->out[a];
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (vcc_resize_key(d, a, mid) >= k) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* vcc_resize_weight: the weight of input index i in output o's sample along axis a (filtered: the sum
 * over the window's taps that read i, the edge indices reading the taps beyond them too); 0 where
 * tf_crop_and_resize extrapolates. */
VCC_HD double vcc_resize_weight(const VccResize *d, int a, int64_t o, int64_t i)
{
    int64_t i0, i1, j, first, last;
    double w1, w = 0.0;
    if (vcc_resize_filtered(d)) {
        VccResizeWindow win;
        vcc_resize_window(d, a, o, &win);
        if (win.outside) return 0.0;
        first = i == 0 || i < win.lo ? win.lo : i;
        last = i == d->in[a] - 1 || i > win.lo + win.n - 1 ? win.lo + win.n - 1 : i;
        for (j = first; j <= last; j++) w += vcc_resize_raw(d, a, &win, j);
        return w / win.norm;
    }
    if (vcc_resize_outside(d, a, o)) return 0.0;
    vcc_resize_taps(d, a, o, &i0, &i1, &w1);
    if (d->mode != VCC_RESIZE_LINEAR) return i0 == i ? 1.0 : 0.0;
    if (i0 == i) w += 1.0 - w1;
    if (i1 == i) w += w1;
    return w;
}

/* vcc_resize_bwd: dx element i (row-major over in) = the sum, in double, over the outputs that sample
 * it of dy times its weight there: the adjoint of vcc_resize_fwd, gathered (no atomics, a fixed order).
 * Per active axis the outputs that sample index j are one run of o (found by binary search): those
 * whose key is j (nearest), j - 1 or j (linear), or whose window [key, key + n - 1] reaches j once
 * clamped (filtered: the edge indices 0 and in - 1 also collect the taps beyond them). */
VCC_ELEM_IN VCC_HD float vcc_resize_bwd(const VccResize *d, const VCC_IN *dy, int64_t i)
{
    int64_t idx[8], lo[8], hi[8], o[8], ostride[8], total = 1, t;
    int act[8], nact = 0, a, k;
    const int filtered = vcc_resize_filtered(d), linear = d->mode == VCC_RESIZE_LINEAR;
    const int64_t base = vcc_resize_split(d, d->in, d->out, i, idx, ostride);
    double wk[8], acc = 0.0;
    for (a = d->rank - 1; a >= 0; a--) {
        if (!d->active[a]) continue;
        if (filtered) {
            lo[a] = idx[a] == 0 ? 0 : vcc_resize_first(d, a, idx[a] - 2 * vcc_resize_half(d, a) + 1);
            hi[a] = idx[a] == d->in[a] - 1 ? d->out[a] : vcc_resize_first(d, a, idx[a] + 1);
        } else {
            lo[a] = vcc_resize_first(d, a, linear ? idx[a] - 1 : idx[a]);
            hi[a] = vcc_resize_first(d, a, idx[a] + 1);
        }
        if (hi[a] <= lo[a]) return 0.0f; /* no output samples this element */
        total *= hi[a] - lo[a];
        act[nact++] = a;
    }
    for (t = 0; t < total; t++) { /* every output in the box of runs, the last active axis fastest */
        int64_t rem = t, off = base;
        double w = 1.0;
        for (k = 0; k < nact; k++) {
            const int aa = act[k];
            const int64_t len = hi[aa] - lo[aa], ok = lo[aa] + rem % len;
            rem /= len;
            if (t == 0 || ok != o[aa]) { /* an axis's weight is computed again only when its output moves */
                o[aa] = ok;
                wk[k] = vcc_resize_weight(d, aa, ok, idx[aa]);
            }
            off += o[aa] * ostride[aa];
            w *= wk[k];
        }
        acc += w * (double)vcc_ld(dy, off);
    }
    return (float)acc;
}

/* ------------------------------------------------------------------ Cast */

/* vcc_cast_f32_int: x truncated toward zero (ONNX Cast from float to an integer type), saturated to
 * [lo, hi]; NaN gives 0 (ONNX leaves NaN and out-of-range values undefined). */
VCC_HD int64_t vcc_cast_f32_int(float x, int64_t lo, int64_t hi)
{
    if (x != x) return 0;
    if ((double)x <= (double)lo) return lo;
    if ((double)x >= (double)hi) return hi;
    return (int64_t)x;
}

/* vcc_cast_i64_f32: x rounded to the nearest float (ONNX Cast from INT64 to FLOAT). */
VCC_HD float vcc_cast_i64_f32(int64_t x)
{
    return (float)x;
}

/* vcc_cast_i64_i32: x wrapped to int32 (ONNX Cast from INT64 to INT32; vcc keeps the result as int64). */
VCC_HD int64_t vcc_cast_i64_i32(int64_t x)
{
    return (int64_t)(int32_t)(uint32_t)(uint64_t)x;
}

/* vcc_gather_index: Gather's index v on an axis of len elements, negative counting from the back
 * (ONNX Gather 11); -1 when it lies outside the axis (vcc refuses such constants while compiling; the
 * kernels skip them, so indices read from a weights file cannot address outside the tensor). */
VCC_HD int64_t vcc_gather_index(int64_t v, int64_t len)
{
    if (v < 0) v += len;
    return v >= 0 && v < len ? v : -1;
}

#endif /* VCC_ELEM_LAYOUT_H */
