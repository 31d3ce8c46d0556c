/*
 * proto/conv.h - the conv family's kernels (Conv, ConvGradData, ConvGradFilter, ConvTranspose,
 * ConvTransposeGradFilter; ConvTransposeGradData calls conv_forward): the one signature list both
 * targets define (cpu/conv.h, cuda/conv.cuh). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, conv_forward, (VccRt *rt, VccConvDesc *d, const float *x, const float *w, const float *b, float *y, void *ws, size_t ws_bytes))
VCC_KERNEL(void, conv_backward_data, (VccRt *rt, VccConvDesc *d, const float *dy, const float *w, float *dx, void *ws, size_t ws_bytes))
VCC_KERNEL(void, conv_backward_filter, (VccRt *rt, VccConvDesc *d, const float *x, const float *dy, float *dw, float *db, void *ws, size_t ws_bytes))
VCC_KERNEL(void, conv_transpose_forward, (VccRt *rt, VccConvDesc *d, const float *x, const float *w, const float *b, float *y, void *ws, size_t ws_bytes))
VCC_KERNEL(void, conv_transpose_backward_filter, (VccRt *rt, VccConvDesc *d, const float *x, const float *dy, float *dw, float *db, void *ws, size_t ws_bytes))
