/*
 * proto/base.h - the runtime interface every generated program calls, whatever its families: the
 * runtime state, the arena and host transfers, and the memory kernels (copy, fill, counter). One
 * signature list both targets define (cpu/base.h, cuda/base.cuh); read twice by each, as declarations
 * and as checks (see proto/conv.h). No include guard, on purpose.
 */
VCC_KERNEL(void, vcc_rt_init, (VccRt *rt))
VCC_KERNEL(void, vcc_rt_destroy, (VccRt *rt))
VCC_KERNEL(void, vcc_rt_sync, (VccRt *rt))
VCC_KERNEL(void *, vcc_arena_alloc, (VccRt *rt, size_t bytes))
VCC_KERNEL(void, vcc_arena_free, (VccRt *rt, void *p))
VCC_KERNEL(void, vcc_upload, (VccRt *rt, void *dst, const void *src, size_t bytes))
VCC_KERNEL(void, vcc_download, (VccRt *rt, void *dst, const void *src, size_t bytes))
VCC_KERNEL(float, vcc_read_scalar, (VccRt *rt, const float *p))
VCC_KERNEL(void, copy_forward, (VccRt *rt, int64_t n, const float *x, float *y))
VCC_KERNEL(void, counter_increment, (VccRt *rt, int64_t *count))
VCC_KERNEL(void, fill_forward, (VccRt *rt, int64_t n, float value, float *y))
VCC_KERNEL(void, bf16_round_forward, (VccRt *rt, int64_t n, const float *x, float *y))
