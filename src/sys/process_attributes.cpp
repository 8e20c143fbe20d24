#include "sys/process_attributes.hpp"

#include <sys/personality.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/error.hpp"

namespace mrun::sys {

void set_personality(unsigned long persona) {
  if (::personality(persona) < 0) throw_errno("set execution domain " + std::to_string(persona));
}

void set_memory_policy(int mode, const std::vector<unsigned long>& nodemask) {
  const unsigned long maxnode = nodemask.size() * 8 * sizeof(unsigned long) + 1;
  if (::syscall(SYS_set_mempolicy, mode, nodemask.empty() ? nullptr : nodemask.data(),
                nodemask.empty() ? 0 : maxnode) != 0) {
    throw_errno("set_mempolicy",
                "give nodes this host has (/sys/devices/system/node) and a mode its kernel knows");
  }
}

void set_io_priority(int io_class, int level) {
  constexpr int who_process = 1;   // IOPRIO_WHO_PROCESS
  constexpr int class_shift = 13;  // IOPRIO_CLASS_SHIFT
  if (::syscall(SYS_ioprio_set, who_process, 0, (io_class << class_shift) | level) != 0) {
    const int err = errno;
    throw_errno(err,
                "ioprio_set class " + std::to_string(io_class) + " level " + std::to_string(level),
                err == EPERM ? "the real-time class needs CAP_SYS_ADMIN (or CAP_SYS_NICE) in "
                               "the host's user namespace: use IOPRIO_CLASS_BE or _IDLE"
                             : "");
  }
}

void set_scheduler(const SchedulerAttributes& a) {
  // struct sched_attr as the kernel reads it (SCHED_ATTR_SIZE_VER0): glibc 2.36 has no
  // wrapper, and <linux/sched/types.h> clashes with <sched.h>.
  struct {
    std::uint32_t size;
    std::uint32_t sched_policy;
    std::uint64_t sched_flags;
    std::int32_t sched_nice;
    std::uint32_t sched_priority;
    std::uint64_t sched_runtime, sched_deadline, sched_period;
  } attr{};
  static_assert(sizeof attr == 48, "struct sched_attr, SCHED_ATTR_SIZE_VER0");
  attr.size = sizeof attr;
  attr.sched_policy = a.policy;
  attr.sched_flags = a.flags;
  attr.sched_nice = a.nice;
  attr.sched_priority = a.priority;
  attr.sched_runtime = a.runtime;
  attr.sched_deadline = a.deadline;
  attr.sched_period = a.period;
  if (::syscall(SYS_sched_setattr, 0, &attr, 0u) != 0) {
    const int err = errno;
    throw_errno(err, "sched_setattr policy " + std::to_string(a.policy),
                err == EPERM ? "a real-time policy or a negative nice needs CAP_SYS_NICE in "
                               "the host's user namespace (and RLIMIT_RTPRIO, RLIMIT_NICE)"
                             : "");
  }
}

}  // namespace mrun::sys
