/*
 * passes.h — the pass pipeline. A pass is `VccStatus vcc_<pass>(VccCtx *, VccGraph *)`; each pass file
 * begins with what it requires and what it produces. vcc_run_pipeline runs them in order with the
 * verifier between them and handles --dump-ir.
 *
 *   canonical -> shape -> loss -> autodiff -> optimizer -> schedule -> liveness -> inplace -> memplan -> remat
 */
#ifndef VCC_PASSES_H
#define VCC_PASSES_H

#include "../ir/ir.h"
#include "../ir/ops/ops.h"

/* ======================================================================== passes/support.c */

/* Check what vcc can compile before anything changes, and report every problem in one report
 * (vcc_report_problems): unsupported ops (VCC_OP_UNSUPPORTED nodes), element-type problems the loader
 * left in ctx->problems, attributes that the node's op does not have in the model's opset, has with
 * another type, or with a value vcc does not support (with the reason), and, when compiling a trainer
 * without ctx->allow_inference_export, the signs of an inference-form export. canonical runs it first.
 * Returns VCC_OK or VCC_ERR_UNSUPPORTED. */
VccStatus vcc_check_supported(VccCtx *ctx, VccGraph *g);

/* ======================================================================== passes/canonical.c */

/* One internal form: BN running statistics become BUFFER tensors updated in place (the ONNX running_mean/
 * running_var outputs become views of them); BN outputs gain saved mean and inverse std; Constant-only
 * inputs of Reshape become CONST. Rejects BatchNormalization with training_mode=0.
 * Errors: VCC_ERR_UNSUPPORTED naming the node. */
VccStatus vcc_canonicalize(VccCtx *ctx, VccGraph *g);

/* ======================================================================== passes/shape.c */

/* Static shape and dtype inference for every forward node output (ONNX shape rules per op).
 * Requires: every graph input shape bound. Errors: VCC_ERR_SHAPE naming node, op and the mismatch. */
VccStatus vcc_infer_shapes(VccCtx *ctx, VccGraph *g);

/* Compile-time sequences (passes/ctrlflow.c): per tensor index t < cap, n[t] >= 0 when t is a sequence
 * of the n[t] tensors items[t], -1 otherwise. */
typedef struct {
    int **items;
    int *n;
    int cap;
} VccSeqs;
void vcc_seqs_free(VccSeqs *s);
/* True for a node of an ONNX control-flow or sequence op that passes/ctrlflow.c expands (If, Loop,
 * SequenceEmpty, SequenceInsert, SequenceAt, SequenceLength, ConcatFromSequence, SplitToSequence). */
bool vcc_ctrl_op(const VccNode *n);
/* The ONNX op type of the i-th op passes/ctrlflow.c expands, NULL past the last (vcc --ops). */
const char *vcc_ctrl_op_name(int i);
/* Expand node k (vcc_ctrl_op) into ordinary nodes, which take its place at k (*delta: how many more nodes
 * the graph has now; the nodes after k move). Errors (VCC_ERR_UNSUPPORTED) when a condition, trip count,
 * position or sequence it needs is computed at run time, naming the node, its op and the value.
 * Source: ONNX operator spec, If, Loop, SequenceEmpty, SequenceInsert, SequenceAt, SequenceLength,
 * ConcatFromSequence, SplitToSequence. */
VccStatus vcc_ctrl_expand(VccCtx *ctx, VccGraph *g, int k, VccSeqs *s, int *delta);

/* Check that every node's outputs have the dtypes and shapes its op's rule gives for its inputs and
 * attributes (conv workspaces of the size their kernel needs), for forward ops and the backward, loss
 * and update ops vcc makes alike: the kernels trust these types. A graph read back from a .vir dump
 * (which a hand edit may have made inconsistent) is checked before any pass runs on it.
 * Errors: VCC_ERR_SHAPE naming the node, the output, what it is and what it should be. */
VccStatus vcc_check_types(VccCtx *ctx, VccGraph *g);

/* ======================================================================== passes/fuse.c */

/* Replace each scaled dot-product attention of the forward graph (MatMul(Q, K^T), an optional scalar
 * scale, an optional additive mask no parameter reaches, Softmax along the last axis, an optional
 * Dropout, MatMul with V) by one FusedAttention node, which saves O and a log-sum-exp per query row
 * instead of the L x L scores and probabilities (ir/ops/attention.c); nothing of it with
 * ctx->no_fuse_attention. Also makes one Gelu of each GELU torch writes out with Erf (below opset 20), and
 * one Swish of each x * Sigmoid(x) (SiLU below opset 24).
 * Requires: shape. Never fails: what does not match stays as it is. */
VccStatus vcc_fuse_attention(VccCtx *ctx, VccGraph *g);

/* ======================================================================== passes/loss.c */

/* Append the loss ctx->loss names to the single graph output: softmax cross-entropy on logits (N, K) with a
 * new int64 input "labels" (N) (PyTorch nn.CrossEntropyLoss), mean squared error against a new float input
 * "targets" of the output's shape (nn.MSELoss), or the output itself when the graph computes its loss.
 * Sets g->data_input, g->label and g->target (the per-sample inputs the trainer fills, -1 when absent) and
 * g->loss. Errors: VCC_ERR_UNSUPPORTED naming what does not fit (outputs, inputs, shapes). */
VccStatus vcc_add_loss(VccCtx *ctx, VccGraph *g);

/* ======================================================================== passes/autodiff.c */

/* Reverse-mode differentiation of the loss with respect to every PARAM: one gradient rule per op
 * (ConvGradData/ConvGradFilter, BatchNormalizationGrad, ReluGrad, GemmGrad...), GradAccumulate where a
 * value feeds several consumers. The final gradient of each parameter becomes a GRAD tensor named
 * "<param>.grad" (passes/optimizer decides whether it is kept or planned). Saved-tensor edges are the forward tensors backward nodes read. */
VccStatus vcc_autodiff(VccCtx *ctx, VccGraph *g);

/* ======================================================================== passes/optimizer.c */

/* The update of ctx->optimizer, one node per parameter. By default each gradient is planned
 * (GRAD_PLANNED) and read by its update alone, which passes/schedule runs as soon as the gradient is
 * final. With ctx->keep_grads (vcc --keep-grads) the gradients are persistent (GRAD: the trainer's
 * --save-grads) and one GradNormClip node reads them all before any update (the trainer's
 * --clip-grad-norm, torch.nn.utils.clip_grad_norm_; its float64 pair "grad_norm.clip" is an input of
 * every update). sgd: SGDMomentum with a momentum buffer "<param>.momentum" (OPT_STATE, zero at
 * start), PyTorch SGD semantics (dampening 0, no Nesterov): g += wd*p; v = m*v + g; p -= lr*v; momentum
 * is ctx->momentum, the trainer's default. adamw: AdamW with "<param>.exp_avg" and "<param>.exp_avg_sq"
 * (OPT_STATE, zero at start), PyTorch torch.optim.AdamW semantics. Hyperparameters are trainer arguments. */
VccStatus vcc_optimizer(VccCtx *ctx, VccGraph *g);

/* ======================================================================== passes/precision.c */

/* --precision bf16, before the loss, following torch.autocast(dtype=torch.bfloat16): VccTensor.bf16_bytes =
 * ctx->bf16_store_bytes on the forward values that hold bfloat16 (autocast's lower-precision ops' outputs,
 * type promotion for the others, float32 ops' outputs float32), and each float32 input of a Conv,
 * ConvTranspose, Gemm, MatMul or FusedAttention read through one CastBF16 copy "<x>.bf16" made before its
 * first reader. Nothing at another precision. */
VccStatus vcc_precision(VccCtx *ctx, VccGraph *g);
/* --precision bf16, after the optimizer: backward readers of a copy get their own; the gradients of
 * bfloat16 values hold bfloat16 (VccTensor.grad_of), the loss float32, views as their bases. */
VccStatus vcc_storage(VccCtx *ctx, VccGraph *g);
/* A graph read from a dump after pass `done` (an index of vcc_pass_names) against ctx->precision: a dump
 * with CastBF16 nodes is refused without --precision bf16, and --precision bf16 needs a dump from before
 * "precision" (the .vir text does not say which values hold bfloat16, nor whose gradient a tensor is).
 * Errors: VCC_ERR_UNSUPPORTED with the reason. */
VccStatus vcc_precision_check_dump(VccCtx *ctx, const VccGraph *g, int done);

/* ======================================================================== passes/schedule.c */

/* Put nodes in a topological order (the node array becomes the schedule: step k = node k), keeping the
 * given order where it is already valid, except that updates (and GradCopy) run as soon as they are
 * ready: after the last reader of their parameter and their gradient's last contribution. A
 * memory-aware order of the same graph (independent nodes ordered to keep the bytes live at once low)
 * replaces it when its peak is lower; g->schedule_peak_bytes and g->given_order_peak_bytes say both.
 * Errors: VCC_ERR_INTERNAL on a cycle. */
VccStatus vcc_schedule(VccCtx *ctx, VccGraph *g);

/* The rule the schedule keeps for in-place updates, checked on an order given from outside (a .vir dump
 * after schedule): every node reading a parameter (or a view of it) runs before the update node
 * (SGDMomentum, AdamW) that writes it. Returns VCC_OK, or VCC_ERR_SHAPE with an error naming the reader,
 * the parameter and the update. */
VccStatus vcc_check_update_order(VccCtx *ctx, const VccGraph *g);

/* ======================================================================== passes/liveness.c */

/* Live interval [start, end] (inclusive steps) per tensor: start = producing step (0 for inputs), end =
 * last step reading it (through views too). Host-read values (the loss, graph outputs and what they are
 * views of) end at g->nnodes: the host reads them after the last node, so nothing may take their bytes.
 * Persistent tensors get -1. Marks saved tensors (forward values read by backward nodes). */
VccStatus vcc_liveness(VccCtx *ctx, VccGraph *g);

/* ======================================================================== passes/inplace.c */

/* Let an elementwise output (Relu, Add, ReluGrad, GradAccumulate) take an input's bytes when that input
 * dies at the node and has the same size; sets inplace_of and recomputes liveness. */
VccStatus vcc_inplace(VccCtx *ctx, VccGraph *g);

/* ======================================================================== passes/memplan.c */

#define VCC_ARENA_ALIGN 256 /* bytes; every tensor offset is a multiple (cuDNN/cuBLAS friendly) */

/* Offsets in one arena: persistent region first (params, buffers, consts, kept grads, optimizer state, in
 * graph order), then the planned region where tensors whose live intervals do not overlap share bytes
 * (passes/dsa.c). Fills tensor offsets and g->arena_bytes, persistent_bytes, planned_bytes,
 * lower_bound_bytes (persistent + the largest sum of planned bytes live at one step) and no_reuse_bytes.
 * Verifies the result with the overlap checker. */
VccStatus vcc_memplan(VccCtx *ctx, VccGraph *g);

/* Arenas of many states of one search at once (passes/remat.c's figures of an unmet --memory-limit): each
 * added state is planned as vcc_memplan plans it (the same items, the same planner, so the same arena)
 * but on one of several threads and without offsets written back. vcc_plan_batch_add copies what the
 * planner needs from g (liveness and inplace run) and returns the state's index; vcc_plan_batch_run plans
 * every state added since the last run, on up to `threads` threads (at least one, at most 16; the results
 * do not depend on it);
 * vcc_plan_batch_arena is then the arena vcc_memplan would set for that state, in bytes (-1: the planner
 * rejected its items, which vcc_memplan reports as an internal error). */
typedef struct VccPlanBatch VccPlanBatch;
VccPlanBatch *vcc_plan_batch_new(void);
int vcc_plan_batch_add(VccPlanBatch *b, const VccGraph *g);
void vcc_plan_batch_run(VccPlanBatch *b, int threads);
int64_t vcc_plan_batch_arena(const VccPlanBatch *b, int i);
void vcc_plan_batch_free(VccPlanBatch *b);

/* Check a plan against the graph, independently of how liveness, inplace and memplan made it:
 *   - every live interval covers its tensor's uses: the producing step, each step reading it or a view
 *     of it, and step g->nnodes for host-read values (loss, graph outputs and what they view);
 *   - tensors sharing bytes in place (inplace_of chains) hold them one after another: each one's interval
 *     ends where the next begins, at the node that reads the old value and writes the new one, so a
 *     value still needed (a graph output, a saved tensor) is never overwritten;
 *   - no two buffers whose (union) intervals overlap share arena bytes; offsets are aligned and inside
 *     the arena.
 * Returns VCC_OK, or VCC_ERR_INTERNAL with a message naming the tensors (a plan read from a hand-edited
 * .vir file gets the same check). */
VccStatus vcc_plan_check(VccCtx *ctx, const VccGraph *g);

/* Recompute the arena line from the plan as it is (offsets given, e.g. read from a .vir dump): arena
 * bytes = the end of the last buffer, aligned; persistent = the aligned sizes of the persistent tensors;
 * planned = arena - persistent; saved floor = persistent + the aligned sizes of the saved activations;
 * lower bound and no-reuse as vcc_memplan computes them. */
void vcc_plan_totals(VccGraph *g);

/* The arena's lower bound for the graph's live intervals as they are, no offsets needed: the persistent
 * tensors' aligned bytes plus the most aligned bytes of planned buffers (one per root, its union
 * interval) live at one schedule step (vcc_dsa_lower_bound). Bytes; every plan's arena is at least
 * this. */
int64_t vcc_plan_lower_bound(const VccGraph *g);

/* Write the plan as JSON: {"arena_bytes", "lower_bound_bytes", "no_reuse_bytes", "persistent_bytes",
 * "saved_floor_bytes" (persistent plus every saved activation: the least any order of these nodes
 * needs, see VccGraph.saved_floor_bytes), "steps" (node count; an interval ending there is read by the host after the step),
 * "schedule_peak_bytes" and "given_order_peak_bytes" (passes/schedule's peaks; null for a graph read
 * back after the schedule), "arena_unlimited_bytes", "recomputed_values", "recompute_flops", "step_flops",
 * "recompute_flops_percent" (passes/remat; null for a graph read back after the plan), "tensors": [{"name",
 * "bytes", "elements", "bf16", "offset", "start", "end", "category", "inplace_of", "view_of"}]}; bf16 true
 * for a tensor that holds bfloat16 values (VccTensor.bf16_bytes: 2 bytes per element, 4 in a C trainer's
 * plan); start/end null for persistent tensors; inplace_of names the input whose bytes an in-place output
 * took, view_of the tensor a view (Flatten/Reshape/Identity, BN running outputs) shares; both null
 * otherwise; "precision": the precision the program is compiled for (vcc_precision_name: "fp32", "tf32"
 * or "bf16", --precision); the plan depends on it only with bf16. */
void vcc_plan_write_json(FILE *f, const VccGraph *g, VccPrecision precision);

/* Write s as a JSON string literal: quoted, with the quote and backslash escaped and control characters
 * written as u-escapes (backslash, u, four hex digits). */
void vcc_json_str(FILE *f, const char *s);

/* ======================================================================== passes/remat.c */

/* Recomputation under ctx->memory_limit (vcc --memory-limit; nothing without one or when the arena fits):
 * saved values made by cheap forward nodes (training-mode BatchNormalization, recomputed from its saved
 * batch statistics by BatchNormApply as InPlace-ABN does; the row normalizations by RowNormApply from
 * theirs; elementwise ops, poolings, data-movement copies) are recomputed right before
 * their first backward reader from values live there anyway, the most bytes freed per extra FLOP first
 * (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"), re-planning after each, until the
 * arena fits. Clones are backward nodes named "<node>.recompute"; their results are bit-identical to the
 * originals. Fills g->arena_unlimited_bytes, remat_values, remat_flops, step_flops.
 * Errors: VCC_ERR_UNSUPPORTED when the limit cannot be met, with the smallest arena reachable (none
 * with ctx->remat_no_figures). */
VccStatus vcc_remat(VccCtx *ctx, VccGraph *g);

/* What the summaries (vcc's --memory-limit line, --fit, the plan report) say of workspaces vcc_remat
 * halved: how those convolutions then run in each trainer, and that their numbers round differently. */
#define VCC_REMAT_WS_HOW                                                                                    \
    "the C trainer sums those convolutions in smaller im2col chunks (or, under --cpu-conv dnnl, runs oneDNN " \
    "on fewer samples), the CUDA trainer picks cuDNN algorithms within the smaller workspaces"
#define VCC_REMAT_WS_NOTE                                                                                    \
    "conv workspaces at the peak halved (" VCC_REMAT_WS_HOW ": the numbers round differently from the "   \
    "unlimited trainer's)"

/* An estimate of one training step's FLOPs: 2 * multiply-adds of each forward Conv, ConvTranspose, MatMul
 * and Gemm, three times (forward, input gradient, weight gradient), plus one per output element of every
 * other node. */
double vcc_step_flops(const VccGraph *g);

/* ======================================================================== passes/pipeline.c */

/* Pass names accepted by --dump-ir, in order. */
extern const char *const vcc_pass_names[];

/* Run the whole pipeline; after the pass named ctx->dump_after, print the graph to ctx->dump
 * (with the plan after memplan). Returns the first failing pass's status. */
VccStatus vcc_run_pipeline(VccCtx *ctx, VccGraph *g);

/* Run the passes after vcc_pass_names[done] (a graph read back from a dump after that pass: a .vir
 * file). A --dump-ir pass at or before done prints the graph as given, headed as after done. A graph
 * given after memplan keeps its offsets, which vcc_plan_check must accept; with ctx->memory_limit, remat
 * runs on a graph given after memplan, and a graph given after remat whose arena is above the limit is an
 * error (VCC_ERR_UNSUPPORTED). */
VccStatus vcc_run_passes_after(VccCtx *ctx, VccGraph *g, int done);

/* Index of a pass in vcc_pass_names, or -1. */
int vcc_pass_index(const char *name);

#endif /* VCC_PASSES_H */
