"""compat.v1's TensorFlow 1.x namespaces: tf.gfile/tf.io.gfile on a temporary directory,
tf.io.write_graph, tf.compat, tf.random and tf.initializers (statistics and seeds),
tf.linalg against numpy.linalg, tf.graph_util (frozen graphs re-imported and run),
tf.debugging's asserts and tf.bitwise against numpy."""
import os

import numpy as np
import pytest

import weft.compat.v1 as tf
from weft import errors


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run(*fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(list(fetches) if len(fetches) > 1 else fetches[0], feed_dict=feed)


# ---------------------------------------------------------------------------------------------
# tf.gfile / tf.io.gfile

def test_gfile_write_read_text_and_binary(tmp_path):
    path = str(tmp_path / "a.txt")
    with tf.gfile.GFile(path, "w") as f:
        f.write("line one\n")
        f.write(b"line two\n")
    with tf.gfile.Open(path) as f:
        assert f.read() == "line one\nline two\n"
    with tf.io.gfile.GFile(path, "rb") as f:
        assert f.read(4) == b"line"
        assert f.tell() == 4
        f.seek(5)
        assert f.readline() == b"one\n"
    with tf.gfile.FastGFile(path, "r") as f:
        assert list(f) == ["line one\n", "line two\n"]
    with tf.gfile.GFile(path, "a") as f:
        f.write("three")
    assert tf.gfile.GFile(path).size() == 23
    assert tf.gfile.Stat(path).length == 23
    assert tf.io.gfile.stat(path).is_directory is False
    assert tf.gfile.Stat(str(tmp_path)).is_directory is True


def test_gfile_directories_glob_copy_rename_remove(tmp_path):
    root = str(tmp_path / "r")
    deep = os.path.join(root, "x", "y")
    tf.gfile.MakeDirs(deep)
    tf.io.gfile.makedirs(deep)  # existing: no error
    assert tf.gfile.IsDirectory(deep) and tf.io.gfile.isdir(root)
    assert not tf.gfile.Exists(os.path.join(root, "f"))
    for name in ("b.txt", "a.txt", "c.log"):
        with tf.gfile.GFile(os.path.join(root, name), "w") as f:
            f.write(name)
    assert tf.gfile.ListDirectory(root) == ["a.txt", "b.txt", "c.log", "x"]
    assert tf.io.gfile.listdir(root) == ["a.txt", "b.txt", "c.log", "x"]
    assert tf.gfile.Glob(os.path.join(root, "*.txt")) == [os.path.join(root, "a.txt"),
                                                          os.path.join(root, "b.txt")]
    assert tf.io.gfile.glob([os.path.join(root, "*.log")]) == [os.path.join(root, "c.log")]
    tf.gfile.Copy(os.path.join(root, "a.txt"), os.path.join(root, "d.txt"))
    assert tf.gfile.GFile(os.path.join(root, "d.txt")).read() == "a.txt"
    with pytest.raises(errors.AlreadyExistsError):
        tf.gfile.Copy(os.path.join(root, "a.txt"), os.path.join(root, "d.txt"))
    tf.io.gfile.copy(os.path.join(root, "b.txt"), os.path.join(root, "d.txt"), overwrite=True)
    assert tf.gfile.GFile(os.path.join(root, "d.txt")).read() == "b.txt"
    with pytest.raises(errors.AlreadyExistsError):
        tf.gfile.Rename(os.path.join(root, "a.txt"), os.path.join(root, "d.txt"))
    tf.gfile.Rename(os.path.join(root, "a.txt"), os.path.join(root, "e.txt"))
    assert not tf.gfile.Exists(os.path.join(root, "a.txt"))
    tf.io.gfile.rename(os.path.join(root, "e.txt"), os.path.join(root, "d.txt"), overwrite=True)
    assert tf.gfile.GFile(os.path.join(root, "d.txt")).read() == "a.txt"
    tf.gfile.Remove(os.path.join(root, "d.txt"))
    assert tf.io.gfile.listdir(root) == ["b.txt", "c.log", "x"]
    walked = list(tf.gfile.Walk(root))
    assert walked[0] == (root, ["x"], ["b.txt", "c.log"])
    assert walked[-1] == (deep, [], [])
    tf.gfile.DeleteRecursively(root)
    assert not tf.gfile.Exists(root)


def test_gfile_errors_as_tensorflow(tmp_path):
    missing = str(tmp_path / "missing")
    with pytest.raises(errors.NotFoundError, match="No such file or directory"):
        tf.gfile.GFile(missing).read()
    with pytest.raises(errors.NotFoundError):
        tf.gfile.Remove(missing)
    with pytest.raises(errors.NotFoundError):
        tf.gfile.Stat(missing)
    with pytest.raises(errors.NotFoundError):
        tf.gfile.DeleteRecursively(missing)
    with pytest.raises(errors.NotFoundError, match="Could not find directory " + missing):
        tf.gfile.ListDirectory(missing)
    tf.gfile.MkDir(missing)
    with pytest.raises(errors.AlreadyExistsError):
        tf.gfile.MkDir(missing)
    with pytest.raises(errors.UnimplementedError) as e:
        tf.gfile.Exists("gs://bucket/x")
    assert str(e.value) == "File system scheme 'gs' not implemented (file: 'gs://bucket/x')"
    with pytest.raises(errors.UnimplementedError, match="scheme 'hdfs'"):
        tf.io.gfile.GFile("hdfs://nn/x", "w")
    assert tf.gfile.Exists("file://" + missing)


# ---------------------------------------------------------------------------------------------
# tf.io

def test_io_write_graph_text_and_binary(tmp_path):
    tf.add(tf.constant(1.0, name="a"), 2.0, name="sum")
    g = tf.get_default_graph()
    path = tf.io.write_graph(g, str(tmp_path / "d"), "g.pbtxt")
    assert path == str(tmp_path / "d" / "g.pbtxt")
    assert 'name: "sum"' in tf.gfile.GFile(path).read()
    path = tf.io.write_graph(g.as_graph_def(), str(tmp_path), "g.pb", as_text=False)
    gd = tf.GraphDef.FromString(tf.io.gfile.GFile(path, "rb").read())
    assert [n.op for n in gd.node] == ["Const", "Const", "AddV2"]
    assert tf.io.gfile is tf.gfile


# ---------------------------------------------------------------------------------------------
# tf.compat

def test_compat_strings_and_v1():
    assert tf.compat.v1 is tf
    assert tf.compat.v1.placeholder is tf.placeholder
    assert tf.compat.as_bytes("héllo") == "héllo".encode()
    assert tf.compat.as_bytes(bytearray(b"ab")) == b"ab"
    assert tf.compat.as_text(b"h\xc3\xa9") == "hé"
    assert tf.compat.as_str(b"x") == "x" and tf.compat.as_str("y") == "y"
    assert tf.compat.as_str_any(b"z") == "z" and tf.compat.as_str_any(12) == "12"
    with pytest.raises(TypeError, match="Expected binary or unicode string, got 3"):
        tf.compat.as_bytes(3)
    with pytest.raises(TypeError, match="Expected binary or unicode string, got None"):
        tf.compat.as_text(None)
    assert tf.compat.dimension_value(tf.Dimension(4)) == 4
    assert tf.compat.dimension_value(None) is None


def test_compat_forward_compatible():
    assert tf.compat.forward_compatible(2019, 1, 1)
    assert not tf.compat.forward_compatible(2021, 1, 1)
    with tf.compat.forward_compatibility_horizon(2022, 1, 1):
        assert tf.compat.forward_compatible(2021, 1, 1)
    assert not tf.compat.forward_compatible(2021, 1, 1)


# ---------------------------------------------------------------------------------------------
# tf.random

def test_random_distributions_statistics():
    tf.random.set_random_seed(7)
    n = tf.random.normal([20000], mean=2.0, stddev=3.0)
    u = tf.random.uniform([20000], minval=-1.0, maxval=3.0)
    t = tf.random.truncated_normal([20000], stddev=2.0)
    ui = tf.random.uniform([20000], minval=5, maxval=9, dtype=tf.int32)
    gm = tf.random.gamma([20000], alpha=[2.0, 5.0], beta=2.0)
    po = tf.random.poisson([3.0, 10.0], [20000], dtype=tf.int64)
    n, u, t, ui, gm, po = run(n, u, t, ui, gm, po)
    assert abs(n.mean() - 2.0) < 0.1 and abs(n.std() - 3.0) < 0.1
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.05
    assert np.abs(t).max() <= 4.0 and abs(t.std() - 2 * 0.87962566) < 0.05
    assert set(np.unique(ui)) == {5, 6, 7, 8}
    assert gm.shape == (20000, 2) and gm.dtype == np.float32
    np.testing.assert_allclose(gm.mean(axis=0), [1.0, 2.5], rtol=0.05)  # alpha / beta
    assert po.shape == (20000, 2) and po.dtype == np.int64
    np.testing.assert_allclose(po.mean(axis=0), [3.0, 10.0], rtol=0.05)


def test_random_shuffle_permutes_rows_and_seeds_repeat():
    x = np.arange(40, dtype=np.float32).reshape(20, 2)
    s1 = tf.random.shuffle(x, seed=3)
    s2 = tf.random_shuffle(x, seed=3)
    a, b = run(s1, s2)
    assert not np.array_equal(a, x)
    np.testing.assert_array_equal(a[np.argsort(a[:, 0])], x)
    np.testing.assert_array_equal(a, b)  # same graph seed (none) and op seed: same stream
    assert tf.random.get_seed(5) == (tf.ops.DEFAULT_GRAPH_SEED, 5)


# ---------------------------------------------------------------------------------------------
# tf.initializers

def _var(name, init, shape):
    return tf.get_variable(name, shape=shape, initializer=init)


def test_initializers_values_and_scales():
    tf.set_random_seed(1)
    shape = [400, 300]
    vs = {
        "zeros": _var("z", tf.initializers.zeros(), [2, 3]),
        "ones": _var("o", tf.initializers.ones(), [2, 3]),
        "constant": _var("c", tf.initializers.constant([[1, 2, 3], [4, 5, 6]]), [2, 3]),
        "he_normal": _var("hn", tf.initializers.he_normal(), shape),
        "he_uniform": _var("hu", tf.initializers.he_uniform(), shape),
        "lecun_normal": _var("ln", tf.initializers.lecun_normal(), shape),
        "lecun_uniform": _var("lu", tf.initializers.lecun_uniform(), shape),
        "glorot_uniform": _var("gu", tf.initializers.glorot_uniform(), shape),
        "glorot_normal": _var("gn", tf.initializers.glorot_normal(), shape),
        "variance_scaling": _var("vs", tf.initializers.variance_scaling(
            3.0, "fan_out", "untruncated_normal"), shape),
        "random_uniform": _var("ru", tf.initializers.random_uniform(-2.0, 2.0), shape),
        "random_normal": _var("rn", tf.initializers.random_normal(1.0, 0.5), shape),
        "truncated_normal": _var("tn", tf.initializers.truncated_normal(0.0, 0.5), shape),
    }
    with tf.Session() as sess:
        sess.run(tf.initializers.global_variables())
        got = sess.run(vs)
    np.testing.assert_array_equal(got["zeros"], np.zeros((2, 3)))
    np.testing.assert_array_equal(got["ones"], np.ones((2, 3)))
    np.testing.assert_array_equal(got["constant"], [[1, 2, 3], [4, 5, 6]])
    fan_in, fan_out = 400.0, 300.0
    # truncated at two stddevs, the stddev asked for is reached by dividing by .8796...
    want_std = {"he_normal": np.sqrt(2 / fan_in), "lecun_normal": np.sqrt(1 / fan_in),
                "glorot_normal": np.sqrt(2 / (fan_in + fan_out)),
                "he_uniform": np.sqrt(2 / fan_in), "lecun_uniform": np.sqrt(1 / fan_in),
                "glorot_uniform": np.sqrt(2 / (fan_in + fan_out)),
                "variance_scaling": np.sqrt(3 / fan_out), "random_uniform": 4 / np.sqrt(12),
                "random_normal": 0.5, "truncated_normal": 0.5 * 0.87962566}
    for k, std in want_std.items():
        assert abs(got[k].std() - std) / std < 0.03, k
    limit = np.sqrt(3 * 2 / fan_in)
    assert got["he_uniform"].max() <= limit and got["he_uniform"].min() >= -limit
    assert abs(got["random_normal"].mean() - 1.0) < 0.01


def test_initializers_variables_and_local_variables():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b")
    loc = tf.get_local_variable("loc", shape=[], initializer=tf.initializers.constant(5.0))
    with tf.Session() as sess:
        sess.run(tf.initializers.variables([a]))
        assert sess.run(a) == 1.0
        with pytest.raises(errors.FailedPreconditionError):
            sess.run(b)
        sess.run(tf.initializers.local_variables())
        assert sess.run(loc) == 5.0


# ---------------------------------------------------------------------------------------------
# tf.linalg

A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])  # symmetric positive definite
B = np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]])
BATCH = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_linalg_structure_ops():
    got = run(tf.linalg.transpose(BATCH), tf.linalg.matrix_transpose(B), tf.linalg.adjoint(B),
              tf.linalg.diag([[1.0, 2.0], [3.0, 4.0]]), tf.linalg.diag_part(BATCH),
              tf.linalg.band_part(BATCH, 1, 0), tf.linalg.band_part(BATCH, -1, 1),
              tf.linalg.set_diag(BATCH, np.ones((2, 3), np.float32)),
              tf.linalg.trace(BATCH), tf.linalg.matmul(A, B), tf.linalg.matvec(A, B[:, 0]))
    sd = BATCH.copy()
    sd[:, [0, 1, 2], [0, 1, 2]] = 1
    rows, cols = np.indices((3, 4))
    want = [BATCH.transpose(0, 2, 1), B.T, B.T,
            np.stack([np.diag([1.0, 2.0]), np.diag([3.0, 4.0])]),
            np.diagonal(BATCH, axis1=1, axis2=2), BATCH * ((rows - cols <= 1) & (cols <= rows)),
            BATCH * (cols - rows <= 1), sd, np.trace(BATCH, axis1=1, axis2=2), A @ B,
            A @ B[:, 0]]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    with pytest.raises(ValueError, match="should be a \\(batch\\) matrix, with rank >= 2"):
        tf.linalg.transpose([1.0, 2.0])


def test_linalg_eye():
    n = tf.placeholder(tf.int32, [])
    got = run(tf.linalg.eye(3), tf.eye(2, 3, dtype=tf.int32), tf.linalg.eye(2, batch_shape=[2]),
              tf.linalg.eye(n, 4, batch_shape=[2]), feed={n: 3})
    want = [np.eye(3), np.eye(2, 3), np.stack([np.eye(2)] * 2), np.stack([np.eye(3, 4)] * 2)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert got[1].dtype == np.int32
    assert tf.linalg.eye(3).shape.as_list() == [3, 3]


def test_linalg_decompositions_and_solves():
    a, b = tf.constant(A), tf.constant(B)
    chol = tf.linalg.cholesky(a)
    s, u, v = tf.linalg.svd(b)
    q, r = tf.linalg.qr(b)
    sign, logabs = tf.linalg.slogdet(a)
    lu, perm = tf.linalg.lu(a)
    got = run(tf.linalg.inv(a), tf.linalg.det(a), sign, logabs, tf.linalg.logdet(a), chol,
              tf.linalg.solve(a, b), tf.linalg.solve(a, b, adjoint=True),
              tf.linalg.cholesky_solve(chol, b), tf.linalg.triangular_solve(chol, b),
              tf.linalg.triangular_solve(tf.transpose(chol), b, lower=False),
              tf.linalg.lstsq(b, A[:, :1]), s, u, v, q, r, tf.linalg.svd(b, compute_uv=False),
              lu, perm, tf.matrix_inverse(a), tf.matrix_determinant(a))
    L = np.linalg.cholesky(A)
    (inv, det, sign, logabs, logdet, chol, x, xt, xc, tri, triu, ls, s, u, v, q, r, s_only,
     lu, perm, inv2, det2) = got
    np.testing.assert_allclose(inv, np.linalg.inv(A), rtol=1e-10)
    np.testing.assert_allclose(det, np.linalg.det(A), rtol=1e-10)
    assert sign == 1.0
    np.testing.assert_allclose([logabs, logdet], [np.log(np.linalg.det(A))] * 2, rtol=1e-10)
    np.testing.assert_allclose(chol, L, rtol=1e-10)
    np.testing.assert_allclose(x, np.linalg.solve(A, B), rtol=1e-10)
    np.testing.assert_allclose(xt, np.linalg.solve(A.T, B), rtol=1e-10)
    np.testing.assert_allclose(xc, np.linalg.solve(A, B), rtol=1e-10)
    np.testing.assert_allclose(tri, np.linalg.solve(L, B), rtol=1e-10)
    np.testing.assert_allclose(triu, np.linalg.solve(L.T, B), rtol=1e-10)
    np.testing.assert_allclose(ls, np.linalg.lstsq(B, A[:, :1], rcond=None)[0], rtol=1e-8)
    np.testing.assert_allclose(s, np.linalg.svd(B, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(s_only, s, rtol=1e-12)
    np.testing.assert_allclose(u @ np.diag(s) @ v.T, B, atol=1e-12)
    assert u.shape == (3, 2) and v.shape == (2, 2)
    np.testing.assert_allclose(q @ r, B, atol=1e-12)
    assert q.shape == (3, 2) and np.allclose(np.triu(r), r)
    lower = np.tril(lu, -1) + np.eye(3)
    np.testing.assert_allclose(lower @ np.triu(lu), A[perm], atol=1e-12)
    np.testing.assert_array_equal(inv2, inv)
    assert det2 == det


def test_linalg_norm_against_numpy():
    x = np.array([[3.0, -4.0, 1.0], [0.5, 2.0, -6.0]], np.float32)
    t = tf.constant(x)
    got = run(tf.linalg.norm(t), tf.norm(t, axis=1), tf.norm(t, ord=1, axis=0),
              tf.norm(t, ord=np.inf, axis=1), tf.norm(t, ord=3, axis=1),
              tf.norm(t, ord="fro", axis=[0, 1]), tf.norm(t, ord=1, axis=(0, 1)),
              tf.norm(t, ord=np.inf, axis=(0, 1)), tf.norm(t, ord=2, axis=(0, 1)),
              tf.norm(t, axis=1, keepdims=True), tf.norm(t, keepdims=True))
    want = [np.linalg.norm(x), np.linalg.norm(x, axis=1), np.abs(x).sum(0),
            np.abs(x).max(1), np.linalg.norm(x, 3, axis=1), np.linalg.norm(x, "fro"),
            np.linalg.norm(x, 1), np.linalg.norm(x, np.inf), np.linalg.norm(x, 2),
            np.linalg.norm(x, axis=1, keepdims=True), np.full((1, 1), np.linalg.norm(x))]
    for g, w in zip(got, want):
        assert g.shape == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-5)
    with pytest.raises(ValueError, match="'ord' must be a supported vector norm"):
        tf.norm(t, ord=-1)
    with pytest.raises(ValueError, match="'ord' must be a supported matrix norm"):
        tf.norm(t, ord=3, axis=[0, 1])


# ---------------------------------------------------------------------------------------------
# tf.graph_util

def _model(resource):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.get_variable("w", initializer=np.arange(6, dtype=np.float32).reshape(3, 2),
                        use_resource=resource)
    b = tf.get_variable("b", initializer=np.array([0.5, -1.0], np.float32),
                        use_resource=resource)
    emb = tf.get_variable("emb", initializer=np.eye(4, dtype=np.float32) * 3,
                          use_resource=resource)
    ids = tf.placeholder(tf.int32, [None], name="ids")
    y = tf.add(tf.matmul(x, w), b, name="y")
    z = tf.identity(tf.reduce_sum(tf.gather(emb, ids), 1), name="z")
    tf.add(y, 1.0, name="unused")
    return x, ids, y, z


@pytest.mark.parametrize("resource", [False, True])
def test_convert_variables_to_constants_freezes(resource):
    x, ids, y, z = _model(resource)
    feed = {x: np.array([[1.0, 2.0, 3.0]], np.float32), ids: [1, 3]}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.get_default_graph().get_tensor_by_name("w:0" if not resource else
                                                           "w/Read/ReadVariableOp:0"))
        want = sess.run([y, z], feed)
        frozen = tf.graph_util.convert_variables_to_constants(
            sess, tf.get_default_graph().as_graph_def(), ["y", "z"])
    ops = {n.name: n.op for n in frozen.node}
    assert not {"VariableV2", "VarHandleOp", "ReadVariableOp", "ResourceGather",
                "AssignVariableOp", "Assign"} & set(ops.values())
    assert ops["w"] == ops["b"] == ops["emb"] == "Const"
    assert "unused" not in ops and "init" not in ops
    const = {n.name: n for n in frozen.node}["w"]
    assert const.attr["dtype"] == ("type", tf.float32.as_datatype_enum)
    tf.reset_default_graph()
    y2, z2 = tf.import_graph_def(frozen, return_elements=["y:0", "z:0"], name="")
    with tf.Session() as sess:  # no initializer: nothing left to initialize
        got = sess.run([y2, z2], {"x:0": feed[x], "ids:0": [1, 3]})
    np.testing.assert_allclose(got[0], want[0])
    np.testing.assert_allclose(got[0], [[16.5, 21.0]])
    np.testing.assert_allclose(got[1], [3.0, 3.0])


def test_convert_variables_to_constants_whitelist_and_blacklist():
    _model(False)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        gd = tf.get_default_graph().as_graph_def()
        only_w = tf.graph_util.convert_variables_to_constants(sess, gd, ["y"],
                                                              variable_names_whitelist=["w"])
        not_w = tf.graph_util.convert_variables_to_constants(sess, gd, ["y"],
                                                             variable_names_blacklist=["w"])
    ops = {n.name: n.op for n in only_w.node}
    assert (ops["w"], ops["b"]) == ("Const", "VariableV2")
    ops = {n.name: n.op for n in not_w.node}
    assert (ops["w"], ops["b"]) == ("VariableV2", "Const")


def test_extract_sub_graph_and_remove_training_nodes():
    a = tf.placeholder(tf.float32, [], name="a")
    i1 = tf.identity(a, name="i1")
    i2 = tf.identity(i1, name="i2")
    c = tf.check_numerics(i2, "bad", name="check")
    with tf.control_dependencies([c]):
        kept = tf.identity(a, name="kept")  # has a control input: stays
    out = tf.multiply(c, 2.0, name="out")
    tf.add(kept, 1.0, name="other")
    gd = tf.get_default_graph().as_graph_def()
    sub = tf.graph_util.extract_sub_graph(gd, ["out"])
    assert [n.name for n in sub.node] == ["a", "i1", "i2", "check", "Const", "out"]
    with pytest.raises(TypeError, match="dest_nodes must be a list"):
        tf.graph_util.extract_sub_graph(gd, "out")
    with pytest.raises(AssertionError, match="nope is not in graph"):
        tf.graph_util.extract_sub_graph(gd, ["nope"])
    slim = tf.graph_util.remove_training_nodes(gd)
    by = {n.name: n for n in slim.node}
    assert "i1" not in by and "i2" not in by
    assert "check" in by  # a control input of `kept`
    assert by["check"].input == ["a"] and by["kept"].input == ["a", "^check"]
    slim = tf.graph_util.remove_training_nodes(tf.graph_util.extract_sub_graph(gd, ["out"]),
                                               protected_nodes=["i2"])
    by = {n.name: n for n in slim.node}
    assert "check" not in by and by["out"].input[0] == "i2" and by["i2"].input == ["a"]
    tf.reset_default_graph()
    (o,) = tf.import_graph_def(slim, return_elements=["out:0"], name="")
    assert run(o, feed={"a:0": 4.0}) == 8.0


# ---------------------------------------------------------------------------------------------
# tf.debugging

def test_debugging_asserts_pass_and_fail():
    x = tf.placeholder(tf.int32, [3], name="x")
    checks = [tf.debugging.assert_equal(x, [1, 2, 3]), tf.assert_less(x, 4),
              tf.debugging.assert_less_equal(x, 3), tf.debugging.assert_greater(x, 0),
              tf.debugging.assert_greater_equal(x, 1), tf.debugging.assert_none_equal(x, 7),
              tf.debugging.assert_positive(x), tf.debugging.assert_non_negative(x),
              tf.debugging.assert_negative(-x), tf.debugging.assert_non_positive(-x)]
    assert checks[0].name == "assert_equal/Assert/Assert"
    assert tf.Assert(True, ["never"], name="mine").name == "mine/Assert"
    with tf.Session() as sess:
        sess.run(checks, {x: [1, 2, 3]})
        with pytest.raises(errors.InvalidArgumentError) as e:
            sess.run(checks[0], {x: [1, 2, 4]})
        assert str(e.value).startswith(
            "assertion failed: [Condition x == y did not hold element-wise:] [x (x:0) = ] "
            "[1 2 4] [y (assert_equal/Const:0) = ] [1 2 3]")
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"assertion failed: \[too big\] \[Condition x < y"):
            sess.run(tf.debugging.assert_less(x, 3, message="too big"), {x: [1, 2, 3]})
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"\[Condition x > 0 did not hold element-wise:\]"):
            sess.run(checks[6], {x: [0, 2, 3]})
        with pytest.raises(errors.InvalidArgumentError, match=r"^assertion failed: \[n=\] \[9\]"):
            sess.run(tf.debugging.Assert(tf.reduce_all(x < 5), ["n=", tf.reduce_max(x)]),
                     {x: [1, 9, 3]})


def test_debugging_check_numerics_and_predicates():
    x = tf.placeholder(tf.float32, [2])
    checked = tf.debugging.check_numerics(x, "x is bad")
    verified = tf.debugging.assert_all_finite(x * 2, "doubled")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(checked, {x: [1, 2]}), [1, 2])
        np.testing.assert_array_equal(sess.run(verified, {x: [1, 2]}), [2, 4])
        with pytest.raises(errors.InvalidArgumentError, match="x is bad : Tensor had NaN values"):
            sess.run(checked, {x: [np.nan, 2]})
        with pytest.raises(errors.InvalidArgumentError, match="doubled : Tensor had Inf values"):
            sess.run(verified, {x: [np.inf, 2]})
        got = sess.run([tf.debugging.is_finite(x), tf.debugging.is_inf(x),
                        tf.debugging.is_nan(x)], {x: [np.inf, np.nan]})
    np.testing.assert_array_equal(got, [[False, False], [True, False], [False, True]])
    assert tf.debugging.is_numeric_tensor(x) and not tf.debugging.is_numeric_tensor(
        tf.constant([True]))
    assert not tf.debugging.is_numeric_tensor(np.ones(2))


# ---------------------------------------------------------------------------------------------
# tf.bitwise

def test_bitwise_against_numpy():
    a = np.array([0, 5, -7, 123456, 2**31 - 1], np.int32)
    b = np.array([3, 6, 12, 654321, 1], np.int32)
    s = np.array([0, 1, 2, 3, 4], np.int32)
    got = run(tf.bitwise.bitwise_and(a, b), tf.bitwise.bitwise_or(a, b),
              tf.bitwise.bitwise_xor(a, b), tf.bitwise.invert(a), tf.bitwise.left_shift(b, s),
              tf.bitwise.right_shift(a, s), tf.bitwise.invert(np.array([0, 200], np.uint8)))
    want = [a & b, a | b, a ^ b, ~a, b << s, a >> s, np.array([255, 55], np.uint8)]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------------------------------------
# tf.train.Example and tf.io.parse_example

def _example(**features):
    ex = tf.train.Example()
    for key, v in features.items():
        f = ex.features.feature[key]
        if isinstance(v[0], bytes):
            f.bytes_list.value.extend(v)
        elif isinstance(v[0], float):
            f.float_list.value.extend(v)
        else:
            f.int64_list.value.extend(v)
    return ex.SerializeToString()


def test_example_protos_round_trip_with_protobuf_wire_bytes():
    ex = tf.train.Example(features=tf.train.Features(feature={
        "f": tf.train.Feature(float_list=tf.train.FloatList(value=[1.5])),
        "i": tf.train.Feature(int64_list=tf.train.Int64List(value=[3, -1]))}))
    # protobuf's bytes: map entries {key, value}, packed float and int64 (-1 in ten bytes)
    data = ex.SerializeToString()
    assert data == (b"\n%\n\r\n\x01f\x12\x08\x12\x06\n\x04\x00\x00\xc0?"
                    b"\n\x14\n\x01i\x12\x0f\x1a\r\n\x0b\x03" + b"\xff" * 9 + b"\x01")
    back = tf.train.Example.FromString(data)
    assert back == ex
    assert list(back.features.feature["i"].int64_list.value) == [3, -1]
    assert back.features.feature["f"].WhichOneof("kind") == "float_list"
    with pytest.raises(TypeError):
        tf.train.Int64List(value=[1.5])


def test_parse_example_dense_sparse_and_defaults():
    ser = tf.placeholder(tf.string, [None])
    parsed = tf.io.parse_example(ser, {
        "x": tf.io.FixedLenFeature([2], tf.float32),
        "label": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
        "name": tf.FixedLenFeature([], tf.string, default_value="none"),
        "ids": tf.io.VarLenFeature(tf.int64)})
    assert isinstance(parsed["ids"], tf.SparseTensor)
    batch = [_example(x=[1.0, 2.0], label=[1], name=[b"a"], ids=[4, 5, 6]),
             _example(x=[3.0, 4.0], ids=[7])]
    with tf.Session() as sess:
        got = sess.run(parsed, {ser: batch})
        dense_ids = sess.run(tf.sparse.to_dense(parsed["ids"], default_value=-9), {ser: batch})
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"Name: <unknown>, Feature: x \(data type: float\) is "
                                 "required but could not be found."):
            sess.run(parsed["x"], {ser: [_example(label=[2])]})
    np.testing.assert_array_equal(got["x"], [[1, 2], [3, 4]])
    assert got["x"].dtype == np.float32
    np.testing.assert_array_equal(got["label"], [1, -1])
    np.testing.assert_array_equal(got["name"], [b"a", b"none"])
    ids = got["ids"]
    assert isinstance(ids, tf.SparseTensorValue)
    np.testing.assert_array_equal(ids.indices, [[0, 0], [0, 1], [0, 2], [1, 0]])
    np.testing.assert_array_equal(ids.values, [4, 5, 6, 7])
    np.testing.assert_array_equal(ids.dense_shape, [2, 3])
    np.testing.assert_array_equal(dense_ids, [[4, 5, 6], [7, -9, -9]])
    assert parsed["x"].op.type == "ParseExample" and parsed["x"].op.name == \
        "ParseExample/ParseExample"


def test_parse_single_example():
    parsed = tf.io.parse_single_example(_example(w=[0.5, 1.5, 2.5, 3.5], tags=[b"p", b"q"]), {
        "w": tf.io.FixedLenFeature([2, 2], tf.float32),
        "tags": tf.io.VarLenFeature(tf.string)})
    w, tags = run(parsed["w"], parsed["tags"])
    np.testing.assert_array_equal(w, [[0.5, 1.5], [2.5, 3.5]])
    np.testing.assert_array_equal(tags.indices, [[0], [1]])
    np.testing.assert_array_equal(tags.values, [b"p", b"q"])
    np.testing.assert_array_equal(tags.dense_shape, [2])
    with pytest.raises(ValueError, match="Unsupported dtype int32 for feature w"):
        tf.io.parse_single_example(b"", {"w": tf.io.FixedLenFeature([], tf.int32)})


# ---------------------------------------------------------------------------------------------
# tf.sparse

def test_sparse_tensor_to_dense_and_add():
    sp = tf.SparseTensor(indices=[[0, 1], [2, 0]], values=[5.0, -1.0], dense_shape=[3, 2])
    assert sp.shape.as_list() == [3, 2] and sp.dtype == tf.float32
    strings = tf.SparseTensor([[1]], tf.constant([b"b"]), [3])
    dense = np.arange(6, dtype=np.float32).reshape(3, 2)
    got = run(tf.sparse.to_dense(sp), tf.sparse_tensor_to_dense(sp, default_value=7.0),
              tf.sparse.add(sp, dense), tf.sparse.add(dense, sp), tf.sparse.to_dense(strings), sp)
    want = np.array([[0, 5], [0, 0], [-1, 0]], np.float32)
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_array_equal(got[1], np.where(want == 0, 7, want))
    np.testing.assert_array_equal(got[2], want + dense)
    np.testing.assert_array_equal(got[3], want + dense)
    np.testing.assert_array_equal(got[4], [b"", b"b", b""])
    assert isinstance(got[5], tf.SparseTensorValue)
    np.testing.assert_array_equal(got[5].indices, [[0, 1], [2, 0]])
    np.testing.assert_array_equal(got[5].values, [5.0, -1.0])
    np.testing.assert_array_equal(got[5].dense_shape, [3, 2])
    doubled = run(tf.sparse.add(sp, sp))
    np.testing.assert_array_equal(doubled.indices, [[0, 1], [2, 0]])
    np.testing.assert_array_equal(doubled.values, [10.0, -2.0])
    with tf.Session():
        np.testing.assert_array_equal(sp.eval().values, [5.0, -1.0])


# ---------------------------------------------------------------------------------------------
# tf.image

IMG = np.random.RandomState(0).uniform(0.05, 0.95, (4, 5, 3)).astype(np.float32)


def test_image_geometry_against_numpy():
    batch = np.stack([IMG, IMG[::-1]])
    got = run(tf.image.flip_left_right(IMG), tf.image.flip_up_down(IMG),
              tf.image.flip_left_right(batch), tf.image.transpose_image(batch),
              tf.image.rot90(IMG), tf.image.rot90(IMG, 2), tf.image.rot90(batch, 3),
              tf.image.crop_to_bounding_box(IMG, 1, 2, 2, 3),
              tf.image.pad_to_bounding_box(IMG, 1, 0, 6, 7))
    padded = np.zeros((6, 7, 3), np.float32)
    padded[1:5, 0:5] = IMG
    want = [IMG[:, ::-1], IMG[::-1], batch[:, :, ::-1], batch.transpose(0, 2, 1, 3),
            np.rot90(IMG, 1, axes=(0, 1)), np.rot90(IMG, 2, axes=(0, 1)),
            np.rot90(batch, 3, axes=(1, 2)), IMG[1:3, 2:5], padded]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(ValueError, match="must be three or four-dimensional"):
        tf.image.flip_up_down(np.zeros((2, 2)))


def test_image_colour_against_colorsys():
    import colorsys
    hsv = np.array([[colorsys.rgb_to_hsv(*px) for px in row] for row in IMG], np.float32)

    def from_hsv(h):
        return np.array([[colorsys.hsv_to_rgb(*px) for px in row] for row in h], np.float32)
    shifted = hsv.copy()
    shifted[..., 0] = (shifted[..., 0] + 0.2) % 1.0
    saturated = hsv.copy()
    saturated[..., 1] = np.clip(saturated[..., 1] * 1.7, 0, 1)
    got = run(tf.image.rgb_to_hsv(IMG), tf.image.hsv_to_rgb(hsv), tf.image.adjust_hue(IMG, 0.2),
              tf.image.adjust_saturation(IMG, 1.7), tf.image.adjust_contrast(IMG, 1.5),
              tf.image.adjust_brightness(IMG, 0.1), tf.image.rgb_to_grayscale(IMG),
              tf.image.grayscale_to_rgb(IMG[..., :1]))
    mean = IMG.mean(axis=(0, 1))
    want = [hsv, IMG, from_hsv(shifted), from_hsv(saturated), (IMG - mean) * 1.5 + mean,
            IMG + np.float32(0.1), IMG @ np.array([0.2989, 0.5870, 0.1140], np.float32)[:, None],
            np.repeat(IMG[..., :1], 3, axis=-1)]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_image_dtype_conversion_and_uint8_adjustments():
    u8 = np.array([[[0, 51, 255]], [[128, 7, 200]]], np.uint8)
    got = run(tf.image.convert_image_dtype(u8, tf.float32),
              tf.image.convert_image_dtype(np.array([0.0, 0.5, 1.0], np.float32), tf.uint8),
              tf.image.convert_image_dtype(np.array([-0.5, 1.5], np.float32), tf.uint8,
                                           saturate=True),
              tf.image.convert_image_dtype(u8, tf.int32),
              tf.image.convert_image_dtype(np.array([65535, 256], np.uint16), tf.uint8),
              tf.image.adjust_brightness(u8, 0.5), tf.image.rgb_to_grayscale(u8))
    np.testing.assert_allclose(got[0], u8 / np.float32(255), rtol=1e-6)
    np.testing.assert_array_equal(got[1], [0, 127, 255])  # x * 255.5, truncated
    np.testing.assert_array_equal(got[2], [0, 255])
    np.testing.assert_array_equal(got[3], u8.astype(np.int64) * (2**31 // 256))
    np.testing.assert_array_equal(got[4], [255, 1])
    flt = u8.astype(np.float32) * np.float32(1 / 255)
    want = (np.clip((flt + np.float32(0.5)) * np.float32(255.5), 0, 255)).astype(np.uint8)
    np.testing.assert_array_equal(got[5], want)
    gray = (flt @ np.array([0.2989, 0.5870, 0.1140], np.float32)[:, None]) * np.float32(255.5)
    np.testing.assert_array_equal(got[6], gray.astype(np.uint8))
    assert got[6].dtype == np.uint8


def test_image_per_image_standardization():
    x = np.random.RandomState(1).uniform(0, 255, (2, 3, 4, 3)).astype(np.float32)
    flat = np.full((2, 2, 1), 7.0, np.float32)
    got, got_flat = run(tf.image.per_image_standardization(x[0]),
                        tf.image.per_image_standardization(flat))
    np.testing.assert_allclose(got, (x[0] - x[0].mean()) / x[0].std(), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(got_flat, np.zeros((2, 2, 1)))


def _legacy_resize(img, out_h, out_w, nearest):
    """TensorFlow 1.x's resize without align_corners or half-pixel centers: source index
    dst * in / out; bilinear interpolates towards the next pixel (clamped)."""
    in_h, in_w = img.shape[:2]
    out = np.zeros((out_h, out_w, img.shape[2]), np.float64)
    for y in range(out_h):
        for x in range(out_w):
            sy, sx = y * in_h / out_h, x * in_w / out_w
            if nearest:
                out[y, x] = img[min(int(np.floor(sy)), in_h - 1), min(int(np.floor(sx)), in_w - 1)]
                continue
            y0, x0 = int(np.floor(sy)), int(np.floor(sx))
            y1, x1 = min(y0 + 1, in_h - 1), min(x0 + 1, in_w - 1)
            dy, dx = sy - y0, sx - x0
            top = img[y0, x0] * (1 - dx) + img[y0, x1] * dx
            bottom = img[y1, x0] * (1 - dx) + img[y1, x1] * dx
            out[y, x] = top * (1 - dy) + bottom * dy
    return out


def test_image_resize_against_numpy():
    u8 = (IMG * 255).astype(np.uint8)
    got = run(tf.image.resize_images(IMG, [7, 3]),
              tf.image.resize_images(u8, [7, 3], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR),
              tf.image.resize_bilinear(IMG[None], [2, 8]),
              tf.image.resize_images(IMG, [8, 20], preserve_aspect_ratio=True),
              tf.image.resize_area(IMG[None], [2, 5]))
    np.testing.assert_allclose(got[0], _legacy_resize(IMG, 7, 3, False), rtol=1e-5)
    assert got[0].dtype == np.float32
    np.testing.assert_array_equal(got[1], _legacy_resize(u8, 7, 3, True))
    assert got[1].dtype == np.uint8
    np.testing.assert_allclose(got[2][0], _legacy_resize(IMG, 2, 8, False), rtol=1e-5)
    assert got[3].shape == (8, 10, 3)  # 4x5 scaled by min(8/4, 20/5) = 2
    np.testing.assert_allclose(got[4][0], IMG.reshape(2, 2, 5, 3).mean(axis=1), rtol=1e-5)


def test_image_non_max_suppression():
    boxes = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                      [0, 10.1, 1, 11.1], [0, 100, 1, 101]], np.float32)
    scores = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)
    got = run(tf.image.non_max_suppression(boxes, scores, 3, iou_threshold=0.5),
              tf.image.non_max_suppression(boxes, scores, 6, score_threshold=0.4))
    np.testing.assert_array_equal(got[0], [3, 0, 5])
    np.testing.assert_array_equal(got[1], [3, 0])


# ---------------------------------------------------------------------------------------------
# docs/python.md

DOC_OUTPUTS = [
    "b'n = [3 14]'\n[b'img_003' b'img_014']\n[2.5]\n",
    "['frozen.pb'] ['Placeholder', 'Const', 'Identity', 'MatMul', 'Identity']\n[[3.]]\n",
    "[[1. 2.]] [-1]\n[[4 5 6]]\n",
    "0.08\n(5,)\n[11.000001, 7.0, 5.0]\n[0.09090909 0.6363636 ]\n6\n",
    "[0.        0.6931472]\nassertion failed: [Condition x > 0 did not hold element-wise:] \n"
    "True café b'x'\nTrue\n",
    "(2, 3, 3) (4, 6, 1) uint8\n",
]


def test_doc_examples_print_what_they_say():
    """docs/python.md's "TensorFlow 1.x namespaces" examples, run as written."""
    from _docs import check_section
    check_section("TensorFlow 1.x namespaces", DOC_OUTPUTS)
