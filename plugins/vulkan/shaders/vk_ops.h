/* vk_ops.h: the numbers the Vulkan plugin's C code and its GLSL compute shaders agree on: dtype
 * codes, op codes and reduction codes passed in push constants. Only #defines, so that both
 * languages can include it (the shaders through glslc's #include). */
#ifndef WEFT_VK_OPS_H
#define WEFT_VK_OPS_H

/* Element types as the shaders see them. Every buffer is an array of 32-bit words; bool
 * tensors are one byte per element, four to a word. */
#define VK_DT_F32 0u
#define VK_DT_I32 1u
#define VK_DT_BOOL 2u

/* Workgroup size of the one-dimensional shaders. */
#define VK_LOCAL_SIZE 256u

/* Unary ops (unary.comp). */
#define VK_UN_NEG 0u
#define VK_UN_ABS 1u
#define VK_UN_SQUARE 2u
#define VK_UN_SQRT 3u
#define VK_UN_RSQRT 4u
#define VK_UN_EXP 5u
#define VK_UN_LOG 6u
#define VK_UN_LOG1P 7u
#define VK_UN_EXPM1 8u
#define VK_UN_SIGN 9u
#define VK_UN_RECIPROCAL 10u
#define VK_UN_FLOOR 11u
#define VK_UN_CEIL 12u
#define VK_UN_ROUND 13u
#define VK_UN_SIN 14u
#define VK_UN_COS 15u
#define VK_UN_TAN 16u
#define VK_UN_ASIN 17u
#define VK_UN_ACOS 18u
#define VK_UN_ATAN 19u
#define VK_UN_SINH 20u
#define VK_UN_COSH 21u
#define VK_UN_ASINH 22u
#define VK_UN_ACOSH 23u
#define VK_UN_ATANH 24u
#define VK_UN_TANH 25u
#define VK_UN_SIGMOID 26u
#define VK_UN_ERF 27u
#define VK_UN_RELU 28u
#define VK_UN_RELU6 29u
#define VK_UN_ELU 30u
#define VK_UN_SELU 31u
#define VK_UN_LEAKY_RELU 32u
#define VK_UN_SOFTPLUS 33u
#define VK_UN_SOFTSIGN 34u
#define VK_UN_ERFC 35u
/* bool results */
#define VK_UN_ISNAN 64u
#define VK_UN_ISINF 65u
#define VK_UN_ISFINITE 66u
#define VK_UN_LOGICAL_NOT 67u
#define VK_UN_FIRST_BOOL_OUT 64u

/* Binary ops (binary.comp). */
#define VK_BIN_ADD 0u
#define VK_BIN_SUB 1u
#define VK_BIN_MUL 2u
#define VK_BIN_DIV 3u
#define VK_BIN_MAX 4u
#define VK_BIN_MIN 5u
#define VK_BIN_POW 6u
#define VK_BIN_SQDIFF 7u
#define VK_BIN_DIV_NO_NAN 8u
#define VK_BIN_FLOORDIV 9u
#define VK_BIN_FLOORMOD 10u
#define VK_BIN_TRUNCMOD 11u
#define VK_BIN_ATAN2 12u
#define VK_BIN_RELU_GRAD 13u
#define VK_BIN_RELU6_GRAD 14u
#define VK_BIN_SIGMOID_GRAD 15u
#define VK_BIN_TANH_GRAD 16u
#define VK_BIN_ELU_GRAD 17u
#define VK_BIN_LEAKY_RELU_GRAD 18u
#define VK_BIN_SOFTPLUS_GRAD 19u
#define VK_BIN_SQRT_GRAD 20u
#define VK_BIN_RSQRT_GRAD 21u
#define VK_BIN_RECIPROCAL_GRAD 22u
#define VK_BIN_CLIP_HI 23u /* x > y ? y : x (ClipByValue's upper bound, NaN bounds ignored) */
#define VK_BIN_CLIP_LO 24u /* x < y ? y : x */
/* bool results */
#define VK_BIN_EQ 64u
#define VK_BIN_NE 65u
#define VK_BIN_LT 66u
#define VK_BIN_LE 67u
#define VK_BIN_GT 68u
#define VK_BIN_GE 69u
#define VK_BIN_AND 70u
#define VK_BIN_OR 71u
#define VK_BIN_FIRST_BOOL_OUT 64u

/* Reductions (reduce_rows.comp, reduce_cols.comp). */
#define VK_RED_SUM 0u
#define VK_RED_MEAN 1u
#define VK_RED_MAX 2u
#define VK_RED_MIN 3u
#define VK_RED_PROD 4u
#define VK_RED_ALL 5u
#define VK_RED_ANY 6u
#define VK_RED_ARGMAX 7u /* index of the first largest (a NaN wins), reduce_cols only */
#define VK_RED_ARGMIN 8u
#define VK_RED_L2 9u     /* sum of squares / 2 (L2Loss) */

/* Most dims a strided shader (binary, gather) walks after collapsing. */
#define VK_MAX_DIMS 8
/* Select's three operands fit 128 bytes of push constants only with one dim less. */
#define VK_SELECT_MAX_DIMS 7

#endif /* WEFT_VK_OPS_H */
