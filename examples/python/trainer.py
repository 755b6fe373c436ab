"""TensorFlow 1.x's between-graph example trainer (the "Distributed TensorFlow" guide's
trainer.py) run on weft with only its import line changed: a ps task that joins, and workers
that place variables with replica_device_setter and train a linear regression in a
MonitoredTrainingSession until the global step reaches --train_steps. With --checkpoint_dir the
chief also leaves TensorBoard's event files there (`tensorboard --logdir DIR`): the `loss`
summary, global_step/sec and the graph with each node's placed device.

  python3 trainer.py --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224 \
      --job_name=ps --task_index=0
  python3 trainer.py ... --job_name=worker --task_index=0   (and --task_index=1)

The data is deterministic (x = sin/cos features of the row index; y = x.w + b + a small
sine "noise"), so the least-squares answer can be computed independently with numpy."""
import numpy as np

import weft.compat.v1 as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_integer("train_steps", 400, "Global step at which training stops")
flags.DEFINE_float("learning_rate", 0.1, "Gradient descent learning rate")
flags.DEFINE_boolean("sync_replicas", False, "Aggregate the workers' gradients synchronously")
flags.DEFINE_string("checkpoint_dir", "", "Where the chief saves checkpoints ('' = nowhere)")
FLAGS = flags.FLAGS


def dataset(n=64):
    i = np.arange(n, dtype=np.float64)
    x = np.stack([np.sin(0.3 * i), np.cos(0.7 * i), np.sin(1.1 * i + 0.5)], axis=1)
    y = x @ np.array([1.5, -2.0, 0.75]) + 0.5 + 0.05 * np.sin(2.3 * i)
    return x.astype(np.float32), y.reshape(n, 1).astype(np.float32)


def main(_):
    ps_hosts = FLAGS.ps_hosts.split(",")
    worker_hosts = FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)

    if FLAGS.job_name == "ps":
        server.join()
        return 0

    x_data, y_data = dataset()
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="mse")
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.GradientDescentOptimizer(FLAGS.learning_rate)
        if FLAGS.sync_replicas:
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=len(worker_hosts),
                                                 total_num_replicas=len(worker_hosts))
        train_op = opt.minimize(loss, global_step=global_step)
    # The tag is "loss" (the op is "mse": a scope named like an op would be "loss_1").
    # What TensorBoard shows: the chief's MonitoredTrainingSession writes the merged summaries
    # (every 100 steps), global_step/sec and the placed graph to --checkpoint_dir.
    tf.summary.scalar("loss", loss)

    hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
    if FLAGS.sync_replicas:
        hooks.append(opt.make_session_run_hook(FLAGS.task_index == 0))
    # Each worker's session needs only the ps and itself: a worker that starts late does not
    # wait for one that has already finished.
    config = tf.ConfigProto(device_filters=["/job:ps",
                                            "/job:worker/task:%d" % FLAGS.task_index])
    feed = {x: x_data, y: y_data}
    first = None
    with tf.train.MonitoredTrainingSession(master=server.target,
                                           is_chief=(FLAGS.task_index == 0),
                                           checkpoint_dir=FLAGS.checkpoint_dir or None,
                                           hooks=hooks, config=config) as mon_sess:
        while not mon_sess.should_stop():
            _, step, value = mon_sess.run([train_op, global_step, loss], feed_dict=feed)
            if FLAGS.task_index == 0:
                # the chief's every loss, as float32's 9 digits: the summaries it logs are some
                print("worker 0: step %d loss %.9g" % (step, value), flush=True)
            if first is None:
                first = value
                print("worker %d: first loss %.6f at step %d" % (FLAGS.task_index, value, step),
                      flush=True)
        final_loss, wv, bv = mon_sess.run([loss, w, b], feed_dict=feed)
    print("worker %d: final loss %.6f" % (FLAGS.task_index, final_loss), flush=True)
    print("worker %d: w %s b %s" % (FLAGS.task_index, " ".join("%.6f" % v for v in wv.ravel()),
                                    "%.6f" % bv[0]), flush=True)
    return 0


if __name__ == "__main__":
    tf.app.run(main=main)
