/*
 * ops.h — the op families: what every op is, in one place per family.
 *
 * Each row of ir/ops.def names an op and its family; ir/ops/<family>.c defines the op's
 *
 *     const VccOpDef vcc_def_<ENUM> = { flags, attributes, attribute-value check, canonical form,
 *                                       shape rule, gradient rule, emission };
 *
 * and the passes keep their generic loops and call these functions (ir/ops/registry.c maps ops to
 * their definitions; a row without a definition is a link error). A new op touches its ops.def row,
 * one family file, its kernels (runtime/{elem,proto,cpu,cuda}/<family>.*) and its tests
 * (tests/ops/<family>/); ir/ops/TEMPLATE is the skeleton. docs/design.md, "Op families", says more.
 *
 * Letter legend: N batch, C channels, K output channels / classes, T time, H height, W width,
 * S product of spatial dims.
 */
#ifndef VCC_OPS_H
#define VCC_OPS_H

#include "ir.h"

/* ======================================================================== the op definition */

/* Code targets the emitters write. */
typedef enum { VCC_TARGET_C, VCC_TARGET_CUDA } VccTarget;

enum {
    VCC_OPF_VIEW = 1u << 0,        /* output 0 is a view of input 0: same bytes, no code (alias_of) */
    VCC_OPF_INPLACE = 1u << 1,     /* output 0 may take the bytes of an input of its size that dies at the
                                      node (passes/inplace): an elementwise op reading each element once */
    VCC_OPF_WORKSPACE = 1u << 2,   /* the outputs from nout_regular on are WORKSPACE tensors */
    VCC_OPF_TYPED = 1u << 3,       /* the forward op also runs on data that are not float32, on the typed
                                      kernels (runtime/{elem,proto,cpu,cuda}/typed.*): vcc_node_typed */
    VCC_OPF_LOWER = 1u << 4,       /* canon is a lowering into other ops that needs the input shapes:
                                      passes/canonical leaves the node as it is and passes/shape runs canon
                                      just before the node's shape rule (see VccOpDef.canon) */
    VCC_OPF_EMPTY_IN = 1u << 5,    /* the emission defines the op on an input with no elements (a reduction
                                      of empty sets, a Concat skipping an empty piece); without the flag the
                                      emitter refuses such a node (codegen/emit.c) */
};

#define VCC_OPSET_NOW 1000000 /* "until" of an attribute that still exists in the newest opset */

/* An attribute an op has in opsets [since, until], with its ONNX type. */
typedef struct {
    const char *name;
    int since, until;
    VccAttrType type;
} VccAttrSpec;

typedef struct VccDiff VccDiff;
typedef struct VccEmit VccEmit;

typedef struct VccOpDef {
    unsigned flags;               /* VCC_OPF_* */
    int nout_regular;             /* VCC_OPF_WORKSPACE: the outputs before the workspaces */
    const VccAttrSpec *attrs;     /* ONNX attributes by opset, ended by {NULL}; NULL: none (internal ops) */
    /* Values vcc does not support, collected with vcc_op_attr_problem (passes/support.c calls it before
     * anything changes); NULL: every value of a known attribute is supported. */
    void (*check_attrs)(VccCtx *ctx, const VccGraph *g, const VccNode *n);
    /* One internal form for the opset variants (passes/canonical.c); NULL: nothing to do. With
     * VCC_OPF_LOWER it runs in passes/shape instead, when the shapes of node k's inputs are known: it may
     * append nodes to the graph (in canonical form, reading node k's inputs and each other's outputs)
     * and rewrite node k into the op that writes k's outputs from theirs; passes/shape gives the appended
     * nodes their shapes in order, then node k its own, and places them before node k. */
    VccStatus (*canon)(VccCtx *ctx, VccGraph *g, int k);
    /* The shape rule: check false gives node k's outputs their dtypes and shapes (forward ops, during
     * passes/shape; workspace outputs are added here); check true compares what the graph holds with
     * what the rule gives (every op: a graph read back from a .vir dump, and every graph before the
     * emitters). Errors name the node. */
    VccStatus (*shape)(VccCtx *ctx, VccGraph *g, int k, bool check);
    /* The gradient rule of forward or loss node k (passes/autodiff): adds backward nodes through the
     * vcc_diff_* helpers. NULL: the op has no gradient (an error if a parameter reaches it). */
    VccStatus (*grad)(VccDiff *d, int k);
    /* The code of node k in the step function (codegen/emit.c). */
    VccStatus (*emit)(VccEmit *e, int k);
} VccOpDef;

/* The definition of op (ir/ops/registry.c). */
const VccOpDef *vcc_op_def(VccOp op);
/* The op's family as ops.def names it ("conv", "norm"; "none" for an op without kernels). */
const char *vcc_op_family(VccOp op);

/* ======================================================================== shared by shape rules (ir/ops/common.c) */

/* "(2, 3, 8)" into buf. */
void vcc_shape_str(char *buf, size_t len, const VccShape *s);
bool vcc_same_shape(const VccShape *a, const VccShape *b);
/* The op as messages name it: the ONNX op type read from the file, else the ops.def name. */
const char *vcc_node_op(const VccNode *n);
/* Give output t of n dtype dt and shape s (check false), or compare (check true; a mismatch is an error
 * naming the node). t < 0 (an absent output) is fine. False on a mismatch. */
bool vcc_put_output(VccCtx *ctx, VccGraph *g, const VccNode *n, bool check, int t, VccDType dt, const VccShape *s);
/* The tensor at input i of n, or NULL with an error when absent or not of dtype dt. */
const VccTensor *vcc_need_input(VccCtx *ctx, const VccGraph *g, const VccNode *n, int i, VccDType dt);
/* Error "node 'x' (Op): inputs or outputs missing or of the wrong rank"; returns VCC_ERR_SHAPE. */
VccStatus vcc_operands_missing(VccCtx *ctx, const VccNode *n);
/* Error "node 'x' (Op): its inputs and outputs do not have the shapes the op needs"; returns VCC_ERR_SHAPE. */
VccStatus vcc_shape_mismatch(VccCtx *ctx, const VccNode *n);
/* Attribute axis of node n on an input of rank r, negative counting from the back, into *out (in [0, r));
 * false with the error "node 'x' (Op): axis A is outside [-r, r) for an input of rank r" otherwise. */
bool vcc_node_axis(VccCtx *ctx, const VccNode *n, int64_t axis, int rank, int *out);
/* Collect "Op attribute 'a'" for node n with the reason why (NULL: none) for the model's one report. */
void vcc_op_attr_problem(VccCtx *ctx, const VccNode *n, const char *group_fmt, const char *a, const char *why);
/* An initializer: no node produces it and it has a value (or, read from a .vir dump, it is declared a
 * parameter, buffer or constant). */
bool vcc_is_initializer(const VccGraph *g, int t);
/* Remove attribute name from node n (no-op when absent). */
void vcc_attr_drop(VccNode *n, const char *name);
/* Drop the inputs of node k from index from on (values a canonical form has read at compile time); a
 * float initializer among them that nothing else reads becomes a constant, not a trained parameter. */
void vcc_drop_inputs(VccGraph *g, int k, int from);
/* True if a node reads t or t is a graph output. */
bool vcc_tensor_is_used(const VccGraph *g, int t);
/* Canonical form of constant indices (Gather, ScatterElements): input i of node k, when it is an int32
 * constant with values, becomes a new int64 constant "<node>.indices" of those values (the kernels read
 * int64); any other input stays. */
void vcc_indices_i64(VccGraph *g, int k, int i);

/* ======================================================================== shared by gradient rules (ir/ops/common.c) */

/* The state of passes/autodiff: per tensor its gradient so far and whether it depends on a parameter. */
struct VccDiff {
    VccCtx *ctx;
    VccGraph *g;
    int *grad;  /* per tensor: its gradient so far, -1 */
    bool *req;  /* per tensor: depends on a parameter */
    int *owner; /* per gradient tensor made by vcc_diff_new_grad: the tensor it is the gradient of, -1 */
    int cap;
};

/* Make room in d's per-tensor arrays for tensors added to the graph. */
void vcc_diff_grow(VccDiff *d);
/* A new GRAD_TEMP tensor shaped like t, named "<t>.grad" (made unique). */
int vcc_diff_new_grad(VccDiff *d, int t);
/* Add partial gradient gt to t's gradient (a GradAccumulate node when t already has one). */
void vcc_diff_accum(VccDiff *d, int t, int gt);
/* Add backward node "<forward name>.<suffix>" of op with the forward node fwd's attributes; returns its
 * index (the node array may have moved). */
int vcc_diff_add_node(VccDiff *d, VccOp op, int fwd, const char *suffix, const int *in, int nin, const int *out,
                      int nout);
/* The gradient of node k's output i so far (-1: none reaches it). */
int vcc_diff_dy(const VccDiff *d, int k, int i);

/* ======================================================================== broadcasting (ir/ops/binary.c) */

/* The check of the legacy broadcast attributes of opsets 1-6 (Add, Sub, Mul, Div, Pow, the comparisons
 * and logic ops): broadcast 0 or 1, axis not negative. */
void vcc_legacy_bcast_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n);

/* The operands of an elementwise op of two inputs A, B aligned to its output Y: a, b and y all have Y's
 * rank, a and b with 1 along the dims where the operand is broadcast. axis: where B's own dims start
 * among Y's in the legacy form (below), -1 when the operands are right-aligned (numpy). */
typedef struct {
    VccShape a, b, y;
    int axis;
} VccBroadcast;

/* How node n (Add, Sub, Mul, Div, Pow, or a backward node that carries their attributes) broadcasts
 * operands of shapes a and b, after ONNX "Broadcasting": from opset 7 multidirectional (numpy: shapes
 * right-aligned, each dim equal or 1 in one of them, Y the larger); before opset 7 (Add, Sub, Mul, Div
 * 1/6, Pow 1) unidirectional: broadcast=0 (the default) needs equal shapes, broadcast=1 places B's
 * dims at A's dims axis.. (default: A's trailing dims), each equal to A's or 1, and Y has A's shape.
 * False with an error naming the node when the shapes do not broadcast. */
bool vcc_broadcast(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *a, const VccShape *b,
                   VccBroadcast *out);

/* The index map of broadcast bc for the runtime's VccBcast (runtime/elem/binary.h): Y's dims of size 1
 * dropped and neighbouring dims that A and B each read alike (both whole, or broadcast) merged into
 * dims[0..r-1]; the strides sa, sb of A and B along them, in units of ea and eb elements per index of the
 * element (1 for elementwise ops, the matrix sizes for a batch of matrices), 0 where the operand is
 * broadcast; *total the product of the dims. Returns r (0 when Y has one element). */
int vcc_bcast_collapse(const VccBroadcast *bc, int64_t ea, int64_t eb, int64_t *dims, int64_t *sa, int64_t *sb,
                       int64_t *total);

/* Emission (ir/ops/common.c): "    {\n        static const VccBcast d = {...};\n" for an elementwise
 * Y = op(A, B) of broadcast bc (vcc_bcast_collapse in units of elements; a one-element Y: rank 1 of
 * one). The caller writes the kernel call reading &d and closes the block with "    }\n". */
void vcc_emit_bcast_desc(VccEmit *e, const VccBroadcast *bc);

/* ======================================================================== sums to a shape (ir/ops/reduce.c) */

/* For gradient rules: the gradient of tensor t from gradient gt of a value t was broadcast to (ONNX
 * broadcasting; PyTorch's sum_to_size): scale * gt summed over the dims along which t was broadcast
 * (its missing leading dims and its size-1 dims where gt's are larger), shaped like t. axis >= 0: t's
 * dims sit at gt's dims axis.. (the legacy unidirectional broadcast before opset 7); -1: right-aligned.
 * Gives gt itself when the shapes are equal and scale is 1; a view of gt (a backward Reshape) when they
 * differ only in size-1 dims and scale is 1; else the output of a ReduceToShape
 * node "<node fwd>.<suffix>" (runtime reduce_forward, sum in double). The caller hands the result to
 * vcc_diff_accum. Example: y = x * s, x (N, C, T, H, W), s (N, C, 1, 1, 1): ds = vcc_diff_sum_to(dy * x)
 * sums each (n, c)'s T*H*W elements. */
int vcc_diff_sum_to(VccDiff *d, int fwd, const char *suffix, int gt, int t, int axis, float scale);
/* ======================================================================== compile-time evaluation (ir/ops/fold.c) */

#define VCC_FOLD_MAX_ELEMS ((int64_t)1 << 20) /* elements of one folded result, at most */

/* Evaluate forward node k while compiling, when every input it has is a compile-time value (a CONST
 * tensor with data) or, for Shape and Size, its input's shape is known: on the host, in ONNX semantics of
 * g->opset, for the ops the evaluator has (looked up by ONNX op name, so any family's row and ops that
 * have none). Its outputs become CONST tensors with data and *folded is set; vcc_fold_sweep removes the
 * node. Otherwise *folded is false and nothing changes, except for a fold-only op (the const family's,
 * or one vcc has no row for; but not a ConstantOfShape, whose shape rule may fill it at run time), which is then refused naming the node, the input that is not known
 * while compiling and where it comes from (or why the evaluator cannot: a result over 2^20 elements, an
 * element type vcc does not have). Errors of the model (an index out of range, an integer division by
 * zero, shapes that do not broadcast) name the node: VCC_ERR_SHAPE; refusals: VCC_ERR_UNSUPPORTED. */
VccStatus vcc_fold_node(VccCtx *ctx, VccGraph *g, int k, bool *folded);

/* After every node had its chance to fold: remove folded nodes (their outputs stay as CONST tensors while
 * something reads them), then dead forward nodes (no output read by a node or the graph's outputs, none
 * writing another tensor's bytes), then the constants that only removed nodes read. Indices of the
 * remaining nodes and tensors are renumbered in order; nothing changes in a graph without such nodes. */
void vcc_fold_sweep(VccGraph *g);

/* Per node of a forward graph in canonical form (before shapes are known), whether it will fold: the
 * evaluator has its op and every input is a constant or the output of a node that will fold (Shape and
 * Size: whatever their input). passes/support.c accepts nodes of ops vcc has no row for when they fold.
 * A malloc'd array of g->nnodes flags; the caller frees it. */
bool *vcc_fold_plan(const VccGraph *g);

/* The refusal of fold-only node k that was not folded (its inputs are not all known while compiling):
 * the const family's shape rule. Returns VCC_ERR_UNSUPPORTED. */
VccStatus vcc_fold_refuse(VccCtx *ctx, const VccGraph *g, int k);

/* ======================================================================== conv geometry (ir/ops/conv.c) */

/* Convolution geometry decoded from an ONNX Conv node (ONNX Operators "Conv", opset 11+):
 * X (N, C, D1..Dn), W (K, C/group, k1..kn), n = nsp spatial dims (1..3), Y (N, K, out...).
 * pads are explicit begin/end per spatial dim (auto_pad resolved against the input shape). A ConvTranspose
 * node's geometry is the Conv whose adjoint it is: in = its output's spatial sizes, out = its input's,
 * C = its output channels, K = its input channels; its pads may then be negative (a crop: output_shape
 * past what the input reaches) and asymmetric. */
typedef struct {
    int nsp;
    int64_t group;
    int64_t kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
    int64_t in[3], out[3];  /* spatial sizes of the conv's input and output */
    int64_t N, C, K;
} VccConvParams;

/* Decode and validate the attributes of a conv-family node given the forward op's X shape x and W shape
 * w (Conv, ConvGradData, ConvGradFilter: Conv's geometry; ConvTranspose and its backward ops: the
 * transposed geometry above; backward ops carry their forward op's attributes). Errors name the node and
 * the attribute. Returns VCC_OK, VCC_ERR_SHAPE or VCC_ERR_UNSUPPORTED. */
VccStatus vcc_conv_params(VccCtx *ctx, const VccNode *node, const VccShape *x, const VccShape *w,
                          VccConvParams *p);

/* Workspace of one conv kernel call in bytes under a limit of limit bytes (--workspace-limit): the im2col
 * column buffer of one sample and one group for a chunk of P consecutive output positions (flattened
 * row-major), (C/group) * prod(kernel) * P floats, P = min(prod(out), max(1, limit / (4 * (C/group) *
 * prod(kernel)))): at most limit bytes unless a single output position's columns are larger. The kernels
 * (runtime/elem/conv.h, vcc_conv_chunk_cols) derive P from the size they are handed, so this is exactly
 * what the CPU trainer uses, and what the CUDA trainer's im2col path uses and its cuDNN path hands to
 * cuDNN as the workspace limit for its algorithm choice. -1 when it passes VCC_MAX_TENSOR_BYTES. */
int64_t vcc_conv_ws_bytes(const VccConvParams *p, int64_t limit);

/* The workspace oneDNN's forward or backward-data convolution of geometry p (runtime/cpu/conv_dnnl.h)
 * needs under limit bytes, as vcc plans it for --cpu-conv dnnl: the blocked copies of the input
 * (nb, C, in...), the output (nb, K, out...) and the weights, channels rounded up to 16 (oneDNN's
 * nCdhw8c on AVX2, nCdhw16c on AVX-512; its plain-layout kernels need no copies), 64 bytes of alignment
 * each, and 64 KiB for the padded bias and the reorders' scratchpads (its direct kernels' own scratchpad
 * is empty), for the largest divisor nb of the batch N whose bytes fit limit (the program runs nb
 * samples per oneDNN call). 0 when no nb fits, or when oneDNN cannot take p (negative pads). The program
 * checks oneDNN's real need at its first call and computes with im2col where it is larger than the
 * workspace (another CPU, more threads). */
int64_t vcc_conv_dnnl_ws_bytes(const VccConvParams *p, int64_t limit);

/* The workspace vcc plans for conv-family op `op` of geometry p under ctx's options: vcc_conv_ws_bytes,
 * or, with ctx->cpu_conv_dnnl, the larger of that and oneDNN's (for the GradFilter ops the
 * weight-gradient pass's, ir/ops/conv.c; vcc_conv_dnnl_ws_bytes for the others), so either path fits.
 * -1 when the im2col workspace passes VCC_MAX_TENSOR_BYTES. */
int64_t vcc_conv_plan_ws_bytes(const VccCtx *ctx, VccOp op, const VccConvParams *p);

/* The bytes of conv-family node k's workspace, now `bytes`, one step smaller; `bytes` itself when it
 * cannot shrink. Under --cpu-conv dnnl, the room for oneDNN's Winograd convolution goes first (its direct
 * convolution then runs). Where the im2col path runs: about half as many columns, (cols + 1) / 2, but not
 * below min(prod(out), VCC_WORKSPACE_MIN_COLS) (not at all where `bytes` is not a whole number of
 * columns). Where oneDNN's direct convolution runs (--cpu-conv dnnl; its blocked copies do not chunk by
 * columns): with dnnl_too, the larger of those im2col columns (the path of a pass oneDNN does not take)
 * and the room for oneDNN's largest execution below `bytes` (ir/ops/conv.c's dnnl_ws_bytes: the whole
 * batch while that fits, then fewer samples per execution, then slabs of one sample); without dnnl_too,
 * `bytes`. passes/schedule.c shrinks the workspaces that set the peak with it (dnnl_too false: the default
 * plan keeps oneDNN's room and the im2col chunks beside it), passes/remat.c those at the peak under
 * --memory-limit (true); the kernels take any whole number of columns (vcc_conv_chunk_cols) and oneDNN
 * the most samples that fit (runtime/cpu/conv_dnnl.h). */
int64_t vcc_conv_ws_halved(VccCtx *ctx, const VccGraph *g, int k, int64_t bytes, bool dnnl_too);

/* Add a workspace tensor "<node>.ws" of vcc_conv_ws_bytes (under ctx->workspace_limit) as the last output
 * of conv-family node k; x and w are the forward op's input and weight shapes. */
VccStatus vcc_conv_add_workspace(VccCtx *ctx, VccGraph *g, int k, const VccShape *x, const VccShape *w);

/* ======================================================================== shared by emission (ir/ops/common.c) */

/* What an op's emit function writes with: the graph (planned), the target and the step body's stream. */
struct VccEmit {
    VccCtx *ctx;
    const VccGraph *g;
    VccTarget target;
    FILE *f;
    VccConvParams *convs; /* distinct conv geometries, index = descriptor */
    int nconv;
    char ptr[16][48];     /* a ring of operand strings, so one call's operands never share a buffer */
    int next;
};

/* "VCC_F(off)" for float tensor t, "NULL" for an absent one (t < 0); "VCC_B(off)" (a __nv_bfloat16 pointer)
 * for a value a CUDA bf16 trainer stores in 2 bytes (VccTensor.bf16_bytes 2). */
const char *vcc_emit_f32(VccEmit *e, int t);
/* "(A + off)" (an untyped pointer into the arena) for tensor t of any dtype, "NULL" for t < 0. */
const char *vcc_emit_ptr(VccEmit *e, int t);
/* The runtime's code of element type dt ("VCC_ET_I8": runtime/elem/typed.h). */
const char *vcc_emit_et(VccDType dt);
/* Whether node n runs on the typed kernels (runtime/{elem,proto,cpu,cuda}/typed.*): its op has VCC_OPF_TYPED and its input 0
 * or 1 is not float32. */
bool vcc_node_typed(const VccGraph *g, const VccNode *n);
/* The value of one-element constant t (any number type) as a float32 in *v, when the float32 holds it
 * exactly (NaN and infinities included); false otherwise. */
bool vcc_value_as_float(const VccTensor *t, float *v);
/* Input i of n of any numeric dtype vcc has but bool (the typed kernels' data), or NULL with an error
 * naming the node. */
const VccTensor *vcc_need_numeric(VccCtx *ctx, const VccGraph *g, const VccNode *n, int i);
/* "{a0, a1, ...}, {b0, ...}, ...": nlists lists of int64 values (list l: lens[l] values) as C initializer
 * lists (the arrays of a kernel descriptor). */
void vcc_emit_i64s(VccEmit *e, int nlists, const int64_t *const *lists, const int *lens);
/* A C/CUDA float literal of v that reads back as v ("0.200000003f", "1.0f", "-INFINITY"). */
const char *vcc_emit_float(VccEmit *e, float v);
/* Elements of tensor t. */
int64_t vcc_emit_numel(const VccEmit *e, int t);
/* N, C, S of an (N, C, spatial...) tensor. */
void vcc_emit_ncs(const VccEmit *e, int t, int64_t *N, int64_t *C, int64_t *S);

/* ======================================================================== batch normalization (ir/ops/norm.c) */

/* The form of a BatchNormalization node in the model's opset: 1 = training form (normalizes with batch
 * statistics), 0 = inference form, -1 = a form vcc does not support (*what and *why say which and why). */
int vcc_batchnorm_form(const VccGraph *g, const VccNode *n, const char **what, const char **why);

/* The row layout of an InstanceNormalization, GroupNormalization or LayerNormalization node n whose shapes
 * are known: lay = {R rows, D elements per row, scale_m, scale_s, bias_m, bias_s} (vcc_norm_pidx: which
 * scale and bias entry an element reads; bias 1, 1 without one). False for another op. RowNormApply
 * (X, scale, B | absent, mean, invstd) -> Y takes them as its attributes rows, cols, scale_m, scale_s,
 * bias_m, bias_s: the node's Y again from its saved row statistics (passes/remat.c). */
bool vcc_rownorm_layout(const VccGraph *g, const VccNode *n, int64_t lay[6]);

/* ======================================================================== dropout (ir/ops/dropout.c) */

/* The mode a Dropout node states in the model's opset: 1 = training (opsets 1/6 is_test=0, 12+
 * training_mode true), 0 = inference (is_test=1, training_mode absent or false), 2 = the node does not
 * say (opsets 7-11: a trainer trains, other programs copy), -1 = a training_mode input that is not a
 * constant bool scalar. */
int vcc_dropout_mode(const VccGraph *g, const VccNode *n);

#endif /* VCC_OPS_H */
