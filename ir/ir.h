/*
 * ir.h — vcc's intermediate representation: tensors, nodes, graphs, the op table, diagnostics.
 *
 * One flat graph holds forward, loss, backward and optimizer nodes. The node array order IS the
 * schedule once passes/schedule has run (step k = node k). Tensors and nodes are referred to by
 * index (int); -1 means "none" (e.g. an absent optional input).
 *
 * Letter legend used in shape comments: N batch, C channels, K output channels / classes,
 * T time (frames), H height, W width, S product of spatial dims.
 */
#ifndef VCC_IR_H
#define VCC_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ======================================================================== status, context, diagnostics (ir/diag.c) */

typedef enum {
    VCC_OK = 0,
    VCC_ERR_IO,          /* file missing, unreadable, unwritable */
    VCC_ERR_PARSE,       /* not a valid ONNX/.vir/.npy file */
    VCC_ERR_UNSUPPORTED, /* valid input vcc does not handle (op, attribute, dtype) */
    VCC_ERR_SHAPE,       /* shapes inconsistent, or a symbolic dim left unbound */
    VCC_ERR_INVALID,     /* bad option or argument */
    VCC_ERR_INTERNAL,    /* a pass produced an inconsistent graph (verifier) */
} VccStatus;

/* A symbolic-dimension binding given with --shape NAME=2x3x8x112x112 (binds a graph input by name)
 * or --shape DIMNAME=8 (binds every dim whose dim_param is DIMNAME). */
typedef struct {
    char *name;
    int rank;
    int64_t dims[8];
    const char *opt; /* the option the user gave it with, for messages: NULL for --shape, "--vary" (--fit) */
} VccShapeBinding;

/* The kinds of unsupported constructs the one report of a model groups (vcc_unsupported). */
typedef enum {
    VCC_PROB_VERSION,       /* an opset or IR version newer than the ONNX specification vcc follows */
    VCC_PROB_OP,            /* an op type vcc does not have (or not in this domain) */
    VCC_PROB_DTYPE,         /* an element type of an initializer, Constant or input */
    VCC_PROB_ATTR,          /* an attribute vcc does not know, of the wrong type, or with an unsupported value */
    VCC_PROB_TRAINING_FORM, /* a sign of an inference-form export while compiling a trainer */
    VCC_PROB_COUNT
} VccProblemKind;

/* One unsupported construct: grouped by (kind, group) in the report; item names where it is. */
typedef struct {
    VccProblemKind kind;
    char *group; /* e.g. "MaxPool", "BOOL", "BatchNormalization training_mode=0" */
    char *item;  /* e.g. "'/features/MaxPool'", "Constant '/c' (read by Dropout '/drop')" */
} VccProblem;

#define VCC_MAX_ERRORS 20 /* error lines printed before the rest are only counted (vcc_diag_finish) */

/* The loss a trainer minimizes (--loss, passes/loss.c). */
typedef enum {
    VCC_LOSS_CE,    /* softmax cross-entropy of the single output (logits (N, K)) with int64 labels (N) */
    VCC_LOSS_MSE,   /* mean squared error of the single output against float targets of its shape */
    VCC_LOSS_GRAPH, /* the model's single output is the loss (a float scalar the graph computes) */
} VccLossKind;

/* The optimizer a trainer updates its parameters with (--optimizer, passes/optimizer.c). */
typedef enum {
    VCC_OPTIM_SGD,   /* torch.optim.SGD with momentum (the default) */
    VCC_OPTIM_ADAMW, /* torch.optim.AdamW (amsgrad and maximize off) */
} VccOptimKind;

/* The arithmetic of a trainer (--precision). fp32 and tf32 differ in the CUDA trainer's library calls
 * (codegen/emit.c writes VCC_PRECISION_TF32 into the program, runtime/cuda/base.cuh); every tensor stays
 * float32 in the arena. bf16 is mixed precision (passes/precision.c): activations and their gradients hold
 * bfloat16 values, convolutions and matrix products read bfloat16 copies of their parameters, and the
 * parameters, their gradients, the optimizer state, normalization statistics and the loss stay float32. */
typedef enum {
    VCC_PRECISION_FP32, /* plain FP32: cuDNN CUDNN_FMA_MATH, cuBLAS CUBLAS_DEFAULT_MATH (the default; the C target's) */
    VCC_PRECISION_TF32, /* TF32 tensor cores allowed in cuDNN convolutions and cuBLAS products, as PyTorch's
                           defaults for cuDNN (torch.backends.cudnn.allow_tf32); CUDA trainers only */
    VCC_PRECISION_BF16, /* bfloat16 activations (torch.autocast(dtype=torch.bfloat16) semantics): in the plan
                           (and a CUDA trainer) at 2 bytes per element; the C trainer computes the same numbers
                           with those values in float32 storage (VccCtx.bf16_store_bytes) */
} VccPrecision;

/* "fp32", "tf32" or "bf16": p's name on the command line, in the plan JSON and in the generated program. */
const char *vcc_precision_name(VccPrecision p);

/* The default of --workspace-limit: 16 MiB per conv workspace (ir/ops/conv.c, vcc_conv_ws_bytes). */
#define VCC_WORKSPACE_LIMIT_DEFAULT ((int64_t)16 << 20)
/* ... and under --cpu-conv dnnl: 32 MiB, room for oneDNN's Winograd convolution of mid-sized layers
 * (runtime/cpu/conv_dnnl.h); where a workspace that sets the peak is shrunk, that room goes first (vcc_conv_ws_halved). */
#define VCC_WORKSPACE_LIMIT_DNNL_DEFAULT ((int64_t)32 << 20)
/* The fewest output positions (im2col columns) per chunk that passes/schedule.c shrinks a conv workspace
 * at the peak to (or all of the conv's positions, where it has fewer): a chunk's sgemm keeps at least
 * this many columns, so shrinking costs at most a few percent of that conv's time. */
#define VCC_WORKSPACE_MIN_COLS 64

/* The orders of passes/remat.c's search once a conv workspace was halved (VccCtx.remat_policies): a
 * convolution recomputed before the workspace at the peak is halved again, or the other way round. */
#define VCC_REMAT_CONVS_FIRST 1
#define VCC_REMAT_HALVE_FIRST 2
/* Whether its search may recompute data-movement copies (Concat, Slice, ...): with them alone, or without
 * them alone (neither bit: both searches, the better kept). */
#define VCC_REMAT_COPIES 4
#define VCC_REMAT_NO_COPIES 8
/* Offsets planned after every step of the search, not only where the lower bound is within the limit
 * (tests compare the two: the same result) */
#define VCC_REMAT_PLAN_ALL 16

/* Everything a pass needs besides the graph: diagnostics and options. No global mutable state. */
typedef struct VccCtx {
    FILE *diag;            /* where errors go (stderr in the CLI, a memstream in tests) */
    const char *file;      /* the input file name, prefixed to every error */
    int nerrors;           /* errors reported (printed or not) */
    int max_errors;        /* error lines printed at most (VCC_MAX_ERRORS; <= 0: no cap) */
    int suppressed;        /* errors past max_errors, counted by vcc_diag_finish */
    VccProblem *problems;  /* unsupported constructs collected for one report (vcc_report_problems) */
    int nproblems, cap_problems;
    VccShapeBinding *shapes;
    int nshapes;
    /* training options baked into the graph (defaults: PyTorch SGD, see passes/optimizer.c) */
    VccLossKind loss;      /* the loss the trainer minimizes (--loss; default VCC_LOSS_CE) */
    float momentum;        /* SGD momentum (default 0.9); lr and weight decay are runtime arguments */
    VccOptimKind optimizer;/* the update (--optimizer; default VCC_OPTIM_SGD): its state is part of the plan */
    bool forward_only;     /* compile the forward graph alone (no loss, backward or update): --forward-only */
    bool eval;             /* compile the forward graph in inference form (BatchNormalization with its running
                              statistics, Dropout off) for the evaluation program: --eval */
    bool allow_inference_export; /* compile a trainer from an inference-form export: --allow-inference-export */
    bool no_fuse_attention;      /* keep scaled dot-product attention unfused (passes/fuse.c): --no-fuse-attention */
    bool keep_grads;       /* keep every gradient until all updates ran (passes/optimizer.c): --keep-grads */
    int64_t workspace_limit; /* bytes a conv-family op's im2col workspace may take (--workspace-limit; default
                                VCC_WORKSPACE_LIMIT_DEFAULT): its columns are unfolded in chunks that fit */
    bool workspace_limit_fixed; /* --workspace-limit given: every conv workspace is what the limit gives; without
                                   it, passes/schedule shrinks those that set the peak (vcc_conv_ws_halved) */
    bool cpu_conv_dnnl;    /* the C trainer's convolutions through oneDNN (--cpu-conv dnnl; im2col is vcc's default;
                              runtime/cpu/conv_dnnl.h): conv workspaces also hold its blocked copies where they
                              fit the limit (vcc_conv_dnnl_ws_bytes), in the CUDA trainer's plan too, so both
                              targets keep one plan; false: im2col + OpenBLAS only */
    VccPrecision precision;/* a trainer's arithmetic (--precision; default VCC_PRECISION_FP32): tf32 a CUDA
                              trainer's convolutions and matrix products, bf16 mixed precision */
    int bf16_store_bytes;  /* with VCC_PRECISION_BF16: bytes per element of a bfloat16 value in the arena, 2
                              (the plan, a CUDA trainer) or 4 (a C trainer, float32 storage) */
    int64_t memory_limit;  /* the arena's limit in bytes (passes/remat.c recomputes values to meet it): --memory-limit; 0: none */
    double recompute_flops_max; /* the FLOPs recomputation may add, percent of the step's estimate
                                   (vcc_step_flops): --recompute-flops; negative: no bound (the default) */
    int remat_policies;    /* which of passes/remat.c's two orders run from the first workspace halving on: 0
                              (the default) both, the better kept; VCC_REMAT_CONVS_FIRST or VCC_REMAT_HALVE_FIRST
                              that one alone; or'd with VCC_REMAT_COPIES or VCC_REMAT_NO_COPIES, only the
                              search with or without data-movement copies; with VCC_REMAT_PLAN_ALL, offsets
                              planned after every step (tests compare them) */
    bool remat_no_figures; /* a limit passes/remat.c cannot meet is refused without the smallest arenas
                              reachable (which take every search again with every state planned): for
                              callers that drop the message, vcc --fit's trials */
    bool from_dump;        /* the graph was read from a .vir dump: its intervals and plan are the user's */
    const char *dump_after;/* --dump-ir=PASS, or NULL */
    FILE *dump;            /* where dumps go (stdout) */
} VccCtx;

/* Initialise ctx with defaults: diag=stderr, dump=stdout, momentum 0.9, at most VCC_MAX_ERRORS lines,
 * workspace limit VCC_WORKSPACE_LIMIT_DEFAULT, precision VCC_PRECISION_FP32. */
void vcc_ctx_init(VccCtx *ctx, const char *file);

/* Report an error: writes "<ctx->file>: error: <message>\n" to ctx->diag and counts it. printf-style.
 * The line is escaped (vcc_fputs_escaped): names from a model cannot forge lines or reach the terminal as
 * control sequences. Past ctx->max_errors errors, lines are only counted. */
void vcc_error(VccCtx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* After the last error: report problems still collected (vcc_report_problems), then print "<file>: N
 * more errors not shown" when the cap hid some. Call it once a compilation is over. */
void vcc_diag_finish(VccCtx *ctx);

/* Write s to f with every byte that is not printable text escaped the way C writes it: \n, \t, \r
 * and \xNN for other control characters (C0, DEL, C1) and bytes that are not valid UTF-8 (RFC 3629).
 * Valid multi-byte UTF-8 characters pass unchanged (runtime/vcc_io.h: vcc_io_escape). */
void vcc_fputs_escaped(FILE *f, const char *s);

/* Length in bytes (1-4) of the valid UTF-8 character at s, 0 when the bytes there are not one (RFC 3629:
 * no overlong forms, surrogates or code points past U+10FFFF). s must not be at its terminating NUL. */
int vcc_utf8_len(const char *s);

/* Collect one unsupported construct for the model's report (nothing is printed yet). group names the
 * construct (an op type, an ONNX element type, "Op attribute=value"); the printf-style item says where
 * it is. */
void vcc_unsupported(VccCtx *ctx, VccProblemKind kind, const char *group, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Print every collected problem in one report (grouped by kind and group, counts, at most a few items
 * per group, lines wrapped at 80 columns, an export hint for inference-form signs), count them as
 * errors and clear them. Returns VCC_OK when there were none, else VCC_ERR_UNSUPPORTED. */
VccStatus vcc_report_problems(VccCtx *ctx);
/* Drop the collected problems without printing them. */
void vcc_problems_clear(VccCtx *ctx);

/* name, or when it is longer than len-1 bytes its head and tail around "..." written into buf (len >= 16):
 * model names in one-line messages stay readable. */
const char *vcc_short_name(const char *name, char *buf, size_t len);

/* printf into a new malloc'd string (no length limit). */
char *vcc_strfmt(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
char *vcc_vstrfmt(const char *fmt, va_list ap);

/* Internal invariant check: on failure prints file:line and the expression, then abort(). */
#define VCC_ASSERT(e) ((e) ? (void)0 : vcc_assert_fail(#e, __FILE__, __LINE__))
void vcc_assert_fail(const char *expr, const char *file, int line);

/* malloc/calloc/realloc/strdup that abort() with a message on out-of-memory (a compiler-wide policy:
 * vcc's own allocations are small relative to the models it compiles). */
void *vcc_malloc(size_t n);
void *vcc_calloc(size_t n, size_t size);
void *vcc_realloc(void *p, size_t n);
char *vcc_strdup(const char *s);
/* Whether string s ends with suffix suf (s may be NULL: false). */
bool vcc_has_suffix(const char *s, const char *suf);

/* ======================================================================== tensors, nodes, graph (ir/ir.c) */

#define VCC_MAX_RANK 8

/* Element types: the ONNX element types a graph may hold. Trained tensors are F32 (and the I64 labels);
 * I64, I32, BOOL and F64 values are mostly constants and the shape arithmetic folded at compile time
 * (ir/ops/fold.c). The elementwise ops with typed kernels (runtime/elem/typed.h: Add, Sub, Mul, Div,
 * Pow, Clip, MaxPool, Pad, Identity) compute on every type at run time. VCC_BOOL is 1 byte, 0 or 1.
 * The values are the runtime's VCC_ET_* codes (runtime/elem/typed.h); VCC_DT_LAST is the last one. */
typedef enum {
    VCC_DT_UNDEF = 0, VCC_F32, VCC_I64, VCC_BOOL, VCC_I32, VCC_F64, VCC_I8, VCC_I16, VCC_U8, VCC_U16, VCC_U32, VCC_U64,
    VCC_DT_LAST = VCC_U64
} VccDType;

typedef struct {
    int rank;                       /* 0 = scalar */
    int64_t dims[VCC_MAX_RANK];     /* elements per dim; -1 while symbolic/unknown */
} VccShape;

typedef enum {
    VCC_T_INPUT,      /* graph data input, e.g. the clip batch (N, C, T, H, W) */
    VCC_T_LABEL,      /* a per-sample input of the loss: int64 labels (N) or float targets (N, ...) */
    VCC_T_PARAM,      /* trainable initializer (weights, BN scale/bias) */
    VCC_T_BUFFER,     /* non-trainable state updated by training (BN running mean/var) */
    VCC_T_CONST,      /* non-trainable, never written (shape tensors, Constant outputs) */
    VCC_T_ACT,        /* forward value */
    VCC_T_LOSS,       /* the scalar loss */
    VCC_T_GRAD,       /* gradient of a PARAM kept in the persistent region (vcc --keep-grads: every update
                         runs after the last gradient, --save-grads and --clip-grad-norm read them) */
    VCC_T_GRAD_TEMP,  /* gradient of a non-parameter value (planned) */
    VCC_T_OPT_STATE,  /* optimizer state (momentum buffer) */
    VCC_T_WORKSPACE,  /* scratch a kernel needs during one step (im2col columns, cuDNN workspace) */
    VCC_T_GRAD_PLANNED, /* gradient of a PARAM in the planned region (the default): live from its first
                           contribution to its parameter's update, which runs as soon as it is final */
} VccTensorKind;

typedef struct {
    char *name;
    VccDType dtype;
    VccShape shape;
    char *dim_param[VCC_MAX_RANK];  /* ONNX symbolic dim names (NULL where the dim is fixed) */
    VccTensorKind kind;
    void *data;                     /* initializer contents, host order, data_bytes long; NULL otherwise */
    size_t data_bytes;
    int producer;                   /* node index, -1 for inputs/initializers */
    int grad;                       /* tensor index of this tensor's gradient, -1 if none */
    int param_of;                   /* for GRAD/OPT_STATE: the parameter tensor it belongs to, else -1 */
    int grad_of;                    /* a gradient passes/autodiff made for a value (vcc_diff_new_grad): that
                                       value (its whole gradient or a part from one reader); -1 otherwise (a
                                       gradient rule's intermediates among them) */
    int alias_of;                   /* views (Flatten/Reshape/Identity): tensor whose bytes this is; -1 */
    int inplace_of;                 /* passes/inplace: tensor whose bytes this output took; -1 */
    /* filled by passes/liveness and passes/memplan */
    int start, end;                 /* live interval, inclusive schedule steps; -1 for persistent tensors */
    bool saved;                     /* forward value read by a backward node (a saved tensor) */
    int64_t offset;                 /* byte offset in the arena of the bytes it uses (its root's for views and
                                       in-place outputs); -1 before memplan and for tensors never live */
    /* set by passes/precision.c (--precision bf16) on float32 values computed in mixed precision: every
     * value stored into it is rounded to bfloat16 (round to nearest even), and it takes bf16_bytes bytes
     * per element in the arena (2: bfloat16 storage; 4: those values in float32 storage, the C target's) */
    uint8_t bf16_bytes;
} VccTensor;

typedef enum { VCC_A_INT, VCC_A_FLOAT, VCC_A_INTS, VCC_A_FLOATS, VCC_A_STRING } VccAttrType;

typedef struct {
    char *name;
    VccAttrType type;
    int64_t i;
    float f;
    int64_t *ints;
    float *floats;
    int n;            /* element count of ints/floats */
    char *s;
} VccAttr;

typedef enum {
#define X(e, name, kind, family) VCC_OP_##e,
#include "ops.def"
    VCC_OP_COUNT
} VccOp;

typedef enum { VCC_PHASE_FORWARD, VCC_PHASE_LOSS, VCC_PHASE_BACKWARD, VCC_PHASE_UPDATE } VccPhase;

typedef struct {
    VccOp op;
    char *name;                /* ONNX node name, or a derived one ("/layer1/Conv_3.grad_data") */
    char *onnx_op;             /* op type as read from ONNX (kept for messages about unsupported ops) */
    char *domain;              /* the ONNX domain when it is not the default one (unsupported ops), else NULL */
    int *in, nin;              /* tensor indices; -1 = absent optional input */
    int *out, nout;
    VccAttr *attrs;
    int nattrs;
    VccPhase phase;
    bool canon_later;          /* passes/canonical: an input is a value that folds during shapes, so the
                                  op's canonical form runs then, just before its shape rule */
    int sub[2];                /* If: then_branch, else_branch; Loop: body (sub[0]); 1 + an index into the
                                  graph's subs, 0: none (passes/ctrlflow.c expands them) */
} VccNode;

typedef struct {
    VccTensor *tensors;
    int ntensors, cap_tensors;
    VccNode *nodes;           /* after passes/schedule: the schedule, step k = nodes[k] */
    int nnodes, cap_nodes;
    int *name_index, name_cap;/* open-addressing hash of tensor names -> index + 1 (0 = empty); ir/ir.c */
    int *inputs, ninputs;     /* graph inputs that are not initializers */
    int *outputs, noutputs;   /* graph outputs (ONNX), then the loss after passes/loss */
    int *output_elem_type;    /* per graph output: the ONNX element type the model declares (0: none) */
    VccShape *output_decl;    /* per graph output: the declared shape (rank -1: none; dims -1: symbolic) */
    char *producer;           /* the model's producer_name ("pytorch", ...), or NULL */
    int64_t ir_version;       /* the model's IR version (0 for a .vir dump) */
    int64_t opset;            /* ai.onnx opset version */
    char **meta_keys, **meta_values; /* the model's metadata_props (ONNX), nmeta pairs */
    int nmeta;
    int data_input;           /* the clip input tensor (-1 until passes/loss picks it) */
    int label;                /* the int64 labels input the trainer fills from --labels (-1: none) */
    int target;               /* the float targets input the trainer fills from --targets (-1: none) */
    int loss;                 /* loss tensor (-1 until passes/loss) */
    struct VccSubgraph *subs; /* the subgraphs of If and Loop nodes (VccNode.sub), nsubs of them */
    int nsubs;
    /* filled by passes/schedule (0 for a graph read back after it): the schedule's peak (persistent bytes
     * plus the most planned bytes live at one step, before in-place reuse) and that of the order kept
     * from the given one, which the memory-aware order replaces only when its peak is lower */
    int64_t schedule_peak_bytes, given_order_peak_bytes;
    /* filled by passes/memplan */
    int64_t arena_bytes, persistent_bytes, planned_bytes, lower_bound_bytes, no_reuse_bytes;
    /* persistent bytes plus every saved activation's (each rounded up as the arena holds it): a saved
     * tensor is defined before the loss and read after it, so all of them are live when backward starts
     * and no order of these nodes needs less; only saving less (recomputation) goes below it */
    int64_t saved_floor_bytes;
    double plan_seconds; /* CPU seconds of the offset planning (vcc_dsa_plan); -1 when not planned here */
    /* filled by passes/schedule: conv workspaces shrunk where they set the peak, and the bytes that took
     * off them */
    int ws_shrunk;
    int64_t ws_shrunk_bytes;
    /* filled by passes/remat: the arena memplan made (before any recomputation), the values recomputed in
     * backward, their FLOPs and an estimate of one training step's FLOPs (vcc_step_flops); 0 before */
    int64_t arena_unlimited_bytes;
    int remat_values;
    double remat_flops, step_flops;
    /* filled by passes/remat: halvings of gradient-convolution workspaces at the peak once recomputation
     * alone could not meet the limit, and the bytes they took off */
    int remat_ws_shrunk;
    int64_t remat_ws_shrunk_bytes;
} VccGraph;

/* A subgraph attribute of an If or Loop node (ONNX GraphProto: then_branch, else_branch, body), loaded as
 * a graph of its own: its inputs are g->inputs (untyped), its outputs g->outputs. The values of enclosing
 * scopes it reads are untyped placeholders outer[0..nouter) in g, and the node reads them as extra inputs
 * after its ONNX ones (sub[0]'s, then sub[1]'s), so every pass sees them used. */
typedef struct VccSubgraph {
    VccGraph *g;
    int *outer, nouter;
} VccSubgraph;

/* Append a subgraph entry to g's table, taking sub and outer (nouter placeholders of sub); returns its
 * index. */
int vcc_subgraph_add(VccGraph *g, VccGraph *sub, int *outer, int nouter);

/* The value of the model's metadata_props entry key, or NULL. */
const char *vcc_graph_meta(const VccGraph *g, const char *key);

/* Op name as in ops.def ("Conv", "ConvGradData"...). */
const char *vcc_op_name(VccOp op);
/* True for an ONNX op (a forward op of ops.def, named by its ai.onnx op type). */
bool vcc_op_is_onnx(VccOp op);
/* The fewest and most inputs and outputs a node of ONNX op `op` (an F row of ir/ops.def) may list in any
 * opset version, an omitted optional input ("") counted (ir/ops/arity.def, from ONNX's operator
 * schemas; variadic: INT32_MAX). Returns false for an op without a row (internal ops). */
bool vcc_onnx_arity(VccOp op, int *min_in, int *max_in, int *min_out, int *max_out);
/* Look up an ONNX op type (ai.onnx domain) among the forward ops; returns VCC_OP_COUNT if unknown. */
VccOp vcc_op_from_onnx(const char *op_type);

VccGraph *vcc_graph_new(void);
void vcc_graph_free(VccGraph *g);
/* Free what one tensor owns (name, data, dim_param names) or one node owns (names, operand lists,
 * attributes); the struct itself stays (a pass that removes it from its array calls these). */
void vcc_tensor_release(VccTensor *t);
void vcc_node_release(VccNode *n);

/* Drop the tensors from index n on (their names, data and dim names freed) and index the names left again:
 * undoes vcc_tensor_add calls made since the graph had n tensors, which nothing may still reference. */
void vcc_tensors_truncate(VccGraph *g, int n);

/* Add a tensor; name NULL gives "t<index>" (made unique). Names must be unique (asserted): names a pass
 * makes up go through vcc_tensor_add_unique. Returns the index. */
int vcc_tensor_add(VccGraph *g, const char *name, VccDType dt, const VccShape *shape, VccTensorKind kind);
/* Add a tensor named by the printf-style fmt, made unique against every name in g (the model's own
 * included): a taken name gets "_1", "_2", ... appended. No length limit. Returns the index. */
int vcc_tensor_add_unique(VccGraph *g, VccDType dt, const VccShape *shape, VccTensorKind kind, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* Rebuild the name index after the tensor array was permuted (the .vir reader reorders tensors). */
void vcc_graph_rehash(VccGraph *g);
/* Index of the tensor named name, or -1 (a hash lookup; tensor names never change after vcc_tensor_add). */
int vcc_tensor_find(const VccGraph *g, const char *name);
/* Number of elements (product of dims; 1 for rank 0); -1 if any dim is unknown or the product overflows
 * int64. */
int64_t vcc_shape_numel(const VccShape *s);
/* *out = a * b (a + b); false, *out unspecified, when the result does not fit int64. Shape arithmetic on
 * numbers from a model goes through these. */
bool vcc_mul_i64(int64_t a, int64_t b, int64_t *out);
bool vcc_add_i64(int64_t a, int64_t b, int64_t *out);
/* Bytes of one element of dt (4 for F32 and I32, 8 for I64 and F64, 1 for BOOL; 0 for UNDEF). */
size_t vcc_dtype_size(VccDType dt);
/* The .vir name of dt: "f32", "i64", "bool", "i32", "f64" ("?" for UNDEF). */
const char *vcc_dtype_name(VccDType dt);
/* The ONNX TensorProto.DataType of dt (FLOAT 1, INT32 6, INT64 7, BOOL 9, DOUBLE 11; 0 for UNDEF), and
 * back (VCC_DT_UNDEF for an element type vcc does not have). */
int vcc_dtype_onnx(VccDType dt);
VccDType vcc_dtype_from_onnx(int onnx_elem_type);
#define VCC_MAX_TENSOR_BYTES ((int64_t)1 << 47) /* 128 TiB: larger tensors are refused, sizes never overflow */
#define VCC_MAX_ARENA_BYTES ((int64_t)1 << 52) /* 4 PiB: an offset past it is refused (offset + a tensor's
                                                  bytes never overflows) */

/* Byte size of a dt tensor of shape s into *bytes, with overflow checks. Returns false when a dim is
 * negative (unknown) or the size exceeds VCC_MAX_TENSOR_BYTES. */
bool vcc_shape_checked_bytes(const VccShape *s, VccDType dt, int64_t *bytes);
/* Bytes of a tensor: numel * element size (0 if unknown). */
int64_t vcc_tensor_bytes(const VccTensor *t);
/* The tensor whose bytes t uses: follows alias_of and inplace_of to the root. */
int vcc_tensor_root(const VccGraph *g, int t);
/* vcc_tensor_root of every tensor at once, in O(ntensors) however long the chains (a malloc'd array of
 * g->ntensors indices; the caller frees it). */
int *vcc_tensor_roots(const VccGraph *g);
/* The live interval of each buffer: for every root r (roots from vcc_tensor_roots), gs[r] and ge[r] the
 * first and last steps of the union of the intervals (start, end) of the tensors whose root is r; -1 for
 * tensors that are no root or whose buffer is never live. gs and ge hold g->ntensors ints each. */
void vcc_root_intervals(const VccGraph *g, const int *roots, int *gs, int *ge);
/* True for tensors in the persistent region (PARAM, BUFFER, CONST, GRAD, OPT_STATE). */
bool vcc_tensor_is_persistent(const VccTensor *t);
/* True for a parameter's gradient, kept (GRAD) or planned (GRAD_PLANNED). */
bool vcc_kind_is_param_grad(VccTensorKind k);
const char *vcc_tensor_kind_name(VccTensorKind k);
/* Plan category of a tensor as --plan-json names it: parameter (params, BN running stats, consts),
 * gradient, optimizer_state, saved_activation (read by a backward node), activation, workspace. */
const char *vcc_tensor_category(const VccTensor *t);

/* Append a node; copies in/out arrays and sets producer of each output. Returns the node index. */
int vcc_node_add(VccGraph *g, VccOp op, const char *name, const int *in, int nin, const int *out, int nout,
                 VccPhase phase);
/* Move the nodes from index `from` to the end (nodes a pass has just appended) to index `to` (<= from), before
 * the node there, keeping their order; the nodes in between move on, and every tensor's producer follows. */
void vcc_nodes_move(VccGraph *g, int from, int to);

/* Attribute setters (copy their arguments; a later set of the same name replaces it). */
void vcc_attr_set_int(VccNode *n, const char *name, int64_t v);
void vcc_attr_set_float(VccNode *n, const char *name, float v);
void vcc_attr_set_ints(VccNode *n, const char *name, const int64_t *v, int count);
void vcc_attr_set_floats(VccNode *n, const char *name, const float *v, int count);
void vcc_attr_set_string(VccNode *n, const char *name, const char *s);
/* Set every attribute of src on dst (copies). */
void vcc_attr_copy_all(VccNode *dst, const VccNode *src);
/* Attribute getters: the attribute or NULL; typed getters return dflt when absent. */
const VccAttr *vcc_attr_get(const VccNode *n, const char *name);
int64_t vcc_attr_int(const VccNode *n, const char *name, int64_t dflt);
float vcc_attr_float(const VccNode *n, const char *name, float dflt);
/* Copies up to max ints into out; returns the count, or -1 if absent. */
int vcc_attr_ints(const VccNode *n, const char *name, int64_t *out, int max);
const char *vcc_attr_string(const VccNode *n, const char *name, const char *dflt);

/* ======================================================================== printer (ir/print.c) */

/* Print the graph as text (.vir form): one line per tensor declaration for inputs/initializers and one
 * line per node with dtypes and shapes; when with_plan, each tensor's live interval, category and arena
 * offset, and the arena summary. Deterministic. */
void vcc_print_graph(FILE *f, const VccGraph *g, bool with_plan);
/* "f32[2,3,8,56,56]" into buf. */
void vcc_format_type(char *buf, size_t len, const VccTensor *t);

/* ======================================================================== verifier (ir/print.c) */

/* Check structural invariants: indices in range, each tensor produced at most once, every node's inputs
 * produced earlier in node order (or inputs/initializers), shapes known. Reports through ctx.
 * Returns VCC_OK or VCC_ERR_INTERNAL. */
VccStatus vcc_verify(VccCtx *ctx, const VccGraph *g, const char *after_pass);

#endif /* VCC_IR_H */
