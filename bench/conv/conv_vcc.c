/*
 * conv_vcc.c — time vcc's CPU conv kernels (runtime/vcc_cpu.h: im2col + OpenBLAS sgemm) on one 3-D conv.
 *
 *   conv_vcc N C K T H W kT kH kW sT sH sW pT pH pW REPS
 *
 * Prints the median milliseconds of conv_forward, conv_backward_data and conv_backward_filter over REPS
 * runs (after one warm-up), one line: "vcc fwd <ms> bwd_data <ms> bwd_filter <ms>".
 * Built with -DVCC_CONV_DNNL (and -ldnnl) the same kernels run through oneDNN
 * (runtime/cpu/conv_dnnl.h; with -DVCC_DNNL_PLAIN too, in the plain layouts), timed with their
 * reorders, and a second line gives each pass's workspace bytes and oneDNN's implementation:
 * "dnnl ws <fwd> <bwd_data> <bwd_filter> impl <fwd> <bwd_data> <bwd_filter>" (bytes 0: im2col ran).
 * The workspace is then 1 GiB (touched only as far as used), so every pass oneDNN takes runs on it.
 * Letters: N batch, C in channels, K out channels, T/H/W input frames/height/width, k kernel, s stride, p pad.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../runtime/vcc_elem.h"
#include "../../runtime/vcc_cpu.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 17) {
        fputs("usage: conv_vcc N C K T H W kT kH kW sT sH sW pT pH pW REPS\n", stderr);
        return 2;
    }
    int64_t v[16];
    for (int i = 0; i < 16; i++) v[i] = atoll(argv[i + 1]);
    VccConvDesc d;
    memset(&d, 0, sizeof d);
    d.nsp = 3;
    d.N = v[0], d.C = v[1], d.K = v[2], d.G = 1;
    for (int i = 0; i < 3; i++) {
        d.in[i] = v[3 + i];
        d.kernel[i] = v[6 + i];
        d.stride[i] = v[9 + i];
        d.pad_begin[i] = d.pad_end[i] = v[12 + i];
        d.dilation[i] = 1;
        d.out[i] = (d.in[i] + 2 * d.pad_begin[i] - d.kernel[i]) / d.stride[i] + 1;
    }
    int reps = (int)v[15];
    size_t xn = (size_t)(d.N * d.C * d.in[0] * d.in[1] * d.in[2]);
    size_t yn = (size_t)(d.N * d.K * d.out[0] * d.out[1] * d.out[2]);
    size_t wn = (size_t)(d.K * d.C * d.kernel[0] * d.kernel[1] * d.kernel[2]);
    size_t wsb = 4 * (size_t)vcc_conv_col_elems(&d);
#ifdef VCC_CONV_DNNL
    if (wsb < ((size_t)1 << 30)) wsb = (size_t)1 << 30;
#endif
    float *x = malloc(4 * xn), *y = malloc(4 * yn), *w = malloc(4 * wn), *dx = malloc(4 * xn), *dw = malloc(4 * wn);
    void *ws = malloc(wsb);
    if (!x || !y || !w || !dx || !dw || !ws) return 1;
    for (size_t i = 0; i < xn; i++) x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < wn; i++) w[i] = (float)((i * 104729) % 1000) / 10000.0f - 0.05f;
    for (size_t i = 0; i < yn; i++) y[i] = (float)((i * 31) % 1000) / 1000.0f - 0.5f;
    VccRt rt;
    vcc_rt_init(&rt);
    double t[3][64];
    if (reps > 64) reps = 64;
    for (int r = -1; r < reps; r++) {
        double a = now_ms();
        conv_forward(&rt, &d, x, w, NULL, y, ws, wsb);
        double b = now_ms();
        conv_backward_data(&rt, &d, y, w, dx, ws, wsb);
        double c = now_ms();
        conv_backward_filter(&rt, &d, x, y, dw, NULL, ws, wsb);
        double e = now_ms();
        if (r >= 0) t[0][r] = b - a, t[1][r] = c - b, t[2][r] = e - c;
    }
    for (int k = 0; k < 3; k++) qsort(t[k], (size_t)reps, sizeof(double), cmp);
    printf("vcc fwd %.2f bwd_data %.2f bwd_filter %.2f\n", t[0][reps / 2], t[1][reps / 2], t[2][reps / 2]);
#ifdef VCC_CONV_DNNL
    {
        VccDnnlConv *c = (VccDnnlConv *)d.backend;
        printf("dnnl ws");
        for (int k = 0; k < 3; k++) printf(" %zu", c && c->pass[k].state > 0 ? c->pass[k].bytes : (size_t)0);
        printf(" impl");
        for (int k = 0; k < 3; k++) {
            const char *impl = "im2col";
            if (c && c->pass[k].state > 0) {
                const_dnnl_primitive_desc_t pd;
                if (dnnl_primitive_get_primitive_desc(c->pass[k].conv, &pd) == dnnl_success)
                    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
            }
            printf(" %s", impl);
        }
        printf("\n");
    }
    vcc_rt_destroy(&rt);
#endif
    return 0;
}
