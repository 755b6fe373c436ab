"""TensorFlow 1.x's DType objects (tf.float32, ...) over weft's dtype numbers (TensorFlow's
DataType enum values), with reference dtypes ("float32_ref") as TensorFlow spells them."""
import numpy as np

_REF = 100


class DType:
    """A tensor element type: .name ("float32"), .as_numpy_dtype, .base_dtype, .is_floating..."""
    __slots__ = ("_enum",)

    def __init__(self, enum):
        self._enum = int(enum)

    @property
    def as_datatype_enum(self):
        return self._enum

    @property
    def _is_ref_dtype(self):
        return self._enum > _REF

    @property
    def base_dtype(self):
        return as_dtype(self._enum - _REF) if self._is_ref_dtype else self

    @property
    def real_dtype(self):
        return self.base_dtype

    @property
    def _as_ref(self):
        return self if self._is_ref_dtype else as_dtype(self._enum + _REF)

    @property
    def name(self):
        base = _NAMES[self.base_dtype._enum]
        return base + "_ref" if self._is_ref_dtype else base

    @property
    def as_numpy_dtype(self):
        return _NUMPY[self.base_dtype._enum]

    @property
    def is_floating(self):
        return self.base_dtype._enum in (1, 2, 19, 14)

    @property
    def is_integer(self):
        return self.base_dtype._enum in (3, 4, 5, 6, 9, 17, 22, 23)

    @property
    def is_unsigned(self):
        return self.base_dtype._enum in (4, 17, 22, 23)

    @property
    def is_bool(self):
        return self.base_dtype._enum == 10

    @property
    def is_complex(self):
        return False

    @property
    def is_numpy_compatible(self):
        return self.base_dtype._enum != 14

    @property
    def size(self):
        return np.dtype(self.as_numpy_dtype).itemsize if self._enum != 7 else 1

    @property
    def min(self):
        t = self.as_numpy_dtype
        return np.finfo(t).min if self.is_floating else np.iinfo(t).min

    @property
    def max(self):
        t = self.as_numpy_dtype
        return np.finfo(t).max if self.is_floating else np.iinfo(t).max

    def is_compatible_with(self, other):
        return self.base_dtype == as_dtype(other).base_dtype

    def __eq__(self, other):
        if other is None:
            return False
        try:
            return self._enum == as_dtype(other)._enum
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._enum

    def __repr__(self):
        return "tf." + self.name

    def __str__(self):
        return "<dtype: '%s'>" % self.name

    def __reduce__(self):
        return as_dtype, (self.name,)


_NAMES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 7: "string",
          9: "int64", 10: "bool", 14: "bfloat16", 17: "uint16", 19: "float16", 22: "uint32",
          23: "uint64"}
_NUMPY = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8,
          7: object, 9: np.int64, 10: np.bool_, 14: np.uint16, 17: np.uint16, 19: np.float16,
          22: np.uint32, 23: np.uint64}

float32 = DType(1)
float64 = DType(2)
int32 = DType(3)
uint8 = DType(4)
int16 = DType(5)
int8 = DType(6)
string = DType(7)
int64 = DType(9)
bool = DType(10)  # noqa: A001 -- TensorFlow's name
bfloat16 = DType(14)
uint16 = DType(17)
float16 = DType(19)
uint32 = DType(22)
uint64 = DType(23)
half = float16
double = float64
float32_ref = DType(101)
float64_ref = DType(102)
int32_ref = DType(103)
int64_ref = DType(109)
resource = DType(20)
_NAMES[20] = "resource"
_NUMPY[20] = object

_BY_NAME = {}
for _e, _n in list(_NAMES.items()):
    _BY_NAME[_n] = _e
    _BY_NAME[_n + "_ref"] = _e + _REF
_BY_NAME.update({"float": 1, "double": 2, "half": 19, "float_ref": 101, "double_ref": 102})

_BY_NUMPY = {np.dtype(np.float32): 1, np.dtype(np.float64): 2, np.dtype(np.int32): 3,
             np.dtype(np.uint8): 4, np.dtype(np.int16): 5, np.dtype(np.int8): 6,
             np.dtype(np.int64): 9, np.dtype(np.bool_): 10, np.dtype(np.uint16): 17,
             np.dtype(np.float16): 19, np.dtype(np.uint32): 22, np.dtype(np.uint64): 23}

_CACHE = {}


def as_dtype(type_value):
    """tf.as_dtype: a DType from a DType, a name ("float", "float32_ref"), a number, a numpy
    dtype or type, or Python's float/int/bool/str/bytes. TypeError naming the value otherwise."""
    if isinstance(type_value, DType):
        return type_value
    enum = None
    if isinstance(type_value, str):
        enum = _BY_NAME.get(type_value)
    elif isinstance(type_value, int) and not isinstance(type_value, type(True)):
        if type_value in _NAMES or type_value - _REF in _NAMES:
            enum = type_value
    elif type_value is float:
        enum = 1
    elif type_value is int:
        enum = 3
    elif type_value is type(True):
        enum = 10
    elif type_value in (str, bytes):
        enum = 7
    else:
        try:
            nd = np.dtype(type_value)
        except TypeError:
            nd = None
        if nd is not None:
            if nd.kind in "SUO":
                enum = 7
            else:
                enum = _BY_NUMPY.get(nd)
    if enum is None:
        raise TypeError("Cannot convert value %r to a TensorFlow DType." % (type_value,))
    d = _CACHE.get(enum)
    if d is None:
        d = _CACHE[enum] = DType(enum)
    return d


for _d in [float32, float64, int32, uint8, int16, int8, string, int64, bool, bfloat16, uint16,
           float16, uint32, uint64, float32_ref, float64_ref, int32_ref, int64_ref, resource]:
    _CACHE[_d._enum] = _d

__all__ = ["DType", "as_dtype", "float32", "float64", "int32", "uint8", "int16", "int8", "string",
           "int64", "bool", "bfloat16", "uint16", "float16", "uint32", "uint64", "half", "double",
           "float32_ref", "float64_ref", "int32_ref", "int64_ref", "resource"]
