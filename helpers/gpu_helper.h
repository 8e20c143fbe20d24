/* What the parts of mrun-gpu-helper(8) share: its exit statuses, its refusal, the
 * caller, the process sandbox (gpu_helper_privs.c), the common checks
 * (mrun-gpu-helper.c) and the two operations, one file each: the node grant
 * (gpu_helper_node.c) and the filter attach (gpu_helper_attach.c). Libc only. */
#ifndef MRUN_GPU_HELPER_H
#define MRUN_GPU_HELPER_H

#include <linux/capability.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

/* The policy: its path (MRUN_GPU_HELPER_POLICY), parser and matcher; the loader with
 * the trust checks, shared with `mrun gpu doctor` (src/gpupolicy/). */
#include "gpupolicy/gpu_policy.h"
#include "gpupolicy/gpu_policy_load.h"
#ifndef CAP_PERFMON
#define CAP_PERFMON 38 /* Linux 5.8 */
#endif
#ifndef CAP_BPF
#define CAP_BPF 39 /* Linux 5.8 */
#endif

/* Root's own state: the per-user lock of --filter. */
#ifndef MRUN_GPU_HELPER_RUN_DIR
#define MRUN_GPU_HELPER_RUN_DIR "/run/mrun-gpu-helper"
#endif

/* Each refusal has its own status, documented in mrun-gpu-helper(8). Every status but 0
 * means nothing was done: the one side effect of an operation (a move_mount(2), a
 * BPF_PROG_ATTACH) is its last step, and what comes after it cannot fail. */
enum {
  EXIT_OK = 0,
  EXIT_USAGE = 1,         /* wrong arguments */
  EXIT_TOO_BIG = 2,       /* oversized argv or environment */
  EXIT_NOT_SETUID = 3,    /* not root, or without the capabilities it needs */
  EXIT_POLICY_UNSAFE = 4, /* policy missing, not a root-owned file, or writable by others */
  EXIT_POLICY_BAD = 5,    /* policy malformed */
  EXIT_NOT_ALLOWED = 6,   /* the policy does not allow this device to the caller */
  EXIT_DEVICE_PATH = 7,   /* device missing, a symlink on its path, or not root's */
  EXIT_NOT_CHAR = 8,      /* not a character device */
  EXIT_BLOCK = 9,         /* a block device */
  EXIT_PROCESS = 10,      /* no such process, or not the caller's */
  EXIT_USERNS = 11,       /* its user namespace is not owned by the caller */
  EXIT_MNTNS = 12,        /* its mount namespace is not owned by that user namespace */
  EXIT_TARGET = 13,       /* target refused: outside /dev, symlink, missing, wrong type */
  EXIT_SYSTEM = 14,       /* a system call failed while making the node */
  EXIT_CGROUP = 15,       /* --filter: its cgroup is not a cgroup v2 directory the caller owns */
  EXIT_ATTACHED = 16,     /* --filter: a device program is already attached to that cgroup */
  EXIT_BPF = 17,          /* --filter: a bpf(2) step failed (the message names it) */
  EXIT_LIMITS = 18,       /* a resource limit from the caller would not let it finish */
  EXIT_FILTER_LIMIT = 19, /* --filter: the caller holds max_filters_per_user programs already */
};

void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
#define REFUSE(status, ...) \
  do {                      \
    say(__VA_ARGS__);       \
    exit(status);           \
  } while (0)

/* STATUS, or EXIT_LIMITS when ERR says a resource ran out (descriptors, memory,
 * processes): a refusal caused by the caller's limits is told apart from one about the
 * objects it named. */
int status_for(int err, int status);

/* The real ids of whoever ran us. */
struct caller {
  uid_t uid;
  gid_t gid;
};

/* ---- gpu_helper_privs.c: the process the caller handed us, made ours ---- */

/* First thing in main: signal dispositions, mask and timers reset, no core dump,
 * descriptors 0-2 open and every other inherited one closed, the resource limits
 * raised to what the helper needs within the caller's hard limits, or EXIT_LIMITS. */
void sandbox_process(void);

#define CAPBIT(c) (UINT64_C(1) << (c))
/* Right after the setuid check: the permitted set cut to NEEDED (EXIT_NOT_SETUID if we
 * lack one of them), nothing effective, the file system ids the caller's. */
void privs_init(const struct caller* c, uint64_t needed);
/* The effective set, raised around one system call and lowered after it. A CAP_BPF or
 * CAP_PERFMON the kernel does not know (before 5.8) becomes CAP_SYS_ADMIN, as those
 * kernels ask. */
void privs_raise(uint64_t caps);
void privs_lower(void);
/* File system ids: the caller's for every path it names (the default), root's for
 * our own files (the policy, the lock, the user database). */
void fs_as_caller(void);
void fs_as_root(void);
/* The operation is done: all ids the caller's, no capability left, then the report
 * on stdout and exit 0. A report that cannot be written (a closed pipe, a full file)
 * is lost, not turned into a failure. */
void report_done(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- mrun-gpu-helper.c: the checks both operations share ---- */

/* An absolute, clean path under /dev/ (no empty, "." or ".." part). */
int clean_dev_path(const char* path);
/* openat2(2) O_PATH of PATH at DIRFD with RESOLVE flags; an fd or -1. */
int open_beneath(int dirfd, const char* path, unsigned long long resolve);
long parse_pid(const char* text);
/* The root-owned policy, loaded once (EXIT_POLICY_* when it is unsafe or bad). */
const struct policy* helper_policy(void);
/* DEVICE allowed to the caller by the policy, a root-owned character device: its
 * number. Refuses otherwise. */
dev_t check_device(const char* device, const struct caller* c);

/* A process of the caller's rootless container, held through directory fds. */
struct container_process {
  long pid;
  int procfd; /* /proc/PID, verified against a pidfd */
  int userns; /* its user namespace (owned by the caller, not the initial one) */
  int mntns;  /* its mount namespace (owned by that user namespace) */
};
void check_process(long pid, const struct caller* c, struct container_process* p);

/* ---- the operations ---- */
#define NODE_CAPS (CAPBIT(CAP_SYS_ADMIN) | CAPBIT(CAP_SYS_CHROOT) | CAPBIT(CAP_MKNOD))
#define FILTER_CAPS \
  (CAPBIT(CAP_BPF) | CAPBIT(CAP_PERFMON) | CAPBIT(CAP_NET_ADMIN) | CAPBIT(CAP_SYS_ADMIN))
int node_main(int argc, char** argv, const struct caller* c);   /* gpu_helper_node.c */
int filter_main(int argc, char** argv, const struct caller* c); /* gpu_helper_attach.c */

#endif
