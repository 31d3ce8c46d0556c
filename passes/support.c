/*
 * support.c — what vcc can compile, checked before anything is changed, and reported all at once.
 *
 * Requires: the forward graph from a frontend (frontend/onnx.c keeps nodes of unsupported ops as
 *   VCC_OP_UNSUPPORTED and leaves element-type problems in ctx->problems).
 * Produces: nothing in the graph; one report (vcc_report_problems) of every problem found:
 *   - unsupported ops, grouped by op type (except nodes that fold while compiling: ir/ops/fold.c
 *     evaluates them by op name);
 *   - attributes a node's op does not have in the model's opset, of the wrong type, or with a value vcc
 *     does not support (each with the reason);
 *   - when compiling a trainer, the signs of an inference-form export (eval mode, constant folding):
 *     BatchNormalization folded into convolutions, parameters with exporter-generated names,
 *     BatchNormalization or Dropout in inference mode. ctx->allow_inference_export accepts the graph as
 *     it is (a BatchNormalization in inference mode then trains with its statistics frozen).
 *
 * The attributes of each op by opset, and the values vcc supports, are its family's (VccOpDef.attrs and
 * .check_attrs in ir/ops/<family>.c), after ONNX Operators' change log (https://onnx.ai/onnx/operators/).
 * Dropout's mode (1/6 is_test, 7-11 none, 12+ training_mode input): vcc_dropout_mode, ir/ops/dropout.c.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

static const char *attr_type_name(VccAttrType t) {
    static const char *names[] = {"INT", "FLOAT", "INTS", "FLOATS", "STRING"};
    return names[t];
}

/* The node's name, shortened for a report line, quoted. buf holds at least 64 bytes. */
static const char *label(const VccNode *n, char *buf) {
    char tmp[48];
    snprintf(buf, 64, "'%s'", vcc_short_name(n->name, tmp, sizeof tmp));
    return buf;
}

/* Every attribute of n is one its op has in opset, with the ONNX type. */
static void check_attr_names(VccCtx *ctx, const VccNode *n, int64_t opset) {
    for (int a = 0; a < n->nattrs; a++) {
        const VccAttr *at = &n->attrs[a];
        const VccAttrSpec *spec = NULL, *other = NULL;
        for (const VccAttrSpec *s = vcc_op_def(n->op)->attrs; s && s->name; s++) {
            if (strcmp(s->name, at->name) != 0) continue;
            if (opset >= s->since && opset <= s->until) spec = s;
            else other = s;
        }
        char why[96];
        if (!spec && other) {
            if (other->until == VCC_OPSET_NOW)
                snprintf(why, sizeof why, "exists from opset %d; the model imports opset %lld", other->since,
                         (long long)opset);
            else
                snprintf(why, sizeof why, "exists in opsets %d-%d; the model imports opset %lld", other->since,
                         other->until, (long long)opset);
            vcc_op_attr_problem(ctx, n, "%s attribute '%s'", at->name, why);
        } else if (!spec) {
            vcc_op_attr_problem(ctx, n, "%s attribute '%s'", at->name, "not an attribute vcc knows for this op");
        } else if (spec->type != at->type) {
            snprintf(why, sizeof why, "has type %s, ONNX defines %s", attr_type_name(at->type),
                     attr_type_name(spec->type));
            vcc_op_attr_problem(ctx, n, "%s attribute '%s'", at->name, why);
        }
    }
}

/* ------------------------------------------------------------------ inference-form exports */

/* The initializer a value is, through Identity nodes (exporters deduplicate initializers with them). */
static int initializer_of(const VccGraph *g, int t) {
    for (int guard = 0; t >= 0 && guard < g->nnodes + 1; guard++) {
        const VccTensor *x = &g->tensors[t];
        if (x->producer < 0) return x->data ? t : -1;
        const VccNode *p = &g->nodes[x->producer];
        if (p->op != VCC_OP_IDENTITY || p->nin < 1) return -1;
        t = p->in[0];
    }
    return -1;
}

/* A name PyTorch's exporter made up for a value it computed ("onnx::Conv_192"): a parameter of the
 * model keeps its module path ("layer1.0.conv1.0.weight"). */
static bool exporter_name(const char *s) { return strncmp(s, "onnx::", 6) == 0; }

/* The signs that the file is an inference-form export (model.eval() and constant folding): BN folded
 * into Conv weights, parameters the exporter named, BN or Dropout in inference mode. */
static void check_training_form(VccCtx *ctx, const VccGraph *g) {
    bool *seen = vcc_calloc((size_t)(g->ntensors ? g->ntensors : 1), sizeof(bool));
    char b[64], tb[48];
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        if (n->op == VCC_OP_CONV && n->nin > 1) {
            int w = initializer_of(g, n->in[1]);
            if (w >= 0 && exporter_name(g->tensors[w].name)) {
                vcc_unsupported(ctx, VCC_PROB_TRAINING_FORM,
                                "Conv with BatchNormalization folded in (exporter-named weights)", "%s (weight '%s')",
                                label(n, b), vcc_short_name(g->tensors[w].name, tb, sizeof tb));
                for (int i = 1; i < n->nin; i++) {
                    int p = initializer_of(g, n->in[i]);
                    if (p >= 0) seen[p] = true;
                }
            }
        } else if (n->op == VCC_OP_BATCHNORM) {
            const char *what, *why;
            if (vcc_batchnorm_form(g, n, &what, &why) == 0)
                vcc_unsupported(ctx, VCC_PROB_TRAINING_FORM, "BatchNormalization in inference mode", "%s%s",
                                label(n, b), g->opset >= 14 ? " (training_mode=0)" : " (one output)");
        } else if (n->op == VCC_OP_DROPOUT && vcc_dropout_mode(g, n) == 0) {
            vcc_unsupported(ctx, VCC_PROB_TRAINING_FORM, "Dropout in inference mode", "%s", label(n, b));
        }
    }
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (x->kind != VCC_T_PARAM || seen[t] || !exporter_name(x->name)) continue;
        vcc_unsupported(ctx, VCC_PROB_TRAINING_FORM, "parameters with exporter-generated names (folded constants)",
                        "'%s'", vcc_short_name(x->name, tb, sizeof tb));
    }
    free(seen);
}

/* The newest versions of the ONNX specification whose operator semantics vcc follows (those of the ONNX
 * backend test data the conformance test runs: IR 13, ai.onnx opset 25); a newer model may use changed
 * semantics vcc would not know of. */
#define VCC_MAX_OPSET 25
#define VCC_MAX_IR_VERSION 13

/* A valid UTF-8 string. */
static bool valid_utf8(const char *s) {
    for (int n; *s; s += n)
        if (!(n = vcc_utf8_len(s))) return false;
    return true;
}

/* Names of the tensors the weights and checkpoint files hold (parameters and buffers) must be keys a
 * safetensors header can carry: valid UTF-8 (JSON), and not its reserved "__metadata__". */
static void check_state_names(VccCtx *ctx, const VccGraph *g) {
    char b[48];
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (x->kind != VCC_T_PARAM && x->kind != VCC_T_BUFFER) continue;
        if (!valid_utf8(x->name))
            vcc_unsupported(ctx, VCC_PROB_ATTR, "initializer names that are not valid UTF-8 (safetensors keys)",
                            "'%s'", vcc_short_name(x->name, b, sizeof b));
        else if (strcmp(x->name, "__metadata__") == 0)
            vcc_unsupported(ctx, VCC_PROB_ATTR, "initializer names reserved by safetensors", "'%s'", x->name);
    }
}

VccStatus vcc_check_supported(VccCtx *ctx, VccGraph *g) {
    char b[64];
    if (g->opset > VCC_MAX_OPSET)
        vcc_unsupported(ctx, VCC_PROB_VERSION, "ai.onnx opset", "%lld (vcc follows the operator sets up to %d)",
                        (long long)g->opset, VCC_MAX_OPSET);
    if (g->ir_version > VCC_MAX_IR_VERSION)
        vcc_unsupported(ctx, VCC_PROB_VERSION, "IR version", "%lld (vcc reads IR versions up to %d)",
                        (long long)g->ir_version, VCC_MAX_IR_VERSION);
    check_state_names(ctx, g);
    bool *folds = vcc_fold_plan(g); /* nodes evaluated while compiling need no run-time op */
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        if (n->op == VCC_OP_UNSUPPORTED && (folds[k] || vcc_ctrl_op(n))) continue; /* ctrl: passes/ctrlflow.c */
        if (n->op == VCC_OP_UNSUPPORTED) {
            const char *op = n->onnx_op ? n->onnx_op : "?";
            if (n->domain) {
                char *group = vcc_strfmt("%s (domain '%s')", op, n->domain);
                vcc_unsupported(ctx, VCC_PROB_OP, group, "%s", label(n, b));
                free(group);
            } else {
                vcc_unsupported(ctx, VCC_PROB_OP, op, "%s", label(n, b));
            }
            continue;
        }
        check_attr_names(ctx, n, g->opset);
        if (vcc_op_def(n->op)->check_attrs) vcc_op_def(n->op)->check_attrs(ctx, g, n);
    }
    free(folds);
    bool trainer = !ctx->forward_only && !ctx->eval;
    bool bn = false;
    for (int k = 0; k < g->nnodes && !bn; k++) bn = g->nodes[k].op == VCC_OP_BATCHNORM;
    if (trainer && bn && g->producer && !strcmp(g->producer, "pytorch") && !vcc_graph_meta(g, "vcc.export")) {
        /* not an error: the graph is right, its starting statistics are one traced step off */
        if (ctx->file) {
            vcc_fputs_escaped(ctx->diag, ctx->file);
            fputs(": ", ctx->diag);
        }
        fputs("note: exported without python/vcc_torch.py's export_for_training: the running statistics of its "
              "BatchNormalization layers are the values after the export's traced forward (one momentum step "
              "toward the example batch), and num_batches_tracked starts at 0\n", ctx->diag);
    }
    if (trainer && !ctx->allow_inference_export) check_training_form(ctx, g);
    return vcc_report_problems(ctx);
}
