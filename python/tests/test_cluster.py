"""tf.train.ClusterSpec, tf.train.Server in this process (sessions on server.target, a server
outliving its Python object, a process exiting while its server runs) and
replica_device_setter's placement, with TensorFlow's messages on bad input."""
import gc
import threading
import textwrap

import numpy as np
import pytest

import weft.compat.v1 as tf
from _procs import Children, free_ports


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_cluster_spec_api():
    spec = tf.train.ClusterSpec({"ps": ["h0:1", "h1:2"], "worker": {1: "w1:3", 3: "w3:4"}})
    assert spec.jobs == ["ps", "worker"]
    assert spec.num_tasks("ps") == 2 and spec.num_tasks("worker") == 2
    assert spec.task_indices("worker") == [1, 3]
    assert spec.task_address("worker", 3) == "w3:4"
    assert spec.job_tasks("worker") == [None, "w1:3", None, "w3:4"]
    assert spec.as_dict() == {"ps": ["h0:1", "h1:2"], "worker": {1: "w1:3", 3: "w3:4"}}
    assert tf.train.ClusterSpec(spec) == spec and bool(spec)
    assert not tf.train.ClusterSpec({})


def test_cluster_spec_errors():
    spec = tf.train.ClusterSpec({"ps": ["h0:1"]})
    with pytest.raises(ValueError) as e:
        spec.num_tasks("worker")
    assert str(e.value) == "No such job in cluster: 'worker'"
    with pytest.raises(ValueError) as e:
        spec.task_address("ps", 4)
    assert str(e.value) == "No task with index 4 in job 'ps'"
    with pytest.raises(TypeError) as e:
        tf.train.ClusterSpec(["h:1"])
    assert str(e.value).startswith("`cluster` must be a dictionary mapping one or more job names")


def test_local_server_session():
    server = tf.train.Server.create_local_server()
    assert server.target.startswith("grpc://localhost:")
    a = tf.constant([1.0, 2.0])
    v = tf.Variable([3.0, 4.0], name="v")
    with tf.Session(server.target) as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(a * v), [3.0, 8.0])


def test_server_from_dict_and_outliving_its_object():
    (port,) = free_ports(1)
    server = tf.train.Server({"local": ["localhost:%d" % port]}, job_name="local", task_index=0)
    target = server.target
    assert target == "grpc://localhost:%d" % port
    del server
    gc.collect()
    with tf.device("/job:local/task:0"):
        x = tf.constant(2.0) * 21.0
    with tf.Session(target) as sess:
        assert sess.run(x) == 42.0


def test_server_errors():
    spec = tf.train.ClusterSpec({"ps": ["localhost:1"], "worker": ["localhost:2"]})
    with pytest.raises(ValueError) as e:
        tf.train.Server(spec)
    assert str(e.value) == "Must specify an explicit `job_name`."
    with pytest.raises(ValueError) as e:
        tf.train.Server({"w": ["localhost:1", "localhost:2"]}, job_name="w")
    assert str(e.value) == "Must specify an explicit `task_index`."
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.train.Server(spec, job_name="chief", task_index=0)
    assert e.value.message == "Job 'chief' is not in the cluster spec (its jobs: ps, worker)"
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.train.Server(spec, job_name="ps", task_index=3)
    assert e.value.message == ("Task /job:ps/task:3 is not in the cluster spec: job 'ps' has "
                               "only task 0")
    with pytest.raises(ValueError) as e:
        tf.train.Server(spec, job_name="ps", task_index=0, protocol="grpc+verbs")
    assert str(e.value) == "weft serves only the grpc protocol, not 'grpc+verbs'"


def test_in_process_cluster_two_tasks():
    p0, p1 = free_ports(2)
    cluster = tf.train.ClusterSpec({"ps": ["localhost:%d" % p0], "worker": ["localhost:%d" % p1]})
    ps = tf.train.Server(cluster, job_name="ps", task_index=0)
    worker = tf.train.Server(cluster, job_name="worker", task_index=0)
    assert ps.target != worker.target
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        w = tf.Variable([[1.0], [2.0]], name="w")
        x = tf.placeholder(tf.float32, [None, 2])
        y = tf.matmul(x, w)
    assert w.device == "/job:ps/task:0" and y.device == "/job:worker"
    with tf.Session(worker.target) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y, {x: [[3.0, 4.0]]}), [[11.0]])
        sess.run(w.assign([[0.5], [0.5]]))
    with tf.Session(ps.target) as sess:  # the variable lives on the ps task
        np.testing.assert_allclose(sess.run(w), [[0.5], [0.5]])


def test_replica_device_setter_round_robin():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:1")):
        a = tf.Variable(1.0, name="a")
        b = tf.Variable(1.0, name="b")
        gs = tf.train.get_or_create_global_step()
        c = tf.Variable(1.0, name="c")
        s = a + b
        tf.train.MomentumOptimizer(0.1, 0.9).minimize(s * c, global_step=gs)
    assert [v.device for v in (a, b, gs, c)] == ["/job:ps/task:0", "/job:ps/task:1",
                                                 "/job:ps/task:0", "/job:ps/task:1"]
    assert s.device == "/job:worker/task:1"
    g = tf.get_default_graph()
    # slots are colocated with their variable and take no turn in the round robin
    for v in ("a", "b", "c"):
        slot = g.get_operation_by_name(v + "/Momentum")
        assert slot.colocation_groups() == [("loc:@" + v).encode()]
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        d = tf.Variable(1.0, name="d")
    assert d.device == "/job:ps/task:0"
    assert tf.train.replica_device_setter(cluster={"worker": ["h:1"]}) is None
    assert tf.train.replica_device_setter(ps_tasks=0) is None
    with pytest.raises(TypeError) as e:
        tf.train.replica_device_setter(ps_tasks=1, ps_strategy=3)
    assert str(e.value) == "ps_strategy must be callable"


def test_process_exits_cleanly_while_serving():
    children = Children()
    try:
        (port,) = free_ports(1)
        script = textwrap.dedent("""
            import weft.compat.v1 as tf
            def main(_):
                server = tf.train.Server({"worker": ["localhost:%d"]}, job_name="worker",
                                         task_index=0)
                with tf.Session(server.target) as sess:
                    print(sess.run(tf.constant(7) * 6))
                return 0
            tf.app.run(main)
        """ % port)
        rc, out, err = children.finish(children.start(["-c", script]), timeout=120)
        assert (rc, out.strip()) == (0, "42"), err
    finally:
        children.kill_all()


def test_server_start_stop_join():
    (port,) = free_ports(1)
    server = tf.train.Server({"w": ["localhost:%d" % port]}, start=False)
    server.start()
    with tf.Session(server.target) as sess:
        assert sess.run(tf.constant(3) + 4) == 7
    done = []
    t = threading.Thread(target=lambda: (server.join(), done.append(1)))
    t.start()
    server.stop()
    t.join(60)
    assert done == [1]
    with pytest.raises(tf.errors.UnavailableError):
        with tf.Session(server.target, config=tf.ConfigProto(operation_timeout_in_ms=5000)) as s:
            s.run(tf.constant(1))
