// Shared by the libFuzzer targets: a property that does not hold is a crash (abort),
// so libFuzzer saves the input, exactly as for a sanitizer report.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                                   \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "fuzz property failed at %s:%d: %s: %s\n", __FILE__, __LINE__, #cond, \
                   what);                                                                        \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)
