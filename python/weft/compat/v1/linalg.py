"""tf.linalg: TensorFlow 1.x's linear-algebra namespace over weft's matrix ops (MatrixDiag,
MatrixBandPart, MatrixInverse, Cholesky, MatrixSolve, Qr, Svd, SelfAdjointEigV2, ...), plus what
TensorFlow builds from them in Python (eye, trace, norm, logdet, cholesky_solve, matvec). All ops
batch over the leading dimensions, and tensordot, einsum and cross (array_ops.py's). expm is
absent: no op for it."""
import numpy as _np

from . import array_ops as _array_ops
from . import dtypes as _dtypes
from . import framework as _fw
from . import nn as _nn
from . import ops as _ops

matmul = _ops.matmul
tensordot = _array_ops.tensordot
einsum = _array_ops.einsum
cross = _array_ops.cross
l2_normalize = _nn.l2_normalize


def _t(x):
    return _ops._to_tensor(x)


diag = _ops._unary("MatrixDiag")
diag_part = _ops._unary("MatrixDiagPart")
cholesky = _ops._unary("Cholesky")
det = _ops._unary("MatrixDeterminant")


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """a with its last two dimensions swapped (a batch of matrices transposed)."""
    a = _t(a)
    rank = a.shape.ndims
    with _fw.name_scope(name, "matrix_transpose", [a]) as scope:
        if rank is None:
            r = _ops.rank(a)
            perm = _ops.concat([_ops.range(r - 2), _ops.stack([r - 1, r - 2])], 0)
        elif rank < 2:
            raise ValueError("Argument 'a' should be a (batch) matrix, with rank >= 2.  Found: %s"
                             % a.shape)
        else:
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        return _ops.transpose(a, perm, name=scope)


transpose = matrix_transpose
adjoint = matrix_transpose  # weft's dtypes are real: the adjoint is the transpose


def set_diag(input, diagonal, name="set_diag"):  # noqa: A002
    return _ops._op("MatrixSetDiag", [_t(input), _t(diagonal)], (), name)


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """The band of each matrix: num_lower subdiagonals and num_upper superdiagonals kept (-1:
    all of them), the rest zero."""
    lo = _ops._to_tensor(num_lower, dtype=_dtypes.int64) if not isinstance(num_lower, _fw.Tensor) \
        else num_lower
    hi = _ops._to_tensor(num_upper, dtype=lo.dtype) if not isinstance(num_upper, _fw.Tensor) \
        else num_upper
    return _ops._op("MatrixBandPart", [_t(input), lo, hi], (), name or "MatrixBandPart")


def inv(input, adjoint=False, name=None):  # noqa: A002
    return _ops._op("MatrixInverse", [_t(input)], [("adjoint", "bool", bool(adjoint))],
                    name or "MatrixInverse")


def slogdet(input, name=None):  # noqa: A002
    """(sign, log|det|) of each matrix."""
    sign, logabs = _ops._op("LogMatrixDeterminant", [_t(input)], (),
                            name or "LogMatrixDeterminant")
    return sign, logabs


def logdet(matrix, name=None):
    """log(det(matrix)) of Hermitian positive-definite matrices, from their Cholesky factor:
    2 * sum(log(diag(L))), which does not overflow where det itself would."""
    with _fw.name_scope(name, "logdet", [matrix]) as scope:
        chol = cholesky(matrix)
        return _ops.multiply(_ops._to_tensor(2.0, dtype=chol.dtype.base_dtype),
                             _ops.reduce_sum(_ops.log(diag_part(chol)), axis=[-1]), name=scope)


def solve(matrix, rhs, adjoint=False, name=None):
    return _ops._op("MatrixSolve", [_t(matrix), _t(rhs)], [("adjoint", "bool", bool(adjoint))],
                    name or "MatrixSolve")


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    return _ops._op("MatrixTriangularSolve", [_t(matrix), _t(rhs)],
                    [("lower", "bool", bool(lower)), ("adjoint", "bool", bool(adjoint))],
                    name or "MatrixTriangularSolve")


def cholesky_solve(chol, rhs, name=None):
    """x with A x = rhs, given chol = cholesky(A): two triangular solves."""
    with _fw.name_scope(name, "cholesky_solve", [chol, rhs]) as scope:
        y = triangular_solve(chol, rhs, lower=True, adjoint=False)
        return triangular_solve(chol, y, lower=True, adjoint=True, name=scope)


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    return _ops._op("MatrixSolveLs", [_t(matrix), _t(rhs),
                                      _ops._to_tensor(l2_regularizer, dtype=_dtypes.float64)],
                    [("fast", "bool", bool(fast))], name or "MatrixSolveLs")


def qr(input, full_matrices=False, name=None):  # noqa: A002
    q, r = _ops._op("Qr", [_t(input)], [("full_matrices", "bool", bool(full_matrices))],
                    name or "Qr")
    return q, r


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """TensorFlow's order: (s, u, v) with tensor = u diag(s) v^T, or s alone when not
    compute_uv."""
    s, u, v = _ops._op("Svd", [_t(tensor)], [("compute_uv", "bool", bool(compute_uv)),
                                              ("full_matrices", "bool", bool(full_matrices))],
                       name or "Svd")
    return (s, u, v) if compute_uv else s


def eigh(tensor, name=None):
    """(e, v): the eigenvalues of each self-adjoint matrix in ascending order and unit
    eigenvectors as v's columns (SelfAdjointEigV2; only the lower triangle is read)."""
    e, v = _ops._op("SelfAdjointEigV2", [_t(tensor)], [("compute_v", "bool", True)],
                    name or "SelfAdjointEigV2")
    return e, v


def eigvalsh(tensor, name=None):
    """The eigenvalues of each self-adjoint matrix in ascending order (SelfAdjointEigV2 without
    eigenvectors)."""
    e, _ = _ops._op("SelfAdjointEigV2", [_t(tensor)], [("compute_v", "bool", False)],
                    name or "SelfAdjointEigV2")
    return e


def lu(input, output_idx_type=_dtypes.int32, name=None):  # noqa: A002
    """(lu, p): L below the diagonal (unit diagonal implied) and U on and above it, with
    input[p] = L U."""
    out, p = _ops._op("Lu", [_t(input)], [("output_idx_type", "type",
                                           _dtypes.as_dtype(output_idx_type).as_datatype_enum)],
                      name or "Lu")
    return out, p


def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dtypes.float32, name=None):
    """Identity matrices [*batch_shape, num_rows, num_columns]: a constant when the sizes are
    Python numbers, else built by MatrixDiagV3 at run time."""
    dtype = _dtypes.as_dtype(dtype)
    cols = num_rows if num_columns is None else num_columns
    sizes = [num_rows, cols] + list(batch_shape or [])
    if all(isinstance(s, (int, _np.integer)) for s in sizes):
        m = _np.eye(int(num_rows), int(cols), dtype=dtype.as_numpy_dtype)
        if batch_shape:
            m = _np.broadcast_to(m, list(batch_shape) + list(m.shape)).copy()
        return _fw.constant(m, dtype=dtype, name=name or "eye")
    with _fw.name_scope(name, "eye", []) as scope:
        rows = _ops._to_tensor(num_rows, dtype=_dtypes.int32)
        cols = _ops._to_tensor(cols, dtype=_dtypes.int32)
        batch = _ops._to_tensor([] if batch_shape is None else batch_shape, dtype=_dtypes.int32)
        n = _ops.reshape(_ops.minimum(rows, cols), [1])
        ones = _ops.ones(_ops.concat([batch, n], 0), dtype=dtype)
        return _ops._op("MatrixDiagV3", [ones, _ops._to_tensor(0, dtype=_dtypes.int32), rows,
                                         cols, _ops._to_tensor(0, dtype=dtype)],
                        [("align", "string", b"RIGHT_LEFT")], scope)


def trace(x, name=None):
    """The sum of each matrix's diagonal."""
    with _fw.name_scope(name, "Trace", [x]) as scope:
        return _ops.reduce_sum(diag_part(x), axis=[-1], name=scope)


def matvec(a, b, transpose_a=False, adjoint_a=False, name=None):
    """a @ b for matrices a and vectors b (batched)."""
    with _fw.name_scope(name, "MatVec", [a, b]) as scope:
        out = matmul(a, _ops.expand_dims(b, -1), transpose_a=transpose_a, adjoint_a=adjoint_a)
        return _ops.squeeze(out, axis=[-1], name=scope)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None,  # noqa: A002
         keep_dims=None):
    """The vector p-norm (any ord > 0, inf) over one axis or the whole tensor, or the matrix
    norm ('fro'/'euclidean', 1, 2, inf) over a pair of axes."""
    keep = bool(keepdims if keepdims is not None else (keep_dims or False))
    x = _t(tensor)
    is_matrix = isinstance(axis, (list, tuple)) and len(axis) == 2
    if isinstance(axis, (list, tuple)) and len(axis) == 1:
        axis = axis[0]
    elif isinstance(axis, (list, tuple)) and not is_matrix:
        raise ValueError("'axis' must be None, an integer, or a tuple of 2 unique integers, got "
                         "%s" % (axis,))
    supported = ("euclidean", "fro", 1, 2, _np.inf) if is_matrix else None
    if is_matrix and ord not in supported:
        raise ValueError("'ord' must be a supported matrix norm in %s, got %s" % (supported, ord))
    if not is_matrix and not (ord == "euclidean" or ord == "fro" and axis is None or
                              isinstance(ord, (int, float)) and ord > 0):
        raise ValueError("'ord' must be a supported vector norm, got %s" % ord)
    with _fw.name_scope(name, "norm", [x]) as scope:
        if is_matrix:
            rank = x.shape.ndims
            r0, r1 = [a % rank if a < 0 else a for a in axis]
            if ord in ("euclidean", "fro"):
                out = _ops.sqrt(_ops.reduce_sum(_ops.square(x), axis=list(axis), keepdims=True))
            elif ord == 2:
                perm = [d for d in range(rank) if d not in (r0, r1)] + [r0, r1]
                s = svd(_ops.transpose(x, perm), compute_uv=False)
                out = _ops.reduce_max(s, axis=-1)
                for a in sorted((r0, r1)):
                    out = _ops.expand_dims(out, a)
            else:
                # 1: the largest column sum (over rows r0); inf: the largest row sum
                inner, outer = (r0, r1) if ord == 1 else (r1, r0)
                out = _ops.reduce_max(_ops.reduce_sum(_ops.abs(x), axis=inner, keepdims=True),
                                      axis=outer, keepdims=True)
            if not keep:
                out = _ops.squeeze(out, axis=sorted((r0, r1)))
            return _ops.identity(out, name=scope)
        if ord in ("euclidean", "fro", 2):
            out = _ops.sqrt(_ops.reduce_sum(_ops.square(x), axis=axis, keepdims=keep))
        elif ord == _np.inf:
            out = _ops.reduce_max(_ops.abs(x), axis=axis, keepdims=keep)
        elif ord == 1:
            out = _ops.reduce_sum(_ops.abs(x), axis=axis, keepdims=keep)
        else:
            p = _ops._to_tensor(float(ord), dtype=x.dtype.base_dtype)
            out = _ops.pow(_ops.reduce_sum(_ops.pow(_ops.abs(x), p), axis=axis, keepdims=keep),
                           _ops.reciprocal(p))
        return _ops.identity(out, name=scope)
