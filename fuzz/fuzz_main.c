/* The libFuzzer entry of one fuzz target: fuzz/meson.build compiles this file once per target with
 * WEFT_FUZZ_FN naming the target's function in fuzz_targets.h. */
#include "fuzz_targets.h"

#ifndef WEFT_FUZZ_FN
#error "WEFT_FUZZ_FN must name a weft_fuzz_* function"
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  weft_fuzz_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return WEFT_FUZZ_FN(data, size); }
