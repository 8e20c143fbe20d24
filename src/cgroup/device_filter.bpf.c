// The container's device cgroup filter (BPF_PROG_TYPE_CGROUP_DEVICE), cgroup v2's
// replacement for v1's devices.allow. The kernel runs it on every open and mknod of a
// device node by a process in the cgroup (and its descendants); returning 0 denies
// with EPERM. Attached with BPF_F_ALLOW_MULTI, so a program an ancestor attached still
// runs too: the effective policy is the intersection.
//
// The allow-list lives in the map `rules`, filled by whoever loads the program (mrun
// through libbpf, or mrun-gpu-helper(8) with raw bpf(2) calls): entries in order, the
// first with access == 0 ends the list. Default: deny.
//
// Shared layout (src/cgroup/device_rules.hpp, helpers/ and this file agree on it):
// type 0 = any, 1 = block, 2 = char (BPF_DEVCG_DEV_*); major/minor ~0u = any; access
// a mask of BPF_DEVCG_ACC_MKNOD (1), READ (2), WRITE (4).
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#define MAX_RULES 64
#define ANY 0xffffffffu

struct device_rule {
  __u32 type;
  __u32 major;
  __u32 minor;
  __u32 access;
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, MAX_RULES);
  __type(key, __u32);
  __type(value, struct device_rule);
} rules SEC(".maps");

SEC("cgroup/dev")
int device_filter(struct bpf_cgroup_dev_ctx* ctx) {
  __u32 type = ctx->access_type & 0xffff;
  __u32 access = ctx->access_type >> 16;
  for (__u32 i = 0; i < MAX_RULES; i++) {
    __u32 key = i;
    struct device_rule* rule = bpf_map_lookup_elem(&rules, &key);
    if (!rule || rule->access == 0) return 0;
    if (rule->type != 0 && rule->type != type) continue;
    if (rule->major != ANY && rule->major != ctx->major) continue;
    if (rule->minor != ANY && rule->minor != ctx->minor) continue;
    if ((access & rule->access) == access) return 1;
  }
  return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
