#!/usr/bin/env python3
"""The reference numbers of tests/test_resource_apply.c: one step of each TensorFlow optimizer
update (tensorflow/core/kernels/training_ops.cc's formulas) in float64, from the test's inputs:
var [1, -2], grad [0.5, -0.3]. Prints the variable and its slots after the step."""
import math

V, G = [1.0, -2.0], [0.5, -0.3]


def adam(m, v, b1p, b2p, lr, b1, b2, eps):
    lr_t = lr * math.sqrt(1 - b2p) / (1 - b1p)
    out = []
    for i in range(2):
        mi = m[i] + (G[i] - m[i]) * (1 - b1)
        vi = v[i] + (G[i] * G[i] - v[i]) * (1 - b2)
        out.append((V[i] - mi * lr_t / (math.sqrt(vi) + eps), mi, vi))
    return out


def adagrad_v2(accum, lr, eps):
    out = []
    for i in range(2):
        a = accum[i] + G[i] ** 2
        out.append((V[i] - lr * G[i] / (math.sqrt(a) + eps), a))
    return out


def centered_rmsprop(mg, ms, mom, lr, rho, momentum, eps):
    out = []
    for i in range(2):
        s = ms[i] + (G[i] ** 2 - ms[i]) * (1 - rho)
        g = mg[i] + (G[i] - mg[i]) * (1 - rho)
        m = mom[i] * momentum + G[i] * lr / math.sqrt(s - g * g + eps)
        out.append((V[i] - m, g, s, m))
    return out


def adadelta(accum, accum_update, lr, rho, eps):
    out = []
    for i in range(2):
        a = accum[i] * rho + G[i] ** 2 * (1 - rho)
        up = math.sqrt(accum_update[i] + eps) / math.sqrt(a + eps) * G[i]
        u = accum_update[i] * rho + up * up * (1 - rho)
        out.append((V[i] - up * lr, a, u))
    return out


print("Adam", adam([0.1, 0.2], [0.01, 0.04], 0.9, 0.999, 0.01, 0.9, 0.999, 1e-8))
print("AdagradV2", adagrad_v2([0.1, 0.2], 0.1, 0.01))
print("CenteredRMSProp",
      centered_rmsprop([0.05, -0.1], [0.3, 0.4], [0.01, 0.02], 0.1, 0.9, 0.5, 1e-3))
print("Adadelta", adadelta([0.3, 0.4], [0.02, 0.03], 1.0, 0.95, 1e-6))
