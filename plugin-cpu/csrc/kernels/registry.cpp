// The one table of built-in kernels: C++ cannot discover them, so each kernels/<op>.cpp adds a
// line here (and a declaration above it).
#include <algorithm>

#include "core/kernel.hpp"
#include "core/nn.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_abs(NodeDesc& n);
std::string check_abs(const NodeDesc& n);
std::unique_ptr<Kernel> make_acos(NodeDesc& n);
std::string check_acos(const NodeDesc& n);
std::unique_ptr<Kernel> make_acosh(NodeDesc& n);
std::string check_acosh(const NodeDesc& n);
std::unique_ptr<Kernel> make_add(NodeDesc& n);
std::string check_add(const NodeDesc& n);
std::unique_ptr<Kernel> make_asin(NodeDesc& n);
std::string check_asin(const NodeDesc& n);
std::unique_ptr<Kernel> make_asinh(NodeDesc& n);
std::string check_asinh(const NodeDesc& n);
std::unique_ptr<Kernel> make_atan(NodeDesc& n);
std::string check_atan(const NodeDesc& n);
std::unique_ptr<Kernel> make_atanh(NodeDesc& n);
std::string check_atanh(const NodeDesc& n);
std::unique_ptr<Kernel> make_avg_pool(NodeDesc& n);
std::unique_ptr<Kernel> make_batch_norm_inference(NodeDesc& n);
std::unique_ptr<Kernel> make_bit_cast(NodeDesc& n);
std::string check_bit_cast(const NodeDesc& n);
std::string check_batch_norm_inference(const NodeDesc& n);
std::unique_ptr<Kernel> make_ceiling(NodeDesc& n);
std::string check_ceiling(const NodeDesc& n);
std::unique_ptr<Kernel> make_clamp(NodeDesc& n);
std::string check_clamp(const NodeDesc& n);
std::unique_ptr<Kernel> make_concat(NodeDesc& n);
std::unique_ptr<Kernel> make_convert(NodeDesc& n);
std::unique_ptr<Kernel> make_convert_like(NodeDesc& n);
std::unique_ptr<Kernel> make_convolution(NodeDesc& n);
std::string check_convolution(const NodeDesc& n);
std::unique_ptr<Kernel> make_convolution_backprop_data(NodeDesc& n);
std::unique_ptr<Kernel> make_cos(NodeDesc& n);
std::string check_cos(const NodeDesc& n);
std::unique_ptr<Kernel> make_cosh(NodeDesc& n);
std::string check_cosh(const NodeDesc& n);
std::unique_ptr<Kernel> make_divide(NodeDesc& n);
std::string check_divide(const NodeDesc& n);
std::unique_ptr<Kernel> make_elu(NodeDesc& n);
std::string check_elu(const NodeDesc& n);
std::unique_ptr<Kernel> make_equal(NodeDesc& n);
std::string check_equal(const NodeDesc& n);
std::unique_ptr<Kernel> make_erf(NodeDesc& n);
std::string check_erf(const NodeDesc& n);
std::unique_ptr<Kernel> make_exp(NodeDesc& n);
std::string check_exp(const NodeDesc& n);
std::unique_ptr<Kernel> make_floor(NodeDesc& n);
std::string check_floor(const NodeDesc& n);
std::unique_ptr<Kernel> make_floor_mod(NodeDesc& n);
std::string check_floor_mod(const NodeDesc& n);
std::unique_ptr<Kernel> make_gather(NodeDesc& n);
std::string check_gather(const NodeDesc& n);
std::unique_ptr<Kernel> make_gelu(NodeDesc& n);
std::string check_gelu(const NodeDesc& n);
std::unique_ptr<Kernel> make_greater(NodeDesc& n);
std::string check_greater(const NodeDesc& n);
std::unique_ptr<Kernel> make_greater_equal(NodeDesc& n);
std::string check_greater_equal(const NodeDesc& n);
std::unique_ptr<Kernel> make_group_convolution(NodeDesc& n);
std::string check_group_convolution(const NodeDesc& n);
std::unique_ptr<Kernel> make_group_convolution_backprop_data(NodeDesc& n);
std::unique_ptr<Kernel> make_h_sigmoid(NodeDesc& n);
std::string check_h_sigmoid(const NodeDesc& n);
std::unique_ptr<Kernel> make_h_swish(NodeDesc& n);
std::string check_h_swish(const NodeDesc& n);
std::unique_ptr<Kernel> make_identity(NodeDesc& n);
std::unique_ptr<Kernel> make_index_map(NodeDesc& n);
std::unique_ptr<Kernel> make_less(NodeDesc& n);
std::string check_less(const NodeDesc& n);
std::unique_ptr<Kernel> make_less_equal(NodeDesc& n);
std::string check_less_equal(const NodeDesc& n);
std::unique_ptr<Kernel> make_log(NodeDesc& n);
std::string check_log(const NodeDesc& n);
std::unique_ptr<Kernel> make_log_softmax(NodeDesc& n);
std::string check_log_softmax(const NodeDesc& n);
std::unique_ptr<Kernel> make_logical_and(NodeDesc& n);
std::string check_logical_and(const NodeDesc& n);
std::unique_ptr<Kernel> make_logical_or(NodeDesc& n);
std::string check_logical_or(const NodeDesc& n);
std::unique_ptr<Kernel> make_logical_xor(NodeDesc& n);
std::string check_logical_xor(const NodeDesc& n);
std::unique_ptr<Kernel> make_mat_mul(NodeDesc& n);
std::string check_mat_mul(const NodeDesc& n);
std::unique_ptr<Kernel> make_max_pool(NodeDesc& n);
std::string check_max_pool(const NodeDesc& n);
std::unique_ptr<Kernel> make_maximum(NodeDesc& n);
std::string check_maximum(const NodeDesc& n);
std::unique_ptr<Kernel> make_minimum(NodeDesc& n);
std::string check_minimum(const NodeDesc& n);
std::unique_ptr<Kernel> make_mish(NodeDesc& n);
std::string check_mish(const NodeDesc& n);
std::unique_ptr<Kernel> make_mod(NodeDesc& n);
std::string check_mod(const NodeDesc& n);
std::unique_ptr<Kernel> make_multiply(NodeDesc& n);
std::string check_multiply(const NodeDesc& n);
std::unique_ptr<Kernel> make_mvn(NodeDesc& n);
std::string check_mvn(const NodeDesc& n);
std::unique_ptr<Kernel> make_negative(NodeDesc& n);
std::string check_negative(const NodeDesc& n);
std::unique_ptr<Kernel> make_not_equal(NodeDesc& n);
std::string check_not_equal(const NodeDesc& n);
std::unique_ptr<Kernel> make_power(NodeDesc& n);
std::string check_power(const NodeDesc& n);
std::unique_ptr<Kernel> make_reduce_l1(NodeDesc& n);
std::string check_reduce_l1(const NodeDesc& n);
std::unique_ptr<Kernel> make_reduce_l2(NodeDesc& n);
std::string check_reduce_l2(const NodeDesc& n);
std::unique_ptr<Kernel> make_reduce_logical_and(NodeDesc& n);
std::string check_reduce_logical_and(const NodeDesc& n);
std::unique_ptr<Kernel> make_reduce_logical_or(NodeDesc& n);
std::string check_reduce_logical_or(const NodeDesc& n);
std::unique_ptr<Kernel> make_quantized_convolution(NodeDesc& n);
std::string check_quantized_convolution(const NodeDesc& n);
std::unique_ptr<Kernel> make_quantized_mat_mul(NodeDesc& n);
std::string check_quantized_mat_mul(const NodeDesc& n);
std::unique_ptr<Kernel> make_reduce_max(NodeDesc& n);
std::string check_reduce_max(const NodeDesc& n);
std::unique_ptr<Kernel> make_reduce_mean(NodeDesc& n);
std::string check_reduce_mean(const NodeDesc& n);
std::unique_ptr<Kernel> make_reduce_min(NodeDesc& n);
std::string check_reduce_min(const NodeDesc& n);
std::unique_ptr<Kernel> make_reduce_prod(NodeDesc& n);
std::string check_reduce_prod(const NodeDesc& n);
std::unique_ptr<Kernel> make_reduce_sum(NodeDesc& n);
std::string check_reduce_sum(const NodeDesc& n);
std::unique_ptr<Kernel> make_relu(NodeDesc& n);
std::string check_relu(const NodeDesc& n);
std::unique_ptr<Kernel> make_reshape(NodeDesc& n);
std::unique_ptr<Kernel> make_round(NodeDesc& n);
std::string check_round(const NodeDesc& n);
std::unique_ptr<Kernel> make_select(NodeDesc& n);
std::string check_select(const NodeDesc& n);
std::unique_ptr<Kernel> make_shape_of(NodeDesc& n);
std::unique_ptr<Kernel> make_sigmoid(NodeDesc& n);
std::string check_sigmoid(const NodeDesc& n);
std::unique_ptr<Kernel> make_sign(NodeDesc& n);
std::string check_sign(const NodeDesc& n);
std::unique_ptr<Kernel> make_sin(NodeDesc& n);
std::string check_sin(const NodeDesc& n);
std::unique_ptr<Kernel> make_sinh(NodeDesc& n);
std::string check_sinh(const NodeDesc& n);
std::unique_ptr<Kernel> make_soft_plus(NodeDesc& n);
std::string check_soft_plus(const NodeDesc& n);
std::unique_ptr<Kernel> make_soft_sign(NodeDesc& n);
std::string check_soft_sign(const NodeDesc& n);
std::unique_ptr<Kernel> make_softmax(NodeDesc& n);
std::string check_softmax(const NodeDesc& n);
std::unique_ptr<Kernel> make_split(NodeDesc& n);
std::string check_split(const NodeDesc& n);
std::unique_ptr<Kernel> make_sqrt(NodeDesc& n);
std::string check_sqrt(const NodeDesc& n);
std::unique_ptr<Kernel> make_squared_difference(NodeDesc& n);
std::string check_squared_difference(const NodeDesc& n);
std::unique_ptr<Kernel> make_squeeze(NodeDesc& n);
std::unique_ptr<Kernel> make_subtract(NodeDesc& n);
std::string check_subtract(const NodeDesc& n);
std::unique_ptr<Kernel> make_tan(NodeDesc& n);
std::string check_tan(const NodeDesc& n);
std::unique_ptr<Kernel> make_tanh(NodeDesc& n);
std::string check_tanh(const NodeDesc& n);
std::unique_ptr<Kernel> make_transpose(NodeDesc& n);
std::string check_transpose(const NodeDesc& n);
std::unique_ptr<Kernel> make_unsqueeze(NodeDesc& n);
std::unique_ptr<Kernel> make_variadic_split(NodeDesc& n);
std::string check_variadic_split(const NodeDesc& n);

std::unique_ptr<Kernel> make_bitwise_and(NodeDesc& n);
std::string check_bitwise_and(const NodeDesc& n);
std::unique_ptr<Kernel> make_bitwise_or(NodeDesc& n);
std::string check_bitwise_or(const NodeDesc& n);
std::unique_ptr<Kernel> make_bitwise_xor(NodeDesc& n);
std::string check_bitwise_xor(const NodeDesc& n);
std::unique_ptr<Kernel> make_bitwise_not(NodeDesc& n);
std::string check_bitwise_not(const NodeDesc& n);
std::unique_ptr<Kernel> make_bitwise_left_shift(NodeDesc& n);
std::string check_bitwise_left_shift(const NodeDesc& n);
std::unique_ptr<Kernel> make_bitwise_right_shift(NodeDesc& n);
std::string check_bitwise_right_shift(const NodeDesc& n);
std::unique_ptr<Kernel> make_is_inf(NodeDesc& n);
std::string check_is_inf(const NodeDesc& n);
std::unique_ptr<Kernel> make_is_nan(NodeDesc& n);
std::string check_is_nan(const NodeDesc& n);
std::unique_ptr<Kernel> make_is_finite(NodeDesc& n);
std::string check_is_finite(const NodeDesc& n);
std::unique_ptr<Kernel> make_logical_not(NodeDesc& n);
std::string check_logical_not(const NodeDesc& n);
std::unique_ptr<Kernel> make_selu(NodeDesc& n);
std::string check_selu(const NodeDesc& n);
std::unique_ptr<Kernel> make_p_relu(NodeDesc& n);
std::string check_p_relu(const NodeDesc& n);
std::unique_ptr<Kernel> make_top_k(NodeDesc& n);
std::string check_top_k(const NodeDesc& n);
std::unique_ptr<Kernel> make_interpolate(NodeDesc& n);
std::string check_interpolate(const NodeDesc& n);
std::unique_ptr<Kernel> make_grid_sample(NodeDesc& n);
std::string check_grid_sample(const NodeDesc& n);
std::unique_ptr<Kernel> make_gather_elements(NodeDesc& n);
std::string check_gather_elements(const NodeDesc& n);
std::unique_ptr<Kernel> make_gather_nd(NodeDesc& n);
std::string check_gather_nd(const NodeDesc& n);
std::unique_ptr<Kernel> make_scatter_update(NodeDesc& n);
std::string check_scatter_update(const NodeDesc& n);
std::unique_ptr<Kernel> make_scatter_nd_update(NodeDesc& n);
std::string check_scatter_nd_update(const NodeDesc& n);
std::unique_ptr<Kernel> make_scatter_elements_update(NodeDesc& n);
std::string check_scatter_elements_update(const NodeDesc& n);
std::unique_ptr<Kernel> make_one_hot(NodeDesc& n);
std::string check_one_hot(const NodeDesc& n);
std::unique_ptr<Kernel> make_cum_sum(NodeDesc& n);
std::string check_cum_sum(const NodeDesc& n);
std::unique_ptr<Kernel> make_lrn(NodeDesc& n);
std::string check_lrn(const NodeDesc& n);
std::unique_ptr<Kernel> make_rnn_sequence(NodeDesc& n);
std::string check_rnn_sequence(const NodeDesc& n);
std::unique_ptr<Kernel> make_gru_sequence(NodeDesc& n);
std::string check_gru_sequence(const NodeDesc& n);
std::unique_ptr<Kernel> make_lstm_sequence(NodeDesc& n);
std::string check_lstm_sequence(const NodeDesc& n);
std::unique_ptr<Kernel> make_dft(NodeDesc& n);
std::string check_dft(const NodeDesc& n);
std::unique_ptr<Kernel> make_idft(NodeDesc& n);
std::string check_idft(const NodeDesc& n);
std::unique_ptr<Kernel> make_rdft(NodeDesc& n);
std::string check_rdft(const NodeDesc& n);
std::unique_ptr<Kernel> make_irdft(NodeDesc& n);
std::string check_irdft(const NodeDesc& n);
std::unique_ptr<Kernel> make_einsum(NodeDesc& n);
std::string check_einsum(const NodeDesc& n);
std::unique_ptr<Kernel> make_tf_idf_vectorizer(NodeDesc& n);
std::string check_tf_idf_vectorizer(const NodeDesc& n);
std::unique_ptr<Kernel> make_non_zero(NodeDesc& n);
std::string check_non_zero(const NodeDesc& n);
std::unique_ptr<Kernel> make_unique_op(NodeDesc& n);
std::string check_unique_op(const NodeDesc& n);
std::unique_ptr<Kernel> make_non_max_suppression(NodeDesc& n);
std::string check_non_max_suppression(const NodeDesc& n);
std::unique_ptr<Kernel> make_col2im(NodeDesc& n);
std::string check_col2im(const NodeDesc& n);
std::unique_ptr<Kernel> make_deformable_convolution(NodeDesc& n);
std::string check_deformable_convolution(const NodeDesc& n);
std::unique_ptr<Kernel> make_roi_align(NodeDesc& n);
std::string check_roi_align(const NodeDesc& n);
std::unique_ptr<Kernel> make_swish(NodeDesc& n);
std::string check_swish(const NodeDesc& n);
std::unique_ptr<Kernel> make_adaptive_avg_pool(NodeDesc& n);
std::string check_adaptive_avg_pool(const NodeDesc& n);
std::unique_ptr<Kernel> make_adaptive_max_pool(NodeDesc& n);
std::string check_adaptive_max_pool(const NodeDesc& n);
std::unique_ptr<Kernel> make_normalize_l2(NodeDesc& n);
std::string check_normalize_l2(const NodeDesc& n);
std::unique_ptr<Kernel> make_grn(NodeDesc& n);
std::string check_grn(const NodeDesc& n);

const std::vector<KernelEntry>& kernel_table() {
  // type, factory, support check (nullptr: all nodes of the type), layout-flexible
  static const std::vector<KernelEntry> table = {
      {"Abs", make_abs, check_abs, true},
      {"Acos", make_acos, check_acos, false},
      {"Acosh", make_acosh, check_acosh, false},
      {"Add", make_add, check_add, false},
      {"Asin", make_asin, check_asin, false},
      {"Asinh", make_asinh, check_asinh, false},
      {"Atan", make_atan, check_atan, false},
      {"Atanh", make_atanh, check_atanh, false},
      {"AvgPool", make_avg_pool, check_float, true},
      {"BatchNormInference", make_batch_norm_inference, check_batch_norm_inference, false},
      {"BitCast", make_bit_cast, check_bit_cast, false},
      {"Ceiling", make_ceiling, check_ceiling, false},
      {"Clamp", make_clamp, check_clamp, true},
      {"Concat", make_concat, nullptr, false},
      {"Convert", make_convert, nullptr, false},
      {"ConvertLike", make_convert_like, nullptr, false},
      {"Convolution", make_convolution, check_convolution, true},
      {"ConvolutionBackpropData", make_convolution_backprop_data, check_conv, true},
      {"Cos", make_cos, check_cos, false},
      {"Cosh", make_cosh, check_cosh, false},
      {"Divide", make_divide, check_divide, false},
      {"Elu", make_elu, check_elu, true},
      {"Equal", make_equal, check_equal, false},
      {"Erf", make_erf, check_erf, false},
      {"Exp", make_exp, check_exp, true},
      {"Floor", make_floor, check_floor, false},
      {"FloorMod", make_floor_mod, check_floor_mod, false},
      {"Gather", make_gather, check_gather, false},
      {"Gelu", make_gelu, check_gelu, true},
      {"Greater", make_greater, check_greater, false},
      {"GreaterEqual", make_greater_equal, check_greater_equal, false},
      {"GroupConvolution", make_group_convolution, check_group_convolution, true},
      {"GroupConvolutionBackpropData", make_group_convolution_backprop_data, check_conv, true},
      {"HSigmoid", make_h_sigmoid, check_h_sigmoid, true},
      {"HSwish", make_h_swish, check_h_swish, true},
      {"Identity", make_identity, nullptr, false},
      {"IndexMap", make_index_map, nullptr, false},
      {"Less", make_less, check_less, false},
      {"LessEqual", make_less_equal, check_less_equal, false},
      {"Log", make_log, check_log, false},
      {"LogSoftmax", make_log_softmax, check_log_softmax, false},
      {"LogicalAnd", make_logical_and, check_logical_and, false},
      {"LogicalOr", make_logical_or, check_logical_or, false},
      {"LogicalXor", make_logical_xor, check_logical_xor, false},
      {"MatMul", make_mat_mul, check_mat_mul, false},
      {"MaxPool", make_max_pool, check_max_pool, true},
      {"Maximum", make_maximum, check_maximum, false},
      {"Minimum", make_minimum, check_minimum, false},
      {"Mish", make_mish, check_mish, true},
      {"Mod", make_mod, check_mod, false},
      {"Multiply", make_multiply, check_multiply, false},
      {"MVN", make_mvn, check_mvn, false},
      {"Negative", make_negative, check_negative, false},
      {"NotEqual", make_not_equal, check_not_equal, false},
      {"Power", make_power, check_power, false},
      {"ReduceL1", make_reduce_l1, check_reduce_l1, false},
      {"ReduceL2", make_reduce_l2, check_reduce_l2, false},
      {"ReduceLogicalAnd", make_reduce_logical_and, check_reduce_logical_and, false},
      {"ReduceLogicalOr", make_reduce_logical_or, check_reduce_logical_or, false},
      {"ReduceMax", make_reduce_max, check_reduce_max, false},
      {"ReduceMean", make_reduce_mean, check_reduce_mean, false},
      {"ReduceMin", make_reduce_min, check_reduce_min, false},
      {"ReduceProd", make_reduce_prod, check_reduce_prod, false},
      {"ReduceSum", make_reduce_sum, check_reduce_sum, false},
      {"Relu", make_relu, check_relu, true},
      {"Reshape", make_reshape, nullptr, false},
      {"Round", make_round, check_round, false},
      {"Select", make_select, check_select, false},
      {"ShapeOf", make_shape_of, nullptr, false},
      {"Sigmoid", make_sigmoid, check_sigmoid, true},
      {"Sign", make_sign, check_sign, false},
      {"Sin", make_sin, check_sin, false},
      {"Sinh", make_sinh, check_sinh, false},
      {"SoftPlus", make_soft_plus, check_soft_plus, false},
      {"SoftSign", make_soft_sign, check_soft_sign, false},
      {"Softmax", make_softmax, check_softmax, false},
      {"Split", make_split, check_split, false},
      {"Sqrt", make_sqrt, check_sqrt, true},
      {"SquaredDifference", make_squared_difference, check_squared_difference, false},
      {"Squeeze", make_squeeze, nullptr, false},
      {"Subtract", make_subtract, check_subtract, false},
      {"Tan", make_tan, check_tan, false},
      {"Tanh", make_tanh, check_tanh, true},
      {"Transpose", make_transpose, check_transpose, false},
      {"Unsqueeze", make_unsqueeze, nullptr, false},
      {"VariadicSplit", make_variadic_split, check_variadic_split, false},
      {"BitwiseAnd", make_bitwise_and, check_bitwise_and, false},
      {"BitwiseOr", make_bitwise_or, check_bitwise_or, false},
      {"BitwiseXor", make_bitwise_xor, check_bitwise_xor, false},
      {"BitwiseNot", make_bitwise_not, check_bitwise_not, false},
      {"BitwiseLeftShift", make_bitwise_left_shift, check_bitwise_left_shift, false},
      {"BitwiseRightShift", make_bitwise_right_shift, check_bitwise_right_shift, false},
      {"IsInf", make_is_inf, check_is_inf, false},
      {"IsNaN", make_is_nan, check_is_nan, false},
      {"IsFinite", make_is_finite, check_is_finite, false},
      {"LogicalNot", make_logical_not, check_logical_not, false},
      {"Selu", make_selu, check_selu, false},
      {"PRelu", make_p_relu, check_p_relu, false},
      {"TopK", make_top_k, check_top_k, false},
      {"Interpolate", make_interpolate, check_interpolate, false},
      {"GridSample", make_grid_sample, check_grid_sample, false},
      {"GatherElements", make_gather_elements, check_gather_elements, false},
      {"GatherND", make_gather_nd, check_gather_nd, false},
      {"ScatterUpdate", make_scatter_update, check_scatter_update, false},
      {"ScatterNDUpdate", make_scatter_nd_update, check_scatter_nd_update, false},
      {"ScatterElementsUpdate", make_scatter_elements_update, check_scatter_elements_update, false},
      {"OneHot", make_one_hot, check_one_hot, false},
      {"CumSum", make_cum_sum, check_cum_sum, false},
      {"LRN", make_lrn, check_lrn, false},
      {"RNNSequence", make_rnn_sequence, check_rnn_sequence, false},
      {"GRUSequence", make_gru_sequence, check_gru_sequence, false},
      {"LSTMSequence", make_lstm_sequence, check_lstm_sequence, false},
      {"DFT", make_dft, check_dft, false},
      {"IDFT", make_idft, check_idft, false},
      {"RDFT", make_rdft, check_rdft, false},
      {"IRDFT", make_irdft, check_irdft, false},
      {"Einsum", make_einsum, check_einsum, false},
      {"NonZero", make_non_zero, check_non_zero, false},
      {"Unique", make_unique_op, check_unique_op, false},
      {"NonMaxSuppression", make_non_max_suppression, check_non_max_suppression, false},
      {"Col2Im", make_col2im, check_col2im, false},
      {"DeformableConvolution", make_deformable_convolution, check_deformable_convolution, false},
      {"ROIAlign", make_roi_align, check_roi_align, false},
      {"Swish", make_swish, check_swish, false},
      {"AdaptiveAvgPool", make_adaptive_avg_pool, check_adaptive_avg_pool, false},
      {"AdaptiveMaxPool", make_adaptive_max_pool, check_adaptive_max_pool, false},
      {"NormalizeL2", make_normalize_l2, check_normalize_l2, false},
      {"GRN", make_grn, check_grn, false},
      {"TfIdfVectorizer", make_tf_idf_vectorizer, check_tf_idf_vectorizer, false},
      // the CPU's own int8 ops (opforge_cpu/ops), made by its int8 graph pass
      {"QuantizedConvolution", make_quantized_convolution, check_quantized_convolution, true},
      {"QuantizedMatMul", make_quantized_mat_mul, check_quantized_mat_mul, false},
  };
  return table;
}

const KernelEntry* find_kernel(const std::string& type) {
  for (const auto& e : kernel_table())
    if (type == e.type) return &e;
  return nullptr;
}

std::string check_any(const NodeDesc&) { return ""; }

std::string check_float(const NodeDesc& n) {
  return n.in(0).dtype == DType::f32 ? "" : std::string("element type ") + dtype_name(n.in(0).dtype) + " is not supported (f32 only)";
}

std::string check_numeric(const NodeDesc& n) {
  DType t = n.in(0).dtype;
  if (t == DType::boolean || t == DType::f16 || t == DType::bf16) return std::string("element type ") + dtype_name(t) + " is not supported";
  return "";
}

}  // namespace opforge_cpu
