# Copyright 2016 The TensorFlow Authors. All Rights Reserved.
# Licensed under the Apache License, Version 2.0 (http://www.apache.org/licenses/LICENSE-2.0).
# Source: TensorFlow 1.x's programmer's guide "Supervisor: Training Helper for Days-Long
# Trainings", "Very Simple Scenario" and "Checking for Stop"
# (https://github.com/tensorflow/tensorflow/blob/r1.4/tensorflow/docs_src/programmers_guide/supervisor.md),
# whose "...create graph..." is filled with the guide's own beginners' MNIST model (softmax
# regression with zero-initialized weights and a global step, as the guide asks), logging its
# loss with tf.logging as TensorFlow's trainers do.
#
# Changed for weft's tests: `import tensorflow as tf` -> `import weft.compat.v1 as tf`; the
# training directory comes from argv[1]; 60 steps instead of 100000; data from synthetic_mnist.
import sys

import weft.compat.v1 as tf
from synthetic_mnist import read_data_sets

tf.logging.set_verbosity(tf.logging.INFO)
mnist = read_data_sets("/tmp/data", one_hot=True)

with tf.Graph().as_default():
  # ...create graph...
  global_step = tf.train.get_or_create_global_step()
  x = tf.placeholder(tf.float32, [None, 784])
  y_ = tf.placeholder(tf.float32, [None, 10])
  W = tf.Variable(tf.zeros([784, 10]))
  b = tf.Variable(tf.zeros([10]))
  y = tf.matmul(x, W) + b
  loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y))
  learning_rate = tf.train.exponential_decay(0.5, global_step, 20, 0.5, staircase=True)
  my_train_op = tf.train.GradientDescentOptimizer(learning_rate).minimize(
      loss, global_step=global_step)
  acc, acc_update = tf.metrics.accuracy(labels=tf.argmax(y_, 1), predictions=tf.argmax(y, 1))

  sv = tf.train.Supervisor(logdir=sys.argv[1])
  with sv.managed_session() as sess:
    for step in range(60):
      if sv.should_stop():
        break
      batch_xs, batch_ys = mnist.train.next_batch(100)
      _, loss_value = sess.run([my_train_op, loss], {x: batch_xs, y_: batch_ys})
      if step % 10 == 0:
        tf.logging.info("step %d: loss = %.6f", step, loss_value)
    for _ in range(2):
      batch_xs, batch_ys = mnist.test.next_batch(100)
      sess.run(acc_update, {x: batch_xs, y_: batch_ys})
    print("final step %d loss %.6f accuracy %.4f" % (sess.run(global_step), loss_value,
                                                     sess.run(acc)))
