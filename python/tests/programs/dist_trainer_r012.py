# Copyright 2016 The TensorFlow Authors. All Rights Reserved.
# Licensed under the Apache License, Version 2.0 (http://www.apache.org/licenses/LICENSE-2.0).
# Source: the "Distributed TensorFlow" how-to of TensorFlow r0.12, "Putting it all together:
# example trainer program" (between-graph replication with tf.train.Supervisor)
# (https://github.com/tensorflow/tensorflow/blob/r0.12/tensorflow/g3doc/how_tos/distributed/index.md).
# Its "Build model..." is filled with a linear regression on fed data.
#
# Changed for weft's tests: `import tensorflow as tf` -> `import weft.compat.v1 as tf`; the
# model and its synthetic data (dataset()); the learning rate 0.5 instead of 0.01; --logdir
# instead of /tmp/train_logs; 300 steps instead of 1000000; prints the final weights and loss;
# the session's device_filters (ps and this worker), as TensorFlow's mnist_replica.py sets them,
# so that a worker whose Supervisor is still waiting for the model to be ready does not then
# wait for the other worker's server, gone once that worker finished its steps.
import numpy as np

import weft.compat.v1 as tf

# Flags for defining the tf.train.ClusterSpec
tf.app.flags.DEFINE_string("ps_hosts", "",
                           "Comma-separated list of hostname:port pairs")
tf.app.flags.DEFINE_string("worker_hosts", "",
                           "Comma-separated list of hostname:port pairs")

# Flags for defining the tf.train.Server
tf.app.flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
tf.app.flags.DEFINE_integer("task_index", 0, "Index of task within the job")
tf.app.flags.DEFINE_string("logdir", "/tmp/train_logs", "Training directory")

FLAGS = tf.app.flags.FLAGS


def dataset():
  rng = np.random.RandomState(7)
  x = rng.rand(64, 3).astype(np.float32)
  y = (x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.25
       + 0.01 * rng.randn(64, 1).astype(np.float32))
  return x, y


def main(_):
  ps_hosts = FLAGS.ps_hosts.split(",")
  worker_hosts = FLAGS.worker_hosts.split(",")

  # Create a cluster from the parameter server and worker hosts.
  cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})

  # Create and start a server for the local task.
  server = tf.train.Server(cluster,
                           job_name=FLAGS.job_name,
                           task_index=FLAGS.task_index)

  if FLAGS.job_name == "ps":
    server.join()
  elif FLAGS.job_name == "worker":

    # Assigns ops to the local worker by default.
    with tf.device(tf.train.replica_device_setter(
        worker_device="/job:worker/task:%d" % FLAGS.task_index,
        cluster=cluster)):

      # Build model...
      x = tf.placeholder(tf.float32, [None, 3])
      y = tf.placeholder(tf.float32, [None, 1])
      w = tf.Variable(tf.zeros([3, 1]), name="w")
      b = tf.Variable(tf.zeros([1]), name="b")
      loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
      global_step = tf.Variable(0)

      train_op = tf.train.AdagradOptimizer(0.5).minimize(
          loss, global_step=global_step)

      saver = tf.train.Saver()
      summary_op = tf.summary.merge_all()
      init_op = tf.global_variables_initializer()

    # Create a "supervisor", which oversees the training process.
    sv = tf.train.Supervisor(is_chief=(FLAGS.task_index == 0),
                             logdir=FLAGS.logdir,
                             init_op=init_op,
                             summary_op=summary_op,
                             saver=saver,
                             global_step=global_step,
                             save_model_secs=600)

    data_x, data_y = dataset()
    # The supervisor takes care of session initialization, restoring from
    # a checkpoint, and closing when done or an error occurs.
    sess_config = tf.ConfigProto(
        device_filters=["/job:ps", "/job:worker/task:%d" % FLAGS.task_index])
    with sv.managed_session(server.target, config=sess_config) as sess:
      # Loop until the supervisor shuts down or 300 steps have completed.
      step = 0
      while not sv.should_stop() and step < 300:
        # Run a training step asynchronously.
        # See `tf.train.SyncReplicasOptimizer` for additional details on how to
        # perform *synchronous* training.
        _, step = sess.run([train_op, global_step], {x: data_x, y: data_y})
      final_loss, final_w, final_b = sess.run([loss, w, b], {x: data_x, y: data_y})
      print("worker %d: loss %.8f w %s b %s" % (FLAGS.task_index, final_loss,
                                                " ".join("%.6f" % v for v in final_w.ravel()),
                                                "%.6f" % final_b[0]))

    # Ask for all the services to stop.
    sv.stop()

if __name__ == "__main__":
  tf.app.run()
