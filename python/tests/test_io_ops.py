"""The input-pipeline ops of tf.io (weft/compat/v1/io.py): decode_csv, serialize_tensor,
parse_tensor and matching_files, and tf.data.Dataset.list_files over MatchingFiles; each
against values worked out here by hand (CSV fields, TensorProto bytes from tensor.proto's field
numbers, the names of files made in a temporary directory), with TensorFlow's errors."""
import os

import numpy as np
import pytest

import weft.compat.v1 as tf
from weft import errors


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run(fetch, feed=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed)


# ---------------------------------------------------------------------------------------------
# decode_csv

def test_decode_csv_columns_defaults_and_quotes():
    records = ["1,2.5,hello,7", '3,,"a,b",-8']
    cols = tf.io.decode_csv(records, [[0], [0.5], ["x"], tf.constant([], tf.int64)])
    assert [c.dtype for c in cols] == [tf.int32, tf.float32, tf.string, tf.int64]
    assert all(c.shape.as_list() == [2] for c in cols)
    a, b, c, d = run(cols)
    np.testing.assert_array_equal(a, [1, 3])
    np.testing.assert_array_equal(b, np.array([2.5, 0.5], np.float32))
    assert list(c) == [b"hello", b"a,b"]
    np.testing.assert_array_equal(d, [7, -8])


def test_decode_csv_alias_options_and_select_cols():
    assert tf.decode_csv is tf.io.decode_csv
    a, b = run(tf.decode_csv('"say ""hi""";NA', [[""], [1.0]], field_delim=";", na_value="NA"))
    assert a == b'say "hi"' and b == np.float32(1.0)
    a, b = run(tf.decode_csv(tf.constant([["1,2,3,4"]]), [[0], [0]], select_cols=[1, 3]))
    np.testing.assert_array_equal(a, [[2]])
    np.testing.assert_array_equal(b, [[4]])
    with pytest.raises(ValueError, match="select_cols is not strictly increasing"):
        tf.decode_csv("1,2", [[0], [0]], select_cols=[1, 0])
    with pytest.raises(ValueError, match="Length of select_cols and record_defaults"):
        tf.decode_csv("1,2", [[0], [0]], select_cols=[1])


@pytest.mark.parametrize("record, defaults, message", [
    (",5", [[], [0]], "Field 0 is required but missing in record 0!"),
    ("1,2", [[0], [0], [0]], "Expect 3 fields but have 2 in record 0"),
    ("abc", [[0.0]], "Field 0 in record 0 is not a valid float: abc"),
    ("2147483648", [[0]], "Field 0 in record 0 is not a valid int32: 2147483648"),
    ('"a"b",c', [[""], [""]], "Quote inside a string has to be escaped by another quote"),
])
def test_decode_csv_errors(record, defaults, message):
    with pytest.raises(errors.InvalidArgumentError, match=message.replace("!", "")):
        run(tf.io.decode_csv(record, defaults))


# ---------------------------------------------------------------------------------------------
# serialize_tensor, parse_tensor

FLOAT_VEC = b"\x08\x01\x12\x04\x12\x02\x08\x02\x22\x08\x00\x00\x80\x3f\x00\x00\x00\xc0"


def test_serialize_tensor_bytes_and_round_trip():
    assert tf.serialize_tensor is tf.io.serialize_tensor
    assert tf.parse_tensor is tf.io.parse_tensor
    s = tf.io.serialize_tensor(tf.constant([1.0, -2.0]))
    assert s.dtype == tf.string and s.shape.as_list() == []
    assert run(s) == FLOAT_VEC
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    back = tf.io.parse_tensor(tf.io.serialize_tensor(x), tf.int64)
    np.testing.assert_array_equal(run(back), x)
    strs = tf.io.parse_tensor(tf.io.serialize_tensor([b"ab", b""]), tf.string)
    assert list(run(strs)) == [b"ab", b""]


def test_parse_tensor_typed_values_and_errors():
    # float_val [2.5] over shape [3]: the last value repeats.
    splat = b"\x08\x01\x12\x04\x12\x02\x08\x03\x2a\x04\x00\x00\x20\x40"
    np.testing.assert_array_equal(run(tf.io.parse_tensor(splat, tf.float32)), [2.5] * 3)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Type mismatch between parsed tensor \(float\) and dtype \(int32\)"):
        run(tf.io.parse_tensor(FLOAT_VEC, tf.int32))
    with pytest.raises(errors.InvalidArgumentError,
                       match="Could not parse `serialized` as TensorProto: 'bogus'"):
        run(tf.io.parse_tensor("bogus", tf.uint16))
    with pytest.raises(errors.InvalidArgumentError,
                       match="Could not parse `serialized` as TensorProto"):
        run(tf.io.parse_tensor(FLOAT_VEC[:5], tf.float32))
    # shape [2^40] without values: refused, nothing allocated.
    huge = b"\x08\x01\x12\x09\x12\x07\x08\x80\x80\x80\x80\x80\x20"
    with pytest.raises(errors.InvalidArgumentError, match="Cannot parse tensor from proto"):
        run(tf.io.parse_tensor(huge, tf.float32))


# ---------------------------------------------------------------------------------------------
# matching_files, Dataset.list_files

@pytest.fixture
def files(tmp_path):
    for name in ["b.txt", "a.txt", "c.csv"]:
        (tmp_path / name).write_text(name)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.txt").write_text("d")
    return str(tmp_path)


def test_matching_files(files):
    assert tf.matching_files is tf.io.matching_files
    got = run(tf.io.matching_files([os.path.join(files, "*.txt"),
                                    os.path.join(files, "*", "d.txt")]))
    assert [g.decode() for g in got] == [os.path.join(files, n)
                                         for n in ["a.txt", "b.txt", os.path.join("sub", "d.txt")]]
    assert run(tf.matching_files(os.path.join(files, "*.none"))).shape == (0,)


def test_matching_files_relative_and_missing_directory(files, monkeypatch):
    # A pattern without a directory is walked from "." and its matches start with "./", as
    # TensorFlow 1.15's GetMatchingPaths names them.
    monkeypatch.chdir(files)
    assert list(run(tf.io.matching_files("?.csv"))) == [b"./c.csv"]
    assert list(run(tf.io.matching_files("sub/*"))) == [b"sub/d.txt"]
    with pytest.raises(errors.NotFoundError, match="nothere; No such file or directory"):
        run(tf.io.matching_files("nothere/*.txt"))


def next_all(dataset):
    nxt = dataset.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        try:
            while True:
                out.append(sess.run(nxt))
        except errors.OutOfRangeError:
            pass
    return out


def test_list_files(files):
    pattern = os.path.join(files, "*.txt")
    want = [os.path.join(files, n).encode() for n in ["a.txt", "b.txt"]]
    assert next_all(tf.data.Dataset.list_files(pattern, shuffle=False)) == want
    assert sorted(next_all(tf.data.Dataset.list_files(pattern, seed=3))) == want
    ds = tf.data.Dataset.list_files(os.path.join(files, "*.none"))
    with pytest.raises(errors.InvalidArgumentError, match="No files matched pattern: .*none"):
        next_all(ds)


def test_list_files_placeholder_patterns(files):
    pattern = tf.placeholder(tf.string, [None])
    it = tf.data.Dataset.list_files(pattern, shuffle=False).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {pattern: [os.path.join(files, "*.csv"),
                                            os.path.join(files, "a.*")]})
        assert [sess.run(nxt), sess.run(nxt)] == [os.path.join(files, n).encode()
                                                  for n in ["a.txt", "c.csv"]]
        with pytest.raises(errors.OutOfRangeError):
            sess.run(nxt)
