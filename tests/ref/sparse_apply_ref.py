#!/usr/bin/env python3
"""The reference numbers of tests/test_sparse_apply.c: one step of TensorFlow's sparse, FTRL
and proximal Adagrad updates (tensorflow/core/kernels/training_ops.cc's formulas) in float64 from
the test's inputs: a [3, 2] variable with slots, rows INDICES updated by the rows of GRAD (the dense FTRL cases use
DENSE_GRAD). Prints each case's variable and slots after the step as C initialisers."""
import math

VAR = [[1.0, -2.0], [0.5, 0.25], [-1.0, 3.0]]
ACCUM = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]
LINEAR = [[0.01, -0.02], [0.03, 0.0], [-0.05, 0.04]]
INDICES = [2, 0]
GRAD = [[0.5, -0.3], [0.2, 0.4]]
DENSE_GRAD = [[0.5, -0.3], [0.2, 0.4], [-0.1, 0.6]]


def f32(x):
    """Inputs are float32 in the test: round them as it does."""
    import struct
    return struct.unpack("f", struct.pack("f", x))[0]


def rows(m):
    return [[f32(x) for x in r] for r in m]


def ftrl_elem(v, a, lin, g, lr, l1, l2, shrink, lr_power, mult):
    gs = g + 2 * shrink * v
    na = a + g * g
    p = (lambda x: math.sqrt(x)) if lr_power == -0.5 else (lambda x: x ** -lr_power)
    sigma = p(na) - p(a)
    lin = lin + (gs * lr - sigma * v if mult else gs - sigma / lr * v)
    l1e = l1 * lr if mult else l1
    quad = p(na) + 2 * l2 * lr if mult else p(na) / lr + 2 * l2
    v = (max(min(lin, l1e), -l1e) - lin) / quad
    return v, na, lin


def run(kind, dense=False, **k):
    var, acc, lin = rows(VAR), rows(ACCUM), rows(LINEAR)
    pairs = [(r, r) for r in range(3)] if dense else list(enumerate(INDICES))
    grad = rows(DENSE_GRAD if dense else GRAD)
    for gi, r in pairs:
        for j in range(2):
            g, v, a = grad[gi][j], var[r][j], acc[r][j]
            if kind == "adagrad":
                a += g * g
                v -= k["lr"] * g / (math.sqrt(a) + k.get("eps", 0.0))
            elif kind == "prox":
                # FOBOS at Adagrad's rate: gradient step, then l1 soft threshold and l2 shrink.
                a += g * g
                rate = k["lr"] / math.sqrt(a)
                prox = v - rate * g
                mag = max(abs(prox) - rate * k["l1"], 0.0)
                v = math.copysign(mag, prox) / (1 + rate * k["l2"])
            elif kind == "momentum":
                a = a * k["mom"] + g
                v -= g * k["lr"] + a * k["mom"] * k["lr"] if k["nesterov"] else k["lr"] * a
            else:
                v, a, lin[r][j] = ftrl_elem(v, a, lin[r][j], g, k["lr"], k["l1"], k["l2"],
                                            k.get("shrink", 0.0), k["lr_power"], k["mult"])
            var[r][j], acc[r][j] = v, a
    return var, acc, lin


def show(name, out, n):
    print("/* %s */" % name)
    for m in out[:n]:
        print("{" + ", ".join("%.17g" % x for r in m for x in r) + "},")


F = dict(lr=f32(0.1), l1=f32(0.05), l2=f32(0.02))
show("sparse adagrad", run("adagrad", lr=f32(0.1)), 2)
show("sparse adagrad v2", run("adagrad", lr=f32(0.1), eps=f32(0.01)), 2)
show("sparse momentum", run("momentum", lr=f32(0.1), mom=f32(0.9), nesterov=False), 2)
show("sparse momentum nesterov", run("momentum", lr=f32(0.1), mom=f32(0.9), nesterov=True), 2)
show("sparse ftrl", run("ftrl", lr_power=-0.5, mult=False, **F), 3)
show("sparse ftrl lr_power -0.7", run("ftrl", lr_power=f32(-0.7), mult=False, **F), 3)
show("sparse ftrl v2", run("ftrl", lr_power=-0.5, mult=False, shrink=f32(0.1), **F), 3)
show("dense ftrl", run("ftrl", dense=True, lr_power=-0.5, mult=False, **F), 3)
show("dense ftrl v2 multiply_linear_by_lr", run("ftrl", dense=True, lr_power=-0.5, mult=True,
                                                  shrink=f32(0.1), **F), 3)
P = dict(lr=f32(0.1), l1=f32(0.05), l2=f32(0.02))
show("sparse proximal adagrad", run("prox", **P), 2)
show("sparse proximal adagrad l1 0", run("prox", lr=f32(0.1), l1=0.0, l2=f32(0.02)), 2)
show("dense proximal adagrad", run("prox", dense=True, lr=f32(0.1), l1=2.0, l2=f32(0.02)), 2)
