// reduce.glsl: the reductions' arithmetic shared by reduce_rows.comp and reduce_cols.comp.
// float: sums, means and L2Loss's halved sum of squares with Kahan compensation, products,
// max/min where NaN wins (as in the CPU backend). int32: wrapping sums and products, max/min.
// bool: All/Any.

float red_init_f(uint op) {
  if (op == VK_RED_PROD) return 1.0;
  if (op == VK_RED_MAX) return -f_inf();
  if (op == VK_RED_MIN) return f_inf();
  return 0.0;
}

int red_init_i(uint op) {
  if (op == VK_RED_PROD || op == VK_RED_ALL) return 1;
  if (op == VK_RED_MAX) return int(0x80000000u);
  if (op == VK_RED_MIN) return 0x7fffffff;
  return 0;
}

float red_combine_f(uint op, float s, float v) {
  if (op == VK_RED_PROD) return s * v;
  if (op == VK_RED_MAX) return (v > s || f_isnan(v)) ? v : s;
  if (op == VK_RED_MIN) return (v < s || f_isnan(v)) ? v : s;
  return s + v;
}

int red_combine_i(uint op, int s, int v) {
  if (op == VK_RED_PROD) return s * v;
  if (op == VK_RED_MAX) return v > s ? v : s;
  if (op == VK_RED_MIN) return v < s ? v : s;
  if (op == VK_RED_ALL) return (s != 0 && v != 0) ? 1 : 0;
  if (op == VK_RED_ANY) return (s != 0 || v != 0) ? 1 : 0;
  return s + v;
}

// A running float reduction with compensation for sums.
struct acc_f {
  float s;
  float comp;
};

acc_f acc_f_init(uint op) {
  acc_f r;
  r.s = red_init_f(op);
  r.comp = 0.0;
  return r;
}

bool red_is_sum(uint op) { return op == VK_RED_SUM || op == VK_RED_MEAN || op == VK_RED_L2; }

acc_f acc_f_add(uint op, acc_f r, float v) {
  if (op == VK_RED_L2) v = v * v;
  if (red_is_sum(op)) {
    precise float y = v - r.comp;
    precise float t = r.s + y;
    precise float c = (t - r.s) - y;
    // Inf and NaN make the compensation NaN; plain summation then gives the right answer.
    if (f_isnan(c) || f_isinf(c)) c = 0.0;
    r.comp = c;
    r.s = t;
  } else {
    r.s = red_combine_f(op, r.s, v);
  }
  return r;
}

// The final value of a float reduction of `count` elements.
float red_finish_f(uint op, float v, float count) {
  if (op == VK_RED_MEAN) return f_div(v, count);
  if (op == VK_RED_L2) return v * 0.5;
  return v;
}
