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


# ---------------------------------------------------------------------------------------------
# Batch normalization

class BatchNormalization:
    """tf.layers.BatchNormalization (TensorFlow 1.15's V1 layer): variables gamma, beta,
    moving_mean and moving_variance (the last two not trainable) under the layer's scope,
    FusedBatchNormV3 for 4-D inputs normalized over axis 3 or 1 (fused=None or True), else
    moments + batch_normalization. training (a bool or a boolean tensor) picks the batch's
    statistics or the moving ones; while training, moving statistics move toward the batch's
    by AssignSub ops ("<layer>/AssignMovingAvg", "_1") put in the UPDATE_OPS collection, the
    fused path's variance being the batch's Bessel-corrected one, as in TensorFlow. With a
    training tensor the update's momentum is 1 (no change) when it is false, as in TensorFlow's
    fused path."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=None, gamma_initializer=None, moving_mean_initializer=None,
                 moving_variance_initializer=None, beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None,
                 trainable=True, virtual_batch_size=None, adjustment=None, name=None,
                 **kwargs):
        unknown = set(kwargs) - {"dtype", "_reuse", "_scope"}
        if unknown:
            raise TypeError("Keyword argument not understood: %s" % sorted(unknown)[0])
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise NotImplementedError("BatchNormalization with renorm, virtual_batch_size or "
                                      "adjustment is not supported by weft")
        if beta_constraint is not None or gamma_constraint is not None:
            raise NotImplementedError("BatchNormalization constraints are not supported by weft")
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.momentum, self.epsilon = momentum, epsilon
        self.center, self.scale = center, scale
        self.beta_initializer = beta_initializer or _vars.zeros_initializer()
        self.gamma_initializer = gamma_initializer or _vars.ones_initializer()
        self.moving_mean_initializer = moving_mean_initializer or _vars.zeros_initializer()
        self.moving_variance_initializer = moving_variance_initializer or \
            _vars.ones_initializer()
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.fused = True if fused is None else fused
        self.trainable = trainable
        self.name = name
        self._reuse = kwargs.get("_reuse")
        self._scope = None
        self.built = False
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None
        self.updates = []

    def _axes(self, ndims):
        axis = self.axis if isinstance(self.axis, list) else [self.axis]
        out = []
        for a in axis:
            if not isinstance(a, int):
                raise TypeError("axis must be int or list, type given: %s" % type(a))
            if a < -ndims or a >= ndims:
                raise ValueError("Invalid axis: %d" % a)
            out.append(a + ndims if a < 0 else a)
        if len(set(out)) != len(out):
            raise ValueError("Duplicate axis: %s" % out)
        return out

    def build(self, input_shape):
        ndims = input_shape.ndims
        if not ndims:
            raise ValueError("Input has undefined rank: %s" % input_shape)
        self._axis = self._axes(ndims)
        dims = input_shape.as_list()
        for a in self._axis:
            if dims[a] is None:
                raise ValueError("Input has undefined `axis` dimension. Input shape: %s"
                                 % input_shape)
        # TensorFlow's V1 layer fuses whatever `fused` says when the op can do it
        self.fused = bool(self.fused) and ndims == 4 and self._axis in ([3], [1])
        if len(self._axis) == 1:
            shape = [dims[self._axis[0]]]
        else:
            shape = [dims[i] if i in self._axis else 1 for i in range(ndims)]
        get = _vars.get_variable
        if self.scale:
            self.gamma = get("gamma", shape, initializer=self.gamma_initializer,
                             regularizer=self.gamma_regularizer, trainable=self.trainable)
        if self.center:
            self.beta = get("beta", shape, initializer=self.beta_initializer,
                            regularizer=self.beta_regularizer, trainable=self.trainable)
        self.moving_mean = get("moving_mean", shape, initializer=self.moving_mean_initializer,
                               trainable=False)
        self.moving_variance = get("moving_variance", shape,
                                   initializer=self.moving_variance_initializer, trainable=False)
        self.built = True

    @property
    def variables(self):
        return [v for v in (self.gamma, self.beta, self.moving_mean, self.moving_variance)
                if v is not None]

    @property
    def trainable_variables(self):
        return [v for v in (self.gamma, self.beta) if v is not None] if self.trainable else []

    trainable_weights = trainable_variables
    weights = variables

    @property
    def non_trainable_variables(self):
        return [v for v in self.variables if v not in self.trainable_variables]

    def __call__(self, inputs, training=False):
        inputs = _ops._to_tensor(inputs)
        if self._scope is None:
            scope_ctx = _vars.variable_scope(self.name, default_name="batch_normalization",
                                             values=[inputs], reuse=self._reuse)
        else:
            scope_ctx = _vars.variable_scope(self._scope, reuse=True)
        with scope_ctx as scope:
            if self._scope is None:
                self._scope = scope
            if not self.built:
                self.build(inputs.shape)
            if self.fused:
                outputs, updates = self._fused(inputs, training)
            else:
                outputs, updates = self._plain(inputs, training)
        for u in updates:
            self.updates.append(u)
            _fw.add_to_collection(_fw.GraphKeys.UPDATE_OPS, u)
        return outputs

    apply = __call__

    def _momentum(self, training, dtype):
        if isinstance(training, bool):
            return _ops._to_tensor(self.momentum, dtype=dtype)
        from . import control_flow as _cf
        return _cf.cond(_ops._to_tensor(training),
                        lambda: _ops._to_tensor(self.momentum, dtype=dtype),
                        lambda: _ops._to_tensor(1.0, dtype=dtype))

    def _assign_moving_average(self, variable, value, momentum):
        with _fw.name_scope("AssignMovingAvg") as scope:
            g = variable.graph
            with g.colocate_with(variable):
                decay = _ops.subtract(_ops._to_tensor(1.0, dtype=momentum.dtype.base_dtype),
                                      momentum, name="decay")
                dtype = variable.dtype.base_dtype
                if decay.dtype.base_dtype != dtype:
                    decay = _ops.cast(decay, dtype)
                update_delta = (variable - _ops.cast(value, dtype)) * decay
                return variable.assign_sub(update_delta, name=scope)

    def _updates(self, training, mean, variance, dtype):
        if training is False:
            return []
        momentum = self._momentum(training, dtype)
        return [self._assign_moving_average(self.moving_mean, mean, momentum),
                self._assign_moving_average(self.moving_variance, variance, momentum)]

    def _constant_like(self, value, var_dtype, n):
        return _fw.constant(value, dtype=var_dtype, shape=[n])

    def _fused(self, inputs, training):
        n = self.moving_mean.shape.as_list()[0]
        pdtype = self.moving_mean.dtype.base_dtype
        gamma = self.gamma if self.scale else self._constant_like(1.0, pdtype, n)
        beta = self.beta if self.center else self._constant_like(0.0, pdtype, n)
        data_format = "NCHW" if self._axis == [1] else "NHWC"

        def train():
            return _nn.fused_batch_norm(inputs, gamma, beta, epsilon=self.epsilon,
                                        data_format=data_format)

        def infer():
            return _nn.fused_batch_norm(inputs, gamma, beta, mean=self.moving_mean,
                                        variance=self.moving_variance, epsilon=self.epsilon,
                                        is_training=False, data_format=data_format)

        if isinstance(training, bool):
            output, mean, variance = train() if training else infer()
        else:
            from . import control_flow as _cf
            output, mean, variance = _cf.cond(_ops._to_tensor(training), train, infer)
        return output, self._updates(training, mean, variance, pdtype)

    def _plain(self, inputs, training):
        ndims = inputs.shape.ndims
        reduction_axes = [i for i in range(ndims) if i not in self._axis]
        broadcast_shape = [1] * ndims
        broadcast_shape[self._axis[0]] = inputs.shape.as_list()[self._axis[0]]

        def _broadcast(v):
            if v is not None and v.shape.ndims != ndims and \
                    reduction_axes != list(range(ndims - 1)):
                return _ops.reshape(v, broadcast_shape)
            return v

        pdtype = self.moving_mean.dtype.base_dtype
        if training is False:
            mean, variance = self.moving_mean.value(), self.moving_variance.value()
            updates = []
        else:
            keep_dims = len(self._axis) > 1
            mean, variance = _nn.moments(_ops.cast(inputs, pdtype), reduction_axes,
                                         keep_dims=keep_dims)
            if not isinstance(training, bool):
                from . import control_flow as _cf
                t = _ops._to_tensor(training)
                batch_mean, batch_var = mean, variance
                mean = _cf.cond(t, lambda: batch_mean, lambda: self.moving_mean.value())
                variance = _cf.cond(t, lambda: batch_var, lambda: self.moving_variance.value())
            updates = self._updates(training, mean, variance, pdtype)
        dt = inputs.dtype.base_dtype
        offset = None if self.beta is None else _ops.cast(_broadcast(self.beta.value()), dt)
        scale = None if self.gamma is None else _ops.cast(_broadcast(self.gamma.value()), dt)
        outputs = _nn.batch_normalization(inputs, _broadcast(_ops.cast(mean, dt)),
                                          _broadcast(_ops.cast(variance, dt)), offset, scale,
                                          self.epsilon)
        return outputs, updates


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """The functional form of BatchNormalization (docstring there); remember to run the
    UPDATE_OPS collection with the training step."""
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
        renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
        trainable=trainable, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
        name=name, _reuse=reuse)
    return layer.apply(inputs, training=training)
