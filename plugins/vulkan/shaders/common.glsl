// common.glsl: what the compute shaders share: bool bytes in 32-bit words, NaN/Inf tests on the
// bits (immune to drivers that assume no NaNs), and float math with TensorFlow's (C libm's)
// semantics and ~1-3 ulp accuracy. Vulkan lets exp, log, sin, pow, ... be far less accurate
// than that (sin/cos only to 2^-11 absolute, exp to 3+2|x| ulp) and leaves pow and division by
// zero undefined at the edges, so every transcendental function here is computed from basic
// arithmetic instead of the GLSL builtins: range reduction plus a polynomial.
#include "vk_ops.h"

uint get_byte(uint word, uint k) { return (word >> (k * 8u)) & 0xffu; }

float f_nan() { return uintBitsToFloat(0x7fc00000u); }
float f_inf() { return uintBitsToFloat(0x7f800000u); }
bool f_isnan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
bool f_isinf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0x7f800000u; }
bool f_signbit(float x) { return (floatBitsToUint(x) & 0x80000000u) != 0u; }
float f_copysign(float mag, float sgn) {
  return uintBitsToFloat((floatBitsToUint(mag) & 0x7fffffffu) | (floatBitsToUint(sgn) & 0x80000000u));
}

// a / b with IEEE results where Vulkan's division is undefined (b == 0).
float f_div(float a, float b) {
  if (b == 0.0) {
    if (a == 0.0 || f_isnan(a)) return f_nan();
    return f_signbit(a) != f_signbit(b) ? -f_inf() : f_inf();
  }
  return a / b;
}

// v * 2^e for e in [-252, 254].
float m_scale2(float v, int e) {
  if (e > 127) {
    v *= 1.7014118346046923e38;  // 2^127
    e -= 127;
  }
  if (e < -126) {
    v *= 1.1754943508222875e-38;  // 2^-126
    e += 126;
  }
  return v * uintBitsToFloat(uint(e + 127) << 23);
}

const float LN2_HI = 0.693145751953125;       // 16 significant bits: k * LN2_HI is exact
const float LN2_LO = 1.428606765330187e-06;   // ln 2 - LN2_HI
const float LN2 = 0.6931471805599453;

float m_exp(float x) {
  if (f_isnan(x)) return x;
  if (x > 88.72283935546875) return f_inf();
  if (x < -103.97208404541016) return 0.0;
  float k = roundEven(x * 1.4426950408889634);
  precise float r = (x - k * LN2_HI) - k * LN2_LO;  // |r| <= ln2 / 2
  float p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 +
            r * (1.0 / 720.0 + r * (1.0 / 5040.0 + r * (1.0 / 40320.0))))))));
  return m_scale2(p, int(k));
}

// Splits finite x > 0 as 2^e m with m in [sqrt(1/2), sqrt(2)); returns e and sets f = m - 1
// (exact).
float m_log_split(float x, out float f) {
  uint bits = floatBitsToUint(x);
  int e = 0;
  if (bits < 0x00800000u) {  // subnormal: scale into the normal range first
    x *= 8388608.0;
    bits = floatBitsToUint(x);
    e = -23;
  }
  e += int(bits >> 23) - 127;
  float m = uintBitsToFloat((bits & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 1.4142135623730951) {
    m *= 0.5;
    e += 1;
  }
  precise float fm = m - 1.0;
  f = fm;
  return float(e);
}

// log(1 + f) = 2 atanh(s) = 2s + 2s R(s^2), s = f / (2 + f), |s| <= 0.1716.
float log_poly(float z) {
  return z * (1.0 / 3.0 + z * (1.0 / 5.0 + z * (1.0 / 7.0 + z * (1.0 / 9.0 + z * (1.0 / 11.0 +
         z * (1.0 / 13.0))))));
}

float m_log(float x) {
  if (f_isnan(x)) return x;
  if (x == 0.0) return -f_inf();
  if (x < 0.0) return f_nan();
  if (f_isinf(x)) return x;
  float f;
  float fe = m_log_split(x, f);
  precise float s = f / (2.0 + f);
  precise float lm = 2.0 * s + 2.0 * s * log_poly(s * s);
  precise float res = fe * LN2_HI + (fe * LN2_LO + lm);
  return res;
}

float m_log1p(float x) {
  if (f_isnan(x)) return x;
  if (x == -1.0) return -f_inf();
  if (x < -1.0) return f_nan();
  if (f_isinf(x)) return x;
  if (abs(x) < 1e-4) return x * (1.0 - x * (0.5 - x * (1.0 / 3.0)));
  // log(u) * x / (u - 1) cancels the rounding of u = 1 + x.
  precise float u = 1.0 + x;
  precise float d = u - 1.0;
  return m_log(u) * (x / d);
}

float m_expm1(float x) {
  if (f_isnan(x)) return x;
  if (abs(x) < 0.5) {
    // x (1 + x/2 (1 + x/3 (1 + ... (1 + x/11))))
    float t = 1.0 + x / 11.0;
    t = 1.0 + x / 10.0 * t;
    t = 1.0 + x / 9.0 * t;
    t = 1.0 + x / 8.0 * t;
    t = 1.0 + x / 7.0 * t;
    t = 1.0 + x / 6.0 * t;
    t = 1.0 + x / 5.0 * t;
    t = 1.0 + x / 4.0 * t;
    t = 1.0 + x / 3.0 * t;
    t = 1.0 + x / 2.0 * t;
    return x * t;
  }
  if (x > 88.72283935546875) return f_inf();
  if (x < -17.5) return -1.0;
  return m_exp(x) - 1.0;
}

// sin and cos on [-pi/4, pi/4] (Taylor, error < 1e-11).
float sin_poly(float r) {
  float z = r * r;
  return r + r * z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 + z * (1.0 / 362880.0 +
         z * (-1.0 / 39916800.0 + z * (1.0 / 6227020800.0))))));
}
float cos_poly(float r) {
  float z = r * r;
  return 1.0 - 0.5 * z + z * z * (1.0 / 24.0 + z * (-1.0 / 720.0 + z * (1.0 / 40320.0 +
         z * (-1.0 / 3628800.0 + z * (1.0 / 479001600.0)))));
}

// 2/pi in binary, 32 bits a word, after one word of zeros so that windows may start before the
// binary point.
const uint TWO_OVER_PI[9] = uint[9](0x00000000u, 0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u,
                                    0xF534DDC0u, 0xDB629599u, 0x3C439041u, 0xFE5163ABu,
                                    0xDEBBC561u);

uint window_word(uint pos) {  // 32 bits of TWO_OVER_PI starting at bit `pos` (MSB first)
  uint w = pos >> 5u, o = pos & 31u;
  if (o == 0u) return TWO_OVER_PI[w];
  return (TWO_OVER_PI[w] << o) | (TWO_OVER_PI[w + 1u] >> (32u - o));
}

// Payne-Hanek reduction for large |x|: with x = M 2^e (M the 24-bit significand), the bits of
// x * 2/pi that matter mod 4 come from a 96-bit window of 2/pi times M, computed exactly in
// 32-bit integer words.
float m_reduce_big(float x, out int q) {
  uint bits = floatBitsToUint(abs(x));
  int e = int(bits >> 23u) - 150;
  uint m = (bits & 0x007fffffu) | 0x00800000u;
  uint pos = uint(e - 1 + 31);  // window starts at 2/pi's bit e-1; earlier bits give multiples of 4
  uint w0 = window_word(pos), w1 = window_word(pos + 32u), w2 = window_word(pos + 64u);
  uint h0, l0, h1, l1, h2, l2, c1, c2;
  umulExtended(m, w2, h2, l2);
  umulExtended(m, w1, h1, l1);
  umulExtended(m, w0, h0, l0);
  uint p0 = l2;
  uint p1 = uaddCarry(h2, l1, c1);
  uint p2 = uaddCarry(h1, l0, c2);
  p2 += c1;  // cannot carry out: the product is below 2^120
  // x * 2/pi = p / 2^94 (mod 4): bits 94-95 are the quadrant, the 64 below the fraction.
  int quadrant = int((p2 >> 30u) & 3u);
  uint f_hi = (p2 << 2u) | (p1 >> 30u);
  uint f_lo = (p1 << 2u) | (p0 >> 30u);
  float sgn = 1.0;
  if ((f_hi & 0x80000000u) != 0u) {  // fraction >= 1/2: round the quadrant up, negate the rest
    quadrant += 1;
    f_lo = ~f_lo + 1u;
    f_hi = ~f_hi + (f_lo == 0u ? 1u : 0u);
    sgn = -1.0;
  }
  float frac = float(f_hi) * 2.3283064365386963e-10 + float(f_lo) * 5.421010862427522e-20;
  float r = sgn * frac * 1.5707963267948966;
  if (x < 0.0) {
    quadrant = -quadrant;
    r = -r;
  }
  q = quadrant & 3;
  return r;
}

// x = q pi/2 + r with |r| <= pi/4. Up to 64, Cody-Waite: pi/2 split in three parts, the first
// two with 8 and 9 significant bits so that their products with the quotient are exact (the
// rounding of the rest stays below 1e-12). Above, Payne-Hanek, exact to 2^-64.
float m_reduce(float x, out int q) {
  if (abs(x) > 64.0) return m_reduce_big(x, q);
  float j = roundEven(x * 0.6366197723675814);
  precise float r = ((x - j * 1.5703125) - j * 4.8351287841796875e-4) - j * 3.1391647326017846e-07;
  q = int(j) & 3;
  return r;
}

float m_sin(float x) {
  if (f_isnan(x) || f_isinf(x)) return f_nan();
  int q;
  float r = m_reduce(x, q);
  float v = (q & 1) == 0 ? sin_poly(r) : cos_poly(r);
  return (q & 2) == 0 ? v : -v;
}

float m_cos(float x) {
  if (f_isnan(x) || f_isinf(x)) return f_nan();
  int q;
  float r = m_reduce(x, q);
  q = (q + 1) & 3;
  float v = (q & 1) == 0 ? sin_poly(r) : cos_poly(r);
  return (q & 2) == 0 ? v : -v;
}

float m_tan(float x) {
  if (f_isnan(x) || f_isinf(x)) return f_nan();
  int q;
  float r = m_reduce(x, q);
  float s = sin_poly(r), c = cos_poly(r);
  return (q & 1) == 0 ? s / c : -c / s;
}

float m_atan(float x) {
  if (f_isnan(x)) return x;
  float a = abs(x);
  bool inv = a > 1.0;
  if (inv) a = 1.0 / a;
  float base = 0.0;
  if (a > 0.41421356237309503) {  // tan(pi/8): atan(a) = pi/4 + atan((a - 1) / (a + 1))
    a = (a - 1.0) / (a + 1.0);
    base = 0.7853981633974483;
  }
  float z = a * a;
  float p = 1.0 + z * (-1.0 / 3.0 + z * (1.0 / 5.0 + z * (-1.0 / 7.0 + z * (1.0 / 9.0 +
            z * (-1.0 / 11.0 + z * (1.0 / 13.0 + z * (-1.0 / 15.0 + z * (1.0 / 17.0 +
            z * (-1.0 / 19.0 + z * (1.0 / 21.0))))))))));
  float r = base + a * p;
  if (inv) r = 1.5707963267948966 - r;
  return f_copysign(r, x);
}

float m_asin(float x) {
  if (f_isnan(x) || abs(x) > 1.0) return f_nan();
  return m_atan(f_div(x, sqrt((1.0 - x) * (1.0 + x))));
}

float m_acos(float x) {
  if (f_isnan(x) || abs(x) > 1.0) return f_nan();
  return 2.0 * m_atan(sqrt(f_div(1.0 - x, 1.0 + x)));
}

float m_sinh(float x) {
  float a = abs(x);
  float r;
  if (a < 1.0) {
    float t = m_expm1(a);
    r = 0.5 * (t + t / (t + 1.0));
  } else if (a < 80.0) {
    float e = m_exp(a);
    r = 0.5 * (e - 1.0 / e);
  } else {
    float e = m_exp(0.5 * a);  // e^a / 2 without overflowing before the end
    r = (0.5 * e) * e;
  }
  return f_copysign(r, x);
}

float m_cosh(float x) {
  float a = abs(x);
  if (a < 80.0) {
    float e = m_exp(a);
    return 0.5 * (e + 1.0 / e);
  }
  float e = m_exp(0.5 * a);
  return (0.5 * e) * e;
}

float m_tanh(float x) {
  if (f_isnan(x)) return x;
  float a = abs(x);
  float r;
  if (a > 9.1) {
    r = 1.0;
  } else {
    float t = m_expm1(2.0 * a);
    r = t / (t + 2.0);
  }
  return f_copysign(r, x);
}

float m_asinh(float x) {
  if (f_isnan(x) || f_isinf(x)) return x;
  float a = abs(x);
  float r;
  if (a > 1e10) {
    r = m_log(a) + LN2;
  } else if (a < 0.5) {
    float a2 = a * a;
    r = m_log1p(a + a2 / (1.0 + sqrt(1.0 + a2)));
  } else {
    r = m_log(a + sqrt(a * a + 1.0));
  }
  return f_copysign(r, x);
}

float m_acosh(float x) {
  if (f_isnan(x) || x < 1.0) return f_nan();
  if (f_isinf(x)) return x;
  if (x > 1e10) return m_log(x) + LN2;
  float t = x - 1.0;
  if (t < 0.5) return m_log1p(t + sqrt(2.0 * t + t * t));
  return m_log(x + sqrt(x * x - 1.0));
}

float m_atanh(float x) {
  if (f_isnan(x)) return x;
  float a = abs(x);
  if (a > 1.0) return f_nan();
  if (a == 1.0) return f_copysign(f_inf(), x);
  return f_copysign(0.5 * m_log1p(2.0 * a / (1.0 - a)), x);
}

float m_erf(float x) {
  if (f_isnan(x)) return x;
  float a = abs(x);
  float r;
  if (a < 1.0) {
    // 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1))
    float z = a * a;
    float term = a;
    float sum = a;
    for (int n = 1; n < 40; n++) {
      term *= -z / float(n);
      float c = term / float(2 * n + 1);
      sum += c;
      if (abs(c) < 1e-9 * abs(sum)) break;
    }
    r = 1.1283791670955126 * sum;
  } else if (a < 4.0) {
    // 1 - erfc; erfc from Abramowitz & Stegun 7.1.26 (absolute error 1.5e-7, and erf > 0.84)
    float t = 1.0 / (1.0 + 0.3275911 * a);
    float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 +
                 t * 1.061405429))));
    r = 1.0 - poly * m_exp(-a * a);
  } else {
    r = 1.0;
  }
  return f_copysign(r, x);
}

// The rounding error of a * b (Dekker's product: exact without a fused multiply-add).
float m_prod_err(float a, float b, float p) {
  precise float ta = 4097.0 * a;
  precise float ah = ta - (ta - a);
  precise float al = a - ah;
  precise float tb = 4097.0 * b;
  precise float bh = tb - (tb - b);
  precise float bl = b - bh;
  precise float err = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  return err;
}

// exp(y log(x)) for finite x > 0, with log(x) and y log(x) carried in two floats each: in one
// float, their rounding alone would cost up to 88 * 2^-24 of relative accuracy.
float m_exp_y_log(float x, float y) {
  float f;
  float fe = m_log_split(x, f);
  // s = f / (2 + f) as sh + sl, the division's error recovered with an exact product.
  precise float d = 2.0 + f;
  precise float dl = (2.0 - d) + f;
  precise float sh = f / d;
  precise float p = sh * d;
  precise float rem = ((f - p) - m_prod_err(sh, d, p)) - sh * dl;
  precise float sl = rem / d;
  // log(x) = e ln2 + 2 sh + (2 sl + 2 sh R), summed as lh + ll (|e ln2| >= |2 sh| unless e = 0).
  precise float a = fe * LN2_HI;  // exact
  precise float b = 2.0 * sh;
  precise float l1 = a + b;
  precise float l2 = ((a - l1) + b) + ((2.0 * sl + 2.0 * sh * log_poly(sh * sh)) + fe * LN2_LO);
  precise float lh = l1 + l2;  // renormalise: l2 holds the series, up to 2% of l1
  precise float ll = (l1 - lh) + l2;
  precise float ph = y * lh;
  if (f_isnan(ph) || abs(ph) > 104.0 || abs(y) > 1e30) return m_exp(ph + y * ll);
  precise float pl = m_prod_err(y, lh, ph) + y * ll;
  float e = m_exp(ph);
  return f_isinf(e) ? e : e + e * pl;
}

// x^y with C99 pow()'s special cases.
float m_pow(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (f_isnan(x) || f_isnan(y)) return f_nan();
  float ay = abs(y);
  bool y_int = floor(y) == y;
  bool y_odd = y_int && ay < 16777216.0 && (int(ay) & 1) == 1;
  if (f_isinf(y)) {
    float ax = abs(x);
    if (ax == 1.0) return 1.0;
    return (ax > 1.0) == (y > 0.0) ? f_inf() : 0.0;
  }
  if (x == 0.0) {
    if (y > 0.0) return y_odd ? x : 0.0;
    return y_odd ? f_copysign(f_inf(), x) : f_inf();
  }
  if (f_isinf(x)) {
    if (x > 0.0) return y > 0.0 ? f_inf() : 0.0;
    if (y > 0.0) return y_odd ? -f_inf() : f_inf();
    return y_odd ? -0.0 : 0.0;
  }
  if (x < 0.0 && !y_int) return f_nan();
  float ax = abs(x);
  float r;
  if (y_int && y > 0.0 && y <= 4.0) {
    // small positive integer powers by multiplication (x^2 correctly rounded, like libm)
    r = ax;
    for (float k = 1.0; k < y; k += 1.0) r *= ax;
  } else {
    r = m_exp_y_log(ax, y);
  }
  return (x < 0.0 && y_odd) ? -r : r;
}
