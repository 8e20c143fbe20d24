// The container's device cgroup filter (BPF_PROG_TYPE_CGROUP_DEVICE), cgroup v2's
// replacement for v1's devices.allow and devices.deny. The kernel runs it on every open
// and mknod of a device node by a process in the cgroup (and its descendants);
// returning 0 denies with EPERM. Attached with BPF_F_ALLOW_MULTI, so a program an
// ancestor attached still runs too: the effective policy is the intersection.
//
// The rules live in the map `rules`, filled by whoever loads the program (mrun through
// libbpf, or mrun-gpu-helper(8) with raw bpf(2) calls): entries in order, the first with
// no access bit ends the list. What one entry decides, and why the map holds the rule
// list reversed, is device_rule_step's (device_filter_rule.h, shared with mrun's unit
// tests). Default: deny.
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "device_filter_rule.h"

#define MAX_RULES 64

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, MAX_RULES);
  __type(key, __u32);
  __type(value, struct device_rule);
} rules SEC(".maps");

SEC("cgroup/dev")
int device_filter(struct bpf_cgroup_dev_ctx* ctx) {
  __u32 type = ctx->access_type & 0xffff;
  __u32 pending = ctx->access_type >> 16;
  for (__u32 i = 0; i < MAX_RULES; i++) {
    __u32 key = i;
    struct device_rule* rule = bpf_map_lookup_elem(&rules, &key);
    if (!rule || (rule->access & DEVICE_RULE_ACCESS_BITS) == 0) return 0;
    int verdict = device_rule_step(rule, type, ctx->major, ctx->minor, &pending);
    if (verdict != DEVICE_RULE_NEXT) return verdict;
  }
  return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
