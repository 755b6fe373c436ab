#!/usr/bin/python3
"""fit_tanh_small.py: the coefficients of tanh x = x + x z R(z), z = x^2, on |x| <= 1: the
cheaper Tanh for vectors whose lanes all lie in [-1, 1] that docs/performance.md ("Tanh on [-1, 1]
by a polynomial, tried and not adopted") measured against vtanh's rational (R of degree 5 in z:
an odd polynomial of degree 13, no division). Kept so that the measurement can be redone.

Near-minimax in the relative error of tanh (least squares weighted by x z / tanh x, with
Lawson's reweighting for the maximum), in double on a Chebyshev-spaced grid of x in [0, 1].
Prints R's float coefficients (lowest first, as vpoly takes them) and the largest relative
error with them rounded to float, for R of degree 4 to 6 (degree 5 is the one used: 1.3 ulp of
2^-24, where degree 4 is 11 ulp and degree 6 one FMA more for 0.10):
  /usr/bin/python3 tests/ref/fit_tanh_small.py
"""
import numpy as np


def fit(nr):
  x = np.abs(np.cos(np.linspace(np.pi, 0, 40001)))
  x = np.unique(x[x > 1e-4])
  z = x * x
  f = np.tanh(x)
  g = (f / x - 1) / z  # what R approximates
  scale = x * z / f  # R's error times this is tanh's relative error
  w = np.ones_like(z)
  best = None
  for _ in range(300):
    v = z[:, None] ** np.arange(nr + 1)
    sw = np.sqrt(w) * scale
    c, *_ = np.linalg.lstsq(v * sw[:, None], g * sw, rcond=None)
    err = np.abs(scale * (v @ c - g))
    if best is None or err.max() < best[0]:
      best = (err.max(), c.copy())
    w = w * err / err.max() + 1e-300
    w /= w.sum()
  return np.float32(best[1])


def main():
  xx = np.linspace(1e-3, 1.0, 400001)
  zz = xx * xx
  for nr in (4, 5, 6):
    c = fit(nr)
    r = xx + xx * zz * np.polyval(c[::-1].astype(np.float64), zz)
    rel = np.max(np.abs(r - np.tanh(xx)) / np.tanh(xx))
    print("degree %d: R (z^0 up): %s" % (nr, ", ".join("%.9ef" % v for v in c)))
    print("  max relative error with float coefficients: %.3g (%.2f ulp of 2^-24)" %
          (rel, rel / 2**-24))


if __name__ == "__main__":
  main()
