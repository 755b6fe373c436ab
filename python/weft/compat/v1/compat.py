"""tf.compat: TensorFlow 1.x's compatibility helpers: tf.compat.v1 (this same module, so that
`tf.compat.v1.placeholder` works in code written for either API), string conversion
(as_bytes, as_text, as_str, as_str_any, path_to_str) and forward_compatible."""
import contextlib as _contextlib
import datetime as _datetime
import numbers as _numbers
import os as _os
import sys as _sys

import numpy as _np

from .framework import Dimension as _Dimension

v1 = _sys.modules[__package__]

bytes_or_text_types = (bytes, str)
integral_types = (_numbers.Integral, _np.integer)
real_types = (_numbers.Real, _np.integer, _np.floating)


def as_bytes(bytes_or_text, encoding="utf-8"):
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError("Expected binary or unicode string, got %r" % (bytes_or_text,))


def as_text(bytes_or_text, encoding="utf-8"):
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError("Expected binary or unicode string, got %r" % (bytes_or_text,))


as_str = as_text
as_unicode = as_text


def as_str_any(value):
    """str(value), except that bytes are decoded rather than printed as b'...'."""
    return as_str(value) if isinstance(value, bytes) else str(value)


def path_to_str(path):
    return _os.fspath(path) if isinstance(path, _os.PathLike) else path


def dimension_value(dimension):
    """The int (or None) of a Dimension; anything else as it is."""
    return dimension.value if isinstance(dimension, _Dimension) else dimension


# weft implements TensorFlow 1.15's ops and attributes: a graph may use what TensorFlow's
# producers were allowed to emit by 1.15's release (2019-10-16), and nothing added later.
_HORIZON = [_datetime.date(2019, 10, 16)]


def forward_compatible(year, month, day):
    """True when the consumers of a graph (here weft) understand what TensorFlow's producers
    added by year-month-day, i.e. when that date is before weft's horizon."""
    return _HORIZON[0] > _datetime.date(year, month, day)


@_contextlib.contextmanager
def forward_compatibility_horizon(year, month, day):
    """Within the block, forward_compatible answers as if the horizon were year-month-day."""
    old = _HORIZON[0]
    _HORIZON[0] = _datetime.date(year, month, day)
    try:
        yield
    finally:
        _HORIZON[0] = old
