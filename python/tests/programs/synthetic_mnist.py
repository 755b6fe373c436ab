"""Stands in for tensorflow.examples.tutorials.mnist.input_data in the held-out programs (no
network in the tests): read_data_sets returns small deterministic MNIST-shaped data sets whose
labels a fixed linear teacher assigns (a fifth of the pixels lit), and next_batch walks the examples in order (TensorFlow's
shuffles them; the tests replay the same order in numpy)."""
import numpy as np

N_TRAIN = 500
N_TEST = 200


def arrays(seed=20):
    rng = np.random.RandomState(seed)
    teacher = rng.randn(784, 10).astype(np.float32)
    # about a fifth of the pixels lit, as in MNIST, so the tutorials' learning rates suit it
    lit = rng.rand(N_TRAIN + N_TEST, 784) < 0.2
    images = (rng.rand(N_TRAIN + N_TEST, 784) * lit).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[np.argmax(images @ teacher, axis=1)]
    return images, labels


class DataSet:
    def __init__(self, images, labels):
        self.images = images
        self.labels = labels
        self.num_examples = images.shape[0]
        self._next = 0

    def next_batch(self, batch_size):
        idx = (self._next + np.arange(batch_size)) % self.num_examples
        self._next = (self._next + batch_size) % self.num_examples
        return self.images[idx], self.labels[idx]


class DataSets:
    pass


def read_data_sets(train_dir=None, one_hot=True):
    images, labels = arrays()
    sets = DataSets()
    sets.train = DataSet(images[:N_TRAIN], labels[:N_TRAIN])
    sets.test = DataSet(images[N_TRAIN:], labels[N_TRAIN:])
    sets.validation = sets.test
    return sets
