/*
 * numeric_test.cu - the CUDA runtime (runtime/vcc_cuda.cuh) against the CPU
 * runtime (runtime/vcc_cpu.h, through cpu_ref.c) on random data: every kernel
 * the trainers call, same inputs, outputs compared with a relative tolerance
 * (max |gpu - cpu| / max |cpu|). Outputs are pre-filled with NaN on the GPU,
 * so a kernel that reads (beta != 0) or skips part of an output it must
 * overwrite shows up as a mismatch. Each convolution case runs on cuDNN's graph API and on its legacy
 * calls, each with a generous planned workspace and with none, and the conv group fails when no direction
 * of any case ran a plan of the graph API.
 *
 *   numeric_test [group...]     groups: conv bn gemm xent misc big (default: all)
 *
 * Exit status: 0 all match, 1 a mismatch, 77 no CUDA device (CTest skip).
 *
 * Shape legend: N batch, C channels, K filters / classes, G groups,
 * T H W spatial, S = prod(spatial), M rows of a gemm.
 */
#include "vcc_elem.h"
#include "vcc_cuda.cuh"
#include "cpu_ref.h"

static VccRt g_rt;
static unsigned char *g_arena;
static size_t g_off, g_cap;
static int g_fail, g_checks;
static int g_graph_runs, g_graph_tries; /* conv directions that ran a plan of cuDNN's graph API, of those
                                           that tried (conv_case) */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

/* descriptors live as long as the runtime (vcc_rt_destroy clears their backend) */
static VccConvDesc g_desc[64];
static int g_ndesc;

static float urand(void) /* uniform in [-1, 1) */
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return (float)((double)((g_rng * 0x2545F4914F6CDD1Dull) >> 40) / (double)(1ull << 23)) - 1.0f;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "numeric_test: out of host memory\n");
        exit(1);
    }
    return p;
}

static float *hrand(int64_t n, float offset, float scale)
{
    float *p = (float *)xmalloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) p[i] = offset + scale * urand();
    return p;
}

static float *hcopy(const float *src, int64_t n)
{
    float *p = (float *)xmalloc((size_t)n * sizeof(float));
    memcpy(p, src, (size_t)n * sizeof(float));
    return p;
}

static void *dalloc(size_t bytes)
{
    size_t a = (bytes + 255) & ~(size_t)255;
    void *p;
    if (a > g_cap - g_off) {
        fprintf(stderr, "numeric_test: arena exhausted (%zu + %zu > %zu)\n", g_off, a, g_cap);
        exit(1);
    }
    p = g_arena + g_off;
    g_off += a;
    return p;
}

static float *dnan(int64_t n) /* a device buffer full of NaN */
{
    float *p = (float *)dalloc((size_t)n * sizeof(float));
    fill_forward(&g_rt, n, nanf(""), p);
    return p;
}

static float *dup(const float *h, int64_t n)
{
    float *p = (float *)dalloc((size_t)n * sizeof(float));
    vcc_upload(&g_rt, p, h, (size_t)n * sizeof(float));
    return p;
}

static void check(const char *what, const float *dev, const float *ref, int64_t n, double tol)
{
    float *h = (float *)xmalloc((size_t)n * sizeof(float));
    double maxd = 0.0, maxr = 0.0, rel;
    int64_t worst = 0, nanbad = 0;
    vcc_download(&g_rt, h, dev, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        double r = ref[i], g = h[i], d;
        if (r != r || g != g) {
            if ((r != r) != (g != g)) nanbad++;
            continue;
        }
        d = fabs(g - r);
        if (d > maxd) {
            maxd = d;
            worst = i;
        }
        if (fabs(r) > maxr) maxr = fabs(r);
    }
    rel = maxd / (maxr > 0.0 ? maxr : 1.0);
    g_checks++;
    if (nanbad || rel > tol) g_fail++;
    printf("  %-44s n=%-8lld max|ref|=%-10.3e max|diff|=%-10.3e rel=%-9.2e (tol %.0e)%s",
           what, (long long)n, maxr, maxd, rel, tol, (nanbad || rel > tol) ? "  FAIL" : "");
    if (nanbad) printf(" [%lld NaN mismatches]", (long long)nanbad);
    if (rel > tol) printf(" [worst at %lld: gpu %.9g cpu %.9g]", (long long)worst, h[worst], ref[worst]);
    printf("\n");
    free(h);
}

/* ------------------------------------------------------------------------ */

static void conv_case(const char *name, int nsp, int64_t N, int64_t C, int64_t K, int64_t G, const int64_t *in,
                      const int64_t *ker, const int64_t *st, const int64_t *dil, const int64_t *pad, int bias)
{
    VccConvDesc d;
    int64_t Sin = 1, Sout = 1, Sk = 1, nx, nw, ny;
    float *x, *w, *b, *dy, *y_ref, *dx_ref, *dw_ref, *db_ref;
    size_t mark = g_off;
    memset(&d, 0, sizeof d);
    d.nsp = nsp;
    d.N = N; d.C = C; d.K = K; d.G = G;
    for (int i = 0; i < 3; i++) {
        int sp = i < nsp;
        d.in[i] = sp ? in[i] : 1;
        d.kernel[i] = sp ? ker[i] : 1;
        d.stride[i] = sp ? st[i] : 1;
        d.dilation[i] = sp ? dil[i] : 1;
        d.pad_begin[i] = d.pad_end[i] = sp ? pad[i] : 0;
        d.out[i] = (d.in[i] + 2 * d.pad_begin[i] - d.dilation[i] * (d.kernel[i] - 1) - 1) / d.stride[i] + 1;
        Sin *= d.in[i];
        Sout *= d.out[i];
        Sk *= d.kernel[i];
    }
    nx = N * C * Sin;
    nw = K * (C / G) * Sk;
    ny = N * K * Sout;
    printf("conv %s: N=%lld C=%lld K=%lld G=%lld in=%lldx%lldx%lld k=%lldx%lldx%lld s=%lldx%lldx%lld "
           "d=%lldx%lldx%lld p=%lldx%lldx%lld out=%lldx%lldx%lld%s\n",
           name, (long long)N, (long long)C, (long long)K, (long long)G, (long long)d.in[0], (long long)d.in[1],
           (long long)d.in[2], (long long)d.kernel[0], (long long)d.kernel[1], (long long)d.kernel[2],
           (long long)d.stride[0], (long long)d.stride[1], (long long)d.stride[2], (long long)d.dilation[0],
           (long long)d.dilation[1], (long long)d.dilation[2], (long long)d.pad_begin[0],
           (long long)d.pad_begin[1], (long long)d.pad_begin[2], (long long)d.out[0], (long long)d.out[1],
           (long long)d.out[2], bias ? " +bias" : "");

    x = hrand(nx, 0.0f, 1.0f);
    w = hrand(nw, 0.0f, 0.5f);
    b = hrand(K, 0.0f, 1.0f);
    dy = hrand(ny, 0.0f, 1.0f);
    y_ref = (float *)xmalloc((size_t)ny * sizeof(float));
    dx_ref = (float *)xmalloc((size_t)nx * sizeof(float));
    dw_ref = (float *)xmalloc((size_t)nw * sizeof(float));
    db_ref = (float *)xmalloc((size_t)K * sizeof(float));
    vccref_conv_forward(&d, x, w, bias ? b : NULL, y_ref);
    vccref_conv_backward_data(&d, dy, w, dx_ref);
    vccref_conv_backward_filter(&d, x, dy, dw_ref, bias ? db_ref : NULL);

    for (int pass = 0; pass < 4; pass++) {
        /* passes 0, 1: cuDNN's graph API (falling back per direction to the legacy calls), 2, 3: the legacy
         * calls alone; passes 0, 2: a generous planned workspace; 1, 3: none (zero-workspace algorithms) */
        size_t ws_bytes = pass % 2 == 0 ? (size_t)64 << 20 : 0;
        const char *api = pass < 2 ? "graph" : "legacy";
        void *ws = ws_bytes ? dalloc(ws_bytes) : NULL;
        VccConvDesc *dg;
        VccCudnnConv *be;
        float *gx = dup(x, nx), *gw = dup(w, nw), *gb = dup(b, K), *gdy = dup(dy, ny);
        float *gy = dnan(ny), *gdx = dnan(nx), *gdw = dnan(nw), *gdb = dnan(K);
        char label[96];
        if (g_ndesc >= (int)(sizeof g_desc / sizeof g_desc[0])) {
            fprintf(stderr, "numeric_test: too many conv cases\n");
            exit(1);
        }
        dg = &g_desc[g_ndesc++];
        *dg = d;
        dg->backend = NULL;
        g_rt.conv_api = pass < 2 ? VCC_CONV_API_GRAPH : VCC_CONV_API_LEGACY;
        conv_forward(&g_rt, dg, gx, gw, bias ? gb : NULL, gy, ws, ws_bytes);
        conv_backward_data(&g_rt, dg, gdy, gw, gdx, ws, ws_bytes);
        conv_backward_filter(&g_rt, dg, gx, gdy, gdw, bias ? gdb : NULL, ws, ws_bytes);
        vcc_rt_sync(&g_rt);
        be = (VccCudnnConv *)dg->backend;
        if (pass < 2) {
            printf("  %s, ws=%zu bytes: fwd %s (%zu B)  bwd_data %s (%zu B)  bwd_filter %s (%zu B)\n", api, ws_bytes,
                   be->gstate[0] == 1 ? "graph plan" : "legacy", be->gws[0],
                   be->gstate[1] == 1 ? "graph plan" : "legacy", be->gws[1],
                   be->gstate[2] == 1 ? "graph plan" : "legacy", be->gws[2]);
            for (int dir = 0; dir < 3; dir++) g_graph_runs += be->gstate[dir] == 1;
            g_graph_tries += 3;
        } else {
            printf("  %s, ws=%zu bytes: algos fwd %d (%zu B)  bwd_data %d (%zu B)  bwd_filter %d (%zu B)\n", api,
                   ws_bytes, (int)be->fwd_algo, be->fwd_ws, (int)be->bwd_data_algo, be->bwd_data_ws,
                   (int)be->bwd_filter_algo, be->bwd_filter_ws);
        }
        const char *wsl = pass % 2 ? "0" : "64M";
        snprintf(label, sizeof label, "y  = conv_forward        (%s, ws %s)", api, wsl);
        check(label, gy, y_ref, ny, 1e-4);
        snprintf(label, sizeof label, "dx = conv_backward_data  (%s, ws %s)", api, wsl);
        check(label, gdx, dx_ref, nx, 1e-4);
        snprintf(label, sizeof label, "dw = conv_backward_filter (%s, ws %s)", api, wsl);
        check(label, gdw, dw_ref, nw, 1e-4);
        if (bias) {
            snprintf(label, sizeof label, "db = conv_backward_filter (%s, ws %s)", api, wsl);
            check(label, gdb, db_ref, K, 1e-5);
        }
    }
    g_rt.conv_api = VCC_CONV_API_AUTO;
    free(x); free(w); free(b); free(dy); free(y_ref); free(dx_ref); free(dw_ref); free(db_ref);
    g_off = mark;
}

static void test_conv(void)
{
    { /* r3d_18 stem shape, scaled down: 3x7x7, stride 1x2x2, pad 1x3x3 */
        int64_t in[3] = {5, 16, 16}, k[3] = {3, 7, 7}, s[3] = {1, 2, 2}, dl[3] = {1, 1, 1}, p[3] = {1, 3, 3};
        conv_case("stem", 3, 2, 3, 8, 1, in, k, s, dl, p, 0);
    }
    { /* 3x3x3, stride 2, with bias */
        int64_t in[3] = {6, 9, 8}, k[3] = {3, 3, 3}, s[3] = {2, 2, 2}, dl[3] = {1, 1, 1}, p[3] = {1, 1, 1};
        conv_case("3x3x3/2", 3, 2, 8, 6, 1, in, k, s, dl, p, 1);
    }
    { /* mixed stride, dilation and padding per axis */
        int64_t in[3] = {6, 8, 9}, k[3] = {3, 3, 3}, s[3] = {2, 1, 2}, dl[3] = {2, 1, 1}, p[3] = {2, 1, 1};
        conv_case("dilated", 3, 2, 5, 7, 1, in, k, s, dl, p, 1);
    }
    { /* r2plus1d spatial (1x3x3) and temporal (3x1x1) factors */
        int64_t in[3] = {4, 10, 10}, k[3] = {1, 3, 3}, s[3] = {1, 2, 2}, dl[3] = {1, 1, 1}, p[3] = {0, 1, 1};
        int64_t in2[3] = {4, 5, 5}, k2[3] = {3, 1, 1}, s2[3] = {2, 1, 1}, p2[3] = {1, 0, 0};
        conv_case("(2+1)d spatial", 3, 2, 4, 6, 1, in, k, s, dl, p, 0);
        conv_case("(2+1)d temporal", 3, 2, 6, 4, 1, in2, k2, s2, dl, p2, 0);
    }
    { /* 1x1x1 stride-2 downsample shortcut */
        int64_t in[3] = {4, 8, 8}, k[3] = {1, 1, 1}, s[3] = {2, 2, 2}, dl[3] = {1, 1, 1}, p[3] = {0, 0, 0};
        conv_case("1x1x1/2", 3, 2, 8, 16, 1, in, k, s, dl, p, 0);
    }
    { /* grouped */
        int64_t in[3] = {4, 6, 6}, k[3] = {3, 3, 3}, s[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, p[3] = {1, 1, 1};
        conv_case("groups=2", 3, 2, 4, 6, 2, in, k, s, dl, p, 1);
    }
    { /* 2-D and 1-D (cuDNN sees 1-D as 2-D with an extent-1 axis) */
        int64_t in[3] = {9, 10, 1}, k[3] = {3, 3, 1}, s[3] = {2, 2, 1}, dl[3] = {1, 1, 1}, p[3] = {1, 1, 0};
        int64_t in1[3] = {17, 1, 1}, k1[3] = {5, 1, 1}, s1[3] = {2, 1, 1}, dl1[3] = {2, 1, 1}, p1[3] = {2, 0, 0};
        conv_case("2-D", 2, 2, 3, 5, 1, in, k, s, dl, p, 1);
        conv_case("1-D", 1, 2, 3, 4, 1, in1, k1, s1, dl1, p1, 1);
    }
    /* the graph API must have run some of these directions: a descriptor it refuses everywhere would send
     * every convolution down the legacy path unnoticed */
    g_checks++;
    printf("conv: %d of %d directions ran a plan of cuDNN's graph API%s\n", g_graph_runs, g_graph_tries,
           g_graph_runs ? "" : "  FAIL");
    if (!g_graph_runs) g_fail++;
}

/* ------------------------------------------------------------------------ */

static void bn_case(int64_t N, int64_t C, int64_t S, float offset, float scale)
{
    const int64_t n = N * C * S;
    const float momentum = 0.9f, eps = 1e-5f;
    size_t mark = g_off;
    float *x = hrand(n, offset, scale), *gamma = hrand(C, 1.0f, 0.5f), *beta = hrand(C, 0.0f, 0.5f);
    float *rm = hrand(C, 0.0f, 0.1f), *rv = hrand(C, 1.0f, 0.5f), *dy = hrand(n, 0.0f, 1.0f);
    float *rm_ref = hcopy(rm, C), *rv_ref = hcopy(rv, C);
    float *y_ref = (float *)xmalloc((size_t)n * sizeof(float)), *dx_ref = (float *)xmalloc((size_t)n * sizeof(float));
    float *mean_ref = (float *)xmalloc((size_t)C * sizeof(float));
    float *istd_ref = (float *)xmalloc((size_t)C * sizeof(float));
    float *dg_ref = (float *)xmalloc((size_t)C * sizeof(float)), *db_ref = (float *)xmalloc((size_t)C * sizeof(float));
    float *gx, *gg, *gb, *grm, *grv, *gy, *gmean, *gistd, *gdy, *gdx, *gdg, *gdb, *gxy, *gsm, *gsi;

    printf("batchnorm: N=%lld C=%lld S=%lld, x = %g + %g*U(-1,1)\n", (long long)N, (long long)C, (long long)S,
           offset, scale);
    vccref_batchnorm_forward_train(N, C, S, x, gamma, beta, rm_ref, rv_ref, momentum, eps, 1, y_ref, mean_ref,
                                   istd_ref);
    vccref_batchnorm_backward(N, C, S, x, dy, gamma, mean_ref, istd_ref, dx_ref, dg_ref, db_ref);

    gx = dup(x, n); gg = dup(gamma, C); gb = dup(beta, C); grm = dup(rm, C); grv = dup(rv, C);
    gy = dnan(n); gmean = dnan(C); gistd = dnan(C);
    batchnorm_forward_train(&g_rt, N, C, S, gx, gg, gb, grm, grv, momentum, eps, 1, gy, gmean, gistd);
    check("y = batchnorm_forward_train", gy, y_ref, n, 1e-5);
    check("save_mean", gmean, mean_ref, C, 1e-5);
    check("save_invstd", gistd, istd_ref, C, 1e-5);
    check("running_mean", grm, rm_ref, C, 1e-5);
    check("running_var (unbiased)", grv, rv_ref, C, 1e-5);
    /* in place, y == x */
    gxy = dup(x, n); grm = dup(rm, C); grv = dup(rv, C); gmean = dnan(C); gistd = dnan(C);
    batchnorm_forward_train(&g_rt, N, C, S, gxy, gg, gb, grm, grv, momentum, eps, 1, gxy, gmean, gistd);
    check("y = batchnorm_forward_train (y == x)", gxy, y_ref, n, 1e-5);
    /* the ONNX form: the running variance takes the biased batch variance */
    {
        float *rm_b = hcopy(rm, C), *rv_b = hcopy(rv, C), *y_b = (float *)xmalloc((size_t)n * sizeof(float));
        float *m_b = (float *)xmalloc((size_t)C * sizeof(float)), *s_b = (float *)xmalloc((size_t)C * sizeof(float));
        vccref_batchnorm_forward_train(N, C, S, x, gamma, beta, rm_b, rv_b, momentum, eps, 0, y_b, m_b, s_b);
        grm = dup(rm, C); grv = dup(rv, C); gy = dnan(n); gmean = dnan(C); gistd = dnan(C);
        batchnorm_forward_train(&g_rt, N, C, S, gx, gg, gb, grm, grv, momentum, eps, 0, gy, gmean, gistd);
        check("running_var (biased)", grv, rv_b, C, 1e-5);
        /* the inference form: normalized with the given (running) statistics */
        vccref_batchnorm_forward_infer(N, C, S, x, gamma, beta, rm, rv, eps, y_b);
        grm = dup(rm, C); grv = dup(rv, C); gy = dnan(n);
        batchnorm_forward_infer(&g_rt, N, C, S, gx, gg, gb, grm, grv, eps, gy);
        check("y = batchnorm_forward_infer", gy, y_b, n, 1e-5);
        gxy = dup(x, n);
        batchnorm_forward_infer(&g_rt, N, C, S, gxy, gg, gb, grm, grv, eps, gxy);
        check("y = batchnorm_forward_infer (y == x)", gxy, y_b, n, 1e-5);
        free(rm_b); free(rv_b); free(y_b); free(m_b); free(s_b);
    }

    /* backward from the CPU's saved statistics, so only the backward differs */
    gsm = dup(mean_ref, C); gsi = dup(istd_ref, C); gdy = dup(dy, n);
    gdx = dnan(n); gdg = dnan(C); gdb = dnan(C);
    batchnorm_backward(&g_rt, N, C, S, gx, gdy, gg, gsm, gsi, gdx, gdg, gdb);
    check("dx = batchnorm_backward", gdx, dx_ref, n, 1e-4);
    check("dgamma", gdg, dg_ref, C, 1e-5);
    check("dbeta", gdb, db_ref, C, 1e-5);
    gdg = dnan(C); gdb = dnan(C);
    batchnorm_backward(&g_rt, N, C, S, gx, gdy, gg, gsm, gsi, gdy, gdg, gdb);
    check("dx = batchnorm_backward (dx == dy)", gdy, dx_ref, n, 1e-4);
    /* without dgamma/dbeta the block of each channel writes dx itself */
    gdy = dup(dy, n); gdx = dnan(n); gdb = dnan(C);
    batchnorm_backward(&g_rt, N, C, S, gx, gdy, gg, gsm, gsi, gdx, NULL, gdb);
    check("dx = batchnorm_backward (dgamma NULL)", gdx, dx_ref, n, 1e-4);
    check("dbeta (dgamma NULL)", gdb, db_ref, C, 1e-5);

    free(x); free(gamma); free(beta); free(rm); free(rv); free(dy); free(rm_ref); free(rv_ref);
    free(y_ref); free(dx_ref); free(mean_ref); free(istd_ref); free(dg_ref); free(db_ref);
    g_off = mark;
}

static void test_bn(void)
{
    bn_case(3, 5, 37, 0.0f, 1.0f);
    bn_case(2, 4, 4 * 28 * 28, 5.0f, 3.0f); /* several block-stride iterations, large mean */
    bn_case(8, 16, 1, -2.0f, 0.5f);          /* S = 1 (after global pooling) */
}

/* ------------------------------------------------------------------------ */

static void gemm_case(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, float beta, int64_t cr,
                      int64_t cc, int has_c)
{
    size_t mark = g_off;
    float *A = hrand(M * K, 0.0f, 1.0f), *B = hrand(K * N, 0.0f, 1.0f), *C = hrand(cr * cc, 0.0f, 1.0f);
    float *dY = hrand(M * N, 0.0f, 1.0f);
    float *Y_ref = (float *)xmalloc((size_t)(M * N) * sizeof(float));
    float *dA_ref = (float *)xmalloc((size_t)(M * K) * sizeof(float));
    float *dB_ref = (float *)xmalloc((size_t)(K * N) * sizeof(float));
    float *dC_ref = (float *)xmalloc((size_t)(cr * cc) * sizeof(float));
    float *gA = dup(A, M * K), *gB = dup(B, K * N), *gC = dup(C, cr * cc), *gdY = dup(dY, M * N);
    float *gY = dnan(M * N), *gdA = dnan(M * K), *gdB = dnan(K * N), *gdC = dnan(cr * cc);
    char label[96];

    vccref_gemm_forward(ta, tb, M, N, K, alpha, A, B, beta, has_c ? C : NULL, cr, cc, Y_ref);
    vccref_gemm_backward(ta, tb, M, N, K, alpha, beta, A, B, dY, dA_ref, dB_ref, has_c ? dC_ref : NULL, cr, cc);
    gemm_forward(&g_rt, ta, tb, M, N, K, alpha, gA, gB, beta, has_c ? gC : NULL, cr, cc, gY);
    gemm_backward(&g_rt, ta, tb, M, N, K, alpha, beta, gA, gB, gdY, gdA, gdB, has_c ? gdC : NULL, cr, cc);
    snprintf(label, sizeof label, "gemm tA=%d tB=%d %lldx%lldx%lld C=%s%lldx%lld Y", ta, tb, (long long)M,
             (long long)N, (long long)K, has_c ? "" : "none/", (long long)cr, (long long)cc);
    check(label, gY, Y_ref, M * N, 2e-5);
    snprintf(label, sizeof label, "  dA");
    check(label, gdA, dA_ref, M * K, 2e-5);
    snprintf(label, sizeof label, "  dB");
    check(label, gdB, dB_ref, K * N, 2e-5);
    if (has_c) check("  dC", gdC, dC_ref, cr * cc, 2e-5);
    free(A); free(B); free(C); free(dY); free(Y_ref); free(dA_ref); free(dB_ref); free(dC_ref);
    g_off = mark;
}

static void test_gemm(void)
{
    const int64_t M = 5, N = 7, K = 11;
    const int64_t shapes[4][2] = {{1, N}, {M, 1}, {M, N}, {1, 1}};
    printf("gemm: all transposes and C broadcasts, alpha 0.7 beta 1.3\n");
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            gemm_case(ta, tb, M, N, K, 0.7f, 1.3f, 1, N, 0);
            for (int s = 0; s < 4; s++) gemm_case(ta, tb, M, N, K, 0.7f, 1.3f, shapes[s][0], shapes[s][1], 1);
        }
    printf("gemm: the classifier of r3d_18 (Linear 512 -> 400, batch 4)\n");
    gemm_case(0, 1, 4, 400, 512, 1.0f, 1.0f, 1, 400, 1);
}

/* ------------------------------------------------------------------------ */

static void xent_case(int64_t N, int64_t K, float dloss)
{
    size_t mark = g_off;
    float *logits = hrand(N * K, 0.0f, 5.0f);
    int64_t *labels = (int64_t *)xmalloc((size_t)N * sizeof(int64_t));
    float *prob_ref = (float *)xmalloc((size_t)(N * K) * sizeof(float));
    float *dl_ref = (float *)xmalloc((size_t)(N * K) * sizeof(float));
    float loss_ref = 0.0f, loss_gpu;
    float *gl, *gp, *gloss, *gdloss, *gdl;
    int64_t *glab;
    for (int64_t i = 0; i < N; i++) labels[i] = (int64_t)((urand() + 1.0f) * 0.5f * (float)K) % K;
    printf("softmax_xent: N=%lld K=%lld dloss=%g\n", (long long)N, (long long)K, dloss);
    vccref_softmax_xent_forward(N, K, logits, labels, &loss_ref, prob_ref);
    vccref_softmax_xent_backward(N, K, prob_ref, labels, &dloss, dl_ref);
    gl = dup(logits, N * K);
    glab = (int64_t *)dalloc((size_t)N * sizeof(int64_t));
    vcc_upload(&g_rt, glab, labels, (size_t)N * sizeof(int64_t));
    gp = dnan(N * K);
    gloss = dnan(1);
    gdloss = dup(&dloss, 1);
    gdl = dnan(N * K);
    softmax_xent_forward(&g_rt, N, K, gl, glab, gloss, gp);
    softmax_xent_backward(&g_rt, N, K, gp, glab, gdloss, gdl);
    loss_gpu = vcc_read_scalar(&g_rt, gloss);
    printf("  loss gpu %.9g cpu %.9g\n", loss_gpu, loss_ref);
    check("loss", gloss, &loss_ref, 1, 1e-5);
    check("prob", gp, prob_ref, N * K, 1e-5);
    check("dlogits", gdl, dl_ref, N * K, 1e-5);
    free(logits); free(labels); free(prob_ref); free(dl_ref);
    g_off = mark;
}

static void test_xent(void)
{
    xent_case(6, 400, 1.0f);
    xent_case(3, 10, 0.75f);
    xent_case(300, 7, 2.0f); /* more rows than threads in the block */
}

/* ------------------------------------------------------------------------ */

static void test_misc(void)
{
    const int64_t n = 3001, NC = 12, S = 98;
    size_t mark = g_off;
    float *x = hrand(n, 0.0f, 1.0f), *a = hrand(n, 0.0f, 1.0f), *g = hrand(n, 0.0f, 1.0f);
    float *v = hrand(n, 0.0f, 0.1f), *ref = (float *)xmalloc((size_t)n * sizeof(float));
    float *ref2 = (float *)xmalloc((size_t)n * sizeof(float)), *zero = (float *)xmalloc((size_t)n * sizeof(float));
    float *px = hrand(NC * S, 0.0f, 1.0f), *py = (float *)xmalloc((size_t)NC * sizeof(float));
    float *pdx = (float *)xmalloc((size_t)(NC * S) * sizeof(float));
    float *gx, *ga, *gy, *gp, *gv, *gg;
    memset(zero, 0, (size_t)n * sizeof(float));
    x[0] = 0.0f; x[1] = -0.0f; x[2] = nanf(""); x[3] = -1e-30f; x[4] = 1e-30f;
    printf("elementwise: n=%lld, pooling NC=%lld S=%lld\n", (long long)n, (long long)NC, (long long)S);

    gx = dup(x, n); gy = dnan(n);
    vccref_relu_forward(n, x, ref);
    relu_forward(&g_rt, n, gx, gy);
    check("relu_forward", gy, ref, n, 0.0);
    relu_forward(&g_rt, n, gx, gx);
    check("relu_forward (y == x)", gx, ref, n, 0.0);
    ga = dup(a, n); gy = dnan(n);
    vccref_relu_backward(n, ref, a, ref2);
    relu_backward(&g_rt, n, gx, ga, gy);
    check("relu_backward", gy, ref2, n, 0.0);
    relu_backward(&g_rt, n, gx, ga, ga);
    check("relu_backward (dx == dy)", ga, ref2, n, 0.0);

    gx = dup(x, n); ga = dup(a, n); gy = dnan(n);
    vccref_add_forward(n, x, a, ref);
    add_forward(&g_rt, n, gx, ga, gy);
    check("add_forward", gy, ref, n, 0.0);
    add_forward(&g_rt, n, gx, ga, ga);
    check("add_forward (y == b)", ga, ref, n, 0.0);
    gy = dnan(n);
    vccref_copy_forward(n, x, ref);
    copy_forward(&g_rt, n, gx, gy);
    check("copy_forward", gy, ref, n, 0.0);
    /* overlapping ranges, both directions (memmove semantics) */
    for (int dir = 0; dir < 2; dir++) {
        const int64_t shift = dir ? 777 : 5, m = n - shift;
        float *gbuf = dup(a, n);
        memcpy(ref, a, (size_t)n * sizeof(float));
        if (dir) { vccref_copy_forward(m, ref + shift, ref); copy_forward(&g_rt, m, gbuf + shift, gbuf); }
        else { vccref_copy_forward(m, ref, ref + shift); copy_forward(&g_rt, m, gbuf, gbuf + shift); }
        check(dir ? "copy_forward (overlap, y < x)" : "copy_forward (overlap, y > x)", gbuf, ref, n, 0.0);
    }
    gy = dnan(n);
    vccref_fill_forward(n, -2.5f, ref);
    fill_forward(&g_rt, n, -2.5f, gy);
    check("fill_forward", gy, ref, n, 0.0);
    {
        /* num_batches_tracked: one increment per call, in int64 (past 2^32 too) */
        int64_t start = ((int64_t)1 << 32) - 1, got = 0, *gc = (int64_t *)dalloc(sizeof(int64_t));
        cudaMemcpy(gc, &start, sizeof start, cudaMemcpyHostToDevice);
        counter_increment(&g_rt, gc);
        counter_increment(&g_rt, gc);
        cudaMemcpy(&got, gc, sizeof got, cudaMemcpyDeviceToHost);
        g_checks++;
        if (got != start + 2) {
            printf("  FAIL counter_increment: %lld, expected %lld\n", (long long)got, (long long)(start + 2));
            g_fail++;
        }
    }

    gp = dup(px, NC * S); gy = dnan(NC);
    vccref_global_avgpool_forward(NC, S, px, py);
    global_avgpool_forward(&g_rt, NC, S, gp, gy);
    check("global_avgpool_forward", gy, py, NC, 1e-6);
    gx = dup(py, NC); gy = dnan(NC * S);
    vccref_global_avgpool_backward(NC, S, py, pdx);
    global_avgpool_backward(&g_rt, NC, S, gx, gy);
    check("global_avgpool_backward", gy, pdx, NC * S, 1e-6);

    /* SGD with momentum and weight decay: p and v */
    memcpy(ref, x, (size_t)n * sizeof(float));
    ref[2] = 0.5f; /* no NaN here */
    memcpy(ref2, v, (size_t)n * sizeof(float));
    gp = dup(ref, n); gg = dup(g, n); gv = dup(v, n);
    vccref_sgd_update(n, ref, g, ref2, 0.05f, 0.9f, 1e-4f);
    sgd_update(&g_rt, n, gp, gg, gv, NULL, 0.05f, 0.9f, 1e-4f);
    check("sgd_update p (momentum 0.9, wd 1e-4)", gp, ref, n, 1e-6);
    check("sgd_update v", gv, ref2, n, 1e-6);
    /* momentum 0 and no buffer (v NULL) == a zero buffer */
    gp = dup(ref, n);
    vccref_sgd_update(n, ref, g, zero, 0.1f, 0.0f, 1e-3f);
    sgd_update(&g_rt, n, gp, gg, NULL, NULL, 0.1f, 0.0f, 1e-3f);
    check("sgd_update p (momentum 0, v NULL)", gp, ref, n, 1e-6);

    free(x); free(a); free(g); free(v); free(ref); free(ref2); free(zero); free(px); free(py); free(pdx);
    g_off = mark;
}

/* grid-stride loops past the capped grid: more elements than threads launched */
static void test_big(void)
{
    const int64_t n = (int64_t)VCC_CUDA_MAX_BLOCKS * VCC_CUDA_THREADS + 12345;
    size_t mark = g_off;
    float *a = (float *)dalloc((size_t)n * sizeof(float)), *b = (float *)dalloc((size_t)n * sizeof(float));
    float *h = (float *)xmalloc((size_t)n * sizeof(float));
    int64_t bad = 0;
    printf("grid-stride: n=%lld (> %d blocks x %d threads)\n", (long long)n, VCC_CUDA_MAX_BLOCKS, VCC_CUDA_THREADS);
    fill_forward(&g_rt, n, 1.5f, a);
    fill_forward(&g_rt, n, nanf(""), b);
    copy_forward(&g_rt, n, a, b);
    add_forward(&g_rt, n, a, b, b);
    relu_forward(&g_rt, n, b, b);
    vcc_download(&g_rt, h, b, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) bad += h[i] != 3.0f;
    g_checks++;
    if (bad) g_fail++;
    printf("  %-44s n=%-8lld wrong=%lld%s\n", "fill+copy+add+relu == 3", (long long)n, (long long)bad,
           bad ? "  FAIL" : "");
    free(h);
    g_off = mark;
}

/* Fused attention (ir/ops/attention.c): batch 3 (two leading dims 3 x 1 for the bias' broadcast), Lq 37,
 * Lk 45 (tails of the 64-row blocks and 16-row tiles), D 24, Dv 20, scale 0.2, an additive bias broadcast
 * over the first leading dim, K in both layouts, with and without attention dropout (ratio 0.25). */
static void attention_case(int k_t, int dropout)
{
    const int64_t B = 3, Lq = 37, Lk = 45, D = 24, Dv = 20;
    VccAttnDesc d;
    char label[96];
    float *q = hrand(B * Lq * D, 0.0f, 1.0f), *k = hrand(B * Lk * D, 0.0f, 1.0f), *v = hrand(B * Lk * Dv, 0.0f, 1.0f);
    float *bias = hrand(Lq * Lk, 0.0f, 2.0f), *dout = hrand(B * Lq * Dv, 0.0f, 1.0f);
    float *o = (float *)xmalloc((size_t)(B * Lq * Dv) * sizeof(float)), *lse = (float *)xmalloc((size_t)(B * Lq) * sizeof(float));
    float *dq = (float *)xmalloc((size_t)(B * Lq * D) * sizeof(float)), *dk = (float *)xmalloc((size_t)(B * Lk * D) * sizeof(float));
    float *dv = (float *)xmalloc((size_t)(B * Lk * Dv) * sizeof(float)), *delta = (float *)xmalloc((size_t)(B * Lq) * sizeof(float));
    float *gq = dup(q, B * Lq * D), *gk = dup(k, B * Lk * D), *gv = dup(v, B * Lk * Dv), *gb = dup(bias, Lq * Lk);
    float *gdo = dup(dout, B * Lq * Dv), *go = dnan(B * Lq * Dv), *gl = dnan(B * Lq), *gdq = dnan(B * Lq * D);
    float *gdk = dnan(B * Lk * D), *gdv = dnan(B * Lk * Dv), *gde = dnan(B * Lq);
    memset(&d, 0, sizeof d);
    d.B = B, d.Lq = Lq, d.Lk = Lk, d.D = D, d.Dv = Dv, d.scale = 0.2f, d.k_t = k_t, d.nb = 2;
    d.bdims[0] = 3, d.bdims[1] = 1, d.bias_si = Lk, d.bias_sj = 1; /* bias (Lq, Lk): strides 0 over both leading dims */
    if (dropout) d.threshold = 1073741824u, d.dscale = 1.0f / 0.75f, d.stream = 5;
    vccref_attention_forward(&d, q, k, v, bias, o, lse);
    vccref_attention_backward(&d, q, k, v, bias, o, lse, dout, dq, dk, dv, delta);
    g_rt.seed = 7, g_rt.step = 1;
    attention_forward(&g_rt, &d, gq, gk, gv, gb, go, gl);
    attention_backward(&g_rt, &d, gq, gk, gv, gb, go, gl, gdo, gdq, gdk, gdv, gde);
    snprintf(label, sizeof label, "attention%s%s o", k_t ? " K^T" : "", dropout ? " dropout" : "");
    check(label, go, o, B * Lq * Dv, 1e-6);
    snprintf(label, sizeof label, "attention%s%s lse", k_t ? " K^T" : "", dropout ? " dropout" : "");
    check(label, gl, lse, B * Lq, 1e-6);
    snprintf(label, sizeof label, "attention%s%s dq", k_t ? " K^T" : "", dropout ? " dropout" : "");
    check(label, gdq, dq, B * Lq * D, 1e-6);
    snprintf(label, sizeof label, "attention%s%s dk", k_t ? " K^T" : "", dropout ? " dropout" : "");
    check(label, gdk, dk, B * Lk * D, 1e-6);
    snprintf(label, sizeof label, "attention%s%s dv", k_t ? " K^T" : "", dropout ? " dropout" : "");
    check(label, gdv, dv, B * Lk * Dv, 1e-6);
    free(q); free(k); free(v); free(bias); free(dout); free(o); free(lse); free(dq); free(dk); free(dv); free(delta);
}

/* The transformer kernels: fused attention, AdamW, Gather and its gradient, the random draws. */
static void test_transformer(void)
{
    const int64_t n = 10007, outer = 6, len = 9, inner = 33, nidx = 5;
    const int64_t idx[5] = {3, -1, 0, 3, 8};
    VccAdamwCoef c = vcc_adamw_coef(1e-3, 0.9, 0.999, 1e-8, 1e-2, 3);
    VccRandomDesc ru = {11, 0, -2.0f, 5.0f, 0, 0}, rn = {12, 1, 1.0f, 2.0f, 1, 99};
    float *p = hrand(n, 0.0f, 1.0f), *g = hrand(n, 0.0f, 1.0f), *m = hrand(n, 0.0f, 0.1f), *v = hrand(n, 1.0f, 0.5f);
    float *x = hrand(outer * len * inner, 0.0f, 1.0f), *dy = hrand(outer * nidx * inner, 0.0f, 1.0f);
    float *y = (float *)xmalloc((size_t)(outer * nidx * inner) * sizeof(float));
    float *dx = (float *)xmalloc((size_t)(outer * len * inner) * sizeof(float)), *r = (float *)xmalloc((size_t)n * sizeof(float));
    float *gp = dup(p, n), *gg = dup(g, n), *gm = dup(m, n), *gv = dup(v, n);
    int64_t *gidx = (int64_t *)dalloc(sizeof idx);
    float *gx = dup(x, outer * len * inner), *gy = dnan(outer * nidx * inner), *gdy = dup(dy, outer * nidx * inner);
    float *gdx = dnan(outer * len * inner), *gr = dnan(n);
    printf("transformer kernels\n");
    attention_case(0, 0);
    attention_case(1, 0);
    attention_case(0, 1);
    vccref_adamw_update(n, p, g, m, v, c);
    adamw_update(&g_rt, n, gp, gg, gm, gv, NULL, c);
    check("adamw_update p", gp, p, n, 1e-6);
    check("adamw_update exp_avg", gm, m, n, 1e-6);
    check("adamw_update exp_avg_sq", gv, v, n, 1e-6);
    vcc_upload(&g_rt, gidx, idx, sizeof idx);
    vccref_gather(outer, len, inner, nidx, idx, x, y, dy, dx);
    gather_forward(&g_rt, outer, len, inner, nidx, gidx, gx, gy);
    gather_backward(&g_rt, outer, len, inner, nidx, gidx, gdy, gdx);
    check("gather_forward", gy, y, outer * nidx * inner, 0.0);
    check("gather_backward (repeated index 3)", gdx, dx, outer * len * inner, 0.0);
    g_rt.seed = 7, g_rt.step = 1;
    vccref_random_like(n, &ru, r);
    random_like_forward(&g_rt, n, &ru, gr);
    check("random_like_forward uniform", gr, r, n, 0.0);
    vccref_random_like(n, &rn, r);
    random_like_forward(&g_rt, n, &rn, gr);
    check("random_like_forward normal (own seed)", gr, r, n, 1e-6);
    free(p); free(g); free(m); free(v); free(x); free(dy); free(y); free(dx); free(r);
}

int main(int argc, char **argv)
{
    int ndev = 0, all = argc < 2;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    struct cudaDeviceProp prop;
    if (e != cudaSuccess || ndev < 1) {
        printf("numeric_test: no CUDA device (%s); skipping\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "count 0");
        return 77;
    }
    VCC_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s (sm_%d%d), cuDNN %zu, cuBLAS via CUDA runtime %d\n", prop.name, prop.major, prop.minor,
           cudnnGetVersion(), CUDART_VERSION);
    vcc_rt_init(&g_rt);
    g_cap = (size_t)512 << 20;
    g_arena = (unsigned char *)vcc_arena_alloc(&g_rt, g_cap);
    if (!g_arena) {
        fprintf(stderr, "numeric_test: arena allocation of %zu bytes failed\n", g_cap);
        return 1;
    }
    for (int i = all ? 0 : 1; i < (all ? 1 : argc); i++) {
        const char *grp = all ? "all" : argv[i];
        int any = all;
        if (all || !strcmp(grp, "conv")) any = 1, test_conv();
        if (all || !strcmp(grp, "bn")) any = 1, test_bn();
        if (all || !strcmp(grp, "gemm")) any = 1, test_gemm();
        if (all || !strcmp(grp, "xent")) any = 1, test_xent();
        if (all || !strcmp(grp, "misc")) any = 1, test_misc();
        if (all || !strcmp(grp, "big")) any = 1, test_big();
        if (all || !strcmp(grp, "transformer")) any = 1, test_transformer();
        if (!any) {
            fprintf(stderr, "numeric_test: unknown group '%s' (conv bn gemm xent misc big transformer)\n", grp);
            return 2;
        }
    }
    vcc_rt_sync(&g_rt);
    vcc_arena_free(&g_rt, g_arena);
    vcc_rt_destroy(&g_rt);
    for (int i = 0; i < g_ndesc; i++)
        if (g_desc[i].backend) {
            printf("conv backend %d not released\n", i);
            g_fail++;
        }
    printf("numeric_test: %d checks, %d failed\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
