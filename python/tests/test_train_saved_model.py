"""tf.saved_model.loader.load on the corpus's TensorFlow SavedModels: the serving signature's
tensors, y = 0.5 x + 2 computed with the restored variables, and the error paths."""
import os

import numpy as np
import pytest

import weft.compat.v1 as tf

CORPUS = os.environ.get("WEFT_CORPUS", os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                                    "shared", "corpus"))
HALF_PLUS_TWO = os.path.join(CORPUS, "tf", "saved_model", "half_plus_two_cpu")


@pytest.fixture
def model_dir():
    if not os.path.exists(os.path.join(HALF_PLUS_TWO, "saved_model.pb")):
        pytest.skip("the corpus SavedModel %s is absent" % HALF_PLUS_TWO)
    return HALF_PLUS_TWO


def test_load_and_run(model_dir):
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING],
                                          model_dir)
        assert meta.meta_info_def.tags == ["serve"]
        sig = meta.signature_def[
            tf.saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        assert sig.method_name == tf.saved_model.signature_constants.PREDICT_METHOD_NAME
        x = np.array([[1.0], [2.0], [5.0]], np.float32)  # TensorFlow's half_plus_two: a=0.5, b=2
        y = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: x})
        np.testing.assert_allclose(y, 0.5 * x + 2.0)
        a, b = sess.run(["a:0", "b:0"])
        assert (a, b) == (0.5, 2.0)


def test_load_errors(model_dir, tmp_path):
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(RuntimeError) as e:
            tf.saved_model.loader.load(sess, ["train"], model_dir)
        assert str(e.value) == (
            "MetaGraphDef associated with tags 'train' could not be found in SavedModel. To "
            "inspect available tag-sets in the SavedModel, please use the SavedModel CLI: "
            "`saved_model_cli`\navailable_tags: [['serve']]")
        with pytest.raises(IOError) as e:
            tf.saved_model.loader.load(sess, ["serve"], str(tmp_path))
        assert str(e.value) == ("SavedModel file does not exist at: %s/{saved_model.pbtxt|"
                                "saved_model.pb}" % tmp_path)
        (tmp_path / "saved_model.pb").write_bytes(b"\x12\xff\xff\xff\x0f")
        with pytest.raises(IOError) as e:
            tf.saved_model.loader.load(sess, ["serve"], str(tmp_path))
        assert str(e.value) == ("Cannot parse file %s: protobuf field 2 says 33554431 bytes, 0 "
                                "left." % (tmp_path / "saved_model.pb"))
