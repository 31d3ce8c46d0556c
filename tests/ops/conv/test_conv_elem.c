/*
 * test_conv_elem.c - the per-element bodies of the CUDA target's im2col path (runtime/elem/conv.h:
 * vcc_conv_im2col_at, vcc_conv_col2im_at, called by cuda/conv.cuh's conv_im2col_kernel and
 * conv_col2im_kernel) against the C target's row-wise im2col and col2im (runtime/cpu/conv.h), bit for
 * bit, on random geometries: 1-3 spatial dims, strides, dilations, groups, and pads that are
 * asymmetric or negative (the geometries the CUDA target computes by im2col rather than cuDNN), each
 * unfolded and folded back in chunks of output positions of a random size (a workspace limit's chunks).
 * Both sides are the same copies and the same float additions in the same order, so any difference
 * is a wrong index. Prints the number of geometries and column entries compared; exits 1 on the
 * first difference.
 *
 * Shape legend: C channels, K filters, G groups; col (C/G*KK, pc) per sample, group and chunk of pc
 * output positions.
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
    int t, asym = 0, neg = 0, chunked = 0;
    long long entries = 0;
    for (t = 0; t < 3000; t++) {
        VccConvDesc d;
        VccConvGeo g;
        int64_t ncol, nx, rows, r, j, c, i, pc, p0, m;
        float *x, *col, *colc, *col_at, *x_row, *x_at;
        random_desc(&d);
        vcc_conv_geo(&d, &g);
        for (i = 0; i < d.nsp; i++) {
            asym += d.pad_begin[i] != d.pad_end[i];
            neg += d.pad_begin[i] < 0 || d.pad_end[i] < 0;
        }
        ncol = vcc_conv_col_elems(&d);
        rows = g.Cg * g.KK;
        nx = g.Cg * g.IN;
        /* the chunk the kernels take from a workspace of pc columns (every third geometry unchunked) */
        pc = t % 3 ? rnd(1, g.OUT) : g.OUT;
        if (vcc_conv_chunk_cols(&g, sizeof(float) * (size_t)(rows * pc)) != pc) {
            printf("FAIL: geometry %d: vcc_conv_chunk_cols of %lld columns' bytes is not %lld\n", t,
                   (long long)pc, (long long)pc);
            return 1;
        }
        chunked += pc < g.OUT;
        x = malloc(sizeof(float) * (size_t)nx);
        x_row = malloc(sizeof(float) * (size_t)nx);
        x_at = malloc(sizeof(float) * (size_t)nx);
        col = malloc(sizeof(float) * (size_t)ncol);
        colc = malloc(sizeof(float) * (size_t)(rows * pc));
        col_at = malloc(sizeof(float) * (size_t)(rows * pc));
        if (!x || !x_row || !x_at || !col || !colc || !col_at) return 2;
        for (i = 0; i < nx; i++) x[i] = rndf();
        for (p0 = 0; p0 < g.OUT; p0 += pc) {
            m = g.OUT - p0 < pc ? g.OUT - p0 : pc;
            vcc_im2col(&g, x, p0, m, colc);
            for (r = 0; r < rows; r++)
                for (j = 0; j < m; j++) col_at[r * m + j] = vcc_conv_im2col_at(&g, x, r, p0 + j);
            if (memcmp(colc, col_at, sizeof(float) * (size_t)(rows * m))) {
                printf("FAIL: geometry %d: vcc_conv_im2col_at differs from vcc_im2col (chunk at %lld of %lld)\n", t,
                       (long long)p0, (long long)m);
                return 1;
            }
        }
        for (i = 0; i < ncol; i++) col[i] = rndf();
        memset(x_row, 0, sizeof(float) * (size_t)nx);
        memset(x_at, 0, sizeof(float) * (size_t)nx);
        for (p0 = 0; p0 < g.OUT; p0 += pc) {
            m = g.OUT - p0 < pc ? g.OUT - p0 : pc;
            for (r = 0; r < rows; r++) memcpy(colc + r * m, col + r * g.OUT + p0, sizeof(float) * (size_t)m);
            vcc_col2im(&g, colc, p0, m, x_row);
            for (c = 0; c < g.Cg; c++)
                for (i = 0; i < g.IN; i++)
                    x_at[c * g.IN + i] = vcc_conv_col2im_at(&g, colc, p0, m, c, i, x_at[c * g.IN + i]);
        }
        if (memcmp(x_row, x_at, sizeof(float) * (size_t)nx)) {
            printf("FAIL: geometry %d: vcc_conv_col2im_at differs from vcc_col2im\n", t);
            return 1;
        }
        entries += ncol;
        free(x);
        free(x_row);
        free(x_at);
        free(col);
        free(colc);
        free(col_at);
    }
    printf("3000 geometries (%d dims with asymmetric pads, %d with a negative pad, %d unfolded in chunks), %lld "
           "column entries: im2col and col2im bodies equal the C target's bit for bit\n", asym, neg, chunked,
           entries);
    if (!asym || !neg || !chunked) {
        printf("FAIL: the random geometries missed asymmetric or negative pads, or chunks\n");
        return 1;
    }
    printf("PASS\n");
    return 0;
}
