"""ONNX backend conformance: vcc against the ONNX project's own node test data.

    run_node_tests.py --vcc BUILD/vcc --data DIR --work DIR [--only SUBSTRING]

DIR is ../shared/onnx-node-tests (model.onnx + test_data_set_*/{input,output}_*.pb per test, from
onnx/backend/test/data). For every test model (top level, pytorch-converted/, pytorch-operator/,
simple/, and light/'s whole networks):

  - vcc --forward-only either compiles it or refuses it. A refusal must be clean: exit status 1, every
    line on stderr naming the model file (or indented under one: the lines of a report of unsupported
    constructs), no output left behind, never a crash.
  - What vcc compiles is built with the command vcc printed and run on every test_data_set; each output
    must match the expected one: |got - want| <= 1e-5 + 1e-4 * |want|, NaN where it is NaN (shapes and
    dtypes exact).
  - The tests in SUPPORTED must compile: the ONNX forms of the ops vcc trains, and the other forms it computes.

Harness adaptations, each stated here: vcc needs static shapes, so a Reshape shape that a test feeds as
a graph input is baked into the model as an initializer (its value is the test's input); so are the
inputs vcc reads at compile time: Clip's min and max, Dropout's ratio and training_mode, a reduction's
axes (ReduceSum/Mean/Max/Min input 1), a Pad's pads, constant_value and axes, Slice's
starts/ends/axes/steps, Split's split, Squeeze's and Unsqueeze's axes, Expand's shape, Tile's repeats,
Resize's roi/scales/sizes (all in CONST_INPUTS). A test whose expected
outputs are written with fewer digits than the comparison needs has its own tolerance in LOOSE, with the
reason. A model made only of ops that vcc evaluates while compiling (FOLDED_OPS: shape arithmetic,
index lists; comparisons, logic ops and Where run on the test's inputs) gets every graph input that a node reads for its values baked in as a
Constant node holding the test's values (Constants are compile-time values; float initializers would be
trained parameters), so that vcc folds the whole graph and the program only writes the constant outputs;
inputs that only Shape or Size read stay inputs (their shape is what those ops take). A NaN output matches a NaN expected there (Pow of a negative base
to a fractional exponent). A Dropout in
training mode with a ratio above 0 draws its masks from vcc's own generator (Philox, not numpy's), so its
outputs are checked by what they must be: every y is 0 or x / (1 - ratio) (to float rounding), the mask
output (when there is one) is bool and says which, and about ratio of the elements are dropped (within
five standard deviations). Every other output is compared with the expected one as it is: forward-only
programs follow the ONNX spec (for example, BatchNormalization's training mode updates running_var with
the biased batch variance there, while
vcc's trainers follow PyTorch's unbiased one).
Exits 77 (skipped) when DIR does not exist, except under CI=true, where that is a failure.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

# ONNX node tests of the forms vcc supports; each must compile, run and match.
SUPPORTED = [
    "test_basic_conv_with_padding", "test_basic_conv_without_padding", "test_conv_with_autopad_same",
    "test_conv_with_strides_and_asymmetric_padding", "test_conv_with_strides_no_padding",
    "test_conv_with_strides_padding",
    "test_Conv1d", "test_Conv1d_dilated", "test_Conv1d_groups", "test_Conv1d_pad1", "test_Conv1d_pad1size1",
    "test_Conv1d_pad2", "test_Conv1d_pad2size1", "test_Conv1d_stride", "test_Conv2d", "test_Conv2d_depthwise",
    "test_Conv2d_depthwise_padded", "test_Conv2d_depthwise_strided", "test_Conv2d_depthwise_with_multiplier",
    "test_Conv2d_dilated", "test_Conv2d_groups", "test_Conv2d_groups_thnn", "test_Conv2d_no_bias",
    "test_Conv2d_padding", "test_Conv2d_strided", "test_Conv3d", "test_Conv3d_dilated",
    "test_Conv3d_dilated_strided", "test_Conv3d_groups", "test_Conv3d_no_bias", "test_Conv3d_stride",
    "test_Conv3d_stride_padding",
    "test_convtranspose", "test_convtranspose_1d", "test_convtranspose_3d", "test_convtranspose_autopad_same",
    "test_convtranspose_dilations", "test_convtranspose_group_2", "test_convtranspose_group_2_image_3",
    "test_convtranspose_kernel_shape", "test_convtranspose_output_shape", "test_convtranspose_pad",
    "test_convtranspose_pads", "test_ConvTranspose2d", "test_ConvTranspose2d_no_bias",
    "test_operator_convtranspose",
    "test_batchnorm_epsilon_training_mode", "test_batchnorm_example_training_mode",
    "test_batchnorm_epsilon", "test_batchnorm_example", "test_BatchNorm1d_3d_input_eval", "test_BatchNorm2d_eval",
    "test_BatchNorm2d_momentum_eval", "test_BatchNorm3d_eval", "test_BatchNorm3d_momentum_eval",
    "test_relu",
    "test_add", "test_add_bcast", "test_sub", "test_sub_bcast", "test_sub_example", "test_mul", "test_mul_bcast",
    "test_mul_example", "test_div", "test_div_bcast", "test_div_example", "test_pow", "test_pow_bcast_array",
    "test_pow_bcast_scalar", "test_pow_example", "test_operator_pow",
    "test_reduce_mean_default_axes_keepdims_example", "test_reduce_mean_default_axes_keepdims_random",
    "test_reduce_mean_do_not_keepdims_example", "test_reduce_mean_do_not_keepdims_random",
    "test_reduce_mean_keepdims_example", "test_reduce_mean_keepdims_random",
    "test_reduce_mean_negative_axes_keepdims_example", "test_reduce_mean_negative_axes_keepdims_random",
    "test_reduce_sum_default_axes_keepdims_example", "test_reduce_sum_default_axes_keepdims_random",
    "test_reduce_sum_do_not_keepdims_example", "test_reduce_sum_do_not_keepdims_random",
    "test_reduce_sum_empty_axes_input_noop", "test_reduce_sum_empty_axes_input_noop_example",
    "test_reduce_sum_keepdims_example", "test_reduce_sum_keepdims_random",
    "test_reduce_sum_negative_axes_keepdims_example", "test_reduce_sum_negative_axes_keepdims_random",
    "test_operator_reduced_mean", "test_operator_reduced_mean_keepdim",
    "test_instancenorm_epsilon", "test_instancenorm_example",
    "test_group_normalization_epsilon", "test_group_normalization_example",
    "test_layer_normalization_2d_axis0", "test_layer_normalization_2d_axis1",
    "test_layer_normalization_2d_axis_negative_1", "test_layer_normalization_2d_axis_negative_2",
    "test_layer_normalization_3d_axis0_epsilon", "test_layer_normalization_3d_axis1_epsilon",
    "test_layer_normalization_3d_axis2_epsilon", "test_layer_normalization_3d_axis_negative_1_epsilon",
    "test_layer_normalization_3d_axis_negative_2_epsilon", "test_layer_normalization_3d_axis_negative_3_epsilon",
    "test_layer_normalization_4d_axis0", "test_layer_normalization_4d_axis1", "test_layer_normalization_4d_axis2",
    "test_layer_normalization_4d_axis3", "test_layer_normalization_4d_axis_negative_1",
    "test_layer_normalization_4d_axis_negative_2", "test_layer_normalization_4d_axis_negative_3",
    "test_layer_normalization_4d_axis_negative_4", "test_layer_normalization_default_axis",
    "test_globalaveragepool", "test_globalaveragepool_precomputed",
    "test_globalmaxpool", "test_globalmaxpool_precomputed",
    "test_maxpool_1d_default", "test_maxpool_2d_ceil", "test_maxpool_2d_ceil_output_size_reduce_by_one",
    "test_maxpool_2d_default", "test_maxpool_2d_dilations", "test_maxpool_2d_pads", "test_maxpool_2d_precomputed_pads",
    "test_maxpool_2d_precomputed_same_upper", "test_maxpool_2d_precomputed_strides", "test_maxpool_2d_same_lower",
    "test_maxpool_2d_same_upper", "test_maxpool_2d_strides", "test_maxpool_3d_default", "test_maxpool_3d_dilations",
    "test_maxpool_3d_dilations_use_ref_impl", "test_maxpool_3d_dilations_use_ref_impl_large",
    "test_maxpool_with_argmax_2d_precomputed_pads", "test_maxpool_with_argmax_2d_precomputed_strides",
    "test_MaxPool1d", "test_MaxPool1d_stride", "test_MaxPool1d_stride_padding_dilation", "test_MaxPool2d",
    "test_MaxPool3d", "test_MaxPool3d_stride", "test_MaxPool3d_stride_padding", "test_operator_maxpool",
    "test_averagepool_1d_default", "test_averagepool_2d_ceil", "test_averagepool_2d_ceil_last_window_starts_on_pad",
    "test_averagepool_2d_default", "test_averagepool_2d_dilations", "test_averagepool_2d_pads",
    "test_averagepool_2d_pads_count_include_pad", "test_averagepool_2d_precomputed_pads",
    "test_averagepool_2d_precomputed_pads_count_include_pad", "test_averagepool_2d_precomputed_same_upper",
    "test_averagepool_2d_precomputed_strides", "test_averagepool_2d_same_lower", "test_averagepool_2d_same_upper",
    "test_averagepool_2d_strides", "test_averagepool_3d_default",
    "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_False",
    "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_True",
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_False",
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True",
    "test_averagepool_3d_dilations_small",
    "test_AvgPool2d", "test_AvgPool2d_stride", "test_AvgPool3d", "test_AvgPool3d_stride",
    "test_AvgPool3d_stride1_pad0_gpu_input",
    "test_constant_pad", "test_constant_pad_axes", "test_constant_pad_negative_axes", "test_ConstantPad2d",
    "test_ReflectionPad2d", "test_ReplicationPad2d", "test_ZeroPad2d", "test_operator_pad",
    "test_flatten_axis0", "test_flatten_axis1", "test_flatten_axis2", "test_flatten_axis3",
    "test_flatten_default_axis", "test_flatten_negative_axis1", "test_flatten_negative_axis2",
    "test_flatten_negative_axis3", "test_flatten_negative_axis4",
    "test_gemm_all_attributes", "test_gemm_alpha", "test_gemm_beta", "test_gemm_default_matrix_bias",
    "test_gemm_default_no_bias", "test_gemm_default_scalar_bias", "test_gemm_default_single_elem_vector_bias",
    "test_gemm_default_vector_bias", "test_gemm_default_zero_bias", "test_gemm_transposeA", "test_gemm_transposeB",
    "test_identity",
    "test_reshape_extended_dims", "test_reshape_negative_dim", "test_reshape_negative_extended_dims",
    "test_reshape_one_dim", "test_reshape_reduced_dims", "test_reshape_reordered_all_dims",
    "test_reshape_reordered_last_dims", "test_reshape_zero_and_negative_dim", "test_reshape_zero_dim",
    # const: evaluated while compiling (inputs baked as Constants where FOLDED_OPS says)
    "test_constant", "test_constantofshape_float_ones", "test_constantofshape_int_shape_zero",
    "test_constantofshape_int_zeros",
    "test_shape", "test_shape_clip_end", "test_shape_clip_start", "test_shape_end_1", "test_shape_end_negative_1",
    "test_shape_example", "test_shape_start_1", "test_shape_start_1_end_2", "test_shape_start_1_end_negative_1",
    "test_shape_start_negative_1", "test_size", "test_size_example",
    "test_range_float_type_positive_delta", "test_range_int32_type_negative_delta",
    "test_gather_0", "test_gather_1", "test_gather_2d_indices", "test_gather_negative_indices",
    "test_where_example", "test_where_long_example", "test_equal", "test_equal_bcast",
    # layout: Concat, Split, Slice, Transpose, Squeeze, Unsqueeze, Expand, Resize (nearest, linear, cubic,
    # antialias, tf_crop_and_resize). Not here: test_split_zero_size_splits_* (an input of 0 elements), and
    # test_resize_downsample_scales_linear_align_corners and test_resize_downsample_scales_cubic_align_corners
    # (a scale that gives no whole length with align_corners: refused as ambiguous, see ir/ops/layout.c)
    "test_concat_1d_axis_0", "test_concat_1d_axis_negative_1", "test_concat_2d_axis_0", "test_concat_2d_axis_1",
    "test_concat_2d_axis_negative_1", "test_concat_2d_axis_negative_2", "test_concat_3d_axis_0",
    "test_concat_3d_axis_1", "test_concat_3d_axis_2", "test_concat_3d_axis_negative_1",
    "test_concat_3d_axis_negative_2", "test_concat_3d_axis_negative_3", "test_operator_concat2",
    "test_split_1d_uneven_split_opset18", "test_split_2d_uneven_split_opset18", "test_split_equal_parts_1d_opset13",
    "test_split_equal_parts_1d_opset18", "test_split_equal_parts_2d", "test_split_equal_parts_2d_opset13",
    "test_split_equal_parts_default_axis_opset13", "test_split_equal_parts_default_axis_opset18",
    "test_split_variable_parts_1d_opset13", "test_split_variable_parts_1d_opset18",
    "test_split_variable_parts_2d_opset13", "test_split_variable_parts_2d_opset18",
    "test_split_variable_parts_default_axis_opset13", "test_split_variable_parts_default_axis_opset18",
    "test_operator_chunk",
    "test_slice", "test_slice_default_axes", "test_slice_default_steps", "test_slice_end_out_of_bounds",
    "test_slice_neg", "test_slice_neg_steps", "test_slice_negative_axes", "test_slice_start_out_of_bounds",
    "test_transpose_all_permutations_0", "test_transpose_all_permutations_1", "test_transpose_all_permutations_2",
    "test_transpose_all_permutations_3", "test_transpose_all_permutations_4", "test_transpose_all_permutations_5",
    "test_transpose_default", "test_operator_permute2",
    "test_squeeze", "test_squeeze_negative_axes", "test_unsqueeze_axis_0", "test_unsqueeze_axis_1",
    "test_unsqueeze_axis_2", "test_unsqueeze_negative_axes", "test_unsqueeze_three_axes", "test_unsqueeze_two_axes",
    "test_unsqueeze_unsorted_axes",
    "test_expand_dim_changed", "test_expand_dim_unchanged", "test_expand_shape_model1", "test_expand_shape_model2",
    "test_expand_shape_model3", "test_expand_shape_model4",
    "test_resize_downsample_scales_linear", "test_resize_downsample_scales_linear_half_pixel_symmetric",
    "test_resize_downsample_scales_nearest", "test_resize_downsample_sizes_linear_pytorch_half_pixel",
    "test_resize_downsample_sizes_nearest", "test_resize_downsample_sizes_nearest_not_larger",
    "test_resize_downsample_sizes_nearest_not_smaller", "test_resize_upsample_scales_linear",
    "test_resize_upsample_scales_linear_align_corners", "test_resize_upsample_scales_linear_half_pixel_symmetric",
    "test_resize_upsample_scales_nearest", "test_resize_upsample_scales_nearest_axes_2_3",
    "test_resize_upsample_scales_nearest_axes_3_2", "test_resize_upsample_sizes_nearest",
    "test_resize_upsample_sizes_nearest_axes_2_3", "test_resize_upsample_sizes_nearest_axes_3_2",
    "test_resize_upsample_sizes_nearest_ceil_half_pixel", "test_resize_upsample_sizes_nearest_floor_align_corners",
    "test_resize_upsample_sizes_nearest_not_larger", "test_resize_upsample_sizes_nearest_not_smaller",
    "test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric",
    "test_resize_downsample_scales_cubic", "test_resize_downsample_scales_cubic_A_n0p5_exclude_outside",
    "test_resize_downsample_scales_cubic_antialias", "test_resize_downsample_scales_linear_antialias",
    "test_resize_downsample_sizes_cubic", "test_resize_downsample_sizes_cubic_antialias",
    "test_resize_downsample_sizes_linear_antialias", "test_resize_tf_crop_and_resize",
    "test_resize_tf_crop_and_resize_axes_2_3", "test_resize_tf_crop_and_resize_axes_3_2",
    "test_resize_tf_crop_and_resize_extrapolation_value", "test_resize_upsample_scales_cubic",
    "test_resize_upsample_scales_cubic_A_n0p5_exclude_outside", "test_resize_upsample_scales_cubic_align_corners",
    "test_resize_upsample_scales_cubic_asymmetric", "test_resize_upsample_sizes_cubic",
]
# the unary family (elementwise activations and math functions)
SUPPORTED += [
    "test_sigmoid", "test_sigmoid_example", "test_hardsigmoid", "test_hardsigmoid_default", "test_hardsigmoid_example",
    "test_hardswish", "test_tanh", "test_tanh_example", "test_leakyrelu", "test_leakyrelu_default",
    "test_leakyrelu_example", "test_clip", "test_clip_default_inbounds", "test_clip_default_max",
    "test_clip_default_min", "test_clip_example", "test_clip_inbounds", "test_clip_min_greater_than_max",
    "test_clip_outbounds", "test_clip_splitbounds", "test_neg", "test_neg_example", "test_exp", "test_exp_example",
    "test_sqrt", "test_sqrt_example", "test_abs", "test_reciprocal", "test_reciprocal_example", "test_erf",
    "test_ELU", "test_LeakyReLU", "test_LeakyReLU_with_negval", "test_Sigmoid", "test_Tanh",
    "test_operator_clip", "test_operator_exp", "test_operator_sqrt",
]
# the dropout family (test_training_dropout* with a ratio above 0 are checked by property: see above)
SUPPORTED += [
    "test_dropout_default", "test_dropout_default_mask", "test_dropout_default_mask_ratio", "test_dropout_default_old",
    "test_dropout_default_ratio", "test_dropout_random_old", "test_training_dropout", "test_training_dropout_default",
    "test_training_dropout_default_mask", "test_training_dropout_mask", "test_training_dropout_zero_ratio",
    "test_training_dropout_zero_ratio_mask",
]

# MatMul (the matmul family), Softmax and LogSoftmax (the softmax family), Gelu (unary): the attention and MLP
# blocks of transformers
SUPPORTED += [
    "test_matmul_1d_1d", "test_matmul_1d_3d", "test_matmul_2d", "test_matmul_3d", "test_matmul_4d",
    "test_matmul_4d_1d", "test_matmul_bcast",
    "test_gelu_default_1", "test_gelu_default_2", "test_gelu_tanh_1", "test_gelu_tanh_2",
    "test_softmax_axis_0", "test_softmax_axis_1", "test_softmax_axis_2", "test_softmax_default_axis",
    "test_softmax_example", "test_softmax_large_number", "test_softmax_negative_axis",
    "test_logsoftmax_axis_0", "test_logsoftmax_axis_1", "test_logsoftmax_axis_2", "test_logsoftmax_default_axis",
    "test_logsoftmax_example_1", "test_logsoftmax_large_number", "test_logsoftmax_negative_axis",
    "test_Softmax", "test_LogSoftmax", "test_softmax_lastdim", "test_softmax_functional_dim3",
    "test_log_softmax_lastdim", "test_log_softmax_dim3",
]

# the typed kernels (Add, Sub, Mul, Div, Pow, Clip, MaxPool, Pad on integer and double data), empty tensors,
# a negative Split axis at opset 6, and light_vgg19's run-time ConstantOfShape fills
SUPPORTED += ["test_%s_%s" % (op, t) for op in ("add", "sub", "mul", "div")
              for t in ("int8", "int16", "uint8", "uint16", "uint32", "uint64")]
SUPPORTED += [
    "test_div_int32_trunc", "test_maxpool_2d_uint8", "test_edge_pad", "test_reflect_pad", "test_wrap_pad",
    "test_clip_default_int8_inbounds", "test_clip_default_int8_max", "test_clip_default_int8_min",
    "test_pow_types_float32_int32", "test_pow_types_float32_int64", "test_pow_types_float32_uint32",
    "test_pow_types_float32_uint64", "test_pow_types_int32_float32", "test_pow_types_int32_int32",
    "test_pow_types_int64_float32", "test_pow_types_int64_int64",
    "test_operator_add_broadcast", "test_operator_add_size1_broadcast", "test_operator_add_size1_right_broadcast",
    "test_operator_add_size1_singleton_broadcast", "test_operator_addconstant",
    "test_reduce_sum_empty_set", "test_reduce_sum_empty_set_non_reduced_axis_zero",
    "test_reshape_allowzero_reordered", "test_split_zero_size_splits_opset13", "test_split_zero_size_splits_opset18",
    "test_GLU", "light_vgg19",
]

# (op type, input index): the inputs vcc reads at compile time, baked into the model when a test feeds them
CONST_INPUTS = {("Reshape", 1), ("Clip", 1), ("Clip", 2), ("Dropout", 1), ("Dropout", 2), ("ReduceSum", 1),
                ("ReduceMean", 1), ("ReduceMax", 1), ("ReduceMin", 1), ("Pad", 1), ("Pad", 2), ("Pad", 3),
                ("Slice", 1), ("Slice", 2), ("Slice", 3), ("Slice", 4), ("Split", 1), ("Squeeze", 1),
                ("Unsqueeze", 1), ("Expand", 1), ("Tile", 1), ("Tile", 2), ("Resize", 1), ("Resize", 2),
                ("Resize", 3)}

# Tests compared with a looser tolerance (rtol, atol), and why.
LOOSE = {
    # the expected means are rounded by hand (0.2841 where the inputs give 0.284044): 4 decimals
    "test_averagepool_2d_ceil_last_window_starts_on_pad": (0.0, 1e-4),
}


# Ops of the models whose inputs are baked as Constants (the const family, and Gather over constants).
FOLDED_OPS = {"Shape", "Size", "ConstantOfShape", "Range", "Gather"}


def bake_folded_inputs(model, inputs):
    """Turn the graph inputs of a FOLDED_OPS-only model that a node reads for its values into Constant
    nodes holding the test's values; returns the inputs left to feed."""
    shape_only = {i for i in (x.name for x in model.graph.input)
                  if all(n.op_type in ("Shape", "Size") for n in model.graph.node if i in n.input)}
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    kept, consts = [], []
    for name, arr in zip(names, inputs):
        if name in shape_only:
            kept.append(arr)
            continue
        consts.append(onnx.helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name)))
        for i, vi in enumerate(model.graph.input):
            if vi.name == name:
                del model.graph.input[i]
                break
    nodes = consts + list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return kept


def bake_shape_inputs(model, inputs):
    """Turn graph inputs in CONST_INPUTS into initializers holding the test's values."""
    shape_inputs = {n.input[i] for n in model.graph.node for i in range(1, len(n.input))
                    if (n.op_type, i) in CONST_INPUTS and n.input[i]}
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    kept = []
    for name, arr in zip(names, inputs):
        if name in shape_inputs:
            model.graph.initializer.append(numpy_helper.from_array(arr, name))
            for i, vi in enumerate(model.graph.input):
                if vi.name == name:
                    del model.graph.input[i]
                    break
        else:
            kept.append(arr)
    return kept


def dropout_training(model):
    """The ratio of a one-node model's Dropout that draws masks (training mode, ratio > 0), else None."""
    nodes = model.graph.node
    if len(nodes) != 1 or nodes[0].op_type != "Dropout":
        return None
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    n, opset = nodes[0], max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
    if opset < 12:  # opsets 7-11 state no mode: a forward program copies, as onnxruntime does
        ratio, train = attrs.get("ratio", 0.5), opset < 7 and not attrs.get("is_test", 0)
    else:
        ratio = float(inits[n.input[1]]) if len(n.input) > 1 and n.input[1] else 0.5
        train = bool(inits[n.input[2]]) if len(n.input) > 2 and n.input[2] else False
    return ratio if train and ratio > 0 else None


def check_dropout(x, got, want, ratio):
    """What a training-mode Dropout's outputs must be whatever its generator: '' when they are."""
    y = got[0]
    if y.shape != x.shape or y.dtype != np.float32:
        return "output 0 is %s %s, expected float32 %s" % (y.dtype, y.shape, x.shape)
    kept = y != 0
    if len(want) > 1:
        if got[1].dtype != np.bool_ or got[1].shape != x.shape:
            return "mask is %s %s, expected bool %s" % (got[1].dtype, got[1].shape, x.shape)
        kept = got[1]
    scaled = x.astype(np.float64) / (1 - ratio)
    if not (np.allclose(y[kept], scaled[kept], rtol=1e-6, atol=0) and np.all(y[~kept] == 0)):
        return "y is not x / (1 - ratio) where kept and 0 where dropped"
    n, dropped = x.size, float((~kept).sum())
    if abs(dropped - ratio * n) > 5 * np.sqrt(n * ratio * (1 - ratio)):
        return "%d of %d elements dropped at ratio %g" % (dropped, n, ratio)
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        if os.environ.get("CI") == "true":  # CI has the data: its absence there is a failure, not a skip
            sys.exit("FAIL: %s not found (CI=true)" % args.data)
        print("skip: %s not found" % args.data)
        sys.exit(77)
    vcc = os.path.abspath(args.vcc)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    tests = sorted(glob.glob(os.path.join(args.data, "test_*")))
    for sub in ("pytorch-converted", "pytorch-operator", "simple"):
        tests += sorted(glob.glob(os.path.join(args.data, sub, "test_*")))
    models = [(t, os.path.join(t, "model.onnx")) for t in tests]
    models += [(None, m) for m in sorted(glob.glob(os.path.join(args.data, "light", "*.onnx")))]
    models = [(t, m) for t, m in models if args.only in m]

    failures, passed, refused, refusals = [], [], 0, {}
    for tdir, path in models:
        name = os.path.basename(tdir) if tdir else os.path.basename(path)[:-5]
        work = os.path.join(args.work, name)
        os.makedirs(work, exist_ok=True)
        sets = sorted(glob.glob(os.path.join(tdir, "test_data_set_*"))) if tdir else []
        model = onnx.load(path)
        src = path
        feeds = []
        if sets:
            feeds = [[numpy_helper.to_array(onnx.load_tensor(p))
                      for p in sorted(glob.glob(os.path.join(s, "input_*.pb")),
                                      key=lambda p: int(p.rsplit("_", 1)[1][:-3]))] for s in sets]
            bake = None
            if model.graph.node and all(n.op_type in FOLDED_OPS for n in model.graph.node):
                bake = bake_folded_inputs
            elif any((n.op_type, i) in CONST_INPUTS for n in model.graph.node for i in range(1, len(n.input))):
                bake = bake_shape_inputs
            if bake and len(sets) > 1 and bake is bake_folded_inputs:
                sets, feeds = sets[:1], feeds[:1]  # the baked values are those of the first data set
            if bake:
                feeds = [bake(onnx.load(path), f) for f in feeds]
                bake(model, [numpy_helper.to_array(onnx.load_tensor(p)) for p in sorted(
                    glob.glob(os.path.join(sets[0], "input_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))])
                src = os.path.join(work, "model.onnx")
                onnx.save(model, src)
        p = subprocess.run([vcc, src, "--forward-only", "-o", "fwd.c"], cwd=work, capture_output=True, text=True)
        if p.returncode != 0:
            lines = p.stderr.strip().splitlines()
            # every line names the model, or continues a report (indented under a line that does)
            clean = (p.returncode == 1 and lines and lines[0].startswith(src)
                     and all(l.startswith(src) or l.startswith("  ") for l in lines)
                     and not set(os.listdir(work)) - {"model.onnx"})
            if not clean:
                failures.append("%s: unclean refusal (rc %d): %s" % (name, p.returncode, p.stderr.strip()[:300]))
            elif name in SUPPORTED:
                failures.append("%s: supported but refused: %s" % (name, lines[0]))
            refusals[name] = " ".join(l.strip() for l in lines[:3])[:240]
            refused += 1
            continue
        if not sets:
            passed.append(name)  # compiled; light/ nets store no input, nothing to compare
            continue
        build = p.stdout.strip()
        b = subprocess.run(build, cwd=work, shell=True, capture_output=True, text=True)
        if b.returncode:
            failures.append("%s: build failed: %s" % (name, b.stderr.strip()[:300]))
            continue
        ok = True
        for s, inputs in zip(sets, feeds):
            want = [numpy_helper.to_array(onnx.load_tensor(q)) for q in sorted(
                glob.glob(os.path.join(s, "output_*.pb")), key=lambda q: int(q.rsplit("_", 1)[1][:-3]))]
            ins, outs = [], []
            for i, arr in enumerate(inputs):
                ins.append(os.path.join(work, "in%d.npy" % i))
                np.save(ins[-1], arr)
            for i in range(len(want)):
                outs.append(os.path.join(work, "out%d.npy" % i))
            r = subprocess.run(["./fwd"] + ins + ["-o"] + outs, cwd=work, capture_output=True, text=True)
            if r.returncode:
                failures.append("%s: run failed: %s" % (name, r.stderr.strip()[:300]))
                ok = False
                break
            drop = dropout_training(model)
            if drop is not None:
                err = check_dropout(inputs[0], [np.load(o) for o in outs], want, drop)
                if err:
                    failures.append("%s: %s" % (name, err))
                    ok = False
                continue
            for i, w in enumerate(want):
                got = np.load(outs[i])
                if got.shape != w.shape or got.dtype != w.dtype:
                    failures.append("%s: output %d is %s %s, expected %s %s" % (name, i, got.dtype, got.shape,
                                                                                w.dtype, w.shape))
                    ok = False
                elif not np.allclose(got, w, *LOOSE.get(name, (1e-4, 1e-5)), equal_nan=True):
                    failures.append("%s: output %d differs by up to %.3e" % (
                        name, i, float(np.abs(got.astype(np.float64) - w).max())))
                    ok = False
        if ok:
            passed.append(name)
    missing = [t for t in SUPPORTED if t not in passed and any(t == os.path.basename(x or "") for x, _ in models)]
    # the tests whose ops are all vcc's (vcc --ops): how many pass, and why the others do not
    vcc_ops = {l.split()[0] for l in subprocess.run([vcc, "--ops"], capture_output=True, text=True).stdout.splitlines()}
    in_set, why = [], {}
    for tdir, path in models:
        name = os.path.basename(tdir) if tdir else os.path.basename(path)[:-5]
        m = onnx.load(path, load_external_data=False)
        if all(n.domain in ("", "ai.onnx") and n.op_type in vcc_ops for n in m.graph.node):
            in_set.append(name)
    for f in failures:
        why[f.split(":", 1)[0]] = f.split(":", 1)[1].strip()
    for name, reason in refusals.items():
        why.setdefault(name, "refused: " + reason)
    not_passing = [n for n in in_set if n not in passed]
    rate = 100.0 * (len(in_set) - len(not_passing)) / max(len(in_set), 1)
    print("%d tests use only ops vcc has: %d pass (%.1f%%)" % (len(in_set), len(in_set) - len(not_passing), rate))
    for n in not_passing:
        print("  not passing: %s: %s" % (n, why.get(n, "?")))
    print("%d models: %d compiled and matched, %d refused cleanly, %d failures" % (
        len(models), len(passed), refused, len(failures)))
    print("matched: " + " ".join(passed))
    for f in failures:
        print("FAIL " + f)
    if failures or missing:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
