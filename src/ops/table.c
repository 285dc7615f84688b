/* table.c - the op table: one row per cf_opcode, in the enum's order. */
#include "ops/op.h"

/* Leaves: their values come from the executor (inputs) or the model (parameters,
 * constants); their shapes are set when they are made. */
const cf_opdef cf_op_input = {
    .name = "input", .what = "input", .flags = CF_NO_FLOPS,
};
const cf_opdef cf_op_param = {
    .name = "param", .what = "parameter", .flags = CF_NO_FLOPS,
};
const cf_opdef cf_op_const = {
    .name = "const", .what = "constant", .flags = CF_NO_FLOPS,
};
const cf_opdef cf_op_state = {
    .name = "state", .what = "state", .flags = CF_NO_FLOPS,
};

extern const cf_opdef cf_op_matmul, cf_op_add, cf_op_sub, cf_op_mul, cf_op_div, cf_op_neg,
    cf_op_sigmoid, cf_op_tanh, cf_op_relu, cf_op_leakyrelu, cf_op_exp, cf_op_log, cf_op_softmax,
    cf_op_logsoftmax, cf_op_sum, cf_op_mean, cf_op_reshape, cf_op_flatten, cf_op_concat, cf_op_slice,
    cf_op_xent, cf_op_mse, cf_op_softplus, cf_op_conv2d, cf_op_maxpool, cf_op_avgpool, cf_op_globalavgpool,
    cf_op_dropout, cf_op_batchnorm, cf_op_embedding, cf_op_lstm, cf_op_layernorm, cf_op_gelu, cf_op_transpose,
    cf_op_affine, cf_op_affine_relu, cf_op_clamp, cf_op_batchnorm_relu, cf_op_batchnorm_add_relu,
    cf_op_qaffine, cf_op_qconv2d, cf_op_qchain, cf_op_attention, cf_op_cache_write, cf_op_rows_at;

const cf_opdef *cf_ops[CF_OP_COUNT_] = {
    [CF_OP_INPUT] = &cf_op_input,         [CF_OP_PARAM] = &cf_op_param,
    [CF_OP_CONST] = &cf_op_const,         [CF_OP_MATMUL] = &cf_op_matmul,
    [CF_OP_ADD] = &cf_op_add,             [CF_OP_SUB] = &cf_op_sub,
    [CF_OP_MUL] = &cf_op_mul,             [CF_OP_DIV] = &cf_op_div,
    [CF_OP_NEG] = &cf_op_neg,             [CF_OP_SIGMOID] = &cf_op_sigmoid,
    [CF_OP_TANH] = &cf_op_tanh,           [CF_OP_RELU] = &cf_op_relu,
    [CF_OP_LEAKYRELU] = &cf_op_leakyrelu, [CF_OP_EXP] = &cf_op_exp,
    [CF_OP_LOG] = &cf_op_log,             [CF_OP_SOFTMAX] = &cf_op_softmax,
    [CF_OP_LOGSOFTMAX] = &cf_op_logsoftmax, [CF_OP_SUM] = &cf_op_sum,
    [CF_OP_MEAN] = &cf_op_mean,           [CF_OP_RESHAPE] = &cf_op_reshape,
    [CF_OP_FLATTEN] = &cf_op_flatten,     [CF_OP_CONCAT] = &cf_op_concat,
    [CF_OP_SLICE] = &cf_op_slice,         [CF_OP_XENT] = &cf_op_xent,
    [CF_OP_MSE] = &cf_op_mse,             [CF_OP_SOFTPLUS] = &cf_op_softplus,
    [CF_OP_CONV2D] = &cf_op_conv2d,
    [CF_OP_MAXPOOL] = &cf_op_maxpool,     [CF_OP_AVGPOOL] = &cf_op_avgpool,
    [CF_OP_GLOBALAVGPOOL] = &cf_op_globalavgpool, [CF_OP_DROPOUT] = &cf_op_dropout,
    [CF_OP_STATE] = &cf_op_state,         [CF_OP_BATCHNORM] = &cf_op_batchnorm,
    [CF_OP_EMBEDDING] = &cf_op_embedding, [CF_OP_LSTM] = &cf_op_lstm,
    [CF_OP_LAYERNORM] = &cf_op_layernorm, [CF_OP_GELU] = &cf_op_gelu,
    [CF_OP_TRANSPOSE] = &cf_op_transpose,
    [CF_OP_AFFINE] = &cf_op_affine,
    [CF_OP_AFFINE_RELU] = &cf_op_affine_relu,
    [CF_OP_CLAMP] = &cf_op_clamp,
    [CF_OP_BATCHNORM_RELU] = &cf_op_batchnorm_relu,
    [CF_OP_BATCHNORM_ADD_RELU] = &cf_op_batchnorm_add_relu,
    [CF_OP_QAFFINE] = &cf_op_qaffine,
    [CF_OP_QCONV2D] = &cf_op_qconv2d,
    [CF_OP_QCHAIN] = &cf_op_qchain,
    [CF_OP_ATTENTION] = &cf_op_attention,
    [CF_OP_CACHE_WRITE] = &cf_op_cache_write,
    [CF_OP_ROWS_AT] = &cf_op_rows_at,
};
