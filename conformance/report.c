/* report.c: weft-conformance's results: one record per case, the per-backend expected-failure
 * lists (conformance/expected_failures/<DEVICE_TYPE>.txt), and the three reports: a console table
 * (op x device: passed/failed/unsupported, then every failure), JSON with one record per case,
 * and a Markdown coverage matrix (op x dtype per device, and the ONNX node tests by op). */
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conformance.h"

typedef struct xfail_entry {
  char *device_type;
  char *op, *dtype, *name; /* glob patterns */
  char *reason;
} xfail_entry_t;

struct cf_report {
  GPtrArray *records;  /* cf_record_t* */
  GPtrArray *xfails;   /* xfail_entry_t* */
  GHashTable *loaded;  /* device types whose list was read */
};

static const char *const status_names[CF_N_STATUS] = {"passed", "failed", "unsupported",
                                                       "expected failure",
                                                       "unexpectedly passed"};

const char *cf_status_name(cf_status_t s) {
  return s < CF_N_STATUS ? status_names[s] : "?";
}

static void record_free(gpointer p) {
  cf_record_t *r = p;
  g_free(r->suite);
  g_free(r->op);
  g_free(r->device);
  g_free(r->dtype);
  g_free(r->name);
  g_free(r->message);
  g_free(r->xfail_reason);
  g_free(r);
}

static void xfail_free(gpointer p) {
  xfail_entry_t *x = p;
  g_free(x->device_type);
  g_free(x->op);
  g_free(x->dtype);
  g_free(x->name);
  g_free(x->reason);
  g_free(x);
}

cf_report_t *cf_report_new(void) {
  cf_report_t *r = g_new0(cf_report_t, 1);
  r->records = g_ptr_array_new_with_free_func(record_free);
  r->xfails = g_ptr_array_new_with_free_func(xfail_free);
  r->loaded = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  return r;
}

void cf_report_free(cf_report_t *r) {
  if (r == NULL) return;
  g_ptr_array_free(r->records, TRUE);
  g_ptr_array_free(r->xfails, TRUE);
  g_hash_table_destroy(r->loaded);
  g_free(r);
}

void cf_report_load_expected(cf_report_t *r, const char *dir, const char *device_type) {
  if (dir == NULL || g_hash_table_contains(r->loaded, device_type)) return;
  g_hash_table_add(r->loaded, g_strdup(device_type));
  char *base = g_strdup_printf("%s.txt", device_type);
  char *path = g_build_filename(dir, base, NULL);
  g_free(base);
  char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL)) {
    g_free(path);
    return;
  }
  char **lines = g_strsplit(text, "\n", -1);
  for (int i = 0; lines[i]; i++) {
    char *line = g_strstrip(lines[i]);
    if (*line == '\0' || *line == '#') continue;
    /* op dtype case reason... (whitespace separated; the reason is the rest of the line) */
    char **f = g_strsplit_set(line, " \t", 4);
    int n = 0;
    while (f[n]) n++;
    if (n < 3) {
      g_printerr("weft-conformance: warning: %s:%d: expected \"op dtype case reason\", skipped\n", path,
                 i + 1);
      g_strfreev(f);
      continue;
    }
    xfail_entry_t *x = g_new0(xfail_entry_t, 1);
    x->device_type = g_strdup(device_type);
    x->op = g_strdup(f[0]);
    x->dtype = g_strdup(f[1]);
    x->name = g_strdup(f[2]);
    x->reason = g_strdup(n > 3 ? g_strstrip(f[3]) : "(no reason given)");
    g_ptr_array_add(r->xfails, x);
    g_strfreev(f);
  }
  g_strfreev(lines);
  g_free(text);
  g_free(path);
}

static const xfail_entry_t *find_xfail(const cf_report_t *r, const char *device_type,
                                       const char *op, const char *dtype, const char *name) {
  for (guint i = 0; i < r->xfails->len; i++) {
    const xfail_entry_t *x = r->xfails->pdata[i];
    if (strcmp(x->device_type, device_type) != 0) continue;
    if (!g_pattern_match_simple(x->op, op)) continue;
    if (!g_pattern_match_simple(x->dtype, dtype[0] ? dtype : "-")) continue;
    if (!g_pattern_match_simple(x->name, name)) continue;
    return x;
  }
  return NULL;
}

void cf_report_add(cf_report_t *r, const char *suite, const char *op, const char *device,
                   const char *device_type, const char *dtype, const char *name,
                   cf_status_t status, double max_abs, double max_rel, double nmse,
                   const char *message) {
  cf_record_t *rec = g_new0(cf_record_t, 1);
  rec->suite = g_strdup(suite);
  rec->op = g_strdup(op);
  rec->device = g_strdup(device);
  rec->dtype = g_strdup(dtype ? dtype : "");
  rec->name = g_strdup(name);
  rec->max_abs_err = max_abs;
  rec->max_rel_err = max_rel;
  rec->nmse = nmse;
  rec->message = g_strdup(message ? message : "");
  if (status == CF_PASSED || status == CF_FAILED) {
    const xfail_entry_t *x = find_xfail(r, device_type, op, rec->dtype, name);
    if (x != NULL) {
      rec->xfail_reason = g_strdup(x->reason);
      status = status == CF_FAILED ? CF_XFAIL : CF_XPASS;
    }
  }
  rec->status = status;
  g_ptr_array_add(r->records, rec);
}

int cf_report_count(const cf_report_t *r, const char *suite, cf_status_t status) {
  int n = 0;
  for (guint i = 0; i < r->records->len; i++) {
    const cf_record_t *rec = r->records->pdata[i];
    if ((suite == NULL || strcmp(rec->suite, suite) == 0) && rec->status == status) n++;
  }
  return n;
}

int cf_report_n_records(const cf_report_t *r) { return (int)r->records->len; }

const cf_record_t *cf_report_record(const cf_report_t *r, int index) {
  return index >= 0 && index < (int)r->records->len ? r->records->pdata[index] : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Tallies: counts per (key, column) in first-seen order. */

typedef struct tally {
  int n[CF_N_STATUS];
} tally_t;

typedef struct table {
  GPtrArray *rows;      /* char*, first-seen order */
  GPtrArray *cols;      /* char* */
  GHashTable *cells;    /* "row\x1fcol" -> tally_t* */
  GHashTable *row_seen, *col_seen;
} table_t;

static table_t *table_new(void) {
  table_t *t = g_new0(table_t, 1);
  t->rows = g_ptr_array_new_with_free_func(g_free);
  t->cols = g_ptr_array_new_with_free_func(g_free);
  t->cells = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  t->row_seen = g_hash_table_new(g_str_hash, g_str_equal);
  t->col_seen = g_hash_table_new(g_str_hash, g_str_equal);
  return t;
}

static void table_free(table_t *t) {
  g_hash_table_destroy(t->row_seen);
  g_hash_table_destroy(t->col_seen);
  g_hash_table_destroy(t->cells);
  g_ptr_array_free(t->rows, TRUE);
  g_ptr_array_free(t->cols, TRUE);
  g_free(t);
}

static void table_add(table_t *t, const char *row, const char *col, cf_status_t s) {
  if (!g_hash_table_contains(t->row_seen, row)) {
    char *k = g_strdup(row);
    g_ptr_array_add(t->rows, k);
    g_hash_table_add(t->row_seen, k);
  }
  if (!g_hash_table_contains(t->col_seen, col)) {
    char *k = g_strdup(col);
    g_ptr_array_add(t->cols, k);
    g_hash_table_add(t->col_seen, k);
  }
  char *key = g_strdup_printf("%s\x1f%s", row, col);
  tally_t *ta = g_hash_table_lookup(t->cells, key);
  if (ta == NULL) {
    ta = g_new0(tally_t, 1);
    g_hash_table_insert(t->cells, key, ta);
  } else {
    g_free(key);
  }
  ta->n[s]++;
}

static const tally_t *table_get(const table_t *t, const char *row, const char *col) {
  char *key = g_strdup_printf("%s\x1f%s", row, col);
  const tally_t *ta = g_hash_table_lookup(t->cells, key);
  g_free(key);
  return ta;
}

static gint cmp_str(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* passed counts expected failures' opposites: a cell reads "passed/failed/unsupported". */
static char *cell_text(const tally_t *ta) {
  if (ta == NULL) return g_strdup("");
  int passed = ta->n[CF_PASSED] + ta->n[CF_XPASS];
  int failed = ta->n[CF_FAILED];
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "%d/%d/%d", passed, failed, ta->n[CF_UNSUPPORTED]);
  if (ta->n[CF_XFAIL]) g_string_append_printf(s, " x%d", ta->n[CF_XFAIL]);
  if (failed) g_string_append(s, " !");
  return g_string_free(s, FALSE);
}

static table_t *build_table(const cf_report_t *r, const char *suite) {
  table_t *t = table_new();
  for (guint i = 0; i < r->records->len; i++) {
    const cf_record_t *rec = r->records->pdata[i];
    if (strcmp(rec->suite, suite) == 0) table_add(t, rec->op, rec->device, rec->status);
  }
  g_ptr_array_sort(t->rows, cmp_str);
  return t;
}

static void print_table(const table_t *t, const char *title) {
  if (t->rows->len == 0) return;
  int w0 = (int)strlen(title);
  for (guint i = 0; i < t->rows->len; i++) {
    int l = (int)strlen(t->rows->pdata[i]);
    if (l > w0) w0 = l;
  }
  printf("\n%-*s", w0, title);
  for (guint c = 0; c < t->cols->len; c++) printf("  %-16s", (char *)t->cols->pdata[c]);
  printf("\n");
  for (guint i = 0; i < t->rows->len; i++) {
    printf("%-*s", w0, (char *)t->rows->pdata[i]);
    for (guint c = 0; c < t->cols->len; c++) {
      char *cell = cell_text(table_get(t, t->rows->pdata[i], t->cols->pdata[c]));
      printf("  %-16s", cell);
      g_free(cell);
    }
    printf("\n");
  }
}

void cf_report_print_console(const cf_report_t *r, bool verbose, bool cases_run, bool onnx_run) {
  const char *suites[] = {"cases", "onnx"};
  const char *titles[] = {"op (passed/failed/unsupported)", "ONNX op (passed/failed/unsupported)"};
  for (int s = 0; s < 2; s++) {
    table_t *t = build_table(r, suites[s]);
    print_table(t, titles[s]);
    table_free(t);
  }
  /* ONNX tests not run, grouped by op and reason. */
  GHashTable *unsup = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GPtrArray *unsup_keys = g_ptr_array_new();
  for (guint i = 0; i < r->records->len; i++) {
    const cf_record_t *rec = r->records->pdata[i];
    if (strcmp(rec->suite, "onnx") != 0 || rec->status != CF_UNSUPPORTED) continue;
    char *key = g_strdup(rec->op);
    gpointer n = NULL;
    if (g_hash_table_lookup_extended(unsup, key, NULL, &n)) {
      g_hash_table_insert(unsup, key, GINT_TO_POINTER(GPOINTER_TO_INT(n) + 1));
    } else {
      g_hash_table_insert(unsup, key, GINT_TO_POINTER(1));
      g_ptr_array_add(unsup_keys, key);
    }
  }
  if (unsup_keys->len) {
    g_ptr_array_sort(unsup_keys, cmp_str);
    printf("\nONNX tests unsupported, by op:");
    for (guint i = 0; i < unsup_keys->len; i++)
      printf("%s %s (%d)", i % 6 ? "," : "\n ", (char *)unsup_keys->pdata[i],
             GPOINTER_TO_INT(g_hash_table_lookup(unsup, unsup_keys->pdata[i])));
    printf("\n");
  }
  g_ptr_array_free(unsup_keys, TRUE);
  g_hash_table_destroy(unsup);

  bool header = false;
  for (guint i = 0; i < r->records->len; i++) {
    const cf_record_t *rec = r->records->pdata[i];
    bool show = rec->status == CF_FAILED || rec->status == CF_XPASS ||
                (verbose && rec->status == CF_XFAIL);
    if (!show) continue;
    if (!header) printf("\nFailures:\n");
    header = true;
    printf("  %s %s %s [%s] %s: %s: %s%s%s\n", rec->suite, rec->device, rec->op,
           rec->dtype[0] ? rec->dtype : "-", rec->name, cf_status_name(rec->status),
           rec->message, rec->xfail_reason ? " -- listed: " : "",
           rec->xfail_reason ? rec->xfail_reason : "");
  }
  for (int s = 0; s < 2; s++) {
    int n[CF_N_STATUS];
    int total = 0;
    for (int k = 0; k < CF_N_STATUS; k++) total += n[k] = cf_report_count(r, suites[s], k);
    /* A suite that was asked for always has its line, "0 cases" included: scripts look for it. */
    if (total == 0 && !(s == 0 ? cases_run : onnx_run)) continue;
    printf("\n%s: %d %s: %d passed, %d failed, %d unsupported, %d expected failures, "
           "%d unexpectedly passed\n",
           s == 0 ? "conformance cases" : "ONNX node tests", total, s == 0 ? "cases" : "tests",
           n[CF_PASSED], n[CF_FAILED], n[CF_UNSUPPORTED], n[CF_XFAIL], n[CF_XPASS]);
  }
  if (cf_report_count(r, NULL, CF_XPASS) > 0)
    printf("(an unexpected pass means the expected-failure entry can be removed)\n");
}

/* ---------------------------------------------------------------------------------------------
 * JSON */

static void json_number_or_null(JsonBuilder *b, const char *name, double v) {
  json_builder_set_member_name(b, name);
  if (isfinite(v))
    json_builder_add_double_value(b, v);
  else
    json_builder_add_null_value(b);
}

bool cf_report_write_json(const cf_report_t *r, const char *path, GError **error) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "tool");
  json_builder_add_string_value(b, "weft-conformance");
  json_builder_set_member_name(b, "summary");
  json_builder_begin_object(b);
  const char *suites[] = {"cases", "onnx"};
  for (int s = 0; s < 2; s++) {
    json_builder_set_member_name(b, suites[s]);
    json_builder_begin_object(b);
    int total = 0;
    for (int k = 0; k < CF_N_STATUS; k++) {
      int n = cf_report_count(r, suites[s], k);
      total += n;
      static const char *const keys[CF_N_STATUS] = {"passed", "failed", "unsupported",
                                                    "expected_failure", "unexpectedly_passed"};
      json_builder_set_member_name(b, keys[k]);
      json_builder_add_int_value(b, n);
    }
    json_builder_set_member_name(b, "total");
    json_builder_add_int_value(b, total);
    json_builder_end_object(b);
  }
  json_builder_end_object(b);
  json_builder_set_member_name(b, "results");
  json_builder_begin_array(b);
  for (guint i = 0; i < r->records->len; i++) {
    const cf_record_t *rec = r->records->pdata[i];
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "suite");
    json_builder_add_string_value(b, rec->suite);
    json_builder_set_member_name(b, "op");
    json_builder_add_string_value(b, rec->op);
    json_builder_set_member_name(b, "device");
    json_builder_add_string_value(b, rec->device);
    json_builder_set_member_name(b, "dtype");
    json_builder_add_string_value(b, rec->dtype);
    json_builder_set_member_name(b, "case");
    json_builder_add_string_value(b, rec->name);
    json_builder_set_member_name(b, "status");
    json_builder_add_string_value(b, cf_status_name(rec->status));
    json_number_or_null(b, "max_abs_err", rec->max_abs_err);
    json_number_or_null(b, "max_rel_err", rec->max_rel_err);
    json_number_or_null(b, "nmse", rec->nmse);
    json_builder_set_member_name(b, "message");
    json_builder_add_string_value(b, rec->message);
    if (rec->xfail_reason) {
      json_builder_set_member_name(b, "expected_failure_reason");
      json_builder_add_string_value(b, rec->xfail_reason);
    }
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
  JsonGenerator *gen = json_generator_new();
  JsonNode *root = json_builder_get_root(b);
  json_generator_set_root(gen, root);
  json_generator_set_pretty(gen, TRUE);
  bool ok = json_generator_to_file(gen, path, error);
  json_node_unref(root);
  g_object_unref(gen);
  g_object_unref(b);
  return ok;
}

/* ---------------------------------------------------------------------------------------------
 * Markdown */

static const char *md_cell(const tally_t *ta, char *buf, size_t len) {
  if (ta == NULL) return "";
  int passed = ta->n[CF_PASSED] + ta->n[CF_XPASS];
  int failed = ta->n[CF_FAILED];
  if (failed)
    g_snprintf(buf, len, "**FAIL %d**/%d", failed, passed + failed + ta->n[CF_XFAIL]);
  else if (ta->n[CF_XFAIL])
    g_snprintf(buf, len, "xfail %d, pass %d", ta->n[CF_XFAIL], passed);
  else if (passed)
    g_snprintf(buf, len, "pass %d", passed);
  else if (ta->n[CF_UNSUPPORTED])
    g_snprintf(buf, len, "-");
  else
    buf[0] = '\0';
  return buf;
}

bool cf_report_write_markdown(const cf_report_t *r, const char *path, GError **error) {
  GString *md = g_string_new("# Weft conformance report\n\n");
  const char *suites[] = {"cases", "onnx"};
  for (int s = 0; s < 2; s++) {
    int n[CF_N_STATUS], total = 0;
    for (int k = 0; k < CF_N_STATUS; k++) total += n[k] = cf_report_count(r, suites[s], k);
    if (total == 0) continue;
    g_string_append_printf(md,
                           "- %s: %d passed, %d failed, %d unsupported, %d expected failures, "
                           "%d unexpectedly passed (%d in all)\n",
                           s == 0 ? "conformance cases" : "ONNX node tests", n[CF_PASSED],
                           n[CF_FAILED], n[CF_UNSUPPORTED], n[CF_XFAIL], n[CF_XPASS], total);
  }
  g_string_append(md, "\nCells: `pass N` all N cases passed; `**FAIL k**/N` k of N failed; "
                      "`xfail` listed expected failures; `-` no kernel (unsupported); empty: "
                      "the dtype is not tried for that op.\n");

  /* Devices seen in the case suite. */
  GPtrArray *devices = g_ptr_array_new_with_free_func(g_free);
  GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < r->records->len; i++) {
    const cf_record_t *rec = r->records->pdata[i];
    if (g_hash_table_contains(seen, rec->device)) continue;
    char *d = g_strdup(rec->device);
    g_ptr_array_add(devices, d);
    g_hash_table_add(seen, d);
  }
  for (guint d = 0; d < devices->len; d++) {
    const char *dev = devices->pdata[d];
    table_t *t = table_new();
    for (guint i = 0; i < r->records->len; i++) {
      const cf_record_t *rec = r->records->pdata[i];
      if (strcmp(rec->suite, "cases") == 0 && strcmp(rec->device, dev) == 0)
        table_add(t, rec->op, rec->dtype[0] ? rec->dtype : "-", rec->status);
    }
    if (t->rows->len) {
      g_ptr_array_sort(t->rows, cmp_str);
      g_string_append_printf(md, "\n## Op coverage on %s\n\n| op |", dev);
      for (guint c = 0; c < t->cols->len; c++)
        g_string_append_printf(md, " %s |", (char *)t->cols->pdata[c]);
      g_string_append(md, "\n|---|");
      for (guint c = 0; c < t->cols->len; c++) g_string_append(md, "---|");
      g_string_append_c(md, '\n');
      for (guint i = 0; i < t->rows->len; i++) {
        g_string_append_printf(md, "| %s |", (char *)t->rows->pdata[i]);
        for (guint c = 0; c < t->cols->len; c++) {
          char buf[64];
          g_string_append_printf(
              md, " %s |", md_cell(table_get(t, t->rows->pdata[i], t->cols->pdata[c]), buf,
                                   sizeof buf));
        }
        g_string_append_c(md, '\n');
      }
    }
    table_free(t);
  }
  /* ONNX by op, one column per device. */
  table_t *onnx = build_table(r, "onnx");
  if (onnx->rows->len) {
    g_string_append(md, "\n## ONNX node tests by op (passed/failed/unsupported)\n\n| op |");
    for (guint c = 0; c < onnx->cols->len; c++)
      g_string_append_printf(md, " %s |", (char *)onnx->cols->pdata[c]);
    g_string_append(md, "\n|---|");
    for (guint c = 0; c < onnx->cols->len; c++) g_string_append(md, "---|");
    g_string_append_c(md, '\n');
    for (guint i = 0; i < onnx->rows->len; i++) {
      g_string_append_printf(md, "| %s |", (char *)onnx->rows->pdata[i]);
      for (guint c = 0; c < onnx->cols->len; c++) {
        char *cell = cell_text(table_get(onnx, onnx->rows->pdata[i], onnx->cols->pdata[c]));
        g_string_append_printf(md, " %s |", cell);
        g_free(cell);
      }
      g_string_append_c(md, '\n');
    }
  }
  table_free(onnx);
  /* Failures and expected failures in full. */
  bool header = false;
  for (guint i = 0; i < r->records->len; i++) {
    const cf_record_t *rec = r->records->pdata[i];
    if (rec->status != CF_FAILED && rec->status != CF_XFAIL && rec->status != CF_XPASS) continue;
    if (!header)
      g_string_append(md, "\n## Failures and expected failures\n\n| suite | device | op | "
                          "dtype | case | status | message |\n|---|---|---|---|---|---|---|\n");
    header = true;
    char *msg = g_strdup(rec->xfail_reason ? rec->xfail_reason : rec->message);
    g_strdelimit(msg, "|\n", ' ');
    g_string_append_printf(md, "| %s | %s | %s | %s | %s | %s | %s |\n", rec->suite, rec->device,
                           rec->op, rec->dtype, rec->name, cf_status_name(rec->status), msg);
    g_free(msg);
  }
  g_hash_table_destroy(seen);
  g_ptr_array_free(devices, TRUE);
  bool ok = g_file_set_contents(path, md->str, (gssize)md->len, error);
  g_string_free(md, TRUE);
  return ok;
}
