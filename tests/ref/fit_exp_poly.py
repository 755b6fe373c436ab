#!/usr/bin/python3
"""fit_exp_poly.py: the coefficients of e^r = 1 + r + r^2 (c2 + c3 r + ... + cD r^(D-2)) on
|r| <= ln2/2, the polynomials of plugins/cpu/cpu_vmath_impl.h's exp reduction (D = 6, the
default, inside Softplus and Erfc; D = 5, 1.05e-7, for the Exp op and Sigmoid).

Near-minimax in the relative error of e^r (Lawson's iteratively reweighted least squares on a
dense grid), with 1 + r kept exact so that tiny r loses nothing. Degree 6 reaches about 2e-9
where the Taylor series needs degree 7 for 5e-9. Prints C float literals:
  /usr/bin/python3 tests/ref/fit_exp_poly.py      # degree 6
  /usr/bin/python3 tests/ref/fit_exp_poly.py 5    # degree 5
"""
import sys

import numpy as np

DEG = int(sys.argv[1]) if len(sys.argv) > 1 else 6


def main():
  h = np.log(2.0) / 2
  r = np.cos(np.linspace(np.pi, 0, 40001)) * h
  r = r[np.abs(r) > 1e-6]
  g = (np.expm1(r) - r) / (r * r)  # what c2 + c3 r + ... must match
  a = r[:, None] ** np.arange(DEG - 1)
  scale = r * r / np.exp(r)  # an error in g is this times a relative error in e^r
  w = np.ones_like(r)
  best = None
  for _ in range(300):
    sw = np.sqrt(w) * scale
    c, *_ = np.linalg.lstsq(a * sw[:, None], g * sw, rcond=None)
    err = np.abs(a @ c - g) * scale
    if best is None or err.max() < best[0]:
      best = (err.max(), c.copy())
    w = w * err / err.max() + 1e-300
    w /= w.sum()
  emax, c = best
  print("/* max relative error of e^r in double: %.3g */" % emax)
  for i, v in enumerate(c):
    print("c%d = %.9ef" % (i + 2, v))


if __name__ == "__main__":
  main()
