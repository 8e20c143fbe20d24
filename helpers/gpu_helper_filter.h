/* The device cgroup filter of mrun-gpu-helper(8): loading the program mrun uses
 * (src/cgroup/device_filter.bpf.c, its instructions compiled into
 * filter_insns.h at build time) with raw bpf(2) calls, libc only. */
#ifndef MRUN_GPU_HELPER_FILTER_H
#define MRUN_GPU_HELPER_FILTER_H

#include <sys/types.h>

#define FILTER_MAX_RULES 64 /* MAX_RULES of device_filter.bpf.c */
/* The name the helper loads its program with (bpf_prog_info.name); mrun's own, loaded
 * by libbpf when rootful, is "device_filter". */
#define FILTER_PROG_NAME "mrun_devices"

struct filter_rule {
  unsigned type, major, minor, access; /* as in device_filter.bpf.c */
};

/* The default allow-list (policy/devices.conf, compiled in): copies it into RULES and
 * returns how many. */
int filter_default_rules_copy(struct filter_rule* rules, int max);

/* Device programs attached directly to the cgroup CGFD (BPF_PROG_QUERY), or -1. */
int filter_attached_count(int cgfd);

/* Device programs named FILTER_PROG_NAME alive in the kernel whose creator
 * (bpf_prog_info.created_by_uid) is UID, or -1 with errno set and *STEP naming the
 * command that failed. */
int filter_count_created_by(uid_t uid, const char** step);

/* Loads the program with RULES in its map and attaches it to CGFD with
 * BPF_F_ALLOW_MULTI. Returns 0, or -1 with errno set and *STEP naming the bpf(2)
 * command that failed (and LOG holding the verifier's last words, if any). */
int filter_attach(int cgfd, const struct filter_rule* rules, int count, const char** step,
                  char* log, unsigned loglen);

#endif
