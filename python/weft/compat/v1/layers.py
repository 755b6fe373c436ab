"""tf.layers: the functional layers TensorFlow 1.x programs build models with (dense, conv2d,
max/average pooling, flatten, dropout), making the variables TensorFlow makes (dense/kernel
with glorot_uniform, dense/bias with zeros) under the same unique scope names."""
import numpy as _np

from . import framework as _fw
from . import nn as _nn
from . import ops as _ops
from . import variables as _vars


def _weights(kind, shape, dtype, kernel_initializer, bias_initializer, use_bias, bias_shape,
             trainable):
    kernel = _vars.get_variable(
        "kernel", shape, dtype=dtype, trainable=trainable,
        initializer=kernel_initializer or _vars.glorot_uniform_initializer())
    bias = None
    if use_bias:
        bias = _vars.get_variable("bias", bias_shape, dtype=dtype, trainable=trainable,
                                  initializer=bias_initializer or _vars.zeros_initializer())
    return kernel, bias


def _last_dim(x, layer):
    d = x.shape.ndims and x.shape.as_list()[-1]
    if d is None or not x.shape.ndims:
        raise ValueError("The last dimension of the inputs to `%s` should be defined. Found "
                         "`None`." % layer)
    return d


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    """activation(inputs @ kernel + bias); inputs of rank > 2 are multiplied on their last
    axis, as TensorFlow's Dense does."""
    inputs = _ops._to_tensor(inputs)
    n_in = _last_dim(inputs, "Dense")
    with _vars.variable_scope(name, default_name="dense", values=[inputs], reuse=reuse):
        kernel, bias = _weights("dense", [n_in, units], inputs.dtype.base_dtype,
                                kernel_initializer, bias_initializer, use_bias, [units],
                                trainable)
        rank = inputs.shape.ndims
        if rank == 2:
            out = _ops.matmul(inputs, kernel)
        else:
            flat = _ops.reshape(inputs, [-1, n_in])
            out = _ops.reshape(_ops.matmul(flat, kernel),
                               _ops.concat([_ops.shape(inputs)[:-1], [units]], 0))
        if bias is not None:
            out = _nn.bias_add(out, bias)
        return activation(out) if activation is not None else out


def _pair(v):
    return [v, v] if isinstance(v, int) else list(v)


def _padding(p):
    p = p.upper()
    if p not in ("VALID", "SAME"):
        raise ValueError("padding must be 'valid' or 'same', got %r" % p.lower())
    return p


def _channels_last(data_format):
    if data_format not in ("channels_last", "NHWC"):
        raise NotImplementedError("tf.layers with data_format=%r is not supported by weft: use "
                                  "channels_last (NHWC)" % data_format)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    _channels_last(data_format)
    inputs = _ops._to_tensor(inputs)
    n_in = _last_dim(inputs, "Conv2D")
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(strides)
    dh, dw = _pair(dilation_rate)
    with _vars.variable_scope(name, default_name="conv2d", values=[inputs], reuse=reuse):
        kernel, bias = _weights("conv2d", [kh, kw, n_in, filters], inputs.dtype.base_dtype,
                                kernel_initializer, bias_initializer, use_bias, [filters],
                                trainable)
        out = _nn.conv2d(inputs, kernel, [1, sh, sw, 1], _padding(padding),
                         dilations=[1, dh, dw, 1], name="Conv2D")
        if bias is not None:
            out = _nn.bias_add(out, bias)
        return activation(out) if activation is not None else out


def _pooling(fn, default, inputs, pool_size, strides, padding, data_format, name):
    _channels_last(data_format)
    with _fw.name_scope(name, default, [inputs]) as scope:
        return fn(inputs, [1] + _pair(pool_size) + [1], [1] + _pair(strides) + [1],
                  _padding(padding), name=scope.rstrip("/"))


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    return _pooling(_nn.max_pool, "max_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    return _pooling(_nn.avg_pool, "average_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


def flatten(inputs, name=None, data_format="channels_last"):
    """[batch, ...] -> [batch, product of the rest]."""
    inputs = _ops._to_tensor(inputs)
    with _fw.name_scope(name, "flatten", [inputs]) as scope:
        dims = inputs.shape.as_list() if inputs.shape.ndims is not None else None
        if dims is not None and all(d is not None for d in dims[1:]):
            return _ops.reshape(inputs, [-1, int(_np.prod(dims[1:], dtype=_np.int64))],
                                name=scope.rstrip("/"))
        raise ValueError("tf.layers.flatten needs the static shape of its input beyond the "
                         "batch axis, got %s" % (inputs.shape,))


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Drops with probability rate when training (a bool or a boolean tensor), else returns
    the inputs unchanged, as TensorFlow's Dropout layer."""
    inputs = _ops._to_tensor(inputs)
    with _fw.name_scope(name, "dropout", [inputs]) as scope:
        if isinstance(training, bool):
            if not training:
                return _ops.identity(inputs, name=scope.rstrip("/"))
            return _nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)
        dropped = _nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)
        return _ops.where_v2(_ops._to_tensor(training), dropped, inputs,
                             name=scope.rstrip("/"))
