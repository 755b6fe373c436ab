"""tf.data for TensorFlow 1.x graphs (tensorflow/python/data), in Python over tf.py_func.

A Dataset here is a Python description of a pipeline: its element structure (nested tuples,
dicts and namedtuples of components, each with a dtype and a static shape) and how to produce
elements as numpy values. An iterator's get_next() is a stateful PyFunc node that returns the
next element's components (numpy values, so the rest of the graph sees ordinary tensors) and
ends with OutOfRangeError "End of sequence", as TensorFlow's IteratorGetNext does; its
initializer is a PyFunc node that starts the iterator over, reading the values of the graph
tensors the pipeline's sources were given (placeholders fed at initialization, as TensorFlow's
initializable iterators are used). Functions given to map, filter and flat_map are traced once
into a graph of their own, as TensorFlow traces them into a function, and run on each element in
a session of that graph.

What differs from TensorFlow (docs/python.md, "tf.data"): an iterator's position belongs to its
graph, shared by the sessions of that graph, where TensorFlow keeps one per session; elements are
made on the caller's step, one at a time (prefetch and num_parallel_calls change nothing; cache()
keeps the elements in memory, no filename); shuffle draws from numpy's generator, so its orders are not TensorFlow's; an outer
graph's tensor that a traced function reads (a constant, a placeholder) is read once, when the
iterator starts, where TensorFlow reads a captured variable on every element."""
import itertools as _itertools

import numpy as _np

from weft import errors as _errors

from . import dtypes as _dtypes
from . import framework as _fw
from . import script_ops as _script_ops

AUTOTUNE = -1

# ---------------------------------------------------------------------------------------------
# Element structures: tuples, dicts and namedtuples nest; anything else (lists included, as in
# TensorFlow, where a list is one tensor) is a component.


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _flatten(x):
    if isinstance(x, dict):
        return [c for k in sorted(x) for c in _flatten(x[k])]
    if isinstance(x, tuple):
        return [c for v in x for c in _flatten(v)]
    return [x]


def _pack(template, flat):
    """template's structure with its components taken in order from the iterator flat."""
    if isinstance(template, dict):
        return {k: _pack(template[k], flat) for k in sorted(template)}
    if _is_namedtuple(template):
        return type(template)(*[_pack(v, flat) for v in template])
    if isinstance(template, tuple):
        return tuple(_pack(v, flat) for v in template)
    return next(flat)


def _map_structure(fn, x):
    return _pack(x, iter([fn(c) for c in _flatten(x)]))


def _shape_list(shape):
    s = _fw.as_shape(shape)
    return None if s.ndims is None else list(s.as_list())


def _merge_dim(a, b):
    return a if a == b else None


def _common_shape(a, b):
    if a is None or b is None or len(a) != len(b):
        return None
    return [_merge_dim(x, y) for x, y in zip(a, b)]


def _as_array(value, dtype):
    """value as a numpy array of dtype (strings as an object array of bytes)."""
    if dtype == _dtypes.string:
        arr = _np.asarray(value, dtype=object)
        return _np.vectorize(lambda v: v.encode() if isinstance(v, str) else bytes(v),
                             otypes=[object])(arr) if arr.size else arr
    return _np.asarray(value, dtype=dtype.as_numpy_dtype)


# ---------------------------------------------------------------------------------------------
# Datasets


class _Structured:
    """What datasets and iterators share: _template, _types and _shapes read as TensorFlow's
    output_types, output_shapes and output_classes."""

    @property
    def output_types(self):
        return _pack(self._template, iter(self._types))

    @property
    def output_shapes(self):
        return _pack(self._template, iter([_fw.TensorShape(s) for s in self._shapes]))

    @property
    def output_classes(self):
        return _map_structure(lambda _: _fw.Tensor, self._template)


class Dataset(_Structured):
    """tf.data.Dataset: subclasses set _template (the element structure), _types and _shapes (per
    component: a DType and a list of dims, or None for an unknown rank) and _captured (graph
    tensors whose values the sources read), and implement _elements(values), an iterator of
    elements as lists of numpy components, where values maps id(tensor) to its value."""

    _captured = ()

    def __iter__(self):
        raise RuntimeError("dataset.__iter__() is only supported when eager execution is "
                           "enabled.")

    # -- sources -----------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors):
        return _Slices(tensors, sliced=True)

    @staticmethod
    def from_tensors(tensors):
        return _Slices(tensors, sliced=False)

    @staticmethod
    def range(*args):
        return _Range(*args)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        """The file names the glob pattern(s) match, found by a MatchingFiles op of the graph
        when the iterator starts, shuffled unless shuffle=False; none matching is an
        InvalidArgumentError "No files matched pattern: ..." then, as in TensorFlow 1.15."""
        from . import ops as _ops
        from .io import matching_files
        with _fw.name_scope("list_files"):
            pattern = _ops._to_tensor(file_pattern, dtype=_dtypes.string)
            dataset = _ListFiles(pattern, matching_files(pattern))
        if shuffle is None or shuffle:
            # Every name in the buffer at once: a full shuffle, as TensorFlow's buffer of
            # max(number of files, 1).
            dataset = dataset.shuffle(2 ** 62, seed=seed)
        return dataset

    @staticmethod
    def from_generator(generator, output_types, output_shapes=None, args=None):
        return _Generator(generator, output_types, output_shapes, args)

    @staticmethod
    def zip(datasets):
        return _Zip(datasets)

    # -- transformations ---------------------------------------------------------------------
    def map(self, map_func, num_parallel_calls=None):
        return _Map(self, map_func)

    def filter(self, predicate):
        return _Filter(self, predicate)

    def flat_map(self, map_func):
        return _FlatMap(self, map_func)

    def interleave(self, map_func, cycle_length=AUTOTUNE, block_length=1,
                   num_parallel_calls=None):
        return _Interleave(self, map_func, cycle_length, block_length)

    def batch(self, batch_size, drop_remainder=False):
        return _Batch(self, batch_size, drop_remainder)

    def padded_batch(self, batch_size, padded_shapes, padding_values=None,
                     drop_remainder=False):
        return _Batch(self, batch_size, drop_remainder, padded_shapes, padding_values)

    def unbatch(self):
        return _Unbatch(self)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        return _Shuffle(self, buffer_size, seed,
                        True if reshuffle_each_iteration is None else reshuffle_each_iteration)

    def repeat(self, count=None):
        return _Repeat(self, count)

    def take(self, count):
        return _Take(self, count)

    def skip(self, count):
        return _Skip(self, count)

    def concatenate(self, dataset):
        return _Concatenate(self, dataset)

    def prefetch(self, buffer_size):
        return self

    def cache(self, filename=""):
        if filename:
            raise NotImplementedError("Dataset.cache(filename) is not supported by weft: only "
                                      "the in-memory cache (no filename)")
        return _Cache(self)

    def apply(self, transformation_func):
        return transformation_func(self)

    def with_options(self, options):
        return self

    # -- iterators ---------------------------------------------------------------------------
    def make_one_shot_iterator(self):
        return Iterator._for(self, one_shot=True)

    def make_initializable_iterator(self, shared_name=None):
        return Iterator._for(self, one_shot=False)


def _int_arg(value, what):
    if isinstance(value, _fw.Tensor):
        raise NotImplementedError("%s must be a Python or numpy integer in weft's tf.data, not a "
                                  "tensor" % what)
    return int(value)


class _Slices(Dataset):
    def __init__(self, tensors, sliced):
        self._template = _map_structure(lambda _: None, tensors)
        comps = _flatten(tensors)
        if not comps:
            raise ValueError("Dataset.from_tensor%s() needs at least one component"
                             % ("_slices" if sliced else "s"))
        self._values, types, shapes, captured = [], [], [], []
        for c in comps:
            if isinstance(c, _fw.Tensor):
                captured.append(c)
                self._values.append(c)
                types.append(c.dtype.base_dtype)
                shapes.append(_shape_list(c.shape))
            else:
                arr, dt = _fw._infer_numpy(c, None)
                self._values.append(arr)
                types.append(dt)
                shapes.append(list(arr.shape))
        self._sliced = sliced
        self._captured = tuple(captured)
        if sliced:
            rows = None
            for s in shapes:
                if s is not None and len(s) == 0:
                    raise ValueError("Dataset.from_tensor_slices() needs components of rank 1 "
                                     "or more, got a scalar")
                if s is not None and s[0] is not None:
                    if rows is not None and rows != s[0]:
                        raise ValueError("Dimensions %d and %d are not compatible" % (rows, s[0]))
                    rows = s[0]
            shapes = [None if s is None else s[1:] for s in shapes]
        self._types, self._shapes = types, shapes

    def _arrays(self, values):
        return [values[id(v)] if isinstance(v, _fw.Tensor) else v for v in self._values]

    def _elements(self, values):
        arrays = self._arrays(values)
        if not self._sliced:
            yield list(arrays)
            return
        rows = {a.shape[0] if a.ndim else -1 for a in arrays}
        if -1 in rows or len(rows) != 1:
            raise ValueError("Dataset.from_tensor_slices(): the components' first dimensions "
                             "differ: %s" % sorted(a.shape[0] if a.ndim else None
                                                   for a in arrays))
        for i in range(rows.pop()):
            yield [a[i] for a in arrays]


class _ListFiles(Dataset):
    """Dataset.list_files before its shuffle: the names the MatchingFiles tensor `files` holds,
    an error naming the patterns when there are none."""

    def __init__(self, pattern, files):
        self._template, self._types, self._shapes = None, [_dtypes.string], [[]]
        self._captured = (pattern, files)

    def _elements(self, values):
        pattern, files = (values[id(t)] for t in self._captured)
        if len(files) == 0:
            names = [p.decode() if isinstance(p, bytes) else str(p)
                     for p in _np.asarray(pattern, dtype=object).reshape(-1)]
            raise _errors.InvalidArgumentError(
                None, None, "No files matched pattern: %s" % ", ".join(names))
        for name in files:
            yield [_np.array(name, dtype=object)]


class _Range(Dataset):
    def __init__(self, *args):
        if not 1 <= len(args) <= 3:
            raise ValueError("Invalid arguments to Dataset.range(): %s" % (args,))
        self._range = range(*[_int_arg(a, "Dataset.range's arguments") for a in args])
        self._template, self._types, self._shapes = None, [_dtypes.int64], [[]]

    def _elements(self, values):
        for v in self._range:
            yield [_np.int64(v)]


class _Generator(Dataset):
    def __init__(self, generator, output_types, output_shapes, args):
        if not callable(generator):
            raise TypeError("`generator` must be callable.")
        self._template = _map_structure(lambda _: None, output_types)
        self._types = [_dtypes.as_dtype(t) for t in _flatten(output_types)]
        if output_shapes is None:
            self._shapes = [None] * len(self._types)
        else:
            self._shapes = [_shape_list(s) for s in
                            _flatten_shapes(output_shapes, self._template)]
        self._generator, self._args = generator, tuple(args or ())

    def _elements(self, values):
        for item in self._generator(*self._args):
            comps = _flatten(item) if isinstance(item, (tuple, dict)) else [item]
            if len(comps) != len(self._types):
                raise TypeError("`generator` yielded an element that did not match the expected "
                                "structure. The expected structure was %s, but the yielded "
                                "element was %r." % (self.output_types, item))
            out = []
            for c, t, s in zip(comps, self._types, self._shapes):
                try:
                    arr = _as_array(c, t)
                except (TypeError, ValueError):
                    raise TypeError("`generator` yielded an element that could not be converted "
                                    "to the expected type. The expected type was %s, but the "
                                    "yielded element was %r." % (t.name, c)) from None
                if s is not None and (arr.ndim != len(s) or any(
                        d is not None and d != a for d, a in zip(s, arr.shape))):
                    raise ValueError("`generator` yielded an element of shape %s where an element "
                                     "of shape %s was expected." % (list(arr.shape), s))
                out.append(arr)
            yield out


def _flatten_shapes(shapes, template):
    """output_shapes given as TensorShapes, lists or tuples of dims, nested as template."""
    if template is None:
        return [shapes]
    if isinstance(template, dict):
        return [s for k in sorted(template) for s in _flatten_shapes(shapes[k], template[k])]
    return [s for t, sh in zip(template, shapes) for s in _flatten_shapes(sh, t)]


class _Zip(Dataset):
    def __init__(self, datasets):
        self._parts = _flatten(datasets)
        for d in self._parts:
            if not isinstance(d, Dataset):
                raise TypeError("Dataset.zip() takes a (nested) structure of datasets, got %r"
                                % (d,))
        self._template = _pack(_map_structure(lambda _: None, datasets),
                               iter([d._template for d in self._parts]))
        self._types = [t for d in self._parts for t in d._types]
        self._shapes = [s for d in self._parts for s in d._shapes]
        self._captured = tuple(t for d in self._parts for t in d._captured)

    def _elements(self, values):
        for parts in zip(*[d._elements(values) for d in self._parts]):
            yield [c for p in parts for c in p]


class _Derived(Dataset):
    def __init__(self, source):
        self._source = source
        self._template, self._types, self._shapes = (source._template, source._types,
                                                     source._shapes)
        self._captured = source._captured


class _Traced:
    """fn traced into a graph of its own over placeholders of the element's components; called
    on an element's components, it runs the graph and returns its outputs' components."""

    def __init__(self, fn, dataset, what):
        from .ops import placeholder
        self._graph = _fw.Graph()
        self.captured = []  # outer tensors the function reads, in order
        self._stand_ins = {}  # id(outer tensor) -> its placeholder here

        def capture(outer):
            if id(outer) not in self._stand_ins:
                with self._graph.as_default():
                    self._stand_ins[id(outer)] = placeholder(outer.dtype.base_dtype,
                                                             outer.shape)
                self.captured.append(outer)
            return self._stand_ins[id(outer)]

        self._graph._capture = capture
        with self._graph.as_default():
            self._inputs = [placeholder(t, s) for t, s in zip(dataset._types, dataset._shapes)]
            arg = _pack(dataset._template, iter(self._inputs))
            out = fn(*arg) if type(arg) is tuple else fn(arg)
            self.template = _map_structure(lambda _: None, out)
            self.outputs = [t if t.graph is self._graph else capture(t)
                            for t in (_fw.convert_to_tensor(c) for c in _flatten(out))]
        self._graph._capture = None
        self._session = None

    def __call__(self, comps, values):
        if self._session is None:
            from .session import Session
            self._session = Session(graph=self._graph)
        feed = dict(zip(self._inputs, comps))
        for outer in self.captured:
            feed[self._stand_ins[id(outer)]] = values[id(outer)]
        got = self._session.run(self.outputs, feed)
        return [_np.asarray(v) if not isinstance(v, _np.ndarray) else v for v in got]


class _Map(_Derived):
    def __init__(self, source, fn):
        super().__init__(source)
        self._fn = _Traced(fn, source, "Dataset.map()")
        self._captured = source._captured + tuple(self._fn.captured)
        self._template = self._fn.template
        self._types = [t.dtype.base_dtype for t in self._fn.outputs]
        self._shapes = [_shape_list(t.shape) for t in self._fn.outputs]

    def _elements(self, values):
        for comps in self._source._elements(values):
            yield self._fn(comps, values)


class _Filter(_Derived):
    def __init__(self, source, predicate):
        super().__init__(source)
        self._pred = _Traced(predicate, source, "Dataset.filter()")
        self._captured = source._captured + tuple(self._pred.captured)
        outs = self._pred.outputs
        if len(outs) != 1 or outs[0].dtype.base_dtype != _dtypes.bool or \
                _shape_list(outs[0].shape) not in (None, []):
            raise ValueError("`predicate` return type must be convertible to a scalar boolean "
                             "tensor. Was %s." % ([str(t.dtype) for t in outs],))

    def _elements(self, values):
        for comps in self._source._elements(values):
            if bool(self._pred(comps, values)[0]):
                yield comps


class _FlatMap(_Derived):
    def __init__(self, source, fn):
        super().__init__(source)
        self._fn = fn
        probe = _probe(fn, source)
        if not isinstance(probe, Dataset):
            raise TypeError("`map_func` must return a `Dataset` object.")
        self._template, self._types, self._shapes = probe._template, probe._types, probe._shapes

    def _elements(self, values):
        for comps in self._source._elements(values):
            arg = _pack(self._source._template, iter(comps))
            inner = self._fn(*arg) if type(arg) is tuple else self._fn(arg)
            yield from inner._elements({})


class _Interleave(_FlatMap):
    """TensorFlow's InterleaveDataset, deterministic: cycle_length slots each hold the dataset of
    one input element; the cycle takes block_length elements from a slot before moving to the
    next; a slot whose dataset ends moves the cycle on and is refilled from the input when the
    cycle comes back to it."""

    def __init__(self, source, fn, cycle_length, block_length):
        super().__init__(source, fn)
        cycle = _int_arg(cycle_length, "cycle_length")
        if cycle == AUTOTUNE:
            import os
            cycle = os.cpu_count() or 1  # TensorFlow: the machine's parallelism
        if cycle <= 0:
            raise ValueError("cycle_length must be greater than zero.")
        self._cycle = cycle
        self._block = _int_arg(block_length, "block_length")
        if self._block <= 0:
            raise ValueError("block_length must be greater than zero.")

    def _elements(self, values):
        inputs = self._source._elements(values)
        slots = [None] * self._cycle
        open_slots, input_done, i, taken = 0, False, 0, 0
        while not input_done or open_slots > 0:
            if slots[i] is not None:
                try:
                    comps = next(slots[i])
                except StopIteration:
                    slots[i] = None
                    open_slots -= 1
                    i, taken = (i + 1) % self._cycle, 0
                    continue
                taken += 1
                if taken == self._block:
                    i, taken = (i + 1) % self._cycle, 0
                yield comps
            elif not input_done:
                try:
                    comps = next(inputs)
                except StopIteration:
                    input_done = True
                    continue
                arg = _pack(self._source._template, iter(comps))
                inner = self._fn(*arg) if type(arg) is tuple else self._fn(arg)
                if not isinstance(inner, Dataset):
                    raise TypeError("`map_func` must return a `Dataset` object.")
                slots[i] = iter(inner._elements({}))
                open_slots += 1
            else:
                i, taken = (i + 1) % self._cycle, 0


def _probe(fn, dataset):
    """fn's result on numpy zeros of the element's components (for flat_map's structure)."""
    comps = [_np.zeros([d or 0 for d in (s or [])], t.as_numpy_dtype if t != _dtypes.string
                       else object) for t, s in zip(dataset._types, dataset._shapes)]
    arg = _pack(dataset._template, iter(comps))
    return fn(*arg) if type(arg) is tuple else fn(arg)


class _Batch(_Derived):
    def __init__(self, source, batch_size, drop_remainder, padded_shapes=None,
                 padding_values=None):
        super().__init__(source)
        self._n = _int_arg(batch_size, "batch_size")
        if self._n <= 0:
            raise ValueError("batch_size must be greater than zero.")
        self._drop = bool(drop_remainder)
        self._pad = None
        if padded_shapes is not None:
            pads = _flatten_shapes(padded_shapes, source._template)
            self._pad = [_shape_list(p) for p in pads]
            pv = (_flatten(padding_values) if padding_values is not None
                  else [None] * len(self._types))
            # Padding values given as tensors (TensorFlow's are): their values, once.
            if any(isinstance(v, _fw.Tensor) for v in pv):
                from .session import Session
                with Session(graph=next(v for v in pv if isinstance(v, _fw.Tensor)).graph) as s:
                    pv = [s.run(v) if isinstance(v, _fw.Tensor) else v for v in pv]
            self._pad_values = [(b"" if t == _dtypes.string else 0) if v is None else v
                                for v, t in zip(pv, self._types)]
            self._shapes = list(self._pad)
        lead = self._n if self._drop else None
        self._shapes = [None if s is None else [lead] + list(s) for s in self._shapes]

    def _stack(self, rows):
        out = []
        for i, t in enumerate(self._types):
            parts = [r[i] for r in rows]
            if self._pad is not None:
                want = self._pad[i]
                dims = [max(p.shape[d] for p in parts) if want[d] is None else want[d]
                        for d in range(len(want))]
                padded = []
                for p in parts:
                    if any(a > b for a, b in zip(p.shape, dims)):
                        raise ValueError("Attempted to pad to a smaller size than the input "
                                         "element.")
                    q = _np.full(dims, self._pad_values[i],
                                 dtype=object if t == _dtypes.string else t.as_numpy_dtype)
                    q[tuple(slice(0, a) for a in p.shape)] = p
                    padded.append(q)
                parts = padded
            elif len({_np.shape(p) for p in parts}) > 1:
                raise ValueError("Cannot batch tensors with different shapes in component %d. "
                                 "First element had shape %s and element %d had shape %s."
                                 % (i, list(_np.shape(parts[0])), next(
                                     k for k, p in enumerate(parts)
                                     if _np.shape(p) != _np.shape(parts[0])),
                                    list(next(_np.shape(p) for p in parts
                                              if _np.shape(p) != _np.shape(parts[0])))))
            out.append(_np.stack([_np.asarray(p) for p in parts]))
        return out

    def _elements(self, values):
        rows = []
        for comps in self._source._elements(values):
            rows.append(comps)
            if len(rows) == self._n:
                yield self._stack(rows)
                rows = []
        if rows and not self._drop:
            yield self._stack(rows)


class _Unbatch(_Derived):
    def __init__(self, source):
        super().__init__(source)
        self._shapes = [None if s is None else s[1:] for s in source._shapes]

    def _elements(self, values):
        for comps in self._source._elements(values):
            for i in range(len(comps[0]) if comps else 0):
                yield [c[i] for c in comps]


class _Shuffle(_Derived):
    def __init__(self, source, buffer_size, seed, reshuffle):
        super().__init__(source)
        self._buffer = _int_arg(buffer_size, "buffer_size")
        if self._buffer <= 0:
            raise ValueError("buffer_size must be greater than zero.")
        if seed is None:
            from .ops import get_seed
            graph_seed, op_seed = get_seed(None)
            seed = None if graph_seed is None else graph_seed * 1000003 + op_seed
        self._seed, self._reshuffle, self._epoch = seed, reshuffle, 0

    def _elements(self, values):
        seed = self._seed
        if seed is not None and self._reshuffle:
            seed = seed + 1000003 * self._epoch
        self._epoch += 1
        rng = _np.random.RandomState(None if seed is None else seed % (2 ** 32))
        buf = []
        for comps in self._source._elements(values):
            if len(buf) < self._buffer:
                buf.append(comps)
                continue
            k = rng.randint(len(buf))
            yield buf[k]
            buf[k] = comps
        while buf:
            yield buf.pop(rng.randint(len(buf)))


class _Repeat(_Derived):
    def __init__(self, source, count):
        super().__init__(source)
        self._count = -1 if count is None else _int_arg(count, "count")

    def _elements(self, values):
        epochs = _itertools.count() if self._count < 0 else range(self._count)
        for _ in epochs:
            empty = True
            for comps in self._source._elements(values):
                empty = False
                yield comps
            if empty:
                return


def _cache_key(value):
    arr = _np.asarray(value)
    if arr.dtype == object:
        return (arr.shape, tuple(arr.ravel().tolist()))
    return (arr.dtype.str, arr.shape, arr.tobytes())


class _Cache(_Derived):
    """Dataset.cache() in memory: the first pass that reaches the end keeps its elements, and
    later passes (a repeat, the iterator started again) replay them instead of running the
    pipeline before it (its functions, its random draws). One cache per set of values the
    pipeline's sources were given (an initializable iterator fed other data starts another)."""

    def __init__(self, source):
        super().__init__(source)
        self._store = {}

    def _elements(self, values):
        key = tuple(_cache_key(values[id(t)]) for t in self._captured)
        if key in self._store:
            yield from self._store[key]
            return
        rows = []
        for comps in self._source._elements(values):
            rows.append(comps)
            yield comps
        self._store[key] = rows


class _Take(_Derived):
    def __init__(self, source, count):
        super().__init__(source)
        self._count = _int_arg(count, "count")

    def _elements(self, values):
        it = self._source._elements(values)
        return it if self._count < 0 else _itertools.islice(it, self._count)


class _Skip(_Derived):
    def __init__(self, source, count):
        super().__init__(source)
        self._count = _int_arg(count, "count")

    def _elements(self, values):
        it = self._source._elements(values)
        if self._count < 0:
            return iter(())
        return _itertools.islice(it, self._count, None)


class _Concatenate(_Derived):
    def __init__(self, first, second):
        super().__init__(first)
        if first._types != second._types:
            raise TypeError("Two datasets to concatenate have different types %s and %s"
                            % (first.output_types, second.output_types))
        self._second = second
        self._shapes = [_common_shape(a, b) for a, b in zip(first._shapes, second._shapes)]
        self._captured = first._captured + second._captured

    def _elements(self, values):
        yield from self._source._elements(values)
        yield from self._second._elements(values)


class _FileDataset(Dataset):
    """Elements read from files (a name, a list of names, or a string tensor of them read when
    the iterator starts): subclasses give _read(name), an iterator of scalar strings."""

    def __init__(self, filenames, compression_type):
        self._template, self._types, self._shapes = None, [_dtypes.string], [[]]
        if isinstance(filenames, _fw.Tensor):
            self._captured, self._files = (filenames,), filenames
        else:
            self._files = self._names(filenames)
        if compression_type not in (None, "", "GZIP", "ZLIB"):
            raise ValueError("Unsupported compression_type: %s" % compression_type)
        self._compression = compression_type or ""

    @staticmethod
    def _names(value):
        return [f.decode() if isinstance(f, bytes) else str(f)
                for f in _np.asarray(value, dtype=object).reshape(-1)]

    def _elements(self, values):
        files = self._files
        if isinstance(files, _fw.Tensor):
            files = self._names(values[id(files)])
        for name in files:
            for record in self._read(name):
                yield [_np.array(record, dtype=object)]


class TextLineDataset(_FileDataset):
    """tf.data.TextLineDataset(filenames): each line of the files (without its \\n or \\r\\n)
    as a scalar string; compressed files ('GZIP', 'ZLIB') too."""

    def __init__(self, filenames, compression_type=None, buffer_size=None):
        super().__init__(filenames, compression_type)

    def _open(self, name):
        if self._compression == "GZIP":
            import gzip
            return gzip.open(name, "rb")
        if self._compression == "ZLIB":
            import io
            import zlib
            with open(name, "rb") as f:
                return io.BytesIO(zlib.decompress(f.read()))
        return open(name, "rb")

    def _read(self, name):
        try:
            f = self._open(name)
        except FileNotFoundError:
            raise _errors.NotFoundError(None, None,
                                        "%s; No such file or directory" % name) from None
        with f:
            for line in f:
                if line.endswith(b"\n"):
                    line = line[:-1]
                    if line.endswith(b"\r"):
                        line = line[:-1]
                yield line


class TFRecordDataset(_FileDataset):
    """tf.data.TFRecordDataset(filenames, compression_type=None): each record of the files, crcs
    checked, as a scalar string (a serialized tf.Example for tf.parse_single_example)."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        super().__init__(filenames, compression_type)

    def _read(self, name):
        from .io import _records_of
        return _records_of(name, self._compression)


# ---------------------------------------------------------------------------------------------
# Iterators


class Iterator(_Structured):
    """tf.data.Iterator: get_next() and initializers as PyFunc nodes over one Python iterator."""

    def __init__(self, template, types, shapes):
        self._template, self._types, self._shapes = template, types, shapes
        self._elements = None  # the running Python iterator of elements
        self._initializer = None
        self._one_shot = None  # the dataset a one-shot iterator starts on its first get_next
        self._graph = _fw.get_default_graph()

    @staticmethod
    def _for(dataset, one_shot):
        it = Iterator(dataset._template, dataset._types, dataset._shapes)
        if one_shot:
            it._one_shot = dataset
        else:
            it._initializer = it.make_initializer(dataset)
        return it

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None,
                       output_classes=None):
        template = _map_structure(lambda _: None, output_types)
        types = [_dtypes.as_dtype(t) for t in _flatten(output_types)]
        shapes = ([None] * len(types) if output_shapes is None
                  else [_shape_list(s) for s in _flatten_shapes(output_shapes, template)])
        return Iterator(template, types, shapes)

    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    def _start(self, dataset, arrays):
        values = {id(t): a for t, a in zip(dataset._captured, arrays)}
        self._elements = iter(dataset._elements(values))

    def make_initializer(self, dataset, name=None):
        if dataset._types != self._types:
            raise TypeError("Expected output types %s but got dataset with output types %s."
                            % (self.output_types, dataset.output_types))
        for mine, theirs in zip(self._shapes, dataset._shapes):
            if _common_shape(mine, theirs) != mine and mine is not None:
                raise TypeError("Expected output shapes compatible with %s but got dataset with "
                                "output shapes %s." % (self.output_shapes,
                                                       dataset.output_shapes))

        def initialize(*arrays):
            self._start(dataset, arrays)

        with self._graph.as_default():
            return _script_ops.py_func(initialize, list(dataset._captured), [],
                                       name=name or "make_initializer")

    def get_next(self, name=None):
        one_shot = self._one_shot
        captured = list(one_shot._captured) if one_shot is not None else []

        def next_element(*arrays):
            if self._elements is None:
                if one_shot is None:
                    raise _errors.FailedPreconditionError(
                        None, None, "GetNext() failed because the iterator has not been "
                        "initialized. Ensure that you have run the initializer operation for "
                        "this iterator before getting the next element.")
                self._start(one_shot, arrays)
            try:
                comps = next(self._elements)
            except StopIteration:
                raise _errors.OutOfRangeError(None, None, "End of sequence") from None
            return [_as_array(c, t) for c, t in zip(comps, self._types)]

        with self._graph.as_default():
            outs = _script_ops.py_func(next_element, captured, list(self._types),
                                       name=name or "IteratorGetNext")
            # A PyFunc's outputs have unknown shapes: EnsureShape gives the graph the dataset's
            # static shapes (and checks them on every element).
            from .array_ops import ensure_shape
            outs = [t if s is None else ensure_shape(t, s) for t, s in zip(outs, self._shapes)]
        return _pack(self._template, iter(outs))

    def string_handle(self, name=None):
        raise NotImplementedError("Iterator.string_handle() is not supported by weft: make one "
                                  "iterator with Iterator.from_structure and run the "
                                  "make_initializer op of the dataset to switch to")


def make_one_shot_iterator(dataset):
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None):
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes


class _Experimental:
    """tf.data.experimental: the names that have a meaning here."""

    AUTOTUNE = AUTOTUNE

    @staticmethod
    def unbatch():
        return lambda dataset: dataset.unbatch()

    @staticmethod
    def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                            buffer_output_elements=None, prefetch_input_elements=None):
        # Elements are made one at a time here: sloppy or not, the order is interleave's.
        return lambda dataset: dataset.interleave(map_func, cycle_length, block_length)

    @staticmethod
    def make_one_shot_iterator(dataset):
        return dataset.make_one_shot_iterator()

    @staticmethod
    def make_initializable_iterator(dataset):
        return dataset.make_initializable_iterator()


experimental = _Experimental()


class Options:
    """tf.data.Options: accepted by with_options, which changes nothing here."""

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
