"""tf.logging: TensorFlow 1.x's logging functions over Python's logger "tensorflow", which
the rest of compat.v1 (Supervisor, hooks) already logs to."""
import logging as _logging
import sys as _sys

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
ERROR = _logging.ERROR
FATAL = _logging.FATAL



class _StderrHandler(_logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (a program or a test may replace it)."""

    def __init__(self):
        _logging.Handler.__init__(self)

    @property
    def stream(self):
        return _sys.stderr


_logger = _logging.getLogger("tensorflow")
if not _logger.handlers:
    # As TensorFlow: messages go to stderr; the level stays the root's (WARN) until
    # set_verbosity, so pytest's caplog and a program's logging.basicConfig still apply.
    _handler = _StderrHandler()
    _handler.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    _logger.addHandler(_handler)


def get_logger():
    return _logger


def set_verbosity(v):
    _logger.setLevel(v)


def get_verbosity():
    return _logger.getEffectiveLevel()


def log(level, msg, *args, **kwargs):
    _logger.log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs):
    _logger.debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    _logger.info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    _logger.warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    _logger.error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs):
    _logger.fatal(msg, *args, **kwargs)


_counts = {}


def log_every_n(level, msg, n, *args):
    """Logs on the 1st, (n+1)th, ... call from the same place."""
    caller = _sys._getframe(1)
    key = (caller.f_code.co_filename, caller.f_lineno)
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count % n == 0:
        _logger.log(level, msg, *args)


def log_first_n(level, msg, n, *args):
    caller = _sys._getframe(1)
    key = (caller.f_code.co_filename, caller.f_lineno)
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count < n:
        _logger.log(level, msg, *args)
