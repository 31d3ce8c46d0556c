/*
 * test_gradcheck.c - finite-difference and double-precision checks of the
 * runtime/vcc_cpu.h backward kernels (no Python needed).
 *
 * For conv, batch norm, softmax cross-entropy and Gemm, with L = sum(y * r)
 * for a fixed random r (the loss itself for cross-entropy):
 *   (a) "double": an independent double-precision re-implementation of the
 *       forward (direct loops; no im2col, no BLAS), central differences in
 *       double (eps 1e-4 relative), against the float backward kernels;
 *       tolerance 1e-4 on the max-abs-normalised error. Conv also compares
 *       the float conv_forward with the double direct conv (tol 1e-5).
 *   (b) "float FD": central differences through the float forward kernels
 *       themselves (eps 1e-2, L summed in double), against the same backward
 *       kernels; looser tolerance 5e-3 (float rounding in y / 2eps).
 * Error = max|got - ref| / max|ref| over all elements of a gradient.
 *
 * Shape legend: N batch, C channels, K filters/classes, S = prod(spatial), G groups.
 */
#include "../../runtime/vcc_elem.h"
#include "../../runtime/vcc_io.h"
#include "../../runtime/vcc_cpu.h"

static int g_fail, g_checks;
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static double urand(void) /* uniform in [-1, 1) */
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_rng >> 11) / 4503599627370496.0 - 1.0;
}

static float *frand(int64_t n, double scale, double offset)
{
    float *p = (float *)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    int64_t i;
    if (!p) exit(1);
    for (i = 0; i < n; i++) p[i] = (float)(urand() * scale + offset);
    return p;
}

static float *fzero(int64_t n)
{
    float *p = (float *)calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    if (!p) exit(1);
    return p;
}

static double *dzero(int64_t n)
{
    double *p = (double *)calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    if (!p) exit(1);
    return p;
}

static void report(const char *what, const char *grad, const float *got, const double *ref, int64_t n, double tol)
{
    double maxref = 0.0, maxerr = 0.0, e;
    int64_t i;
    for (i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (fabs(ref[i]) > maxref) maxref = fabs(ref[i]);
        if (d > maxerr || d != d) maxerr = d;
    }
    e = maxref > 0.0 ? maxerr / maxref : maxerr;
    g_checks++;
    if (!(e <= tol)) g_fail++;
    printf("%s %-34s %-7s max-abs-normalised error %.3e (tol %.0e)\n", e <= tol ? "ok  " : "FAIL", what, grad, e, tol);
}

/* ------------------------------------------------------------------------ */
/* Conv                                                                      */
/* ------------------------------------------------------------------------ */

static int64_t prod3(const int64_t *v, int nsp)
{
    int64_t p = 1;
    int i;
    for (i = 0; i < nsp; i++) p *= v[i];
    return p;
}

/* Direct double conv: y (N, K, *out) = sum over c in group, kernel taps. */
static void conv_direct(const VccConvDesc *d, const double *x, const double *w, const double *b, double *y)
{
    int64_t Cg = d->C / d->G, Kg = d->K / d->G, IN = prod3(d->in, d->nsp), OUT = prod3(d->out, d->nsp);
    int64_t KK = prod3(d->kernel, d->nsp);
    int64_t n, k, o, c, t;
    for (n = 0; n < d->N; n++)
        for (k = 0; k < d->K; k++)
            for (o = 0; o < OUT; o++) {
                double acc = b ? b[k] : 0.0;
                int64_t g = k / Kg;
                for (c = 0; c < Cg; c++)
                    for (t = 0; t < KK; t++) {
                        /* decompose o and t over nsp dims, last fastest */
                        int64_t oo = o, tt = t, idx = 0, mul = 1;
                        int i, inside = 1;
                        for (i = d->nsp - 1; i >= 0; i--) {
                            int64_t oi = oo % d->out[i], ti = tt % d->kernel[i];
                            int64_t ii = oi * d->stride[i] - d->pad_begin[i] + ti * d->dilation[i];
                            oo /= d->out[i];
                            tt /= d->kernel[i];
                            if (ii < 0 || ii >= d->in[i]) inside = 0;
                            idx += ii * mul;
                            mul *= d->in[i];
                        }
                        if (inside)
                            acc += x[(n * d->C + g * Cg + c) * IN + idx] * w[(k * Cg + c) * KK + t];
                    }
                y[(n * d->K + k) * OUT + o] = acc;
            }
}

static double dot_d(const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    int64_t i;
    for (i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static double dot_fd(const float *a, const float *r, int64_t n)
{
    double s = 0.0;
    int64_t i;
    for (i = 0; i < n; i++) s += (double)a[i] * r[i];
    return s;
}

static void conv_check(const char *name, int nsp, int64_t N, int64_t C, int64_t K, int64_t G, const int64_t *in,
                       const int64_t *ker, const int64_t *st, const int64_t *dil, const int64_t *pb, const int64_t *pe)
{
    VccConvDesc d;
    VccRt rt;
    int i;
    int64_t nx, nw, ny, j, ncol;
    float *x, *w, *b, *r, *y, *dx, *dw, *db, *ws;
    double *xd, *wd, *bd, *rd, *yd, *gx, *gw, *gb, *fx, *fw, *fb;
    char what[96];
    memset(&d, 0, sizeof d);
    d.nsp = nsp; d.N = N; d.C = C; d.K = K; d.G = G;
    for (i = 0; i < 3; i++) { d.in[i] = d.kernel[i] = d.stride[i] = d.dilation[i] = d.out[i] = 1; }
    for (i = 0; i < nsp; i++) {
        d.in[i] = in[i]; d.kernel[i] = ker[i]; d.stride[i] = st[i]; d.dilation[i] = dil[i];
        d.pad_begin[i] = pb[i]; d.pad_end[i] = pe[i];
        d.out[i] = (in[i] + pb[i] + pe[i] - dil[i] * (ker[i] - 1) - 1) / st[i] + 1;
    }
    vcc_rt_init(&rt);
    nx = N * C * prod3(d.in, nsp);
    nw = K * (C / G) * prod3(d.kernel, nsp);
    ny = N * K * prod3(d.out, nsp);
    ncol = vcc_conv_col_elems(&d);
    x = frand(nx, 1.0, 0.0); w = frand(nw, 0.5, 0.0); b = frand(K, 1.0, 0.0); r = frand(ny, 1.0, 0.0);
    y = fzero(ny); dx = fzero(nx); dw = fzero(nw); db = fzero(K); ws = fzero(ncol);
    xd = dzero(nx); wd = dzero(nw); bd = dzero(K); rd = dzero(ny); yd = dzero(ny);
    gx = dzero(nx); gw = dzero(nw); gb = dzero(K); fx = dzero(nx); fw = dzero(nw); fb = dzero(K);
    for (j = 0; j < nx; j++) xd[j] = x[j];
    for (j = 0; j < nw; j++) wd[j] = w[j];
    for (j = 0; j < K; j++) bd[j] = b[j];
    for (j = 0; j < ny; j++) rd[j] = r[j];

    conv_forward(&rt, &d, x, w, b, y, ws, (size_t)ncol * 4);
    conv_direct(&d, xd, wd, bd, yd);
    snprintf(what, sizeof what, "conv %s forward vs double direct", name);
    report(what, "y", y, yd, ny, 1e-5);

    conv_backward_data(&rt, &d, r, w, dx, ws, (size_t)ncol * 4);
    conv_backward_filter(&rt, &d, x, r, dw, db, ws, (size_t)ncol * 4);

    /* (a) double FD on the direct conv */
#define FD_D(arr, n, out)                                                      \
    for (j = 0; j < (n); j++) {                                                \
        double keep = arr[j], h = 1e-4 * (fabs(keep) > 1.0 ? fabs(keep) : 1.0), lp, lm; \
        arr[j] = keep + h; conv_direct(&d, xd, wd, bd, yd); lp = dot_d(yd, rd, ny); \
        arr[j] = keep - h; conv_direct(&d, xd, wd, bd, yd); lm = dot_d(yd, rd, ny); \
        arr[j] = keep; out[j] = (lp - lm) / (2.0 * h);                         \
    }
    FD_D(xd, nx, gx)
    FD_D(wd, nw, gw)
    FD_D(bd, K, gb)
#undef FD_D
    snprintf(what, sizeof what, "conv %s grad vs double FD", name);
    report(what, "dx", dx, gx, nx, 1e-4);
    report(what, "dw", dw, gw, nw, 1e-4);
    report(what, "db", db, gb, K, 1e-4);

    /* (b) float FD through conv_forward itself */
#define FD_F(arr, n, out)                                                      \
    for (j = 0; j < (n); j++) {                                                \
        float keep = arr[j];                                                   \
        double lp, lm;                                                         \
        arr[j] = keep + 1e-2f; conv_forward(&rt, &d, x, w, b, y, ws, (size_t)ncol * 4); lp = dot_fd(y, r, ny); \
        arr[j] = keep - 1e-2f; conv_forward(&rt, &d, x, w, b, y, ws, (size_t)ncol * 4); lm = dot_fd(y, r, ny); \
        out[j] = (lp - lm) / ((double)(keep + 1e-2f) - (double)(keep - 1e-2f)); \
        arr[j] = keep;                                                         \
    }
    FD_F(x, nx, fx)
    FD_F(w, nw, fw)
    FD_F(b, K, fb)
#undef FD_F
    snprintf(what, sizeof what, "conv %s grad vs float FD", name);
    report(what, "dx", dx, fx, nx, 5e-3);
    report(what, "dw", dw, fw, nw, 5e-3);
    report(what, "db", db, fb, K, 5e-3);

    free(x); free(w); free(b); free(r); free(y); free(dx); free(dw); free(db); free(ws);
    free(xd); free(wd); free(bd); free(rd); free(yd); free(gx); free(gw); free(gb); free(fx); free(fw); free(fb);
}

/* ------------------------------------------------------------------------ */
/* Batch norm                                                                */
/* ------------------------------------------------------------------------ */

/* Double training-mode batch norm forward, two-pass statistics. */
static void bn_direct(int64_t N, int64_t C, int64_t S, const double *x, const double *g, const double *b, double eps,
                      double *y)
{
    int64_t c, n, s, m = N * S;
    for (c = 0; c < C; c++) {
        double mean = 0.0, var = 0.0, inv;
        for (n = 0; n < N; n++)
            for (s = 0; s < S; s++) mean += x[(n * C + c) * S + s];
        mean /= (double)m;
        for (n = 0; n < N; n++)
            for (s = 0; s < S; s++) {
                double t = x[(n * C + c) * S + s] - mean;
                var += t * t;
            }
        var /= (double)m;
        inv = 1.0 / sqrt(var + eps);
        for (n = 0; n < N; n++)
            for (s = 0; s < S; s++)
                y[(n * C + c) * S + s] = g[c] * (x[(n * C + c) * S + s] - mean) * inv + b[c];
    }
}

static void bn_check(int64_t N, int64_t C, int64_t S, double offset)
{
    VccRt rt;
    int64_t n = N * C * S, j;
    const float eps = 1e-5f;
    float *x = frand(n, 2.0, offset), *g = frand(C, 1.0, 0.5), *b = frand(C, 1.0, 0.0), *r = frand(n, 1.0, 0.0);
    float *y = fzero(n), *dx = fzero(n), *dg = fzero(C), *db = fzero(C), *mean = fzero(C), *inv = fzero(C);
    float *rm = fzero(C), *rv = fzero(C);
    double *xd = dzero(n), *gd = dzero(C), *bd = dzero(C), *rd = dzero(n), *yd = dzero(n);
    double *gx = dzero(n), *gg = dzero(C), *gb = dzero(C), *fx = dzero(n), *fg = dzero(C), *fb = dzero(C);
    char what[96];
    vcc_rt_init(&rt);
    for (j = 0; j < n; j++) { xd[j] = x[j]; rd[j] = r[j]; }
    for (j = 0; j < C; j++) { gd[j] = g[j]; bd[j] = b[j]; }
    batchnorm_forward_train(&rt, N, C, S, x, g, b, rm, rv, 0.9f, eps, 1, y, mean, inv);
    bn_direct(N, C, S, xd, gd, bd, eps, yd);
    snprintf(what, sizeof what, "batchnorm (%lld,%lld,%lld)+%g forward vs double", (long long)N, (long long)C,
             (long long)S, offset);
    report(what, "y", y, yd, n, 1e-5);
    batchnorm_backward(&rt, N, C, S, x, r, g, mean, inv, dx, dg, db);

#define FD_D(arr, cnt, out)                                                    \
    for (j = 0; j < (cnt); j++) {                                              \
        double keep = arr[j], h = 1e-4 * (fabs(keep) > 1.0 ? fabs(keep) : 1.0), lp, lm; \
        arr[j] = keep + h; bn_direct(N, C, S, xd, gd, bd, eps, yd); lp = dot_d(yd, rd, n); \
        arr[j] = keep - h; bn_direct(N, C, S, xd, gd, bd, eps, yd); lm = dot_d(yd, rd, n); \
        arr[j] = keep; out[j] = (lp - lm) / (2.0 * h);                         \
    }
    FD_D(xd, n, gx)
    FD_D(gd, C, gg)
    FD_D(bd, C, gb)
#undef FD_D
    snprintf(what, sizeof what, "batchnorm (%lld,%lld,%lld)+%g vs double FD", (long long)N, (long long)C,
             (long long)S, offset);
    report(what, "dx", dx, gx, n, 1e-4);
    report(what, "dgamma", dg, gg, C, 1e-4);
    report(what, "dbeta", db, gb, C, 1e-4);

#define FD_F(arr, cnt, out, h)                                                 \
    for (j = 0; j < (cnt); j++) {                                              \
        float keep = arr[j];                                                   \
        double lp, lm;                                                         \
        arr[j] = keep + (h); batchnorm_forward_train(&rt, N, C, S, x, g, b, rm, rv, 0.9f, eps, 1, y, mean, inv); lp = dot_fd(y, r, n); \
        arr[j] = keep - (h); batchnorm_forward_train(&rt, N, C, S, x, g, b, rm, rv, 0.9f, eps, 1, y, mean, inv); lm = dot_fd(y, r, n); \
        out[j] = (lp - lm) / ((double)(keep + (h)) - (double)(keep - (h)));    \
        arr[j] = keep;                                                         \
    }
    /* x carries an offset of up to 100: perturb by 1e-2 of the data scale (2). */
    FD_F(x, n, fx, 2e-2f)
    FD_F(g, C, fg, 1e-2f)
    FD_F(b, C, fb, 1e-2f)
#undef FD_F
    snprintf(what, sizeof what, "batchnorm (%lld,%lld,%lld)+%g vs float FD", (long long)N, (long long)C,
             (long long)S, offset);
    report(what, "dx", dx, fx, n, 1e-2);
    report(what, "dgamma", dg, fg, C, 1e-2);
    report(what, "dbeta", db, fb, C, 1e-2);
    free(x); free(g); free(b); free(r); free(y); free(dx); free(dg); free(db); free(mean); free(inv);
    free(rm); free(rv); free(xd); free(gd); free(bd); free(rd); free(yd);
    free(gx); free(gg); free(gb); free(fx); free(fg); free(fb);
}

/* ------------------------------------------------------------------------ */
/* Softmax cross-entropy and Gemm                                            */
/* ------------------------------------------------------------------------ */

static double xent_direct(int64_t N, int64_t K, const double *z, const int64_t *lab)
{
    double tot = 0.0;
    int64_t i, k;
    for (i = 0; i < N; i++) {
        double mx = z[i * K], s = 0.0;
        for (k = 1; k < K; k++) if (z[i * K + k] > mx) mx = z[i * K + k];
        for (k = 0; k < K; k++) s += exp(z[i * K + k] - mx);
        tot += mx + log(s) - z[i * K + lab[i]];
    }
    return tot / (double)N;
}

static void xent_check(int64_t N, int64_t K, double scale)
{
    VccRt rt;
    int64_t n = N * K, j, lab[16];
    float *z = frand(n, scale, 0.0), *prob = fzero(n), *dz = fzero(n), loss, dloss = 0.75f;
    double *zd = dzero(n), *gz = dzero(n), *fz = dzero(n);
    char what[96];
    vcc_rt_init(&rt);
    for (j = 0; j < N; j++) lab[j] = (int64_t)((urand() + 1.0) * 0.5 * (double)K) % K;
    for (j = 0; j < n; j++) zd[j] = z[j];
    softmax_xent_forward(&rt, N, K, z, lab, &loss, prob);
    {
        double ref = xent_direct(N, K, zd, lab);
        snprintf(what, sizeof what, "softmax_xent (%lld,%lld)x%g forward vs double", (long long)N, (long long)K, scale);
        report(what, "loss", &loss, &ref, 1, 1e-5);
    }
    softmax_xent_backward(&rt, N, K, prob, lab, &dloss, dz);
    for (j = 0; j < n; j++) {
        double keep = zd[j], h = 1e-4, lp, lm;
        zd[j] = keep + h; lp = xent_direct(N, K, zd, lab);
        zd[j] = keep - h; lm = xent_direct(N, K, zd, lab);
        zd[j] = keep;
        gz[j] = dloss * (lp - lm) / (2.0 * h);
    }
    snprintf(what, sizeof what, "softmax_xent (%lld,%lld)x%g vs double FD", (long long)N, (long long)K, scale);
    report(what, "dlogits", dz, gz, n, 1e-4);
    for (j = 0; j < n; j++) {
        float keep = z[j], l2;
        double lp, lm;
        float *p2 = fzero(n);
        z[j] = keep + 1e-2f; softmax_xent_forward(&rt, N, K, z, lab, &l2, p2); lp = l2;
        z[j] = keep - 1e-2f; softmax_xent_forward(&rt, N, K, z, lab, &l2, p2); lm = l2;
        fz[j] = dloss * (lp - lm) / ((double)(keep + 1e-2f) - (double)(keep - 1e-2f));
        z[j] = keep;
        free(p2);
    }
    snprintf(what, sizeof what, "softmax_xent (%lld,%lld)x%g vs float FD", (long long)N, (long long)K, scale);
    report(what, "dlogits", dz, fz, n, 1e-2);
    free(z); free(prob); free(dz); free(zd); free(gz); free(fz);
}

static void gemm_check(int ta, int tb, int64_t M, int64_t N, int64_t K, int64_t cr, int64_t cc, float alpha, float beta)
{
    VccRt rt;
    int64_t nA = M * K, nB = K * N, nC = cr * cc, j;
    float *A = frand(nA, 1.0, 0.0), *B = frand(nB, 1.0, 0.0), *C = frand(nC, 1.0, 0.0), *r = frand(M * N, 1.0, 0.0);
    float *Y = fzero(M * N), *dA = fzero(nA), *dB = fzero(nB), *dC = fzero(nC);
    double *fa = dzero(nA), *fb = dzero(nB), *fc = dzero(nC);
    char what[96];
    vcc_rt_init(&rt);
    gemm_backward(&rt, ta, tb, M, N, K, alpha, beta, A, B, r, dA, dB, dC, cr, cc);
#define FD_F(arr, cnt, out)                                                    \
    for (j = 0; j < (cnt); j++) {                                              \
        float keep = arr[j];                                                   \
        double lp, lm;                                                         \
        arr[j] = keep + 1e-2f; gemm_forward(&rt, ta, tb, M, N, K, alpha, A, B, beta, C, cr, cc, Y); lp = dot_fd(Y, r, M * N); \
        arr[j] = keep - 1e-2f; gemm_forward(&rt, ta, tb, M, N, K, alpha, A, B, beta, C, cr, cc, Y); lm = dot_fd(Y, r, M * N); \
        out[j] = (lp - lm) / ((double)(keep + 1e-2f) - (double)(keep - 1e-2f)); \
        arr[j] = keep;                                                         \
    }
    FD_F(A, nA, fa)
    FD_F(B, nB, fb)
    FD_F(C, nC, fc)
#undef FD_F
    snprintf(what, sizeof what, "gemm tA%d tB%d C(%lld,%lld) vs float FD", ta, tb, (long long)cr, (long long)cc);
    report(what, "dA", dA, fa, nA, 5e-3);
    report(what, "dB", dB, fb, nB, 5e-3);
    report(what, "dC", dC, fc, nC, 5e-3);
    free(A); free(B); free(C); free(r); free(Y); free(dA); free(dB); free(dC); free(fa); free(fb); free(fc);
}

int main(void)
{
    {
        const int64_t in[3] = {3, 4, 5}, k[3] = {2, 3, 2}, s[3] = {2, 1, 2}, dl[3] = {1, 2, 1};
        const int64_t pb[3] = {1, 0, 1}, pe[3] = {0, 2, 1};
        conv_check("3d g2 asym", 3, 2, 4, 4, 2, in, k, s, dl, pb, pe);
    }
    {
        const int64_t in[3] = {3, 4, 4}, k[3] = {3, 3, 3}, s[3] = {1, 1, 1}, dl[3] = {1, 1, 1};
        const int64_t pb[3] = {1, 1, 1}, pe[3] = {1, 1, 1};
        conv_check("3d r3d-like", 3, 1, 2, 3, 1, in, k, s, dl, pb, pe);
    }
    {
        const int64_t in[2] = {5, 6}, k[2] = {3, 3}, s[2] = {2, 3}, dl[2] = {1, 2};
        const int64_t pb[2] = {2, 1}, pe[2] = {0, 3};
        conv_check("2d depthwise", 2, 2, 3, 3, 3, in, k, s, dl, pb, pe);
    }
    {
        const int64_t in[1] = {9}, k[1] = {3}, s[1] = {2}, dl[1] = {2};
        const int64_t pb[1] = {0}, pe[1] = {3};
        conv_check("1d", 1, 2, 2, 3, 1, in, k, s, dl, pb, pe);
    }
    {
        const int64_t in[3] = {3, 4, 4}, k[3] = {1, 1, 1}, s[3] = {1, 2, 2}, dl[3] = {1, 1, 1};
        const int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
        conv_check("3d 1x1x1 s2", 3, 2, 3, 2, 1, in, k, s, dl, pb, pe);
    }
    {
        const int64_t in[3] = {2, 3, 3}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, dl[3] = {1, 1, 1};
        const int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
        conv_check("3d pointwise", 3, 2, 4, 6, 2, in, k, s, dl, pb, pe);
    }
    bn_check(2, 3, 10, 0.0);
    bn_check(3, 2, 7, 100.0);
    bn_check(4, 2, 1, 0.0);
    xent_check(3, 5, 1.0);
    xent_check(2, 7, 10.0);
    gemm_check(0, 1, 3, 4, 5, 1, 4, 1.0f, 1.0f);
    gemm_check(1, 0, 4, 3, 2, 4, 1, 0.5f, -2.0f);
    gemm_check(1, 1, 2, 3, 4, 1, 1, 1.5f, 0.5f);
    printf("%d of %d checks failed\n", g_fail, g_checks);
    return g_fail ? 1 : 0;
}
