/* The parsers the fuzz targets feed (fuzz/targets.c, fuzz/target_onnx.c). Each entry point takes
 * arbitrary bytes, runs them through the real parser the way the library's callers do, frees
 * everything and returns 0; a crash, a sanitizer report or a leak is the only failure. The same
 * functions back the libFuzzer binaries (fuzz/fuzz_main.c) and the replay of fuzz/regressions/ in
 * the normal test suite (tests/test_fuzz_regressions.c). */
#ifndef WEFT_FUZZ_TARGETS_H
#define WEFT_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

int weft_fuzz_graphdef(const uint8_t *data, size_t size);
int weft_fuzz_tensor_proto(const uint8_t *data, size_t size);
int weft_fuzz_checkpoint(const uint8_t *data, size_t size);
int weft_fuzz_cluster_spec(const uint8_t *data, size_t size);
int weft_fuzz_slurm(const uint8_t *data, size_t size);
int weft_fuzz_rpc_request(const uint8_t *data, size_t size);
int weft_fuzz_onnx(const uint8_t *data, size_t size);
int weft_fuzz_npy(const uint8_t *data, size_t size);
int weft_fuzz_event(const uint8_t *data, size_t size);

/* One-time setup every target needs (plugins stay unloaded: parsing must not depend on them). */
void weft_fuzz_init(void);

#endif
