"""tf.bitwise: TensorFlow 1.x's bitwise ops on integer tensors (BitwiseAnd, BitwiseOr,
BitwiseXor, Invert, LeftShift, RightShift: weft's kernels of the same names)."""
from . import ops as _ops

bitwise_and = _ops._binary("BitwiseAnd", "BitwiseAnd")
bitwise_or = _ops._binary("BitwiseOr", "BitwiseOr")
bitwise_xor = _ops._binary("BitwiseXor", "BitwiseXor")
left_shift = _ops._binary("LeftShift", "LeftShift")
right_shift = _ops._binary("RightShift", "RightShift")
invert = _ops._unary("Invert")
