/*
 * test_conv_elem.c - the per-element bodies of the CUDA target's im2col path (runtime/elem/conv.h:
 * vcc_conv_im2col_at, vcc_conv_col2im_at, called by cuda/conv.cuh's conv_im2col_kernel and
 * conv_col2im_kernel) against the C target's row-wise im2col and col2im (runtime/cpu/conv.h), bit for
 * bit, on random geometries: 1-3 spatial dims, strides, dilations, groups, and pads that are
 * asymmetric or negative (the geometries the CUDA target computes by im2col rather than cuDNN).
 * Both sides are the same copies and the same float additions in the same order, so any difference
 * is a wrong index. Prints the number of geometries and column entries compared; exits 1 on the
 * first difference.
 *
 * Shape legend: C channels, K filters, G groups; col (C/G*KK, OUT) per sample and group.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../runtime/vcc_elem.h"
#include "../../../runtime/vcc_io.h"
#include "../../../runtime/vcc_cpu.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* xorshift64*: an integer in [lo, hi] */
static int64_t rnd(int64_t lo, int64_t hi)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return lo + (int64_t)((rng_state * 2685821657736338717ull) >> 33) % (hi - lo + 1);
}

static float rndf(void) { return (float)rnd(-1000000, 1000000) / 1000000.0f; }

/* A random consistent descriptor; pads from -2 to 3, chosen so that the output has at least one element. */
static void random_desc(VccConvDesc *d)
{
    int i;
    memset(d, 0, sizeof *d);
    d->nsp = (int)rnd(1, 3);
    d->N = 1;
    d->G = rnd(1, 3);
    d->C = d->G * rnd(1, 3);
    d->K = d->G * rnd(1, 2);
    for (i = 0; i < 3; i++) {
        d->in[i] = d->out[i] = d->kernel[i] = d->stride[i] = d->dilation[i] = 1;
        if (i >= d->nsp) continue;
        for (;;) {
            int64_t span;
            d->in[i] = rnd(1, 7);
            d->kernel[i] = rnd(1, 4);
            d->stride[i] = rnd(1, 3);
            d->dilation[i] = rnd(1, 3);
            d->pad_begin[i] = rnd(-2, 3);
            d->pad_end[i] = rnd(-2, 3);
            span = d->in[i] + d->pad_begin[i] + d->pad_end[i] - d->dilation[i] * (d->kernel[i] - 1) - 1;
            if (span < 0) continue;
            d->out[i] = span / d->stride[i] + 1;
            break;
        }
    }
}

int main(void)
{
    int t, asym = 0, neg = 0;
    long long entries = 0;
    for (t = 0; t < 3000; t++) {
        VccConvDesc d;
        VccConvGeo g;
        int64_t ncol, nx, r, o, c, i;
        float *x, *col, *col_at, *x_row, *x_at;
        random_desc(&d);
        vcc_conv_geo(&d, &g);
        for (i = 0; i < d.nsp; i++) {
            asym += d.pad_begin[i] != d.pad_end[i];
            neg += d.pad_begin[i] < 0 || d.pad_end[i] < 0;
        }
        ncol = vcc_conv_col_elems(&d);
        nx = g.Cg * g.IN;
        x = malloc(sizeof(float) * (size_t)nx);
        x_row = malloc(sizeof(float) * (size_t)nx);
        x_at = malloc(sizeof(float) * (size_t)nx);
        col = malloc(sizeof(float) * (size_t)ncol);
        col_at = malloc(sizeof(float) * (size_t)ncol);
        if (!x || !x_row || !x_at || !col || !col_at) return 2;
        for (i = 0; i < nx; i++) x[i] = rndf();
        vcc_im2col(&g, x, col);
        for (r = 0; r < g.Cg * g.KK; r++)
            for (o = 0; o < g.OUT; o++) col_at[r * g.OUT + o] = vcc_conv_im2col_at(&g, x, r, o);
        if (memcmp(col, col_at, sizeof(float) * (size_t)ncol)) {
            printf("FAIL: geometry %d: vcc_conv_im2col_at differs from vcc_im2col\n", t);
            return 1;
        }
        for (i = 0; i < ncol; i++) col[i] = rndf();
        memset(x_row, 0, sizeof(float) * (size_t)nx);
        vcc_col2im(&g, col, x_row);
        for (c = 0; c < g.Cg; c++)
            for (i = 0; i < g.IN; i++) x_at[c * g.IN + i] = vcc_conv_col2im_at(&g, col, c, i);
        if (memcmp(x_row, x_at, sizeof(float) * (size_t)nx)) {
            printf("FAIL: geometry %d: vcc_conv_col2im_at differs from vcc_col2im\n", t);
            return 1;
        }
        entries += ncol;
        free(x);
        free(x_row);
        free(x_at);
        free(col);
        free(col_at);
    }
    printf("3000 geometries (%d dims with asymmetric pads, %d with a negative pad), %lld column entries: "
           "im2col and col2im bodies equal the C target's bit for bit\n", asym, neg, entries);
    if (!asym || !neg) {
        printf("FAIL: the random geometries missed asymmetric or negative pads\n");
        return 1;
    }
    printf("PASS\n");
    return 0;
}
