"""compat.v1 graphs: names and scopes, devices, colocation, dtypes and shapes, GraphDef
import/export/text, write_graph, get_attr, and out-of-scope names."""
import os

import numpy as np
import pytest

import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_unique_names_and_name_scopes():
    a = tf.constant(1.0)
    b = tf.constant(2.0)
    with tf.name_scope("layer") as scope:
        assert scope == "layer/"
        c = tf.add(a, b)
        with tf.name_scope("inner"):
            d = tf.multiply(c, 2.0, name="double")
    with tf.name_scope("layer") as scope2:
        e = tf.identity(d)
    assert [a.name, b.name, c.name, d.name, e.name] == [
        "Const:0", "Const_1:0", "layer/add:0", "layer/inner/double:0", "layer_1/Identity:0"]
    assert scope2 == "layer_1/"
    assert d.op.type == "Mul" and [t.name for t in d.op.inputs] == ["layer/add:0",
                                                                   "layer/inner/Const:0"]
    g = tf.get_default_graph()
    assert g.get_tensor_by_name("layer/add:0") is c
    assert g.get_operation_by_name("layer/add") is c.op
    with pytest.raises(KeyError) as err:
        g.get_operation_by_name("missing")
    assert err.value.args[0] == "The name 'missing' refers to an Operation not in the graph."


def test_devices_nesting_functions_and_none():
    with tf.device("/job:ps/task:0"):
        a = tf.constant(1.0, name="a")
        with tf.device("/cpu:0"):
            b = tf.constant(2.0, name="b")
        with tf.device(None):
            c = tf.constant(3.0, name="c")
    calls = []

    def fn(op):
        calls.append((op.type, op.name))
        return "/job:worker/task:1" if op.type == "Const" else None
    with tf.device(fn):
        d = tf.constant(4.0, name="d")
        e = tf.identity(d, name="e")
    assert a.device == "/job:ps/task:0"
    assert "/job:ps/task:0" in b.device and "CPU:0" in b.device.upper()
    assert c.device == ""
    assert d.device == "/job:worker/task:1" and e.device == ""
    assert calls == [("Const", "d"), ("Identity", "e")]


def test_colocate_with():
    v = tf.Variable(1.0, name="v")
    with tf.colocate_with(v):
        x = tf.identity(v.value(), name="x")
    assert x.op.colocation_groups() == [b"loc:@v"]
    assert v.initializer.colocation_groups() == [b"loc:@v"]


def test_control_dependencies_none_clears():
    a = tf.constant(1.0, name="a")
    with tf.control_dependencies([a]):
        b = tf.constant(2.0, name="b")
        with tf.control_dependencies(None):
            c = tf.constant(3.0, name="c")
    assert [o.name for o in b.op.control_inputs] == ["a"]
    assert c.op.control_inputs == []
    with pytest.raises(TypeError):
        with tf.control_dependencies([3]):
            pass


def test_dtypes():
    assert tf.float32.name == "float32" and tf.as_dtype("float") is tf.float32
    assert tf.as_dtype("float32_ref").base_dtype == tf.float32
    assert tf.float32_ref.name == "float32_ref" and tf.float32._as_ref == tf.float32_ref
    assert tf.float64.as_numpy_dtype is np.float64 and tf.as_dtype(np.int64) == tf.int64
    assert tf.int32.is_integer and tf.float16.is_floating and not tf.bool.is_floating
    assert str(tf.float32) == "<dtype: 'float32'>" and repr(tf.int8) == "tf.int8"
    with pytest.raises(TypeError) as e:
        tf.as_dtype("nope")
    assert str(e.value) == "Cannot convert value 'nope' to a TensorFlow DType."
    v = tf.get_variable("ref", [2], dtype=tf.float32_ref)
    assert v.dtype == tf.float32_ref and v.dtype.base_dtype == tf.float32


def test_tensor_shapes():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.matmul(x, tf.ones([3, 4]))
    assert y.shape.as_list() == [None, 4] and y.get_shape().ndims == 2
    assert str(y.shape) == "(?, 4)" and tf.TensorShape([2, None]).is_compatible_with([2, 5])
    u = tf.placeholder(tf.float32)
    assert u.shape.ndims is None
    with pytest.raises(ValueError) as e:
        tf.matmul(x, tf.ones([2, 4]))
    assert str(e.value) == ("node 'MatMul_1': Dimensions must be equal, but are 3 and 2: MatMul "
                            "with input shapes [?,3], [2,4] (transpose_a=false, "
                            "transpose_b=false)")
    with pytest.raises(TypeError):
        bool(x)


def test_unknown_op_attr_is_value_error():
    g = tf.get_default_graph()
    with pytest.raises(ValueError) as e:
        g._create_op("Cast", [tf.constant(1.0)], [("DstT", "type", 999)], "badcast")
    assert str(e.value) == "attribute 'DstT': 999 is not a weft dtype"
    with pytest.raises(ValueError) as e:
        g._create_op("Cast", [tf.constant(1.0)], [], "nodst")
    assert "nodst" in str(e.value) and "DstT" in str(e.value)
    with pytest.raises(tf.errors.NotFoundError):
        g._create_op("NoSuchOp", [], [], "x")


def test_type_mismatch_is_type_error():
    with pytest.raises(TypeError) as e:
        tf.add(tf.constant(1.0), tf.constant(1))
    assert str(e.value) == ("Input 'y' of 'AddV2' Op has type int32 that does not match type "
                            "float32 of argument 'x'.")


def test_graph_def_roundtrip_input_map_return_elements(tmp_path):
    g1 = tf.Graph()
    with g1.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        tf.multiply(x, 3.0, name="y")
    gd = g1.as_graph_def()
    assert [n.name for n in gd.node] == ["x", "Mul/y", "y"] or "y" in [n.name for n in gd.node]
    assert gd.node[0].op == "Placeholder"
    with tf.Graph().as_default() as g2:
        five = tf.constant([5.0, 1.0])
        y, x_op = tf.import_graph_def(gd, input_map={"x:0": five},
                                      return_elements=["y:0", "x"])
        assert y.name == "import/y:0" and x_op.name == "import/x"
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(y), [15.0, 3.0])
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            tf.import_graph_def(gd, input_map={"zz:0": five}, name="again")
        assert e.value.message == ("Attempted to map inputs that were not found in graph_def: "
                                   "[zz:0]")
        with pytest.raises(ValueError) as e:
            tf.import_graph_def(gd, return_elements=["nope:0"], name="third")
        assert str(e.value) == "Requested return_element 'nope:0' not found in graph_def."
        ops_before = len(g2.get_operations())
    path = tf.train.write_graph(g1, str(tmp_path), "g.pbtxt")
    text = open(path).read()
    assert 'node {\n  name: "x"\n  op: "Placeholder"\n' in text
    assert "type: DT_FLOAT" in text and "dim {\n" in text
    bpath = tf.train.write_graph(gd, str(tmp_path), "g.pb", as_text=False)
    assert open(bpath, "rb").read() == gd.SerializeToString()
    assert ops_before > 0 and os.path.exists(path)


def test_get_attr():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    m = tf.matmul(x, tf.ones([2, 2]), transpose_b=True)
    assert m.op.get_attr("transpose_b") is True and m.op.get_attr("T") == tf.float32
    assert x.op.get_attr("shape").as_list() == [None, 2]
    with pytest.raises(ValueError) as e:
        m.op.get_attr("nope")
    assert str(e.value) == "Operation 'MatMul' has no attr named 'nope'."


def test_malformed_graph_def():
    with pytest.raises(tf.GraphDef.__module__ and Exception) as e:
        tf.GraphDef.FromString(b"\x0a\xff\xff")
    assert "Error parsing message" in str(e.value)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.import_graph_def(b"\x0a\x05\x0a\x01a\x12\x00")


def test_out_of_scope_names_raise_not_implemented():
    with pytest.raises(NotImplementedError) as e:
        tf.contrib.layers.xavier_initializer()
    assert str(e.value).startswith("tf.contrib.layers.xavier_initializer is not supported by "
                                   "weft: use the core tf.* equivalents")
    with pytest.raises(NotImplementedError) as e:
        tf.train.string_input_producer(["a"])
    assert str(e.value) == ("tf.train.string_input_producer is not supported by weft: feed numpy "
                            "arrays through feed_dict (Session.run) instead")
    with pytest.raises(NotImplementedError):
        tf.estimator.Estimator(model_fn=None)
    with pytest.raises(NotImplementedError):
        tf.FIFOQueue(10, tf.float32)


def test_is_built_with_cuda_is_bool():
    assert tf.test.is_built_with_cuda() in (True, False)
    assert isinstance(tf.test.gpu_device_name(), str)
