"""The first Python tests: the extension loads, and a placeholder + matmul graph runs."""
import numpy as np

import weft
import weft.compat.v1 as tf


def test_extension_loads():
    assert weft._weft.dtype_name(1) == "float32"


def test_placeholder_matmul():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, shape=[None, 2], name="x")
        w = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="w")
        y = tf.matmul(x, w)
    feed = np.array([[1.0, 0.5], [2.0, -1.0]], dtype=np.float32)
    with tf.Session(graph=g) as sess:
        out = sess.run(y, feed_dict={x: feed})
    np.testing.assert_allclose(out, feed @ np.array([[1, 2], [3, 4]], np.float32), rtol=1e-6)
    assert out.dtype == np.float32
    assert y.name == "MatMul:0"
    assert y.shape.as_list() == [None, 2]
