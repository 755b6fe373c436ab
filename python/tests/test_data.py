"""tf.data in graph mode (weft/compat/v1/data.py): sources, transformations and iterators, each
against values computed here with numpy; the end of a dataset as OutOfRangeError "End of
sequence"; initializable and reinitializable iterators fed through placeholders; text files;
a model trained from a dataset under MonitoredTrainingSession; TensorFlow's errors."""
import gzip
import os

import numpy as np
import pytest

import weft.compat.v1 as tf
from weft import errors


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def drain(fetch, sess=None, feed=None):
    """Every value fetch gives until the end of its dataset."""
    own = sess is None
    sess = sess or tf.Session()
    out = []
    try:
        while True:
            out.append(sess.run(fetch, feed))
    except errors.OutOfRangeError as e:
        assert str(e).endswith("End of sequence")
    finally:
        if own:
            sess.close()
    return out


def test_slices_map_batch_values_and_static_shapes():
    x = np.arange(14, dtype=np.float32).reshape(7, 2)
    y = np.arange(7, dtype=np.int64)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    assert ds.output_types == (tf.float32, tf.int64)
    assert [s.as_list() for s in ds.output_shapes] == [[2], []]
    ds = ds.map(lambda a, b: (tf.reduce_sum(a) * 2.0, b + 1)).batch(3)
    assert [s.as_list() for s in ds.output_shapes] == [[None], [None]]
    s, b = ds.make_one_shot_iterator().get_next()
    got = drain([s, b])
    assert len(got) == 3
    np.testing.assert_array_equal(np.concatenate([g[0] for g in got]), x.sum(1) * 2)
    np.testing.assert_array_equal(np.concatenate([g[1] for g in got]), y + 1)
    assert [len(g[1]) for g in got] == [3, 3, 1]


def test_dict_elements_drop_remainder_and_dense_layer():
    feats = np.random.RandomState(0).rand(10, 4).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices({"f": feats, "id": np.arange(10)})
    ds = ds.batch(4, drop_remainder=True)
    el = tf.data.make_one_shot_iterator(ds).get_next()
    assert el["f"].shape.as_list() == [4, 4]
    h = tf.layers.dense(el["f"], 3, kernel_initializer=tf.ones_initializer())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = drain([h, el["id"]], sess)
    assert len(got) == 2
    np.testing.assert_allclose(got[1][0], np.repeat(feats[4:8].sum(1, keepdims=True), 3, 1),
                               rtol=1e-6)
    np.testing.assert_array_equal(got[1][1], [4, 5, 6, 7])


def test_shuffle_repeat_take_skip():
    ds = tf.data.Dataset.range(10).shuffle(4, seed=7).repeat(2)
    got = [int(v) for v in drain(ds.make_one_shot_iterator().get_next())]
    assert sorted(got[:10]) == list(range(10)) and sorted(got[10:]) == list(range(10))
    assert got[:10] != list(range(10)) and got[:10] != got[10:]  # each epoch reshuffled
    # a buffer of 4 never lets an element move more than 3 places ahead of its turn
    assert all(v <= i + 3 for i, v in enumerate(got[:10]))
    tf.reset_default_graph()
    again = tf.data.Dataset.range(10).shuffle(4, seed=7).repeat(2)
    assert [int(v) for v in drain(again.make_one_shot_iterator().get_next())] == got
    tf.reset_default_graph()
    ds = tf.data.Dataset.range(20).skip(5).take(4)
    assert [int(v) for v in drain(ds.make_one_shot_iterator().get_next())] == [5, 6, 7, 8]
    tf.reset_default_graph()
    ds = tf.data.Dataset.range(3).repeat(-1).take(7)
    assert [int(v) for v in drain(ds.make_one_shot_iterator().get_next())] == [0, 1, 2, 0, 1,
                                                                               2, 0]


def test_filter_flat_map_zip_concatenate_unbatch_padded_batch():
    ds = tf.data.Dataset.range(10).filter(lambda v: tf.equal(v % 3, 0))
    assert [int(v) for v in drain(ds.make_one_shot_iterator().get_next())] == [0, 3, 6, 9]
    tf.reset_default_graph()
    ds = tf.data.Dataset.range(3).flat_map(lambda v: tf.data.Dataset.range(int(v)))
    assert [int(v) for v in drain(ds.make_one_shot_iterator().get_next())] == [0, 0, 1]
    tf.reset_default_graph()
    a = tf.data.Dataset.range(4)
    b = tf.data.Dataset.from_tensor_slices(np.array([b"w", b"x", b"y"]))
    z = tf.data.Dataset.zip((a, b)).concatenate(tf.data.Dataset.zip((a, b)).take(1))
    got = drain(list(z.make_one_shot_iterator().get_next()))
    assert [(int(n), s) for n, s in got] == [(0, b"w"), (1, b"x"), (2, b"y"), (0, b"w")]
    tf.reset_default_graph()
    ds = tf.data.Dataset.from_tensor_slices(np.arange(6).reshape(3, 2)).batch(2).unbatch()
    assert [list(v) for v in drain(ds.make_one_shot_iterator().get_next())] == [[0, 1], [2, 3],
                                                                               [4, 5]]
    tf.reset_default_graph()
    seqs = tf.data.Dataset.range(1, 4).map(lambda n: tf.fill(tf.expand_dims(n, 0), n))
    ds = seqs.padded_batch(2, padded_shapes=[None], padding_values=tf.constant(-1, tf.int64))
    got = drain(ds.make_one_shot_iterator().get_next())
    np.testing.assert_array_equal(got[0], [[1, -1], [2, 2]])
    np.testing.assert_array_equal(got[1], [[3, 3, 3]])


def test_from_generator_and_its_errors():
    def gen():
        for i in range(3):
            yield np.full([i + 1], i, np.int32), str(i)

    ds = tf.data.Dataset.from_generator(gen, (tf.int32, tf.string),
                                        (tf.TensorShape([None]), tf.TensorShape([])))
    v, s = ds.make_one_shot_iterator().get_next()
    assert v.shape.as_list() == [None] and s.shape.as_list() == []
    got = drain([v, s])
    assert [(list(a), b) for a, b in got] == [([0], b"0"), ([1, 1], b"1"), ([2, 2, 2], b"2")]

    tf.reset_default_graph()
    bad = tf.data.Dataset.from_generator(lambda: iter(["x"]), tf.int64)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(bad.make_one_shot_iterator().get_next())
    assert "TypeError: `generator` yielded an element that could not be converted to the " \
           "expected type. The expected type was int64, but the yielded element was 'x'." \
           in str(info.value)
    with pytest.raises(TypeError, match="`generator` must be callable."):
        tf.data.Dataset.from_generator(3, tf.int64)


def test_initializable_iterator_fed_through_placeholders():
    xs = tf.placeholder(tf.float32, [None])
    it = tf.data.Dataset.from_tensor_slices(xs).map(lambda v: v * v).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError) as info:
            sess.run(nxt)
        assert "GetNext() failed because the iterator has not been initialized." in str(info.value)
        sess.run(it.initializer, {xs: [1, 2, 3]})
        assert [float(v) for v in drain(nxt, sess)] == [1, 4, 9]
        sess.run(it.initializer, {xs: [5]})
        assert sess.run(nxt) == 25
        sess.run(it.initializer, {xs: [6, 7]})  # starts over
        assert [float(v) for v in drain(nxt, sess)] == [36, 49]


def test_reinitializable_iterator_switches_datasets():
    train = tf.data.Dataset.range(5).map(lambda v: v * 10)
    test = tf.data.Dataset.range(2)
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    nxt = it.get_next()
    init_train, init_test = it.make_initializer(train), it.make_initializer(test)
    with tf.Session() as sess:
        sess.run(init_train)
        assert [int(sess.run(nxt)) for _ in range(2)] == [0, 10]
        sess.run(init_test)
        assert [int(v) for v in drain(nxt, sess)] == [0, 1]
        sess.run(init_train)
        assert int(sess.run(nxt)) == 0
    with pytest.raises(TypeError, match="Expected output types"):
        it.make_initializer(tf.data.Dataset.from_tensors(np.float32(1)))
    with pytest.raises(ValueError, match="Iterator does not have an initializer."):
        _ = it.initializer


def test_text_lines(tmp_path):
    plain = os.path.join(str(tmp_path), "a.txt")
    with open(plain, "wb") as f:
        f.write(b"first\r\nsecond\n\nlast")
    packed = os.path.join(str(tmp_path), "b.txt.gz")
    with gzip.open(packed, "wb") as f:
        f.write(b"zipped 1\nzipped 2\n")
    lines = tf.data.TextLineDataset([plain]).make_one_shot_iterator().get_next()
    assert drain(lines) == [b"first", b"second", b"", b"last"]
    tf.reset_default_graph()
    ds = tf.data.TextLineDataset(packed, compression_type="GZIP")
    assert drain(ds.make_one_shot_iterator().get_next()) == [b"zipped 1", b"zipped 2"]
    tf.reset_default_graph()
    missing = tf.data.TextLineDataset(os.path.join(str(tmp_path), "nope.txt"))
    with tf.Session() as sess:
        with pytest.raises(errors.NotFoundError, match="nope.txt; No such file or directory"):
            sess.run(missing.make_one_shot_iterator().get_next())


def test_training_loop_ends_with_the_data():
    """Linear regression from a repeated, shuffled, batched dataset under MonitoredTrainingSession,
    which stops when the iterator ends: the fit reaches numpy's least squares."""
    rng = np.random.RandomState(1)
    x = rng.rand(64, 3).astype(np.float32)
    y = (x @ np.array([[2.0], [-1.0], [0.5]], np.float32) + 0.25).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(64, seed=3).batch(16).repeat(150)
    bx, by = ds.make_one_shot_iterator().get_next()
    pred = tf.layers.dense(bx, 1)
    loss = tf.reduce_mean(tf.square(pred - by))
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=step)
    kernel, bias = tf.trainable_variables()
    runs = 0
    with tf.train.MonitoredTrainingSession() as sess:
        while not sess.should_stop():
            sess.run(train)
            runs += 1
            w, b = sess.run([kernel, bias])  # raises nothing: the iterator is not read
    assert runs == 150 * 4
    a = np.hstack([x, np.ones((64, 1), np.float32)])
    ref = np.linalg.lstsq(a, y, rcond=None)[0].ravel()
    np.testing.assert_allclose(np.concatenate([w.ravel(), b]), ref, atol=2e-2)


def test_functions_capture_outer_tensors():
    """map and filter read tensors of the outer graph, fed when the iterator starts."""
    scale = tf.constant(3, tf.int64)
    limit = tf.placeholder(tf.int64, [])
    ds = tf.data.Dataset.range(6).map(lambda v: v * scale).filter(lambda v: v < limit)
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {limit: 10})
        assert [int(v) for v in drain(nxt, sess)] == [0, 3, 6, 9]
        sess.run(it.initializer, {limit: 4})
        assert [int(v) for v in drain(nxt, sess)] == [0, 3]
    one_shot = tf.data.Dataset.range(3).map(lambda v: v + scale)
    assert [int(v) for v in drain(one_shot.make_one_shot_iterator().get_next())] == [3, 4, 5]


def test_construction_errors():
    with pytest.raises(ValueError, match="Dimensions 3 and 2 are not compatible"):
        tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(2)))
    with pytest.raises(ValueError, match="batch_size must be greater than zero."):
        tf.data.Dataset.range(3).batch(0)
    ragged = tf.data.Dataset.range(1, 3).map(lambda n: tf.fill(tf.expand_dims(n, 0), n)).batch(2)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match="Cannot batch tensors with different shapes in component 0. "
                                 r"First element had shape \[1\] and element 1 had shape \[2\]."):
            sess.run(ragged.make_one_shot_iterator().get_next())


def test_doc_example_prints_what_it_says():
    from _docs import check_section
    check_section("tf.data", ["(?, 2) (?,)\n[0 1 0 1]\n[0 1]\nend\n"])


def crc32c(data):
    """CRC-32C (Castagnoli), bit by bit: a reference independent of the core's table."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def framed(record):
    """One TFRecord as TensorFlow's record writer frames it."""
    import struct
    n = struct.pack("<Q", len(record))
    return n + struct.pack("<I", masked(crc32c(n))) + record + \
        struct.pack("<I", masked(crc32c(record)))


def test_tfrecord_files_written_read_and_checked(tmp_path):
    records = [b"", b"one", bytes(range(256)) * 3]
    path = os.path.join(str(tmp_path), "r.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)
    with open(path, "rb") as f:
        assert f.read() == b"".join(framed(r) for r in records)
    assert list(tf.python_io.tf_record_iterator(path)) == records
    # GZIP: the same records as one gzip stream, both ways
    gz = os.path.join(str(tmp_path), "r.tfrecord.gz")
    with tf.python_io.TFRecordWriter(gz, tf.python_io.TFRecordOptions(
            tf.python_io.TFRecordCompressionType.GZIP)) as w:
        for r in records:
            w.write(r)
    assert gzip.decompress(open(gz, "rb").read()) == b"".join(framed(r) for r in records)
    assert list(tf.io.tf_record_iterator(gz, "GZIP")) == records
    # a flipped byte in the second record's data
    bad = os.path.join(str(tmp_path), "bad.tfrecord")
    data = bytearray(b"".join(framed(r) for r in records))
    data[len(framed(records[0])) + 12] ^= 1
    open(bad, "wb").write(bytes(data))
    with pytest.raises(errors.DataLossError, match="offset 16: the data's crc32c does not match"):
        list(tf.io.tf_record_iterator(bad))


def test_tfrecord_dataset_of_examples(tmp_path):
    path = os.path.join(str(tmp_path), "ex.tfrecord")
    with open(path, "wb") as f:
        for i in range(5):
            ex = tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i, i * 0.5])),
                "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2]))}))
            f.write(framed(ex.SerializeToString()))
    files = tf.placeholder(tf.string, [None])
    ds = tf.data.TFRecordDataset(files).map(lambda s: tf.parse_single_example(s, {
        "x": tf.FixedLenFeature([2], tf.float32), "y": tf.FixedLenFeature([], tf.int64)}))
    it = ds.batch(2).make_initializable_iterator()
    el = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {files: [path, path]})
        got = drain(el, sess)
    xs = np.concatenate([g["x"] for g in got])
    np.testing.assert_array_equal(xs, np.tile([[i, i * 0.5] for i in range(5)], (2, 1)))
    np.testing.assert_array_equal(np.concatenate([g["y"] for g in got]), [0, 1, 0, 1, 0] * 2)


def test_interleave_cycles_blocks_and_refills():
    # TensorFlow's documented example: 1..5, each repeated 6 times, cycle 2, block 4.
    ds = tf.data.Dataset.range(1, 6).interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(6), cycle_length=2, block_length=4)
    got = [int(v) for v in drain(ds.make_one_shot_iterator().get_next())]
    assert got == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4,
                   5, 5, 5, 5, 5, 5]
    tf.reset_default_graph()
    # Datasets of unequal lengths: an ended slot moves the cycle on, refilled when it is back.
    ds = tf.data.Dataset.range(1, 5).interleave(lambda n: tf.data.Dataset.range(int(n)),
                                                cycle_length=3)
    got = [int(v) for v in drain(ds.make_one_shot_iterator().get_next())]
    assert got == [0, 0, 0, 1, 1, 0, 2, 1, 2, 3]
    tf.reset_default_graph()
    with pytest.raises(ValueError, match="cycle_length must be greater than zero."):
        tf.data.Dataset.range(3).interleave(lambda n: tf.data.Dataset.range(1), cycle_length=0)
    with pytest.raises(ValueError, match="block_length must be greater than zero."):
        tf.data.Dataset.range(3).interleave(lambda n: tf.data.Dataset.range(1), block_length=0)
    with pytest.raises(TypeError, match="must return a `Dataset` object"):
        tf.data.Dataset.range(3).interleave(lambda n: n)


def test_interleave_of_tfrecord_files(tmp_path):
    paths = []
    for f in range(3):
        p = str(tmp_path / ("part-%d.tfrecord" % f))
        with tf.io.TFRecordWriter(p) as w:
            for r in range(f + 1):
                w.write(b"f%d-r%d" % (f, r))
        paths.append(p)
    ds = tf.data.Dataset.from_tensor_slices(paths).interleave(tf.data.TFRecordDataset,
                                                              cycle_length=2)
    got = drain(ds.make_one_shot_iterator().get_next())
    tf.reset_default_graph()
    ds2 = tf.data.Dataset.from_tensor_slices(paths).apply(
        tf.data.experimental.parallel_interleave(tf.data.TFRecordDataset, cycle_length=2))
    assert drain(ds2.make_one_shot_iterator().get_next()) == got
    # f0 ends after one record: its slot takes f2 when the cycle comes back to it.
    assert got == [b"f0-r0", b"f1-r0", b"f1-r1", b"f2-r0", b"f2-r1", b"f2-r2"]


def test_cache_replays_the_first_pass():
    calls = []

    def count(v):
        calls.append(int(v))
        return v * 10

    ds = tf.data.Dataset.range(4).map(
        lambda v: tf.py_func(count, [v], tf.int64, stateful=True)).cache().repeat(3)
    got = [int(v) for v in drain(ds.make_one_shot_iterator().get_next())]
    assert got == [0, 10, 20, 30] * 3
    assert calls == [0, 1, 2, 3]  # the map ran over the first pass only
    tf.reset_default_graph()
    # An initializable iterator fed other data gets another cache.
    x = tf.placeholder(tf.int64, [None])
    it = tf.data.Dataset.from_tensor_slices(x).cache().make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as s:
        for data in ([1, 2], [7, 8, 9], [1, 2]):
            s.run(it.initializer, {x: np.array(data)})
            assert [int(v) for v in drain(nxt, s)] == data
    with pytest.raises(NotImplementedError, match="only the in-memory cache"):
        tf.data.Dataset.range(3).cache("/tmp/somewhere")
