#!/usr/bin/python3
"""fit_tanh_rational.py: the coefficients of tanh x = x P(x^2) / Q(x^2) on |x| <= 9.02, the
rational function of plugins/cpu/cpu_vmath_impl.h's vtanh (P of degree 6 and Q of degree 3 in
x^2, both with constant term 1, so that tiny x gives x itself).

Near-minimax in the relative error of tanh (the linearised problem P - f Q = 0 with f =
tanh(x) / x, each iteration weighted by the previous Q, Lawson's reweighting for the maximum),
solved in double on a Chebyshev-spaced grid of x. 9.02 is where tanh x first rounds to 1 in
float (from 9.0109 on), so the clamp to it costs nothing. Prints the float coefficients (highest
first, as Horner takes them) and the largest relative error with them rounded to float:
  /usr/bin/python3 tests/ref/fit_tanh_rational.py
"""
import numpy as np

NP, NQ, CLAMP = 7, 4, 9.02


def main():
  x = np.abs(np.cos(np.linspace(np.pi, 0, 60001)) * CLAMP)
  x = np.unique(x[x > 1e-4])
  s = CLAMP * CLAMP
  zs = x * x / s  # z scaled to [0, 1] for the conditioning of the least squares
  f = np.tanh(x) / x
  q = np.ones_like(zs)
  w = np.ones_like(zs)
  best = None
  for _ in range(400):
    # (p1 zs + ... ) - f (q1 zs + ...) = f - 1, with p0 = q0 = 1.
    powers = zs[:, None] ** np.arange(1, max(NP, NQ))
    a = np.hstack([powers[:, :NP - 1], -(f[:, None] * powers[:, :NQ - 1])])
    sw = np.sqrt(w) / (f * q)
    c, *_ = np.linalg.lstsq(a * sw[:, None], (f - 1) * sw, rcond=None)
    p = np.concatenate([[1.0], c[:NP - 1]])
    qq = np.concatenate([[1.0], c[NP - 1:]])
    pv = np.polyval(p[::-1], zs)
    qv = np.polyval(qq[::-1], zs)
    err = np.abs(pv / qv - f) / f
    if best is None or err.max() < best[0]:
      best = (err.max(), p.copy(), qq.copy())
    q = qv
    w = w * err / err.max() + 1e-300
    w /= w.sum()
  _, p, qq = best
  p = np.float32(p / s ** np.arange(NP))
  qq = np.float32(qq / s ** np.arange(NQ))
  xx = np.linspace(1e-3, CLAMP, 200001)
  r = xx * np.polyval(p[::-1].astype(np.float64), xx * xx) / np.polyval(
      qq[::-1].astype(np.float64), xx * xx)
  rel = np.max(np.abs(r - np.tanh(xx)) / np.tanh(xx))
  print("P (x^12 down to x^0):", ", ".join("%.9ef" % v for v in p[::-1]))
  print("Q (x^6 down to x^0):", ", ".join("%.9ef" % v for v in qq[::-1]))
  print("max relative error with float coefficients: %.3g (%.2f ulp of 2^-24)" %
        (rel, rel / 2**-24))


if __name__ == "__main__":
  main()
