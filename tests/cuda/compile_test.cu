/*
 * compile_test.cu - builds the CUDA runtime exactly as a generated trainer
 * inlines it (vcc_elem.h, vcc_io.h, vcc_cuda.cuh) and calls every runtime
 * function once, so nvcc -Werror all-warnings sees each body instantiated.
 * Run on a machine with a GPU it is a smoke test: tiny tensors, one pass of
 * every kernel, exit 0; without a device it exits 77. The step runs twice:
 * in float32, then with __nv_bfloat16 activations and gradients as vcc
 * --precision bf16 stores them (the kernels' bfloat16 instantiations, cuDNN
 * BFLOAT16 convolutions, cublasGemmEx); both losses must be finite.
 *
 * Shape legend: N batch, C channels, K filters / classes, T H W spatial,
 * S = T*H*W.
 */
#include "vcc_elem.h"
#include "vcc_io.h"
#include "vcc_cuda.cuh"

int main(void)
{
    VccRt rt;
    int ndev = 0;
    /* conv: x (2, 3, 4, 6, 6), w (4, 3, 3, 3, 3), y (2, 4, 4, 3, 3) */
    VccConvDesc cd = {3, 2, 3, 4, 1, {4, 6, 6}, {4, 3, 3}, {3, 3, 3}, {1, 2, 2}, {1, 1, 1},
                      {1, 1, 1}, {1, 1, 1}, NULL};
    const int64_t N = 2, C = 3, K = 4, S_in = 4 * 6 * 6, S_out = 4 * 3 * 3, NCLS = 5;
    const int64_t nx = N * C * S_in, nw = K * C * 27, ny = N * K * S_out;
    const size_t ws_bytes = (size_t)16 << 20;
    size_t off = 0, arena_bytes = (size_t)64 << 20;
    unsigned char *arena;
    float *x, *w, *b, *y, *dy, *dx, *dw, *db, *mean, *invstd, *rmean, *rvar, *gamma, *beta, *dgamma, *dbeta;
    float *pooled, *logits, *prob, *dlogits, *fcw, *fcb, *dfcw, *dfcb, *dpooled, *loss, *dloss, *v, *ws;
    int64_t *labels;
    int64_t host_labels[2] = {1, 3};
    float h[4] = {0.5f, -1.0f, 2.0f, 0.0f};
    float lossv, loss16v;
    /* the bf16 step's tensors (as vcc --precision bf16 stores them) and its own conv descriptor */
    VccConvDesc cd16 = cd;
    __nv_bfloat16 *x16, *w16, *b16, *y16, *dy16, *dx16, *dw16, *db16, *pooled16, *logits16, *dlogits16, *fcw16, *fcb16;
    __nv_bfloat16 *dfcw16, *dfcb16, *dpooled16;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("compile_test: built; no CUDA device, not run\n");
        return 77;
    }
    vcc_rt_init(&rt);
    arena = (unsigned char *)vcc_arena_alloc(&rt, arena_bytes);
    if (!arena) {
        fprintf(stderr, "compile_test: arena allocation failed\n");
        return 1;
    }
#define TAKE(T, n) ((T *)(arena + (off += (((size_t)(n) * sizeof(T) + 255) & ~(size_t)255)) - \
                          (((size_t)(n) * sizeof(T) + 255) & ~(size_t)255)))
    x = TAKE(float, nx); w = TAKE(float, nw); b = TAKE(float, K); y = TAKE(float, ny);
    dy = TAKE(float, ny); dx = TAKE(float, nx); dw = TAKE(float, nw); db = TAKE(float, K);
    mean = TAKE(float, K); invstd = TAKE(float, K); rmean = TAKE(float, K); rvar = TAKE(float, K);
    gamma = TAKE(float, K); beta = TAKE(float, K); dgamma = TAKE(float, K); dbeta = TAKE(float, K);
    pooled = TAKE(float, N * K); logits = TAKE(float, N * NCLS); prob = TAKE(float, N * NCLS);
    dlogits = TAKE(float, N * NCLS); fcw = TAKE(float, NCLS * K); fcb = TAKE(float, NCLS);
    dfcw = TAKE(float, NCLS * K); dfcb = TAKE(float, NCLS); dpooled = TAKE(float, N * K);
    loss = TAKE(float, 1); dloss = TAKE(float, 1); v = TAKE(float, nw); labels = TAKE(int64_t, N);
    ws = TAKE(float, ws_bytes / sizeof(float));
    x16 = TAKE(__nv_bfloat16, nx); w16 = TAKE(__nv_bfloat16, nw); b16 = TAKE(__nv_bfloat16, K);
    y16 = TAKE(__nv_bfloat16, ny); dy16 = TAKE(__nv_bfloat16, ny); dx16 = TAKE(__nv_bfloat16, nx);
    dw16 = TAKE(__nv_bfloat16, nw); db16 = TAKE(__nv_bfloat16, K); pooled16 = TAKE(__nv_bfloat16, N * K);
    logits16 = TAKE(__nv_bfloat16, N * NCLS); dlogits16 = TAKE(__nv_bfloat16, N * NCLS);
    fcw16 = TAKE(__nv_bfloat16, NCLS * K); fcb16 = TAKE(__nv_bfloat16, NCLS); dfcw16 = TAKE(__nv_bfloat16, NCLS * K);
    dfcb16 = TAKE(__nv_bfloat16, NCLS); dpooled16 = TAKE(__nv_bfloat16, N * K);
#undef TAKE
    if (off > arena_bytes) {
        fprintf(stderr, "compile_test: arena too small\n");
        return 1;
    }

    fill_forward(&rt, nx, 0.25f, x);
    fill_forward(&rt, nw, 0.01f, w);
    fill_forward(&rt, K, 0.1f, b);
    fill_forward(&rt, K, 1.0f, gamma);
    fill_forward(&rt, K, 0.0f, beta);
    fill_forward(&rt, K, 1.0f, rvar);
    fill_forward(&rt, NCLS * K, 0.02f, fcw);
    fill_forward(&rt, NCLS, 0.0f, fcb);
    vcc_upload(&rt, x, h, sizeof h);
    vcc_upload(&rt, labels, host_labels, sizeof host_labels);

    /* forward */
    conv_forward(&rt, &cd, x, w, b, y, ws, ws_bytes);
    batchnorm_forward_train(&rt, N, K, S_out, y, gamma, beta, rmean, rvar, 0.9f, 1e-5f, 1, y, mean, invstd);
    relu_forward(&rt, ny, y, y);
    add_forward(&rt, ny, y, y, dy);
    copy_forward(&rt, ny, dy, y);
    global_avgpool_forward(&rt, N * K, S_out, y, pooled);
    gemm_forward(&rt, 0, 1, N, NCLS, K, 1.0f, pooled, fcw, 1.0f, fcb, 1, NCLS, logits);
    softmax_xent_forward(&rt, N, NCLS, logits, labels, loss, prob);

    /* backward */
    fill_forward(&rt, 1, 1.0f, dloss);
    softmax_xent_backward(&rt, N, NCLS, prob, labels, dloss, dlogits);
    gemm_backward(&rt, 0, 1, N, NCLS, K, 1.0f, 1.0f, pooled, fcw, dlogits, dpooled, dfcw, dfcb, 1, NCLS);
    global_avgpool_backward(&rt, N * K, S_out, dpooled, dy);
    relu_backward(&rt, ny, y, dy, dy);
    batchnorm_backward(&rt, N, K, S_out, y, dy, gamma, mean, invstd, dy, dgamma, dbeta);
    conv_backward_filter(&rt, &cd, x, dy, dw, db, ws, ws_bytes);
    conv_backward_data(&rt, &cd, dy, w, dx, ws, ws_bytes);

    /* update */
    sgd_update(&rt, nw, w, dw, v, NULL, 0.01f, 0.9f, 1e-4f);
    sgd_update(&rt, K, b, db, NULL, NULL, 0.01f, 0.0f, 0.0f);

    vcc_rt_sync(&rt);
    lossv = vcc_read_scalar(&rt, loss);

    /* the same step in mixed precision: bfloat16 copies of x and the parameters (CastBF16), bfloat16
     * activations and gradients, float32 statistics, loss and parameter gradients */
    bf16_round_forward(&rt, nx, x, x16);
    bf16_round_forward(&rt, nw, w, w16);
    bf16_round_forward(&rt, K, b, b16);
    bf16_round_forward(&rt, NCLS * K, fcw, fcw16);
    bf16_round_forward(&rt, NCLS, fcb, fcb16);
    conv_forward(&rt, &cd16, x16, w16, b16, y16, ws, ws_bytes);
    batchnorm_forward_train(&rt, N, K, S_out, y16, gamma, beta, rmean, rvar, 0.9f, 1e-5f, 1, y16, mean, invstd);
    relu_forward(&rt, ny, y16, y16);
    add_forward(&rt, ny, y16, y16, dy16);
    copy_forward(&rt, ny, dy16, y16);
    global_avgpool_forward(&rt, N * K, S_out, y16, pooled16);
    gemm_forward(&rt, 0, 1, N, NCLS, K, 1.0f, pooled16, fcw16, 1.0f, fcb16, 1, NCLS, logits16);
    softmax_xent_forward(&rt, N, NCLS, logits16, labels, loss, prob);
    softmax_xent_backward(&rt, N, NCLS, prob, labels, dloss, dlogits16);
    gemm_backward(&rt, 0, 1, N, NCLS, K, 1.0f, 1.0f, pooled16, fcw16, dlogits16, dpooled16, dfcw16, dfcb16, 1, NCLS);
    global_avgpool_backward(&rt, N * K, S_out, dpooled16, dy16);
    relu_backward(&rt, ny, y16, dy16, dy16);
    batchnorm_backward(&rt, N, K, S_out, y16, dy16, gamma, mean, invstd, dy16, dgamma, dbeta);
    conv_backward_filter(&rt, &cd16, x16, dy16, dw16, db16, ws, ws_bytes);
    conv_backward_data(&rt, &cd16, dy16, w16, dx16, ws, ws_bytes);
    bf16_round_forward(&rt, nw, dw16, dw); /* CastBF16's gradient: widened to the parameter's float32 */
    bf16_round_forward(&rt, NCLS * K, dfcw16, dfcw);
    sgd_update(&rt, nw, w, dw, v, NULL, 0.01f, 0.9f, 1e-4f);
    vcc_rt_sync(&rt);
    loss16v = vcc_read_scalar(&rt, loss);
    vcc_download(&rt, h, w, sizeof h);
    printf("compile_test: loss %.6f  w[0..3] %.6f %.6f %.6f %.6f  bf16 loss %.6f\n", lossv, h[0], h[1], h[2], h[3],
           loss16v);
    vcc_arena_free(&rt, arena);
    vcc_rt_destroy(&rt);
    if (cd.backend != NULL || cd16.backend != NULL) {
        fprintf(stderr, "compile_test: conv backend not released\n");
        return 1;
    }
    return lossv == lossv && loss16v == loss16v ? 0 : 1;
}
