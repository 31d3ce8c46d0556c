/*
 * cpu/conv_rules.h - the geometry rules of the C target's oneDNN convolutions (cpu/conv_dnnl.h), written
 * once for the program that runs them and for the compiler that sizes their workspaces (ir/ops/conv.c):
 * which spatial dim a conv can be cut into slabs along, which kernel taps read anything but zero padding,
 * and which geometries run as oneDNN's Winograd F(4x4, 3x3) convolution. Pure C99 on a VccConvDesc
 * (elem/base.h), no oneDNN, no I/O, no state.
 *
 * VCC_DNNL_PLAIN (a program build define, never the compiler's) asks oneDNN for the operands' own
 * layouts: its gemm convolution, over the whole kernel and never Winograd. The compiler sizes for the
 * default build, which needs at least as much.
 */
#ifndef VCC_CPU_CONV_RULES_H
#define VCC_CPU_CONV_RULES_H

#include "../elem/base.h"

#ifndef VCC_CPU_FN
#define VCC_CPU_FN static inline VCC_UNUSED
#endif

/* vcc_dnnl_slab_dim: the first spatial dim of d along which an output position reads only the input
 * position of the same index (kernel 1, stride 1, no padding, extent above 1), so that x and y can be
 * cut into slabs along it that convolve independently; -1 when there is none. */
VCC_CPU_FN int vcc_dnnl_slab_dim(const VccConvDesc *d)
{
    int i;
    for (i = 0; i < d->nsp; i++)
        if (d->kernel[i] == 1 && d->stride[i] == 1 && d->pad_begin[i] == 0 && d->pad_end[i] == 0 &&
            d->in[i] == d->out[i] && d->in[i] > 1)
            return i;
    return -1;
}

/* vcc_dnnl_live_taps: for spatial dim i of d, the taps [*lo, *lo + *n) from the first to the last one that
 * reads an input position inside [0, in) for some output position: a tap before or after them reads only
 * the zero padding (tap t of output o reads o * stride - pad_begin + t * dilation), so its products are
 * zeros and its weight gradient is exactly 0. oneDNN then runs the convolution with the kernel cut to
 * those taps and the pads cut by what was dropped (same output size), the weights (and their gradient)
 * seen through a window of the whole tensor: r3d_18's 3x3x3 layer4 convolutions at depth 1 do a third
 * of the work. The whole kernel where nothing is dropped, where no tap reads the input, or where a cut
 * pad would be negative (a dilated tap past the end pad). */
VCC_CPU_FN void vcc_dnnl_live_taps(const VccConvDesc *d, int i, int64_t *lo, int64_t *n)
{
    const int64_t K = d->kernel[i], s = d->stride[i], dl = d->dilation[i], pb = d->pad_begin[i];
    int64_t t, o, first = -1, last = -1;
    *lo = 0;
    *n = K;
#ifdef VCC_DNNL_PLAIN
    return; /* oneDNN's gemm convolution on the operands' own layouts: the whole kernel */
#endif
    for (t = 0; t < K; t++)
        for (o = 0; o < d->out[i]; o++) {
            const int64_t at = o * s - pb + t * dl;
            if (at >= 0 && at < d->in[i]) {
                if (first < 0) first = t;
                last = t;
                break;
            }
        }
    if (first < 0 || pb - first * dl < 0 || d->pad_end[i] - (K - 1 - last) * dl < 0) return;
    *lo = first;
    *n = last - first + 1;
}

/* Winograd: the fewest output tiles (4x4 positions) per execution for which oneDNN's Winograd convolution
 * is tried. It transforms the weights at every execution, which costs about as much as the products of a
 * few dozen tiles (bench/README.md, "Winograd"). */
#define VCC_DNNL_WINO_MIN_TILES 32

/* vcc_dnnl_same3: whether spatial dims [from, nsp) of d all have a 3-tap kernel, stride 1, no dilation and
 * pads 1 (the size kept): the dims Winograd F(4x4, 3x3) convolves. */
VCC_CPU_FN int vcc_dnnl_same3(const VccConvDesc *d, int from)
{
    int i;
    for (i = from; i < d->nsp; i++)
        if (d->kernel[i] != 3 || d->stride[i] != 1 || d->dilation[i] != 1 || d->pad_begin[i] != 1 ||
            d->pad_end[i] != 1 || d->in[i] != d->out[i])
            return 0;
    return 1;
}

/* vcc_dnnl_wino_tiles: the output tiles per image (a depth position of a 3-D conv) when d runs as oneDNN's
 * Winograd F(4x4, 3x3) convolution (jit_wino_4x3, AVX-512 only), else 0. That takes a 2-D convolution with
 * a 3x3 kernel, stride 1, no dilation, pads 1 (the output the size of the input), one group and channels in
 * multiples of 16. A 3-D conv (N, C, D, H, W) qualifies when its depth taps are one (a (1, 3, 3) kernel,
 * or a 3x3x3 one cut to one live depth tap, vcc_dnnl_live_taps) with stride 1 and no depth padding left:
 * each depth position is then a 2-D image of its own, so one sample runs as a 2-D convolution of a
 * batch of D images, seen through memory descriptors with the whole tensor's strides. Winograd sums each
 * output's products in another order, from transformed operands: a few float32 roundings from the direct
 * sum (tests/ops: test_conv.py checks it against PyTorch float64). */
VCC_CPU_FN int64_t vcc_dnnl_wino_tiles(const VccConvDesc *d)
{
    int64_t lo, n;
    int h = d->nsp - 2;
#ifdef VCC_DNNL_PLAIN
    return 0;
#endif
    if (d->nsp < 2 || d->G != 1 || d->C % 16 || d->K % 16) return 0;
    if (d->nsp == 3) {
        vcc_dnnl_live_taps(d, 0, &lo, &n);
        if (n != 1 || d->stride[0] != 1 || d->in[0] != d->out[0] || d->pad_begin[0] != lo * d->dilation[0])
            return 0;
    }
    if (!vcc_dnnl_same3(d, h)) return 0;
    return ((d->out[h] + 3) / 4) * ((d->out[h + 1] + 3) / 4);
}

/* vcc_dnnl_taps_ok: whether d runs as three 2-D Winograd convolutions, one per depth tap (cpu/conv_dnnl.h's
 * VccDnnlTaps): a 3x3x3 kernel with stride 1, no dilation and pads 1 (the output the input's size), one
 * group, channels in multiples of 16, a depth of 2 or more and at least VCC_DNNL_WINO_MIN_TILES output tiles
 * in a tap's D - 1 images. By ONNX Conv's definition (zero padding), output depth position o sums, over the
 * taps t, the 2-D convolution of input position o + t - 1 (where it exists) with the weights' depth slice
 * t: each tap is a 2-D convolution over the depth positions as images, and the three add up. The
 * backward-data pass is the same with the offsets negated and each slice's 3x3 kernels turned by 180
 * degrees, its channels swapped; the weight gradient's slice t is the 2-D weight gradient over tap t's
 * image pairs. */
VCC_CPU_FN int vcc_dnnl_taps_ok(const VccConvDesc *d)
{
#ifdef VCC_DNNL_PLAIN
    return 0;
#endif
    if (d->nsp != 3 || d->G != 1 || d->C % 16 || d->K % 16 || d->in[0] < 2 || !vcc_dnnl_same3(d, 0)) return 0;
    return (d->in[0] - 1) * ((d->out[1] + 3) / 4) * ((d->out[2] + 3) / 4) >= VCC_DNNL_WINO_MIN_TILES;
}

#endif
