/* weft_io.h: the `weft` tool's feeds from files and fetches to NumPy files (weft_io.c), and
 * `weft inspect` (weft_inspect.c): the parts of the tool that live outside weft.c. */
#ifndef WEFT_TOOLS_IO_H
#define WEFT_TOOLS_IO_H

#include "weft/weft.h"

/* The tensor of a feed "@SPEC": SPEC is FILE.npy, FILE.npz (the array named feed_name, else the
 * only one), FILE.npz:KEY, or any other file holding JSON text. The value is converted to `want`
 * (WEFT_DT_INVALID: kept as read). *out is the caller's reference. */
weft_status_t *weft_cli_read_feed_file(const char *spec, const char *feed_name,
                                       weft_dtype_t want, weft_tensor_t **out);
/* `in` as a new tensor of dtype `want`: exact for integers and bool, rounded for floats;
 * INVALID_ARGUMENT naming the first element that does not fit. *out is the caller's. */
weft_status_t *weft_cli_convert(weft_tensor_t *in, weft_dtype_t want, weft_tensor_t **out);
/* "dense/BiasAdd:0" -> "dense_BiasAdd_0.npy": every character but letters, digits, '.', '-' and
 * '_' becomes '_'. The caller g_free()s it. */
char *weft_cli_output_file_name(const char *tensor_name);
/* Writes values[k] to DIR/<file name of names[k]>, making DIR; refuses (before writing anything)
 * when two different names map to one file. */
weft_status_t *weft_cli_write_outputs(const char *dir, char *const *names,
                                      weft_tensor_t *const *values, int n);

/* The inputs of `signature` that no feed names (by key or tensor name), as
 * "'x' (tensor x:0, float32 [-1,3])" joined by ", "; NULL when every input is fed (or there is no
 * such signature). The caller g_free()s it. */
char *weft_cli_unfed_inputs(const weft_saved_model_t *model, const char *signature,
                            const char *const *feed_names, int n_feeds);

/* `weft inspect MODEL [--json]`: argv[0] is "inspect". Returns the exit status. */
int weft_cli_inspect(int argc, char **argv);
/* weft_events.c: `weft inspect` on event files (a file or a folder of them) and `--dot`. Each
 * returns the exit code. */
bool weft_cli_is_event_path(const char *path);
int weft_cli_inspect_events(const char *path);
int weft_cli_inspect_dot(const char *path);

#endif /* WEFT_TOOLS_IO_H */
