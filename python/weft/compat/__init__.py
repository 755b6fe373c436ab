"""TensorFlow-compatible front ends of weft: v1 is TensorFlow 1.x (docs/python.md)."""
