#!/usr/bin/python3
"""Times a float32 Conv3D ([8, 16, 16, 16, 16] NDHWC, a constant 3x3x3x16x32 filter, SAME) and
its two gradients (Conv3DBackpropInputV2, Conv3DBackpropFilterV2) in a Weft session: the median
of 21 session.run calls each (docs/performance.md, "3-D convolutions on the 2-D kernels").

  PYTHONPATH=build/python:python/tests WEFT_CUDA_DISABLE=1 /usr/bin/python3 scripts/bench-conv3d.py 2
  WEFT_CPU_CONV3D_FAST=0 PYTHONPATH=... /usr/bin/python3 scripts/bench-conv3d.py 1   # the generic path

The argument is the intra-op thread count (default 2)."""
import statistics
import sys
import time

import numpy as np
import weft.compat.v1 as tf

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
rng = np.random.RandomState(0)
x = tf.placeholder(tf.float32, [8, 16, 16, 16, 16])
dy = tf.placeholder(tf.float32, [8, 16, 16, 16, 32])
f = tf.constant(rng.uniform(-1, 1, (3, 3, 3, 16, 32)).astype(np.float32))
y = tf.nn.conv3d(x, f, strides=[1] * 5, padding="SAME")
dx = tf.gradients(y, x, grad_ys=dy)[0]
df = tf.gradients(y, f, grad_ys=dy)[0]
feed = {x: rng.uniform(-1, 1, (8, 16, 16, 16, 16)).astype(np.float32),
        dy: rng.uniform(-1, 1, (8, 16, 16, 16, 32)).astype(np.float32)}
flops = 2 * 8 * 16 ** 3 * 27 * 16 * 32
config = tf.ConfigProto(intra_op_parallelism_threads=threads)
with tf.Session(config=config) as s:
    for name, t in (("Conv3D", y), ("Conv3DBackpropInputV2", dx), ("Conv3DBackpropFilterV2", df)):
        for _ in range(3):
            s.run(t, feed)
        times = []
        for _ in range(21):
            t0 = time.perf_counter()
            s.run(t, feed)
            times.append(time.perf_counter() - t0)
        ms = statistics.median(times) * 1e3
        print("%d threads: %-22s %8.2f ms  %6.1f GFLOP/s" % (threads, name, ms, flops / ms / 1e6))
