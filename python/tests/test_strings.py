"""tf.strings, tf.as_string, tf.string_split, tf.reduce_join, tf.decode_raw, tf.read_file /
tf.write_file, base64, tf.Print and tf.print as a TensorFlow 1.x program uses them, with
TensorFlow's values, printed text and error classes and messages."""
import sys

import numpy as np
import pytest

import weft.compat.v1 as tf
from weft import errors


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run(x):
    with tf.Session() as s:
        return s.run(x)


def test_join_and_reduce_join():
    assert list(run(tf.strings.join(["a", tf.constant(["x", "y"])], separator="-"))) == \
        [b"a-x", b"a-y"]
    assert run(tf.string_join(["p", "q"])) == b"pq"
    a = tf.constant([["a", "b"], ["c", "d"]])
    assert list(run(tf.reduce_join(a, 0))) == [b"ac", b"bd"]
    assert run(tf.reduce_join(a, [0, 1])) == b"acbd"
    assert run(tf.reduce_join(a)) == b"abcd"
    assert run(tf.strings.reduce_join(a, 1, keep_dims=True, separator=".")).tolist() == \
        [[b"a.b"], [b"c.d"]]
    with pytest.raises(errors.InvalidArgumentError,
                       match="Input shapes do not match: \\[2\\] vs. \\[3\\]"):
        p = tf.placeholder(tf.string)
        with tf.Session() as s:
            s.run(tf.strings.join([p, tf.constant(["a", "b", "c"])]),
                  {p: np.array([b"a", b"b"], dtype=object)})


def test_as_string_and_to_number():
    assert list(run(tf.as_string(tf.constant([1.5, -0.25])))) == [b"1.500000", b"-0.250000"]
    assert list(run(tf.strings.as_string(tf.constant([7, 42]), width=4, fill="0"))) == \
        [b"0007", b"0042"]
    assert list(run(tf.as_string(tf.constant([0.5]), shortest=True))) == [b"0.5"]
    assert list(run(tf.as_string(tf.constant([True, False])))) == [b"true", b"false"]
    np.testing.assert_array_equal(run(tf.string_to_number(["1.5", " -2 "])), [1.5, -2.0])
    out = run(tf.strings.to_number(["12", "-3"], out_type=tf.int64))
    assert out.dtype == np.int64 and list(out) == [12, -3]
    with pytest.raises(errors.InvalidArgumentError,
                       match="StringToNumberOp could not correctly convert string: 12abc"):
        run(tf.string_to_number(["12abc"], out_type=tf.int32))


def test_length_substr_strip_case():
    assert list(run(tf.strings.length(["", "h\u00e9llo"]))) == [0, 6]
    assert list(run(tf.strings.length(["h\u00e9llo"], unit="UTF8_CHAR"))) == [5]
    assert run(tf.substr("hello", 1, 3)) == b"ell"
    assert list(run(tf.strings.substr(["hello", "world"], [0, 3], [2, 10]))) == [b"he", b"ld"]
    assert run(tf.strings.substr("hello", -3, 2)) == b"ll"
    with pytest.raises(errors.InvalidArgumentError,
                       match="pos 9 out of range for string b'hello' at index 0"):
        run(tf.substr("hello", 9, 1))
    assert list(run(tf.strings.strip([" a b\n"]))) == [b"a b"]
    assert list(run(tf.strings.upper(["aBc1"]))) == [b"ABC1"]
    assert list(run(tf.strings.lower(["aBc1"]))) == [b"abc1"]


def test_string_split_returns_sparse_tensor():
    st = tf.string_split(["a b", "c  d e"])
    assert isinstance(st, tf.SparseTensor)
    v = run(st)
    assert v.indices.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]]
    assert list(v.values) == [b"a", b"b", b"c", b"d", b"e"]
    assert list(v.dense_shape) == [2, 3]
    v = run(tf.strings.split(["a,b,,c"], sep=","))
    assert list(v.values) == [b"a", b"b", b"", b"c"]
    v = run(tf.strings.split(["  x  y "]))
    assert list(v.values) == [b"x", b"y"]
    v = run(tf.string_split(["a,b c"], sep=","))
    assert list(v.values) == [b"a", b"b c"]
    with pytest.raises(NotImplementedError, match="RaggedTensor"):
        tf.strings.split(["a"], result_type="RaggedTensor")


def test_base64():
    enc = run(tf.io.encode_base64(["hello?>~", "f"]))
    assert list(enc) == [b"aGVsbG8_Pn4", b"Zg"]
    assert list(run(tf.encode_base64(["f"], pad=True))) == [b"Zg=="]
    assert list(run(tf.decode_base64(["aGVsbG8_Pn4", "Zg=="]))) == [b"hello?>~", b"f"]
    with pytest.raises(errors.InvalidArgumentError, match="Invalid character found in base64"):
        run(tf.io.decode_base64(["a+b/"]))


def test_files_and_decode_raw(tmp_path):
    path = str(tmp_path / "sub" / "data.bin")
    w = tf.io.write_file(path, b"\x01\x00\x00\x00\xff\xff\xff\xff")
    assert isinstance(w, tf.Operation)
    with tf.control_dependencies([w]):
        data = tf.io.read_file(path)
    raw = tf.decode_raw(data, tf.int32)
    assert raw.dtype == tf.int32
    np.testing.assert_array_equal(run(raw), [1, -1])
    np.testing.assert_array_equal(run(tf.io.decode_raw(tf.read_file(path), tf.int32,
                                                       little_endian=False)),
                                  [16777216, -1])
    with pytest.raises(errors.NotFoundError, match="No such file or directory"):
        run(tf.read_file(str(tmp_path / "missing")))
    with pytest.raises(errors.InvalidArgumentError,
                       match="Input to DecodeRaw has length 3 that is not a multiple of 4, "
                             "the size of int32"):
        run(tf.decode_raw(tf.constant([b"abc"]), tf.int32))


def test_print_v1(capfd):
    x = tf.constant([1, 2, 3, 4])
    y = tf.Print(x, [x, tf.constant([[1.5, 2.0], [3.0, 4.0]]), tf.constant("s")],
                 message="values: ", first_n=1)
    with tf.Session() as s:
        assert list(s.run(y)) == [1, 2, 3, 4]
        s.run(y)
    err = capfd.readouterr().err
    assert err.count("values: ") == 1
    assert "values: [1 2 3...][[1.5 2][3...]...][s]\n" in err


def test_print_v2_and_format(capfd):
    t = tf.range(10)
    p = tf.print("tensors:", t, {2: t * 2}, output_stream=sys.stdout)
    assert isinstance(p, tf.Operation) and p.type == "PrintV2"
    with tf.control_dependencies([p]):
        out = t * 3
    run(out)
    assert capfd.readouterr().out == \
        "tensors: [0 1 2 ... 7 8 9] {2: [0 2 4 ... 14 16 18]}\n"
    run(tf.print(tf.reshape(tf.range(12), [3, 4]), summarize=1, end="!"))
    assert capfd.readouterr().err == "[[0 ... 3]\n ...\n [8 ... 11]]!"
    f = tf.strings.format("{} and {}", [tf.constant(1.5), tf.constant(["a", "b"])])
    assert run(f) == b'1.5 and ["a" "b"]'
    with pytest.raises(errors.InvalidArgumentError,
                       match="num placeholders in template and num inputs must match: 2 vs. 1"):
        run(tf.strings.format("{} {}", [tf.constant(1)]))
