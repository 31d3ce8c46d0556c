/*
 * test_kernels.c - runtime/vcc_cpu.h kernels against PyTorch references.
 *
 *   vcc_rt_test_kernels REFDIR
 *
 * REFDIR holds the .npy files tests/runtime/gen_ref.py writes (PyTorch in
 * float64 on float32 inputs; see that script for the file list). Every output
 * is compared with err = max|got - ref| / max(max|ref|, 1e-30), i.e. the max
 * absolute error normalised by the reference's max magnitude, against a
 * tolerance of 1e-4. NaNs must match NaNs. Prints one line per check; exit 1
 * if any check fails.
 *
 * Shape legend: N batch, C channels, K filters/classes, T H W spatial,
 * S = prod(spatial), G groups.
 */
#include "../../runtime/vcc_elem.h"
#include "../../runtime/vcc_io.h"
#include "../../runtime/vcc_cpu.h"

#define TOL 1e-4

static const char *g_dir;
static int g_fail;
static int g_checks;

typedef struct {
    const char *kernel;
    double worst;
} Worst;
static Worst g_worst[16];
static int g_nworst;

static void note_worst(const char *kernel, double err)
{
    int i;
    for (i = 0; i < g_nworst; i++) {
        if (strcmp(g_worst[i].kernel, kernel) == 0) {
            if (err > g_worst[i].worst || err != err) g_worst[i].worst = err;
            return;
        }
    }
    if (g_nworst < 16) {
        g_worst[g_nworst].kernel = kernel;
        g_worst[g_nworst].worst = err;
        g_nworst++;
    }
}

/* load(name, want_dtype, &count): the array REFDIR/name.npy, aborting the test on error. */
static void *load(const char *name, const char *dtype, int64_t *count, VccNpy *keep)
{
    char path[1024], err[512];
    int64_t n = 1;
    int i;
    snprintf(path, sizeof path, "%s/%s.npy", g_dir, name);
    if (vcc_npy_load(path, keep, err, sizeof err)) {
        fprintf(stderr, "FAIL load: %s\n", err);
        exit(1);
    }
    if (strcmp(keep->dtype, dtype) != 0) {
        fprintf(stderr, "FAIL %s: dtype %s, expected %s\n", path, keep->dtype, dtype);
        exit(1);
    }
    for (i = 0; i < keep->rank; i++) n *= keep->dims[i];
    if (count) *count = n;
    return keep->data;
}

static int file_exists(const char *name)
{
    char path[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s.npy", g_dir, name);
    f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Simple holder for loaded arrays freed at the end of a case. */
typedef struct {
    VccNpy a[24];
    int n;
} Bag;

static float *bagf(Bag *b, const char *fmt, int i, int64_t *count)
{
    char name[128];
    snprintf(name, sizeof name, fmt, i);
    return (float *)load(name, "f4", count, &b->a[b->n++]);
}

static int64_t *bagi(Bag *b, const char *fmt, int i, int64_t *count)
{
    char name[128];
    snprintf(name, sizeof name, fmt, i);
    return (int64_t *)load(name, "i8", count, &b->a[b->n++]);
}

static void bag_free(Bag *b)
{
    int i;
    for (i = 0; i < b->n; i++) vcc_npy_free(&b->a[i]);
    b->n = 0;
}

/* check: compare got (n) against ref (n); print and record. */
static void check(const char *kernel, const char *what, int idx, const float *got, const float *ref, int64_t n)
{
    double maxref = 0.0, maxerr = 0.0, e;
    int64_t i;
    int nanbad = 0;
    for (i = 0; i < n; i++) {
        int gn = got[i] != got[i], rn = ref[i] != ref[i];
        if (gn || rn) {
            if (gn != rn) nanbad = 1;
            continue;
        }
        if (isinf(ref[i]) || isinf(got[i])) {
            if (got[i] != ref[i]) nanbad = 1;
            continue;
        }
        if (fabs(ref[i]) > maxref) maxref = fabs(ref[i]);
        if (fabs((double)got[i] - ref[i]) > maxerr) maxerr = fabs((double)got[i] - ref[i]);
    }
    e = maxerr / (maxref > 1e-30 ? maxref : 1e-30);
    if (maxref == 0.0 && maxerr == 0.0) e = 0.0;
    g_checks++;
    if (nanbad || !(e <= TOL)) {
        g_fail++;
        printf("FAIL %-22s case %2d %-8s max-abs-normalised error %.3e (tol %.0e)%s\n", kernel, idx, what, e, TOL,
               nanbad ? ", NaN/Inf mismatch" : "");
    } else {
        printf("ok   %-22s case %2d %-8s max-abs-normalised error %.3e (tol %.0e)\n", kernel, idx, what, e, TOL);
    }
    note_worst(kernel, nanbad ? 1.0 / 0.0 : e);
}

static float *falloc(int64_t n)
{
    float *p = (float *)calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}

static void test_conv(VccRt *rt, int i)
{
    Bag b;
    int64_t *p, nx, nw, ny, k;
    float *x, *w, *bias = NULL, *y, *dy, *dx, *dw, *db = NULL, *ry, *rdx, *rdw, *rdb = NULL;
    float *ws;
    size_t wsb;
    VccConvDesc d;
    b.n = 0;
    p = bagi(&b, "conv_%d_p", i, NULL);
    memset(&d, 0, sizeof d);
    d.nsp = (int)p[0];
    d.N = p[1]; d.C = p[2]; d.K = p[3]; d.G = p[4];
    for (k = 0; k < 3; k++) {
        d.in[k] = p[6 + k];
        d.kernel[k] = p[9 + k];
        d.stride[k] = p[12 + k];
        d.dilation[k] = p[15 + k];
        d.pad_begin[k] = p[18 + k];
        d.pad_end[k] = p[21 + k];
        d.out[k] = (d.in[k] + d.pad_begin[k] + d.pad_end[k] - d.dilation[k] * (d.kernel[k] - 1) - 1) / d.stride[k] + 1;
    }
    x = bagf(&b, "conv_%d_x", i, &nx);
    w = bagf(&b, "conv_%d_w", i, &nw);
    ry = bagf(&b, "conv_%d_y", i, &ny);
    dy = bagf(&b, "conv_%d_dy", i, NULL);
    rdx = bagf(&b, "conv_%d_dx", i, NULL);
    rdw = bagf(&b, "conv_%d_dw", i, NULL);
    if (p[5]) {
        bias = bagf(&b, "conv_%d_b", i, NULL);
        rdb = bagf(&b, "conv_%d_db", i, NULL);
    }
    wsb = (size_t)vcc_conv_col_elems(&d) * sizeof(float);
    ws = falloc(vcc_conv_col_elems(&d));
    y = falloc(ny);
    dx = falloc(nx);
    dw = falloc(nw);
    if (p[5]) db = falloc(d.K);
    /* Garbage in the outputs: kernels must overwrite, not accumulate. */
    for (k = 0; k < ny; k++) y[k] = 1e6f;
    for (k = 0; k < nx; k++) dx[k] = 1e6f;
    for (k = 0; k < nw; k++) dw[k] = 1e6f;
    if (db) for (k = 0; k < d.K; k++) db[k] = 1e6f;
    for (k = 0; k < vcc_conv_col_elems(&d); k++) ws[k] = 1e6f;

    conv_forward(rt, &d, x, w, bias, y, ws, wsb);
    check("conv_forward", "y", i, y, ry, ny);
    conv_backward_data(rt, &d, dy, w, dx, ws, wsb);
    check("conv_backward_data", "dx", i, dx, rdx, nx);
    conv_backward_filter(rt, &d, x, dy, dw, db, ws, wsb);
    check("conv_backward_filter", "dw", i, dw, rdw, nw);
    if (db) check("conv_backward_filter", "db", i, db, rdb, d.K);
    free(ws); free(y); free(dx); free(dw); free(db);
    bag_free(&b);
}

static void test_bn(VccRt *rt, int i)
{
    Bag b;
    int64_t *p, n, N, C, S;
    float *f, *x, *gamma, *beta, *rm, *rv, *ry, *rrm, *rrv, *rmean, *rinv, *dy, *rdx, *rdg, *rdb;
    float *y, *mean, *invstd, *dx, *dg, *db;
    b.n = 0;
    p = bagi(&b, "bn_%d_p", i, NULL);
    N = p[0]; C = p[1]; S = p[2];
    f = bagf(&b, "bn_%d_f", i, NULL);
    x = bagf(&b, "bn_%d_x", i, &n);
    gamma = bagf(&b, "bn_%d_gamma", i, NULL);
    beta = bagf(&b, "bn_%d_beta", i, NULL);
    rm = bagf(&b, "bn_%d_rm", i, NULL);
    rv = bagf(&b, "bn_%d_rv", i, NULL);
    ry = bagf(&b, "bn_%d_y", i, NULL);
    rrm = bagf(&b, "bn_%d_rm_out", i, NULL);
    rrv = bagf(&b, "bn_%d_rv_out", i, NULL);
    rmean = bagf(&b, "bn_%d_mean", i, NULL);
    rinv = bagf(&b, "bn_%d_invstd", i, NULL);
    dy = bagf(&b, "bn_%d_dy", i, NULL);
    rdx = bagf(&b, "bn_%d_dx", i, NULL);
    rdg = bagf(&b, "bn_%d_dgamma", i, NULL);
    rdb = bagf(&b, "bn_%d_dbeta", i, NULL);
    y = falloc(n); dx = falloc(n);
    mean = falloc(C); invstd = falloc(C); dg = falloc(C); db = falloc(C);
    /* PyTorch momentum p is ONNX momentum 1 - p. */
    batchnorm_forward_train(rt, N, C, S, x, gamma, beta, rm, rv, 1.0f - f[1], f[0], 1, y, mean, invstd);
    check("batchnorm_forward", "y", i, y, ry, n);
    check("batchnorm_forward", "mean", i, mean, rmean, C);
    check("batchnorm_forward", "invstd", i, invstd, rinv, C);
    check("batchnorm_forward", "run_mean", i, rm, rrm, C);
    check("batchnorm_forward", "run_var", i, rv, rrv, C);
    batchnorm_backward(rt, N, C, S, x, dy, gamma, mean, invstd, dx, dg, db);
    check("batchnorm_backward", "dx", i, dx, rdx, n);
    check("batchnorm_backward", "dgamma", i, dg, rdg, C);
    check("batchnorm_backward", "dbeta", i, db, rdb, C);
    /* In place: y == x and dx == dy give the same numbers. */
    {
        float *x2 = falloc(n), *dy2 = falloc(n), *m2 = falloc(C), *s2 = falloc(C);
        float *rm2 = falloc(C), *rv2 = falloc(C);
        memcpy(x2, x, (size_t)n * sizeof(float));
        memcpy(dy2, dy, (size_t)n * sizeof(float));
        batchnorm_forward_train(rt, N, C, S, x2, gamma, beta, rm2, rv2, 0.9f, f[0], 1, x2, m2, s2);
        check("batchnorm_forward", "inplace", i, x2, ry, n);
        batchnorm_backward(rt, N, C, S, x, dy2, gamma, mean, invstd, dy2, NULL, NULL);
        check("batchnorm_backward", "inplace", i, dy2, rdx, n);
        free(x2); free(dy2); free(m2); free(s2); free(rm2); free(rv2);
    }
    free(y); free(dx); free(mean); free(invstd); free(dg); free(db);
    bag_free(&b);
}

static void test_gemm(VccRt *rt, int i)
{
    Bag b;
    int64_t *p, ta, tb, M, N, K, cr, cc, nA, nB;
    float *f, *A, *B, *C = NULL, *rY, *dY, *rdA, *rdB, *rdC = NULL, *Y, *dA, *dB, *dC = NULL;
    b.n = 0;
    p = bagi(&b, "gemm_%d_p", i, NULL);
    ta = p[0]; tb = p[1]; M = p[2]; N = p[3]; K = p[4]; cr = p[5]; cc = p[6];
    f = bagf(&b, "gemm_%d_f", i, NULL);
    A = bagf(&b, "gemm_%d_A", i, &nA);
    B = bagf(&b, "gemm_%d_B", i, &nB);
    rY = bagf(&b, "gemm_%d_Y", i, NULL);
    dY = bagf(&b, "gemm_%d_dY", i, NULL);
    rdA = bagf(&b, "gemm_%d_dA", i, NULL);
    rdB = bagf(&b, "gemm_%d_dB", i, NULL);
    if (cr) {
        C = bagf(&b, "gemm_%d_C", i, NULL);
        rdC = bagf(&b, "gemm_%d_dC", i, NULL);
        dC = falloc(cr * cc);
    }
    Y = falloc(M * N); dA = falloc(nA); dB = falloc(nB);
    {
        int64_t k;
        for (k = 0; k < M * N; k++) Y[k] = 1e6f;
    }
    gemm_forward(rt, (int)ta, (int)tb, M, N, K, f[0], A, B, f[1], C, cr ? cr : 1, cc ? cc : 1, Y);
    check("gemm_forward", "Y", i, Y, rY, M * N);
    gemm_backward(rt, (int)ta, (int)tb, M, N, K, f[0], f[1], A, B, dY, dA, dB, dC, cr ? cr : 1, cc ? cc : 1);
    check("gemm_backward", "dA", i, dA, rdA, nA);
    check("gemm_backward", "dB", i, dB, rdB, nB);
    if (dC) check("gemm_backward", "dC", i, dC, rdC, cr * cc);
    free(Y); free(dA); free(dB); free(dC);
    bag_free(&b);
}

static void test_xent(VccRt *rt, int i)
{
    Bag b;
    int64_t nl, N, K, *labels;
    float *logits, *rloss, *rprob, *dloss, *rdl, *prob, *dl, loss;
    b.n = 0;
    logits = bagf(&b, "xent_%d_logits", i, &nl);
    labels = bagi(&b, "xent_%d_labels", i, &N);
    K = nl / N;
    rloss = bagf(&b, "xent_%d_loss", i, NULL);
    rprob = bagf(&b, "xent_%d_prob", i, NULL);
    dloss = bagf(&b, "xent_%d_dloss", i, NULL);
    rdl = bagf(&b, "xent_%d_dlogits", i, NULL);
    prob = falloc(nl); dl = falloc(nl);
    softmax_xent_forward(rt, N, K, logits, labels, &loss, prob);
    check("softmax_xent_forward", "loss", i, &loss, rloss, 1);
    check("softmax_xent_forward", "prob", i, prob, rprob, nl);
    softmax_xent_backward(rt, N, K, prob, labels, dloss, dl);
    check("softmax_xent_backward", "dlogits", i, dl, rdl, nl);
    free(prob); free(dl);
    bag_free(&b);
}

static void test_pool(VccRt *rt, int i)
{
    Bag b;
    int64_t *p, NC, S;
    float *x, *ry, *dy, *rdx, *y, *dx;
    b.n = 0;
    p = bagi(&b, "pool_%d_p", i, NULL);
    NC = p[0]; S = p[1];
    x = bagf(&b, "pool_%d_x", i, NULL);
    ry = bagf(&b, "pool_%d_y", i, NULL);
    dy = bagf(&b, "pool_%d_dy", i, NULL);
    rdx = bagf(&b, "pool_%d_dx", i, NULL);
    y = falloc(NC); dx = falloc(NC * S);
    global_avgpool_forward(rt, NC, S, x, y);
    check("global_avgpool_forward", "y", i, y, ry, NC);
    global_avgpool_backward(rt, NC, S, dy, dx);
    check("global_avgpool_backward", "dx", i, dx, rdx, NC * S);
    free(y); free(dx);
    bag_free(&b);
}

static void test_relu(VccRt *rt, int i)
{
    Bag b;
    int64_t n, k;
    float *x, *ry, *dy, *rdx, *y, *dx, *t;
    b.n = 0;
    x = bagf(&b, "relu_%d_x", i, &n);
    ry = bagf(&b, "relu_%d_y", i, NULL);
    dy = bagf(&b, "relu_%d_dy", i, NULL);
    rdx = bagf(&b, "relu_%d_dx", i, NULL);
    y = falloc(n); dx = falloc(n); t = falloc(n);
    relu_forward(rt, n, x, y);
    check("relu_forward", "y", i, y, ry, n);
    relu_backward(rt, n, y, dy, dx);
    check("relu_backward", "dx", i, dx, rdx, n);
    memcpy(t, x, (size_t)n * sizeof(float));
    relu_forward(rt, n, t, t);
    check("relu_forward", "inplace", i, t, ry, n);
    memcpy(t, dy, (size_t)n * sizeof(float));
    relu_backward(rt, n, y, t, t);
    check("relu_backward", "inplace", i, t, rdx, n);
    /* add_forward / copy_forward / fill_forward against exact float sums. */
    {
        float *r = falloc(n);
        for (k = 0; k < n; k++) r[k] = dy[k] + rdx[k];
        memcpy(t, dy, (size_t)n * sizeof(float));
        add_forward(rt, n, t, rdx, t);
        check("add_forward", "inplace", i, t, r, n);
        copy_forward(rt, n, dy, t);
        check("copy_forward", "y", i, t, dy, n);
        fill_forward(rt, n, 0.25f, t);
        for (k = 0; k < n; k++) r[k] = 0.25f;
        check("fill_forward", "y", i, t, r, n);
        free(r);
    }
    free(y); free(dx); free(t);
    bag_free(&b);
}

static void test_sgd(VccRt *rt, int i)
{
    Bag b;
    int64_t n;
    float *f, *p0, *p, *v, *rv;
    int k;
    b.n = 0;
    f = bagf(&b, "sgd_%d_f", i, NULL);
    p0 = bagf(&b, "sgd_%d_p0", i, &n);
    p = falloc(n); v = falloc(n);
    memcpy(p, p0, (size_t)n * sizeof(float));
    for (k = 1; k <= 3; k++) {
        char gname[32], pname[32], what[32];
        float *g, *rp;
        snprintf(gname, sizeof gname, "sgd_%%d_g%d", k);
        snprintf(pname, sizeof pname, "sgd_%%d_p%d", k);
        g = bagf(&b, gname, i, NULL);
        rp = bagf(&b, pname, i, NULL);
        sgd_update(rt, n, p, g, v, NULL, f[0], f[1], f[2]);
        snprintf(what, sizeof what, "p step%d", k);
        check("sgd_update", what, i, p, rp, n);
    }
    if (f[1] != 0.0f) { /* PyTorch keeps no momentum buffer when momentum == 0 */
        rv = bagf(&b, "sgd_%d_v3", i, NULL);
        check("sgd_update", "v step3", i, v, rv, n);
    }
    free(p); free(v);
    bag_free(&b);
}

/* Arena and host<->arena copies (no reference needed: exact bytes). */
static void test_arena(VccRt *rt)
{
    size_t sizes[3] = {1, 1000, 1u << 20};
    int k;
    for (k = 0; k < 3; k++) {
        unsigned char *a = (unsigned char *)vcc_arena_alloc(rt, sizes[k]);
        unsigned char *h = (unsigned char *)malloc(sizes[k]);
        size_t j;
        int ok = a != NULL && h != NULL && ((uintptr_t)a % 256) == 0;
        for (j = 0; ok && j < sizes[k]; j++) ok = a[j] == 0;
        for (j = 0; h && j < sizes[k]; j++) h[j] = (unsigned char)(j * 7);
        if (ok) {
            vcc_upload(rt, a, h, sizes[k]);
            memset(h, 0, sizes[k]);
            vcc_download(rt, h, a, sizes[k]);
            for (j = 0; ok && j < sizes[k]; j++) ok = h[j] == (unsigned char)(j * 7);
        }
        g_checks++;
        if (!ok) { g_fail++; printf("FAIL vcc_arena_alloc %lu bytes: not zeroed/aligned/copied\n", (unsigned long)sizes[k]); }
        else printf("ok   vcc_arena_alloc %lu bytes: 256-aligned, zeroed, upload/download exact\n", (unsigned long)sizes[k]);
        vcc_arena_free(rt, a);
        free(h);
    }
    {
        float v = 3.5f;
        g_checks++;
        if (vcc_read_scalar(rt, &v) != 3.5f) { g_fail++; printf("FAIL vcc_read_scalar\n"); }
    }
}

int main(int argc, char **argv)
{
    Bag b;
    int64_t *m;
    int i;
    VccRt rt;
    if (argc != 2) {
        fprintf(stderr, "usage: %s REFDIR   (REFDIR written by tests/runtime/gen_ref.py)\n", argv[0]);
        return 2;
    }
    g_dir = argv[1];
    if (!file_exists("manifest")) {
        fprintf(stderr, "%s/manifest.npy missing: run tests/runtime/gen_ref.py first\n", g_dir);
        return 2;
    }
    vcc_rt_init(&rt);
    b.n = 0;
    m = (int64_t *)load("manifest", "i8", NULL, &b.a[b.n++]);
    for (i = 0; i < m[0]; i++) test_conv(&rt, i);
    for (i = 0; i < m[1]; i++) test_bn(&rt, i);
    for (i = 0; i < m[2]; i++) test_gemm(&rt, i);
    for (i = 0; i < m[3]; i++) test_xent(&rt, i);
    for (i = 0; i < m[4]; i++) test_pool(&rt, i);
    for (i = 0; i < m[5]; i++) test_relu(&rt, i);
    for (i = 0; i < m[6]; i++) test_sgd(&rt, i);
    test_arena(&rt);
    bag_free(&b);
    vcc_rt_destroy(&rt);
    printf("\nworst max-abs-normalised error per kernel (tol %.0e):\n", TOL);
    for (i = 0; i < g_nworst; i++) printf("  %-24s %.3e\n", g_worst[i].kernel, g_worst[i].worst);
    printf("%d of %d checks failed\n", g_fail, g_checks);
    return g_fail ? 1 : 0;
}
