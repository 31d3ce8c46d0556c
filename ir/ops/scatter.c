/*
 * scatter.c — the scatter family: ScatterND and ScatterElements, writes of updates into a copy of data
 * at constant indices, and their gradients ScatterNDGrad and ScatterElementsGrad.
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/scatter.* (elem/scatter.h: where each update lands).
 * Source: ONNX Operators "ScatterND" 11, 13, 16 (reduction none, add, mul), 18 (max, min) and
 * "ScatterElements" 11, 13, 16, 18 (axis, negative from the back; reduction likewise): y = data, then
 * every update written (reduction none) or added (add) at its element. vcc takes none and add; mul,
 * max and min are refused. The indices must be constants: initializers, Constants, or values that fold
 * while compiling (torch exports x[:, :, 1:, 1:] = v as a ScatterND whose index grid is computed from
 * Shape, Range and Expand); they may be negative. A grid too large to fold (reduction none, one Range
 * per indexed dim: torch's x[:, :, 1:, 1:] = v on MViT v2's full-size scores) is read from its parts,
 * a grid that folded is read from its values, and either write at a box becomes Slices of data and
 * Concats around the updates (scatternd_canon).
 * ScatterElements' int32 indices become int64 (the kernels' type). With reduction none an element
 * named twice makes the result depend on the order of
 * the writes, which ONNX leaves undefined: refused while compiling. Under add, duplicates are summed in
 * the order of the updates on both targets (the CUDA kernel then walks the updates of one element in
 * that order on one thread: no atomics).
 * Gradients as PyTorch autograd (index_put / scatter / scatter_add): reduction none: d data = dY with the
 * written elements zeroed, d updates = dY at those elements; add: d data = dY itself, d updates likewise.
 * Both come from one backward node (outputs d data, d updates; -1 where none is needed).
 */
#include "ops.h"

#include "../../runtime/elem/scatter.h" /* VccScatter, vcc_scatter_offset */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const VccAttrSpec scatternd_attrs[] = {{"reduction", 16, VCC_OPSET_NOW, VCC_A_STRING}, {NULL, 0, 0, 0}};
static const VccAttrSpec scatter_elements_attrs[] = {
    {"axis", 11, VCC_OPSET_NOW, VCC_A_INT}, {"reduction", 16, VCC_OPSET_NOW, VCC_A_STRING}, {NULL, 0, 0, 0},
};

/* Node n (forward or backward) is ScatterND's. */
static bool is_nd(const VccNode *n) { return n->op == VCC_OP_SCATTERND || n->op == VCC_OP_SCATTERND_GRAD; }

/* The reduction of node n: 0 none, 1 add, -1 another. */
static int scatter_reduction(const VccNode *n) {
    const char *r = vcc_attr_string(n, "reduction", "none");
    return strcmp(r, "none") == 0 ? 0 : strcmp(r, "add") == 0 ? 1 : -1;
}

static void scatter_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    char why[96];
    if (g->opset < 11) vcc_op_attr_problem(ctx, n, "%s %s", "before opset 11", "ONNX defines the op from opset 11");
    if (scatter_reduction(n) < 0) {
        const char *r = vcc_attr_string(n, "reduction", "none");
        bool onnx = strcmp(r, "mul") == 0 || (g->opset >= 18 && (strcmp(r, "max") == 0 || strcmp(r, "min") == 0));
        snprintf(why, sizeof why, "%.16s: %s", r, onnx ? "vcc scatters with reduction none and add" :
                 "not an ONNX reduction in this opset");
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "reduction", why);
    }
}

/* Canonical form: int32 indices (ScatterElements) become an int64 constant; the indices stay an input, a
 * constant the program uploads into the arena. */
static VccStatus scatter_canon(VccCtx *ctx, VccGraph *g, int k) {
    const VccNode *n = &g->nodes[k];
    if (n->nin != 3 || n->in[0] < 0 || n->in[1] < 0 || n->in[2] < 0 || n->nout != 1 || n->out[0] < 0)
        return vcc_operands_missing(ctx, n);
    vcc_indices_i64(g, k, 1);
    return VCC_OK;
}

/* ------------------------------------------------------------------ ScatterND at a box of data */

/* torch writes x[..., s0:e0, s1:e1, ...] = v as a ScatterND whose index grid is the Concat along its last
 * axis of one Unsqueezed Expand per indexed dim: component d is a Range s_d, s_d + 1, ... along grid axis
 * d, constant along the others. When that grid is too large to fold while compiling (over
 * VCC_FOLD_MAX_ELEMS values: MViT v2's scores at 16x224x224 index 10^7 elements), it is read from
 * its parts (each the Unsqueeze of an Expand of a constant, or a constant when the part alone folded):
 * true with the box [s[d], e[d]) of each of the k indexed dims when indices (of node n, for data x) are
 * such a grid of consecutive, in-range positions. */
static bool scatter_box(const VccGraph *g, const VccNode *n, const VccShape *x, int64_t *s, int64_t *e, int *k) {
    const VccTensor *ix = &g->tensors[n->in[1]];
    int q = ix->shape.rank;
    if (ix->dtype != VCC_I64 || ix->producer < 0 || q < 2) return false;
    const VccNode *cat = &g->nodes[ix->producer];
    int kk = (int)ix->shape.dims[q - 1];
    if (cat->op != VCC_OP_CONCAT || cat->nin != kk || kk > x->rank || q - 1 != kk) return false;
    int64_t axis = vcc_attr_int(cat, "axis", 0);
    if (axis != -1 && axis != q - 1) return false;
    VccShape b = ix->shape;
    b.rank = q - 1;
    for (int d = 0; d < kk; d++) {
        int u = cat->in[d];
        int64_t len = x->dims[d], nb = vcc_shape_numel(&b);
        if (u >= 0 && g->tensors[u].kind == VCC_T_CONST) { /* a part small enough to have folded: the grid's
                                                              values themselves */
            const VccTensor *c = &g->tensors[u];
            if (c->dtype != VCC_I64 || !c->data || (int64_t)(c->data_bytes / 8) != nb) return false;
            int64_t step = 1, first;
            for (int a = b.rank - 1; a > d; a--) step *= b.dims[a];
            const int64_t *v = c->data;
            first = v[0] < 0 ? v[0] + len : v[0];
            if (first < 0 || first + b.dims[d] > len) return false;
            for (int64_t i = 1; i < nb; i++)
                if ((v[i] < 0 ? v[i] + len : v[i]) != first + (i / step) % b.dims[d]) return false;
            s[d] = first;
            e[d] = first + b.dims[d];
            continue;
        }
        if (u < 0 || g->tensors[u].producer < 0) return false;
        const VccNode *un = &g->nodes[g->tensors[u].producer];
        if (un->op != VCC_OP_UNSQUEEZE || un->nin < 1 || un->in[0] < 0) return false;
        const VccTensor *et = &g->tensors[un->in[0]];
        if (!vcc_same_shape(&et->shape, &b) || et->producer < 0) return false;
        const VccNode *en = &g->nodes[et->producer];
        if (en->op != VCC_OP_EXPAND || en->nin < 1 || en->in[0] < 0) return false;
        const VccTensor *c = &g->tensors[en->in[0]];
        if (c->kind != VCC_T_CONST || c->dtype != VCC_I64 || !c->data ||
            (int64_t)(c->data_bytes / 8) != vcc_shape_numel(&c->shape) || c->shape.rank > b.rank)
            return false;
        /* c, right-aligned to the grid: 1 along every axis but d, s_d, s_d + 1, ... along d */
        int off = b.rank - c->shape.rank;
        int64_t cnt = 1;
        for (int a = 0; a < c->shape.rank; a++) {
            int64_t ca = c->shape.dims[a];
            if (a + off != d && ca != 1) return false;
            if (a + off == d) {
                if (ca != 1 && ca != b.dims[d]) return false;
                cnt = ca;
            }
        }
        if (cnt != b.dims[d] && b.dims[d] != 1) return false;
        const int64_t *v = c->data;
        int64_t first = v[0] < 0 ? v[0] + len : v[0];
        if (first < 0 || first + b.dims[d] > len) return false;
        for (int64_t i = 1; i < cnt; i++)
            if ((v[i] < 0 ? v[i] + len : v[i]) != first + i) return false;
        s[d] = first;
        e[d] = first + b.dims[d];
    }
    *k = kk;
    return true;
}

/* The same box read from a grid that folded into one constant (indices of node n: int64 (b_0, ..., b_{k-1},
 * k) with entry (i_0, ..., i_{k-1}, d) = s_d + i_d, negative values counted from the end of data's dim d,
 * every position in range): true with the box [s[d], e[d]) of each of the k indexed dims. */
static bool const_box(const VccGraph *g, const VccNode *n, const VccShape *x, int64_t *s, int64_t *e, int *k) {
    const VccTensor *ix = &g->tensors[n->in[1]];
    int q = ix->shape.rank;
    if (ix->kind != VCC_T_CONST || ix->dtype != VCC_I64 || !ix->data || q < 2) return false;
    int kk = (int)ix->shape.dims[q - 1];
    if (kk < 1 || kk > x->rank || q - 1 != kk) return false;
    int64_t nb = vcc_shape_numel(&ix->shape) / kk;
    if (nb < 1 || (int64_t)(ix->data_bytes / 8) != nb * kk) return false; /* an empty grid writes nothing */
    const int64_t *v = ix->data;
    for (int d = 0; d < kk; d++) {
        int64_t len = x->dims[d], first = v[d] < 0 ? v[d] + len : v[d];
        if (first < 0 || first + ix->shape.dims[d] > len) return false;
        s[d] = first;
        e[d] = first + ix->shape.dims[d];
    }
    for (int64_t i = 0; i < nb; i++) { /* entry i's position in the grid, last grid axis fastest */
        int64_t r = i;
        for (int d = kk - 1; d >= 0; d--) {
            int64_t at = r % ix->shape.dims[d], val = v[i * kk + d];
            r /= ix->shape.dims[d];
            if ((val < 0 ? val + x->dims[d] : val) != s[d] + at) return false;
        }
    }
    *k = kk;
    return true;
}

/* A Slice of data x (data's tensor t) over [s[a], e[a]) for the axes a < d and [lo, hi) along d, as a new
 * node before node k; returns its output. */
static int box_slice(VccGraph *g, int k, int t, const int64_t *s, const int64_t *e, int d, int64_t lo, int64_t hi,
                     int piece) {
    int64_t starts[VCC_MAX_RANK], ends[VCC_MAX_RANK], axes[VCC_MAX_RANK], steps[VCC_MAX_RANK];
    VccShape sh = g->tensors[t].shape;
    for (int a = 0; a <= d; a++) {
        starts[a] = a < d ? s[a] : lo;
        ends[a] = a < d ? e[a] : hi;
        axes[a] = a;
        steps[a] = 1;
        sh.dims[a] = ends[a] - starts[a];
    }
    int out = vcc_tensor_add_unique(g, VCC_F32, &sh, VCC_T_ACT, "%s.box%d", g->nodes[k].name, piece);
    char *name = vcc_strfmt("%s.box%d", g->nodes[k].name, piece);
    int id = vcc_node_add(g, VCC_OP_SLICE, name, &t, 1, &out, 1, VCC_PHASE_FORWARD);
    free(name);
    vcc_attr_set_ints(&g->nodes[id], "starts", starts, d + 1);
    vcc_attr_set_ints(&g->nodes[id], "ends", ends, d + 1);
    vcc_attr_set_ints(&g->nodes[id], "axes", axes, d + 1);
    vcc_attr_set_ints(&g->nodes[id], "steps", steps, d + 1);
    return out;
}

/* y = data with the box [s, e) of its first k dims replaced by updates, as Slices of data and Concats
 * (exact copies, each with its gradient): innermost indexed dim first, the updates framed by data's
 * elements before and after the box along that dim (within the box along the dims before it), so after
 * dim d the piece spans all of dims d.. . Node k becomes the last Concat (or an Identity of the updates
 * when the box is all of data). */
static void lower_box(VccGraph *g, int k, const int64_t *s, const int64_t *e, int kk) {
    int x = g->nodes[k].in[0], piece = g->nodes[k].in[2], made = 0, last = -1;
    const VccShape xs = g->tensors[x].shape;
    for (int d = kk - 1; d >= 0; d--)
        if (s[d] > 0 || e[d] < xs.dims[d]) last = d;
    for (int d = kk - 1; d >= 0; d--) {
        if (s[d] == 0 && e[d] == xs.dims[d]) continue;
        int in[3], nin = 0;
        if (s[d] > 0) in[nin++] = box_slice(g, k, x, s, e, d, 0, s[d], made++);
        in[nin++] = piece;
        if (e[d] < xs.dims[d]) in[nin++] = box_slice(g, k, x, s, e, d, e[d], xs.dims[d], made++);
        if (d == last) {
            VccNode *n = &g->nodes[k];
            n->op = VCC_OP_CONCAT;
            n->in = vcc_realloc(n->in, sizeof(int) * (size_t)nin);
            memcpy(n->in, in, sizeof(int) * (size_t)nin);
            n->nin = nin;
            vcc_attr_drop(n, "reduction");
            vcc_attr_set_int(n, "axis", d);
            break;
        }
        VccShape sh = xs;
        for (int a = 0; a < d; a++) sh.dims[a] = e[a] - s[a];
        int out = vcc_tensor_add_unique(g, VCC_F32, &sh, VCC_T_ACT, "%s.box%d", g->tensors[g->nodes[k].out[0]].name,
                                        made);
        char *name = vcc_strfmt("%s.box%d", g->nodes[k].name, made++);
        int id = vcc_node_add(g, VCC_OP_CONCAT, name, in, nin, &out, 1, VCC_PHASE_FORWARD);
        free(name);
        vcc_attr_set_int(&g->nodes[id], "axis", d);
        piece = out;
    }
    if (last < 0) {
        VccNode *n = &g->nodes[k];
        n->op = VCC_OP_IDENTITY;
        n->in[0] = piece;
        n->nin = 1;
        vcc_attr_drop(n, "reduction");
        g->tensors[n->out[0]].alias_of = piece;
    }
    free(g->nodes[k].onnx_op);
    g->nodes[k].onnx_op = NULL;
}

/* Error "node 'x' (Op): indices (..) <why> data (..)"; returns VCC_ERR_SHAPE. */
static VccStatus geom_error(VccCtx *ctx, const VccNode *n, const VccShape *x, const VccShape *ix, const char *why) {
    char s1[128], s2[128];
    vcc_shape_str(s1, sizeof s1, x);
    vcc_shape_str(s2, sizeof s2, ix);
    vcc_error(ctx, "node '%s' (%s): indices %s %s data %s", n->name, vcc_node_op(n), s2, why, s1);
    return VCC_ERR_SHAPE;
}

/* The geometry of scatter node n for data of shape x and indices of shape ix (elem/scatter.h's
 * VccScatter, the index values aside) and the shape the updates must have: ScatterND indices
 * (i0, ..., k) with 1 <= k <= rank(x), updates (i0, ..., x[k:]...); ScatterElements indices and updates
 * of x's rank, no dim longer than x's but along axis. Errors name the node. */
static VccStatus scatter_geom(VccCtx *ctx, const VccNode *n, const VccShape *x, const VccShape *ix, VccScatter *d,
                              VccShape *upd) {
    int r = x->rank, q = ix->rank;
    memset(d, 0, sizeof *d);
    d->inner = d->outer = d->inner_run = d->m = 1;
    if (is_nd(n)) {
        int64_t k = q ? ix->dims[q - 1] : 0, acc;
        if (r < 1 || q < 1 || k < 1 || k > r || q - 1 + r - k > VCC_MAX_RANK)
            return geom_error(ctx, n, x, ix, "(their last dim, from 1 to the data's rank, the length of one index "
                              "tuple) do not index");
        d->nd = 1;
        d->rank = (int)k;
        for (int a = (int)k; a < r; a++) d->inner *= x->dims[a];
        acc = d->inner;
        for (int a = (int)k - 1; a >= 0; a--) d->dims[a] = x->dims[a], d->xs[a] = acc, acc *= x->dims[a];
        upd->rank = 0;
        for (int a = 0; a < q - 1; a++) upd->dims[upd->rank++] = ix->dims[a], d->m *= ix->dims[a];
        for (int a = (int)k; a < r; a++) upd->dims[upd->rank++] = x->dims[a];
        d->inner_run = d->inner;
        d->n = d->m * d->inner;
        return VCC_OK;
    }
    if (r < 1 || q != r) return geom_error(ctx, n, x, ix, "must have the rank of");
    if (!vcc_node_axis(ctx, n, vcc_attr_int(n, "axis", 0), r, &d->axis)) return VCC_ERR_SHAPE;
    for (int a = 0; a < r; a++)
        if (a != d->axis && ix->dims[a] > x->dims[a]) return geom_error(ctx, n, x, ix, "are longer off the axis than");
    d->rank = r;
    d->len = x->dims[d->axis];
    d->m = ix->dims[d->axis];
    int64_t acc = 1;
    for (int a = r - 1; a >= 0; a--) {
        d->dims[a] = ix->dims[a];
        d->xs[a] = acc;
        acc *= x->dims[a];
        if (a < d->axis) d->outer *= ix->dims[a];
        if (a > d->axis) d->inner_run *= ix->dims[a];
    }
    d->n = d->outer * d->m * d->inner_run;
    *upd = *ix;
    return VCC_OK;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The indices of scatter node n with geometry d: an int64 constant (refused otherwise, naming the node).
 * When its values are known: each within its dim, and under reduction none no element of data named
 * twice. *serial: some element gets more than one update, or the values are not known (a .vir dump). */
static const VccTensor *scatter_indices(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccScatter *d,
                                        bool *serial) {
    const VccTensor *ix = &g->tensors[n->in[1]];
    *serial = true;
    if (ix->kind != VCC_T_CONST || ix->dtype != VCC_I64) {
        vcc_error(ctx, "node '%s' (%s): indices '%s' (%s) are %s; vcc scatters at constant int64 indices%s", n->name,
                  vcc_node_op(n), ix->name, vcc_dtype_name(ix->dtype),
                  ix->kind != VCC_T_CONST ? "computed at run time" : "of another type",
                  is_nd(n) ? "" : " (or int32)");
        return NULL;
    }
    if (!ix->data) return ix;
    const int64_t *v = ix->data;
    int64_t cnt = (int64_t)(ix->data_bytes / sizeof(int64_t)), rows = d->nd ? d->m : d->n;
    if (cnt != vcc_shape_numel(&ix->shape)) {
        vcc_error(ctx, "node '%s' (%s): indices '%s' hold %lld values for their shape", n->name, vcc_node_op(n),
                  ix->name, (long long)cnt);
        return NULL;
    }
    for (int64_t i = 0; i < cnt; i++) {
        int64_t len = d->nd ? d->dims[i % d->rank] : d->len;
        if (vcc_scatter_index(v[i], len) < 0) {
            if (d->nd)
                vcc_error(ctx, "node '%s' (%s): indices '%s': index tuple %lld names %lld for data dim %lld, out of range "
                          "for its size %lld", n->name, vcc_node_op(n), ix->name, (long long)(i / d->rank),
                          (long long)v[i], (long long)(i % d->rank), (long long)len);
            else
                vcc_error(ctx, "node '%s' (%s): indices '%s': value %lld at flat position %lld is out of range for the "
                          "axis, of size %lld", n->name, vcc_node_op(n), ix->name, (long long)v[i], (long long)i,
                          (long long)len);
            return NULL;
        }
    }
    /* the element (ScatterND: the first of the row) each update or row lands on, sorted */
    int64_t *at = vcc_malloc(sizeof(int64_t) * (size_t)(rows ? rows : 1)), dup = -1;
    for (int64_t i = 0; i < rows; i++) at[i] = vcc_scatter_offset(d, v, d->nd ? i * d->inner : i);
    qsort(at, (size_t)rows, sizeof *at, cmp_i64);
    for (int64_t i = 1; i < rows && dup < 0; i++)
        if (at[i] == at[i - 1]) dup = at[i];
    free(at);
    *serial = dup >= 0;
    if (dup >= 0 && scatter_reduction(n) == 0) {
        vcc_error(ctx, "node '%s' (%s): the indices name element %lld of data (row-major) more than once; with "
                  "reduction none ONNX leaves the result to the order of the writes, so vcc refuses it", n->name,
                  vcc_node_op(n), (long long)dup);
        return NULL;
    }
    return ix;
}

/* (data, indices, updates) -> y of data's shape: the geometry, the updates' shape and the indices checked. */
static VccStatus scatter_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32), *u;
    if (!x || !(u = vcc_need_input(ctx, g, n, 2, VCC_F32))) return VCC_ERR_SHAPE;
    VccScatter d;
    VccShape us;
    bool serial;
    if (scatter_geom(ctx, n, &x->shape, &g->tensors[n->in[1]].shape, &d, &us)) return VCC_ERR_SHAPE;
    if (!vcc_same_shape(&us, &u->shape)) {
        char s1[128], s2[128];
        vcc_shape_str(s1, sizeof s1, &u->shape);
        vcc_shape_str(s2, sizeof s2, &us);
        vcc_error(ctx, "node '%s' (%s): updates %s, but data and indices need %s", n->name, vcc_node_op(n), s1, s2);
        return VCC_ERR_SHAPE;
    }
    if (!scatter_indices(ctx, g, n, &d, &serial)) return VCC_ERR_UNSUPPORTED;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

/* Scatter*(data, I, updates) -> Scatter*Grad(dY, I) -> (d data | -1 (add: dY itself), d updates | -1) */
static VccStatus scatter_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k]; /* a copy: the node array grows */
    int x = n.in[0], u = n.in[2], dy = vcc_diff_dy(d, k, 0);
    bool add = scatter_reduction(&n) == 1;
    int dx = d->req[x] && !add ? vcc_diff_new_grad(d, x) : -1, du = d->req[u] ? vcc_diff_new_grad(d, u) : -1;
    if (dx >= 0 || du >= 0) {
        int in[2] = {dy, n.in[1]}, out[2] = {dx, du};
        vcc_diff_add_node(d, is_nd(&n) ? VCC_OP_SCATTERND_GRAD : VCC_OP_SCATTER_ELEMENTS_GRAD, k, "grad", in, 2, out,
                          2);
    }
    if (dx >= 0) vcc_diff_accum(d, x, dx);
    if (d->req[x] && add) vcc_diff_accum(d, x, dy);
    if (du >= 0) vcc_diff_accum(d, u, du);
    return VCC_OK;
}

/* "{ static const VccScatter d = {...}; fn(rt, &d, <args>); }" for the node's geometry */
static void emit_call(VccEmit *e, const VccScatter *d, const char *fn, const char *args) {
    const int64_t *lists[2] = {d->dims, d->xs};
    int lens[2] = {d->rank, d->rank};
    fprintf(e->f, "    { static const VccScatter d = {%d, %d, %d, ", d->nd, d->rank, d->axis);
    vcc_emit_i64s(e, 2, lists, lens);
    fprintf(e->f, ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "}; %s(rt, &d, %s); }\n",
            d->len, d->inner, d->n, d->outer, d->m, d->inner_run, fn, args);
}

/* The geometry of node k (data: the forward's data or dY) and the arguments' indices pointer. */
static VccStatus emit_geom(VccEmit *e, int k, int data, VccScatter *d, bool *serial, char *idx, size_t len) {
    const VccNode *n = &e->g->nodes[k];
    const VccTensor *ix = &e->g->tensors[n->in[1]];
    VccShape us;
    if (scatter_geom(e->ctx, n, &e->g->tensors[data].shape, &ix->shape, d, &us) ||
        !scatter_indices(e->ctx, e->g, n, d, serial))
        return VCC_ERR_SHAPE;
    snprintf(idx, len, "(const int64_t *)(A + %" PRId64 ")", ix->offset);
    return VCC_OK;
}

/* Forward: y = data (copy_forward), then the updates written or added (scatter_forward). Gradient: d data =
 * dY (copy_forward) with the written elements zeroed (scatter_backward_data); d updates = dY at them
 * (scatter_backward_updates). */
static VccStatus scatter_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    VccScatter d;
    bool serial, fwd = n->op == VCC_OP_SCATTERND || n->op == VCC_OP_SCATTER_ELEMENTS;
    char idx[64], args[256];
    VccStatus st = emit_geom(e, k, n->in[0], &d, &serial, idx, sizeof idx);
    if (st) return st;
    if (n->out[0] >= 0)
        fprintf(e->f, "    copy_forward(rt, %" PRId64 ", %s, %s);\n", vcc_emit_numel(e, n->out[0]),
                vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    if (fwd) {
        snprintf(args, sizeof args, "%d, %d, %s, %s, %s", scatter_reduction(n) == 1, serial, idx,
                 vcc_emit_f32(e, n->in[2]), vcc_emit_f32(e, n->out[0]));
        emit_call(e, &d, "scatter_forward", args);
        return VCC_OK;
    }
    if (n->out[0] >= 0) {
        snprintf(args, sizeof args, "%s, %s", idx, vcc_emit_f32(e, n->out[0]));
        emit_call(e, &d, "scatter_backward_data", args);
    }
    if (n->out[1] >= 0) {
        snprintf(args, sizeof args, "%s, %s, %s", idx, vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[1]));
        emit_call(e, &d, "scatter_backward_updates", args);
    }
    return VCC_OK;
}

/* ScatterND's canonical form (VCC_OPF_LOWER: during shapes, when its inputs are known): constant indices
 * as scatter_canon; reduction none at a box of data, whether its grid folded into a constant (const_box)
 * or is computed (scatter_box): Slices and Concats (lower_box), which need no index table in the arena
 * (a folded grid holds k int64 values per element written). Anything else stays for scatter_shape,
 * which names what it lacks. */
static VccStatus scatternd_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccStatus st = scatter_canon(ctx, g, k);
    if (st) return st;
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = &g->tensors[n->in[0]];
    int64_t s[VCC_MAX_RANK], e[VCC_MAX_RANK];
    int kk;
    bool folded = g->tensors[n->in[1]].kind == VCC_T_CONST;
    if (scatter_reduction(n) != 0 || x->dtype != VCC_F32 || g->tensors[n->in[2]].dtype != VCC_F32 ||
        !(folded ? const_box(g, n, &x->shape, s, e, &kk) : scatter_box(g, n, &x->shape, s, e, &kk)))
        return VCC_OK;
    VccShape us = x->shape;
    for (int d = 0; d < kk; d++) us.dims[d] = e[d] - s[d];
    if (!vcc_same_shape(&us, &g->tensors[n->in[2]].shape)) return VCC_OK; /* scatter_shape names it */
    lower_box(g, k, s, e, kk);
    return VCC_OK;
}

const VccOpDef vcc_def_SCATTERND = {VCC_OPF_LOWER, 0, scatternd_attrs, scatter_check_attrs, scatternd_canon,
                                    scatter_shape, scatter_grad, scatter_emit};
const VccOpDef vcc_def_SCATTER_ELEMENTS = {0, 0, scatter_elements_attrs, scatter_check_attrs, scatter_canon,
                                           scatter_shape, scatter_grad, scatter_emit};

/* (dY, indices) -> (d data of dY's shape | -1, d updates of the updates' shape | -1), with the forward's
 * attributes */
static VccStatus scatter_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *dy = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!dy || n->nin != 2 || n->in[1] < 0 || n->nout != 2) return vcc_operands_missing(ctx, n);
    VccScatter d;
    VccShape us;
    bool serial;
    if (scatter_geom(ctx, n, &dy->shape, &g->tensors[n->in[1]].shape, &d, &us)) return VCC_ERR_SHAPE;
    if (!scatter_indices(ctx, g, n, &d, &serial)) return VCC_ERR_UNSUPPORTED;
    if (n->out[0] >= 0 && scatter_reduction(n) != 0) return vcc_shape_mismatch(ctx, n); /* add: d data is dY */
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &dy->shape) &&
                   vcc_put_output(ctx, g, n, check, n->out[1], VCC_F32, &us)
               ? VCC_OK
               : VCC_ERR_SHAPE;
}

const VccOpDef vcc_def_SCATTERND_GRAD = {0, 0, NULL, NULL, NULL, scatter_grad_shape, NULL, scatter_emit};
const VccOpDef vcc_def_SCATTER_ELEMENTS_GRAD = {0, 0, NULL, NULL, NULL, scatter_grad_shape, NULL, scatter_emit};
