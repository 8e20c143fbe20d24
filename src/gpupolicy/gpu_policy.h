/* The policy of mrun-gpu-helper(8): parsing and matching, pure (no I/O, no
 * privilege), so the unit tests and the fuzzer check them directly. Part of the
 * libc-only gpupolicy library that the setuid helper and `mrun gpu doctor` both link,
 * so that the doctor judges a policy exactly as the helper does; gpu_policy_load.h
 * reads the file with the helper's trust checks.
 *
 * Format (one rule a line; '#' starts a comment; blank lines are ignored):
 *
 *   DEVICE-PATTERN  WHO [WHO...]
 *
 * DEVICE-PATTERN is an absolute path under /dev/, matched with fnmatch(3) and
 * FNM_PATHNAME ('*' never crosses a '/'). WHO is user:NAME, uid:N, group:NAME or
 * gid:N; a group matches the caller's real gid or any supplementary group.
 *
 * One setting, at most once:
 *
 *   max_filters_per_user N
 *
 * how many device filters (--filter) one uid may hold at a time, 0 to 4096; default 8. */
#ifndef MRUN_GPU_POLICY_H
#define MRUN_GPU_POLICY_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where the helper reads its policy: fixed at build time, here only, so that the
 * helper and the doctor read the same file; never from the environment (the helper is
 * setuid). */
#define MRUN_GPU_HELPER_POLICY "/etc/mrun/gpu-helper.conf"

#define POLICY_MAX_RULES 64
#define POLICY_MAX_WHO 16
#define POLICY_MAX_FIELD 256
#define POLICY_DEFAULT_MAX_FILTERS 8
#define POLICY_MAX_FILTERS_BOUND 4096

enum policy_kind { POLICY_USER, POLICY_UID, POLICY_GROUP, POLICY_GID };

struct policy_who {
  enum policy_kind kind;
  char name[POLICY_MAX_FIELD]; /* user: / group: */
  unsigned long id;            /* uid: / gid: */
};

struct policy_rule {
  char pattern[POLICY_MAX_FIELD];
  struct policy_who who[POLICY_MAX_WHO];
  int nwho;
};

struct policy {
  struct policy_rule rules[POLICY_MAX_RULES];
  int count;
  int max_filters_per_user; /* POLICY_DEFAULT_MAX_FILTERS unless the policy sets it */
  int max_filters_set;
};

/* Parses LEN bytes of TEXT. Returns 0, or the 1-based number of the first bad line
 * with a reason in ERR. */
int policy_parse(const char* text, size_t len, struct policy* out, char* err, size_t errlen);

struct policy_caller {
  uid_t uid;             /* real uid */
  const char* user_name; /* its name, or NULL when it has none */
  const gid_t* gids;     /* real gid and supplementary groups */
  int ngids;
  /* Resolves a group name; returns 0 and sets *gid, or -1. */
  int (*group_gid)(const char* name, gid_t* gid);
};

/* 1 when a rule matching DEVICE names the caller, else 0. */
int policy_allows(const struct policy* policy, const char* device,
                  const struct policy_caller* caller);

#ifdef __cplusplus
}
#endif

#endif
