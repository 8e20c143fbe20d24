/* One entry of the device filter's map and the step the filter takes with it: shared by
 * the BPF program (device_filter.bpf.c, compiled by clang for the BPF target) and mrun's
 * C++ (device_rules.cpp), whose unit tests run this very step against a reference
 * evaluator of the runtime spec's rule order. C, no includes but the kernel's types.
 *
 * The map holds the rules in reverse order: the first entry that decides an access bit
 * is the last rule of the list that names it, as the runtime spec's "last matching rule
 * wins" wants. Each access bit asked for (read, write, mknod) is decided on its own, as
 * cgroup v1's devices.allow/deny lists decided it: an allow grants the bits it names,
 * a deny refuses the access as soon as it names one of the bits still open. Bits no
 * rule decides are denied, as is an access no rule matches. */
#ifndef MRUN_DEVICE_FILTER_RULE_H
#define MRUN_DEVICE_FILTER_RULE_H

#include <linux/types.h>

#define DEVICE_ANY_NUMBER 0xffffffffu
/* The access bits (BPF_DEVCG_ACC_MKNOD, READ, WRITE) and, in the same word, the mark
 * of a deny rule; an entry with no access bit ends the map. */
#define DEVICE_RULE_ACCESS_BITS 0x7u
#define DEVICE_RULE_DENY 0x80000000u

struct device_rule {
  __u32 type; /* 0 any, 1 block, 2 char (BPF_DEVCG_DEV_*) */
  __u32 major;
  __u32 minor;
  __u32 access;
};

enum { DEVICE_RULE_NEXT = -1, DEVICE_RULE_DENIES = 0, DEVICE_RULE_ALLOWS = 1 };

/* What RULE says about the bits of *PENDING (the access bits not decided yet) for the
 * device TYPE MAJOR:MINOR: DEVICE_RULE_DENIES, DEVICE_RULE_ALLOWS once every bit is
 * granted, else DEVICE_RULE_NEXT with the bits it granted taken out of *PENDING. */
static inline int device_rule_step(const struct device_rule* rule, __u32 type, __u32 major,
                                   __u32 minor, __u32* pending) {
  if (rule->type != 0 && rule->type != type) return DEVICE_RULE_NEXT;
  if (rule->major != DEVICE_ANY_NUMBER && rule->major != major) return DEVICE_RULE_NEXT;
  if (rule->minor != DEVICE_ANY_NUMBER && rule->minor != minor) return DEVICE_RULE_NEXT;
  __u32 decided = *pending & rule->access & DEVICE_RULE_ACCESS_BITS;
  if (decided == 0) return DEVICE_RULE_NEXT;
  if (rule->access & DEVICE_RULE_DENY) return DEVICE_RULE_DENIES;
  *pending &= ~decided;
  return *pending == 0 ? DEVICE_RULE_ALLOWS : DEVICE_RULE_NEXT;
}

#endif
