/*
 * codegen.h — trainer emitters (C + OpenBLAS, CUDA + cuDNN + cuBLAS) and the initial-weights writer.
 * Both targets walk the same schedule and the same plan and emit identical kernel call sites; only
 * the inlined runtime (runtime/vcc_cpu.h or runtime/vcc_cuda.cuh) and the build command differ.
 */
#ifndef VCC_CODEGEN_H
#define VCC_CODEGEN_H

#include "../ir/ir.h"
#include "../ir/ops/ops.h" /* VccTarget */

/* ======================================================================== codegen/emit.c */

/* Where a build command is meant to run: in the generated file's folder (its first line) or in the
 * folder vcc ran in (the command vcc prints), naming the files by the path given to -o. */
typedef enum { VCC_BUILD_IN_FILE_DIR, VCC_BUILD_FROM_CWD } VccBuildFrom;

/* The name of the binary built from the trainer at out_path: its file name without the extension, with
 * "_cuda" appended for the CUDA target (train.c -> "train", dir/train.cu -> "train_cuda"), so the C and
 * CUDA trainers of one model can share a folder. Written into buf (len bytes); returns buf. */
const char *vcc_program_name(VccTarget target, const char *out_path, char *buf, size_t len);

/* The path of that binary as the build command vcc prints (VCC_BUILD_FROM_CWD) writes it: out_path's folder
 * followed by vcc_program_name ("dir/train.cu" -> "dir/train_cuda"). Written into buf (len bytes); returns
 * 1 when it does not fit, else 0. */
int vcc_program_path(VccTarget target, const char *out_path, char *buf, size_t len);

/* Whether the program of g for target computes convolutions through oneDNN: a C program compiled with
 * --cpu-conv dnnl (ctx->cpu_conv_dnnl) whose graph has a conv-family node. Such a program defines
 * VCC_CONV_DNNL (runtime/cpu/conv_dnnl.h) and links -ldnnl. */
bool vcc_uses_dnnl(const VccCtx *ctx, const VccGraph *g, VccTarget target);

/* The shell command that builds the trainer written to out_path into buf (len bytes), e.g.
 * "cc -O2 -march=native -std=c11 -fopenmp 'my dir/train.c' -o 'my dir/train' -lopenblas -lm" (with dnnl, a
 * program for which vcc_uses_dnnl holds: "... -ldnnl -lopenblas -lm"; where CMake found OpenBLAS's OpenMP
 * build, "-L<dir> -Wl,-rpath,<dir>" before -lopenblas, CMakeLists.txt's VCC_OPENBLAS_OPENMP_DIR): file names as seen from `from`,
 * each one shell word (single-quoted with ' escaped when it holds anything but [A-Za-z0-9_./+-:=@%,]).
 * Returns 0, or 1 when the command does not fit in len bytes. */
int vcc_build_command(VccTarget target, const char *out_path, VccBuildFrom from, bool dnnl, char *buf, size_t len);

/* Write the self-contained program for a planned graph to f: the trainer (runtime/vcc_main.h); with
 * ctx->forward_only a program that evaluates the forward graph once, inputs and outputs as .npy files
 * (runtime/vcc_forward_main.h); with ctx->eval the evaluation program, the inference-form graph over a
 * data set (runtime/vcc_eval_main.h; the graph must have one float input (N, C, ...) and one output
 * (N, K)). First line "// build (from this file's folder): <command>", a header comment with the arena
 * breakdown, the inlined runtime, the arena layout, the step function (one kernel call per scheduled
 * node) and main(). weights_name is the default --weights path (the safetensors vcc writes beside the
 * program). Errors: VCC_ERR_UNSUPPORTED for a node the target cannot run or a graph --eval cannot take. */
VccStatus vcc_emit_trainer(VccCtx *ctx, const VccGraph *g, VccTarget target, const char *build_cmd,
                           const char *weights_name, FILE *f);

/* ======================================================================== codegen/weights.c */

/* Write every parameter and buffer with initial data (weights, BN running statistics) to a safetensors
 * file for path, named as in the ONNX model: to a new temporary file beside it, flushed and closed, whose
 * name goes to *tmp (malloc'd) for the caller to rename over path with vcc_io_rename once the program
 * beside it is written too (or to remove). Errors: VCC_ERR_IO (*tmp NULL, nothing left behind). */
VccStatus vcc_write_weights(VccCtx *ctx, const VccGraph *g, const char *path, char **tmp);

/* ======================================================================== runtime sources (generated) */

/* The runtime's files (runtime/, paths relative to it: "cpu/base.h", "proto/conv.h"), embedded at
 * build time (cmake/embed.cmake), vcc_nruntime_files of them. */
typedef struct {
    const char *path;
    const char *text;
} VccRuntimeFile;
extern const VccRuntimeFile vcc_runtime_files[];
extern const int vcc_nruntime_files;

#endif /* VCC_CODEGEN_H */
