/* Reading the policy of mrun-gpu-helper(8) from its file, with the helper's trust
 * checks: one implementation for the setuid helper and for `mrun gpu doctor`, so that
 * the doctor never passes a policy the helper refuses, and says why in the same words.
 *
 * A policy anyone but root could change would let them grant themselves any device,
 * so the file must be root's alone, and so must its directory (whoever can write the
 * directory can replace the file):
 *
 *   - the directory is a real directory (not a symlink), owned by root, not writable
 *     by group or others;
 *   - the file, looked up in that directory's descriptor, is not a symlink, is a
 *     regular file (a FIFO or a device is never opened: opening one can block or act),
 *     owned by root, not writable by group or others;
 *   - it is at most POLICY_MAX_BYTES long, and it parses (gpu_policy.h).
 *
 * Libc only, no allocation, no privilege of its own: the helper switches its file
 * system ids to root's around the call (the file is its own, not one the caller names).
 * The text is read into a buffer on the stack (POLICY_MAX_BYTES + 1). */
#ifndef MRUN_GPU_POLICY_LOAD_H
#define MRUN_GPU_POLICY_LOAD_H

#include <stddef.h>

#include "gpupolicy/gpu_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POLICY_MAX_BYTES (64 * 1024)

/* What policy_load found; the helper maps each to its exit status. */
enum policy_load_status {
  POLICY_LOAD_OK = 0,
  POLICY_LOAD_ABSENT = 1,    /* the file or its directory does not exist */
  POLICY_LOAD_UNSAFE = 2,    /* not root's alone, not a regular file, a symlink, unreadable */
  POLICY_LOAD_MALFORMED = 3, /* larger than POLICY_MAX_BYTES, or a bad line */
  POLICY_LOAD_LIMITS = 4,    /* out of descriptors or memory (EMFILE, ENFILE, ENOMEM) */
};

/* Loads the policy at PATH (absolute) into OUT. Returns a policy_load_status; on
 * anything but POLICY_LOAD_OK, ERR holds one line naming the object and the fix, and
 * errno the system call's error (0 when the file itself was the problem). */
int policy_load(const char* path, struct policy* out, char* err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
