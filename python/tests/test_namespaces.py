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
