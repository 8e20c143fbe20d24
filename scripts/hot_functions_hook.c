/* Linked into the instrumented build of scripts/gen-hot-functions.sh (never into mrun):
 * -finstrument-functions calls __cyg_profile_func_enter on every function entry, and
 * this writes each function's offset from the start of the executable to fd 1000 the
 * first time the process enters it. A forked child inherits the table, so the trace of
 * a run is the union over the monitor and the container's setup, in first-call order. */
#include <stdint.h>
#include <unistd.h>

extern char __executable_start[];

enum { slots = 1 << 16, trace_fd = 1000 };
static uintptr_t seen[slots]; /* offset + 1; 0 is an empty slot */

__attribute__((no_instrument_function)) static int first_entry(uintptr_t offset) {
  uintptr_t h = (offset * 0x9E3779B97F4A7C15ull) >> 48;
  for (;;) {
    if (seen[h] == offset + 1) return 0;
    if (seen[h] == 0) break;
    h = (h + 1) & (slots - 1);
  }
  seen[h] = offset + 1;
  return 1;
}

__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void* fn, void* site) {
  (void)site;
  uintptr_t offset = (uintptr_t)fn - (uintptr_t)__executable_start;
  if (!first_entry(offset)) return;
  char digits[24], line[24];
  int n = 0, len = 0;
  do {
    digits[n++] = "0123456789abcdef"[offset & 15];
    offset >>= 4;
  } while (offset != 0);
  while (n > 0) line[len++] = digits[--n];
  line[len++] = '\n';
  (void)!write(trace_fd, line, (size_t)len); /* fd closed (the container's exec): lost */
}

__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void* fn, void* site) {
  (void)fn;
  (void)site;
}
