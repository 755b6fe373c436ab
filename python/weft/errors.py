"""Weft's errors as Python exceptions: one class per weft_code_t, named as TensorFlow names them
(tf.errors.InvalidArgumentError, ...), all OpError subclasses carrying the core's message."""

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """TensorFlow's OpError(node_def, op, message, error_code): .message is the core's text;
    .op the Operation at fault when the Python layer knows it, else None."""

    def __init__(self, node_def, op, message, error_code=UNKNOWN):
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message
        self.error_code = error_code

    def __str__(self):
        return self.message


def _make(name, code):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)
    return type(name, (OpError,), {"__init__": __init__, "__doc__": f"weft code {code}."})


CancelledError = _make("CancelledError", CANCELLED)
UnknownError = _make("UnknownError", UNKNOWN)
InvalidArgumentError = _make("InvalidArgumentError", INVALID_ARGUMENT)
DeadlineExceededError = _make("DeadlineExceededError", DEADLINE_EXCEEDED)
NotFoundError = _make("NotFoundError", NOT_FOUND)
AlreadyExistsError = _make("AlreadyExistsError", ALREADY_EXISTS)
PermissionDeniedError = _make("PermissionDeniedError", PERMISSION_DENIED)
ResourceExhaustedError = _make("ResourceExhaustedError", RESOURCE_EXHAUSTED)
FailedPreconditionError = _make("FailedPreconditionError", FAILED_PRECONDITION)
AbortedError = _make("AbortedError", ABORTED)
OutOfRangeError = _make("OutOfRangeError", OUT_OF_RANGE)
UnimplementedError = _make("UnimplementedError", UNIMPLEMENTED)
InternalError = _make("InternalError", INTERNAL)
UnavailableError = _make("UnavailableError", UNAVAILABLE)
DataLossError = _make("DataLossError", DATA_LOSS)
UnauthenticatedError = _make("UnauthenticatedError", UNAUTHENTICATED)

_BY_CODE = {cls_code: cls for cls, cls_code in [
    (CancelledError, CANCELLED), (UnknownError, UNKNOWN),
    (InvalidArgumentError, INVALID_ARGUMENT), (DeadlineExceededError, DEADLINE_EXCEEDED),
    (NotFoundError, NOT_FOUND), (AlreadyExistsError, ALREADY_EXISTS),
    (PermissionDeniedError, PERMISSION_DENIED), (ResourceExhaustedError, RESOURCE_EXHAUSTED),
    (FailedPreconditionError, FAILED_PRECONDITION), (AbortedError, ABORTED),
    (OutOfRangeError, OUT_OF_RANGE), (UnimplementedError, UNIMPLEMENTED),
    (InternalError, INTERNAL), (UnavailableError, UNAVAILABLE), (DataLossError, DATA_LOSS),
    (UnauthenticatedError, UNAUTHENTICATED)]}


def exception_type_from_error_code(code):
    return _BY_CODE.get(code, UnknownError)


def error_code_from_exception_type(cls):
    for code, c in _BY_CODE.items():
        if c is cls:
            return code
    return UNKNOWN


def _from_status(code, message):
    """The extension's error factory: a weft status (code, message) -> exception instance."""
    return exception_type_from_error_code(code)(None, None, message)
