"""Weft for Python: `weft._weft` wraps libweft's public C API; `weft.compat.v1` is TensorFlow
1.x's API over it (`import weft.compat.v1 as tf`). docs/python.md describes both."""
from weft import _weft
from weft import errors

_weft.set_error_factory(errors._from_status)

Graph = _weft.Graph
Session = _weft.Session
Node = _weft.Node

__all__ = ["Graph", "Session", "Node", "errors"]
