/*
 * frontend.h — vcc's readers: ONNX models in, the forward IR out.
 *
 * Letter legend used in shape comments: N batch, C channels, K output channels / classes,
 * T time (frames), H height, W width.
 */
#ifndef VCC_FRONTEND_H
#define VCC_FRONTEND_H

#include "ir.h"

/* ======================================================================== ONNX loader (frontend/onnx.c) */

/*
 * Read the ONNX model at path (a serialized onnx.ModelProto) and build its forward graph.
 *
 * On success returns VCC_OK and stores a new graph in *out (free it with vcc_graph_free). On failure
 * returns the error's status, stores NULL in *out and has written one line per problem through
 * vcc_error (each prefixed with ctx->file; when ctx->file is NULL the loader uses path for the
 * duration of the call). Untrusted input never crashes the loader or makes it read out of bounds.
 *
 * What the graph holds (the conventions later passes rely on):
 *
 *   g->opset      the version of the "" / "ai.onnx" entry of opset_import (required).
 *   g->meta_*     the model's metadata_props, key and value strings as in the file.
 *
 *   Initializers  one tensor each, data copied into t->data in host byte order (t->data_bytes =
 *                 numel * element size), shape from dims. FLOAT -> VCC_F32, kind VCC_T_PARAM;
 *                 INT64 -> VCC_I64, INT32 -> VCC_I32, BOOL -> VCC_BOOL, DOUBLE -> VCC_F64, kind
 *                 VCC_T_CONST (values for shape arithmetic, indices and masks, folded at compile time
 *                 by passes/shape where they can be). Any other element type is VCC_ERR_UNSUPPORTED. A later pass reclassifies BN running
 *                 statistics as VCC_T_BUFFER. Data comes from raw_data (little-endian), from the typed
 *                 field (float_data, int64_data, int32_data, double_data) or from an external file (below). t->data is
 *                 non-NULL even for a tensor with zero elements (then data_bytes is 0).
 *
 *   External data data_location = EXTERNAL with keys "location" (required), "offset", "length".
 *                 location is resolved against the folder holding the model file; absolute paths,
 *                 any ".." component and paths whose realpath leaves that folder (symlinks) are
 *                 refused. length, when given, and the bytes available from offset must cover exactly
 *                 numel * element size.
 *
 *   Constant      nodes of op type Constant produce no node: their output becomes a VCC_T_CONST
 *                 tensor with data, from the attribute value (a tensor, opset 1+), value_float (F32
 *                 scalar), value_floats (F32 1-D), value_int (I64 scalar) or value_ints (I64 1-D), the
 *                 last four from opset 12. sparse_value and value_string(s), and an attribute the
 *                 model's opset does not have, are problems for the one report (VCC_PROB_ATTR, group
 *                 "Constant attribute 'a'", with the reason).
 *   ConstantOfShape  its value attribute (a one-element tensor) becomes a second input, a CONST
 *                 tensor "<node>.value" (vcc's attributes hold no tensors).
 *
 *   Inputs        graph inputs that are not initializers become VCC_T_INPUT tensors (float and int64
 *                 inputs alike) listed in g->inputs; an input that is also an initializer (older
 *                 exporters list both) is the initializer's tensor and is not in g->inputs. Shapes
 *                 come from the input's TypeProto; a dim with a dim_param, or with no value, must be
 *                 bound through ctx->shapes (by the input's name with its full shape, or by the
 *                 dim_param's name with one value), else VCC_ERR_SHAPE. t->dim_param[i] keeps the
 *                 symbolic name of dim i (NULL for fixed dims) after binding. A binding that matches no
 *                 input and no dim_param is VCC_ERR_INVALID.
 *
 *   Nodes         one IR node per ONNX node, op from vcc_op_from_onnx, n->onnx_op = op_type,
 *                 n->name = the ONNX name or "<op_type>_<index>" when it has none, phase FORWARD, in
 *                 file order. Empty input/output names (absent optionals) are -1. Attributes of type
 *                 INT, FLOAT, INTS, FLOATS and STRING are copied (names and values as in the file; no
 *                 opset-dependent decoding happens here); any other attribute type is
 *                 VCC_ERR_UNSUPPORTED naming node, op and attribute. Nodes whose op is not in the op
 *                 table, or whose domain is not "" / "ai.onnx", are all collected and reported in ONE
 *                 line ("model.onnx: 2 unsupported nodes: '/maxpool/MaxPool' (MaxPool), ...") with
 *                 VCC_ERR_UNSUPPORTED.
 *
 *   Node outputs  VCC_T_ACT tensors whose type is not known yet. Convention for "not inferred yet":
 *                 dtype == VCC_DT_UNDEF, shape.rank == 0 and every dims[i] == -1. passes/shape sets
 *                 dtype and shape; a tensor whose dtype is VCC_DT_UNDEF must never be read as a
 *                 scalar. (value_info entries of the model are not used.)
 *
 *   Outputs       g->outputs lists the graph outputs, in file order.
 *
 * Errors: VCC_ERR_IO (file missing or unreadable, external data unreadable), VCC_ERR_PARSE (not a
 * protobuf, no graph, malformed tensors, bad dims, duplicate or undefined names, external data
 * outside the model's folder or of the wrong size), VCC_ERR_UNSUPPORTED (ops, domains, element
 * types, attribute types, sparse initializers), VCC_ERR_SHAPE (unbound symbolic dims or a binding
 * that contradicts a fixed dim), VCC_ERR_INVALID (a binding that matches nothing or is not positive).
 * Loading runs in stages (header; definitions: initializers, inputs, Constants, node outputs; nodes;
 * outputs); every problem of a stage is reported, a stage with problems ends the load, and the status
 * of the first problem reported is returned.
 */
VccStatus vcc_onnx_load(VccCtx *ctx, const char *path, VccGraph **out);

/* The ONNX name of a TensorProto.DataType value ("FLOAT", "INT64", ...), "UNKNOWN" if out of range. */
const char *vcc_onnx_dtype_name(int onnx_data_type);

/* ======================================================================== .vir reader (frontend/vir.y) */

/*
 * Read the textual IR that vcc_print_graph writes (the format is described at the top of ir/print.c;
 * the grammar is in frontend/vir.y) and build the graph it describes. print(parse(x)) == x byte for
 * byte for every dump vcc writes (`vcc MODEL --dump-ir=PASS`, after any pass).
 *
 * vcc_vir_load reads the file at path. On success it returns VCC_OK and stores a new graph in *out
 * (free it with vcc_graph_free); on failure it returns the first problem's status, stores NULL in *out
 * and has reported each problem through vcc_error as "path:LINE:COL: error: message" (the location of
 * the offending token; ctx->file is replaced by that location for the message and restored). Bad input
 * never crashes the reader. Statuses: VCC_ERR_IO (unreadable file), VCC_ERR_PARSE (syntax, undefined
 * or duplicate names, bad numbers, inconsistent plan lines), VCC_ERR_UNSUPPORTED (an op name not in
 * ir/ops.def, a dtype vcc does not have), VCC_ERR_SHAPE (type mismatches: a plan's bytes= that
 * disagrees with the tensor's type, a view larger than the tensor whose bytes it uses).
 *
 * What the text carries, and so what the graph holds:
 *   - opset, every tensor's name, dtype and shape (node outputs get theirs from the node line; "?[]"
 *     is the frontend's "not inferred yet": VCC_DT_UNDEF, rank 0, every dim -1), declared tensors'
 *     kinds, nodes (op from ops.def, forward/backward/update ops alike, phase, inputs with -1 for `_`,
 *     outputs, attributes with their types: an integer literal is VCC_A_INT, a literal with '.',
 *     an exponent, inf or nan is VCC_A_FLOAT; an empty list `[]` is read as VCC_A_INTS), the outputs.
 *   - with a plan (dumps after liveness): the tensor order (plan lines list every tensor in index
 *     order; without a plan, declared tensors come first, then node outputs in node order), live
 *     intervals (start/end, -1 for `live=persistent`), saved (category saved_activation), offsets
 *     (each tensor gets the printed offset, its root's), alias_of (view_of=) and inplace_of
 *     (inplace_of=), and the arena line's five sizes.
 *   - NO weights: declared tensors (inputs, params, buffers, consts, ...) have data == NULL and
 *     data_bytes == 0. A .vir file describes a graph, not a model's values. The one exception is the
 *     seed of the loss gradient (the constant third input of SoftmaxCrossEntropyLossGrad), which is 1 by
 *     definition and gets that value.
 *   - Not in the text, so not in the graph: dim_param names, views before the plan exists (alias_of
 *     is only known from view_of=). Reconstructed from the text's structure: the kinds of node
 *     outputs (the plan's category when there is one; else workspace for a conv-family node's extra
 *     last output, loss for SoftmaxCrossEntropyLoss's first output, gradient for "<param>.grad"
 *     produced by a backward node, grad_temp for other backward outputs, act otherwise), g->inputs
 *     (declared input and label tensors, in order), g->label, g->loss, g->data_input (the single f32
 *     input, once a loss exists), onnx_op for forward ONNX ops, and grad/param_of links (a
 *     SGDMomentum or AdamW node's (param, grad, state...) inputs, or the "<param>.grad" name).
 */
VccStatus vcc_vir_load(VccCtx *ctx, const char *path, VccGraph **out);

/* As vcc_vir_load; also stores in *has_plan (when not NULL) whether the file has plan lines and the
 * arena line, i.e. whether vcc_print_graph(f, g, true) reproduces it. */
VccStatus vcc_vir_read(VccCtx *ctx, const char *path, VccGraph **out, bool *has_plan);

/* Parse len bytes of .vir text held in memory; name is the file name used in error locations. */
VccStatus vcc_vir_parse(VccCtx *ctx, const char *name, const char *text, size_t len, VccGraph **out,
                        bool *has_plan);

#endif /* VCC_FRONTEND_H */
