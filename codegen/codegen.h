/*
 * codegen.h — trainer emitters (C + OpenBLAS, CUDA + cuDNN + cuBLAS) and the initial-weights writer.
 * Both targets walk the same schedule and the same plan and emit identical kernel call sites; only
 * the inlined runtime (runtime/vcc_cpu.h or runtime/vcc_cuda.cuh) and the build command differ.
 */
#ifndef VCC_CODEGEN_H
#define VCC_CODEGEN_H

#include "../ir/ir.h"

typedef enum { VCC_TARGET_C, VCC_TARGET_CUDA } VccTarget;

/* ======================================================================== codegen/emit.c */

/* The build command for a trainer written to out_path (e.g. "cc -O2 -std=c11 train.c -o train -lopenblas -lm"),
 * into buf. */
void vcc_build_command(VccTarget target, const char *out_path, char *buf, size_t len);

/* Write the self-contained trainer for a planned graph to f (with ctx->forward_only, a program that
 * evaluates the forward graph once, inputs and outputs as .npy files: runtime/vcc_forward_main.h): first line "// build: <command>", a header
 * comment with the arena breakdown, the inlined runtime, the arena layout, the step function (one kernel
 * call per scheduled node) and main(). weights_name is the default --weights path (the safetensors
 * vcc writes beside the trainer). Errors: VCC_ERR_UNSUPPORTED for a node the target cannot run. */
VccStatus vcc_emit_trainer(VccCtx *ctx, const VccGraph *g, VccTarget target, const char *build_cmd,
                           const char *weights_name, FILE *f);

/* ======================================================================== codegen/weights.c */

/* Write every tensor with initial data (parameters, BN running statistics, constants) to a safetensors
 * file at path (via path.tmp and rename), named as in the ONNX model. Errors: VCC_ERR_IO. */
VccStatus vcc_write_weights(VccCtx *ctx, const VccGraph *g, const char *path);

/* ======================================================================== runtime sources (generated) */

/* The runtime headers' text, embedded at build time from runtime/ (see CMakeLists.txt). */
extern const char vcc_rt_elem_h[], vcc_rt_io_h[], vcc_rt_cpu_h[], vcc_rt_cuda_cuh[], vcc_rt_main_h[],
    vcc_rt_forward_main_h[], vcc_rt_state_h[];

#endif /* VCC_CODEGEN_H */
