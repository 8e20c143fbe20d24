// What the spec's process sets on itself before exec and keeps across it: its
// execution domain, memory policy, I/O priority and scheduler.
#pragma once

#include <cstdint>
#include <vector>

namespace mrun::sys {

// personality(2): the execution domain (PER_LINUX, PER_LINUX32), kept across execve.
void set_personality(unsigned long persona);

// set_mempolicy(2) of `mode` (MPOL_*, MPOL_F_* or'ed in) over the nodes whose bits
// `nodemask` sets (empty: none), kept across execve.
void set_memory_policy(int mode, const std::vector<unsigned long>& nodemask);

// ioprio_set(2) of this process: `io_class` (IOPRIO_CLASS_*) and its level 0..7.
void set_io_priority(int io_class, int level);

// sched_setattr(2) of this process, with struct sched_attr's first (VER0) fields.
struct SchedulerAttributes {
  unsigned policy = 0;
  std::uint64_t flags = 0;
  int nice = 0;
  unsigned priority = 0;
  std::uint64_t runtime = 0, deadline = 0, period = 0;
};

void set_scheduler(const SchedulerAttributes& attributes);

}  // namespace mrun::sys
