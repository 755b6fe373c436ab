#!/usr/bin/python3
"""fit_erf_table.py: the coefficient tables of plugins/cpu/cpu_vmath_impl.h's verf at AVX-512:
erf a on each of the sixteen intervals [k/4, (k+1)/4) of a = |x| (k = 0 to 15) as a polynomial
of degree 5 in t = a - c, c the interval's centre (0 for the first interval, whose polynomial
has constant term 0 so that tiny a gives a times the next coefficient, erf's relative accuracy
kept down to the denormals).

Each interval's fit is near-minimax in the relative error of erf (least squares on a
Chebyshev-spaced grid, reweighted by the previous error: Lawson's iteration for the maximum),
in double. The coefficients are then rounded to float one at a time from the constant term up,
the others refitted after each rounding, so that the later ones absorb the earlier ones'
rounding (rounding all at once costs up to an ulp more). Prints the table as the C source has it
(the centres, then the coefficients from t^5 down to the constant, sixteen per row) and each
interval's largest relative error with the float coefficients:
  /usr/bin/python3 tests/ref/fit_erf_table.py
"""
import math
import sys

import numpy as np

DEGREE, WIDTH, INTERVALS = 5, 0.25, 16
erf = np.vectorize(math.erf)


def lawson(a, g, fixed):
  """The free coefficients (fixed[j] is None) of a @ coef ~ g in relative error."""
  free = [j for j in range(a.shape[1]) if fixed[j] is None]
  base = np.zeros_like(g)
  for j in range(a.shape[1]):
    if fixed[j] is not None:
      base += a[:, j] * fixed[j]
  w = np.ones_like(g)
  best = None
  for _ in range(60):
    sw = np.sqrt(w) / np.abs(g)
    c, *_ = np.linalg.lstsq(a[:, free] * sw[:, None], (g - base) * sw, rcond=None)
    err = np.abs(a[:, free] @ c + base - g) / np.abs(g)
    if best is None or err.max() < best[0]:
      best = (err.max(), c)
    w = w * err / err.max() + 1e-300
    w /= w.sum()
  out = list(fixed)
  for j, v in zip(free, best[1]):
    out[j] = v
  return out


def main():
  rows, report = [], []
  for k in range(INTERVALS):
    lo, hi = k * WIDTH, (k + 1) * WIDTH
    c = 0.0 if k == 0 else lo + WIDTH / 2
    x = lo + (hi - lo) * (np.cos(np.linspace(np.pi, 0, 600)) + 1) / 2
    if k == 0:
      x = x[x > 1e-6]
    t = x - c
    # The first interval fits erf(a) / a by degree DEGREE - 1 (the constant term of erf is 0).
    g = erf(x) / x if k == 0 else erf(x)
    a = t[:, None] ** np.arange(DEGREE if k == 0 else DEGREE + 1)
    fixed = [None] * a.shape[1]
    for j in range(a.shape[1]):
      fixed[j] = float(np.float32(lawson(a, g, fixed)[j]))
    coef = np.array(([0.0] if k == 0 else []) + fixed)
    xx = np.linspace(max(lo, 1e-6), hi, 20001)
    rel = np.max(np.abs(np.polyval(coef[::-1], xx - c) - erf(xx)) / erf(xx))
    rows.append((c, coef))
    report.append("interval %2d (c = %.4f): %.3g relative (%.2f ulp of 2^-24)" %
                  (k, c, rel, rel / 2**-24))
  print("centres: {" + ", ".join("%.4ff" % c for c, _ in rows) + "}")
  for j in range(DEGREE, -1, -1):
    print("t^%d: {" % j + ", ".join("%.9ef" % np.float32(r[1][j]) for r in rows) + "}")
  print("\n".join(report), file=sys.stderr)


if __name__ == "__main__":
  main()
