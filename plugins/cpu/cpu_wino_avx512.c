/* cpu_wino_avx512.c: Winograd F(2x2, 3x3)'s transforms (cpu_wino.h) on 16 channels per zmm
 * register: compiled with -mavx512f, called only where the CPU has it. */
#include <immintrin.h>

#include "cpu_wino.h"

void weft__cpu_wino_input_avx512(const float *const *p, int64_t c, float *v, size_t vstride) {
  for (int64_t ch = 0; ch < c; ch += 16) {
    __m512 d[4][4], t[4][4];
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) d[i][j] = _mm512_loadu_ps(p[4 * i + j] + ch);
    for (int j = 0; j < 4; j++) {
      t[0][j] = _mm512_sub_ps(d[0][j], d[2][j]);
      t[1][j] = _mm512_add_ps(d[1][j], d[2][j]);
      t[2][j] = _mm512_sub_ps(d[2][j], d[1][j]);
      t[3][j] = _mm512_sub_ps(d[1][j], d[3][j]);
    }
    for (int i = 0; i < 4; i++) {
      float *o = v + (size_t)(4 * i) * vstride + ch;
      _mm512_storeu_ps(o, _mm512_sub_ps(t[i][0], t[i][2]));
      _mm512_storeu_ps(o + vstride, _mm512_add_ps(t[i][1], t[i][2]));
      _mm512_storeu_ps(o + 2 * vstride, _mm512_sub_ps(t[i][2], t[i][1]));
      _mm512_storeu_ps(o + 3 * vstride, _mm512_sub_ps(t[i][1], t[i][3]));
    }
  }
}

void weft__cpu_wino_output_avx512(const float *s, size_t sstride, int64_t m, float *y0,
                                  float *y1, int rows, int cols) {
  for (int64_t oc = 0; oc < m; oc += 16) {
    __m512 q[2][4];
    for (int j = 0; j < 4; j++) {
      __m512 s0 = _mm512_loadu_ps(s + (size_t)j * sstride + oc);
      __m512 s1 = _mm512_loadu_ps(s + (size_t)(4 + j) * sstride + oc);
      __m512 s2 = _mm512_loadu_ps(s + (size_t)(8 + j) * sstride + oc);
      __m512 s3 = _mm512_loadu_ps(s + (size_t)(12 + j) * sstride + oc);
      q[0][j] = _mm512_add_ps(_mm512_add_ps(s0, s1), s2);
      q[1][j] = _mm512_sub_ps(_mm512_sub_ps(s1, s2), s3);
    }
    for (int i = 0; i < rows; i++) {
      float *y = i == 0 ? y0 : y1;
      _mm512_storeu_ps(y + oc, _mm512_add_ps(_mm512_add_ps(q[i][0], q[i][1]), q[i][2]));
      if (cols == 2)
        _mm512_storeu_ps(y + m + oc, _mm512_sub_ps(_mm512_sub_ps(q[i][1], q[i][2]), q[i][3]));
    }
  }
}

void weft__cpu_wino_filter_avx512(const float *f, int64_t c, int64_t m, int64_t ic0, int64_t ic1,
                                  float *u) {
  size_t plane = (size_t)c * m;
  const __m512 half = _mm512_set1_ps(0.5f);
  for (int64_t ic = ic0; ic < ic1; ic++)
    for (int64_t oc = 0; oc < m; oc += 16) {
      __m512 w[3][3], t[4][3];
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) w[i][j] = _mm512_loadu_ps(f + (size_t)(i * 3 + j) * plane +
                                                              (size_t)ic * m + oc);
      for (int j = 0; j < 3; j++) {
        __m512 outer = _mm512_add_ps(w[0][j], w[2][j]);
        t[0][j] = w[0][j];
        t[1][j] = _mm512_mul_ps(half, _mm512_add_ps(outer, w[1][j]));
        t[2][j] = _mm512_mul_ps(half, _mm512_sub_ps(outer, w[1][j]));
        t[3][j] = w[2][j];
      }
      for (int i = 0; i < 4; i++) {
        __m512 outer = _mm512_add_ps(t[i][0], t[i][2]);
        float *o = u + (size_t)(4 * i) * plane + (size_t)ic * m + oc;
        _mm512_storeu_ps(o, t[i][0]);
        _mm512_storeu_ps(o + plane, _mm512_mul_ps(half, _mm512_add_ps(outer, t[i][1])));
        _mm512_storeu_ps(o + 2 * plane, _mm512_mul_ps(half, _mm512_sub_ps(outer, t[i][1])));
        _mm512_storeu_ps(o + 3 * plane, t[i][2]);
      }
    }
}
