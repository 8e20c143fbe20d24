// linux.resources as the files of a cgroup v1 group, for a rootful container on a v1 or
// hybrid host, the way runc's libcontainer/cgroups/fs writes them; and where the v1
// hierarchies are. Pure: the plan is a list of writes (FileWrite, whose file's prefix
// names the hierarchy: "memory.limit_in_bytes" goes to the memory one) that unit tests
// check without a kernel; v1_group.hpp makes the directories and writes them.
//
// The conversions (mrun-oci(1), RESOURCES, cgroup v1):
//   memory.limit        -> memory.limit_in_bytes        (-1 unlimited)
//   memory.reservation  -> memory.soft_limit_in_bytes   (-1 unlimited)
//   memory.swap         -> memory.memsw.limit_in_bytes  (memory plus swap, as the spec's;
//                          skipped where the kernel has no swap accounting)
//   memory.swappiness   -> memory.swappiness (0..100)
//   memory.disableOOMKiller true -> memory.oom_control 1
//   pids.limit          -> pids.max                      (-1 "max"; 0 unset)
//   cpu.shares          -> cpu.shares                    (0 unset, as Docker sends it)
//   cpu.period/quota    -> cpu.cfs_period_us, cpu.cfs_quota_us (-1 no quota)
//   cpu.burst, cpu.idle -> cpu.cfs_burst_us, cpu.idle
//   cpu.cpus/mems       -> cpuset.cpus, cpuset.mems
//   blockIO.weight      -> blkio.weight (else blkio.bfq.weight; 0 unset)
//   blockIO.weightDevice-> blkio.weight_device "MAJ:MIN W" (else blkio.bfq.weight_device)
//   blockIO.throttle*   -> blkio.throttle.{read,write}_{bps,iops}_device "MAJ:MIN RATE"
//   hugepageLimits      -> hugetlb.<size>.limit_in_bytes (and .rsvd. where it exists)
//   rdma                -> rdma.max
//   unified             -> refused: those are cgroup v2 files
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cgroup/resources.hpp"

namespace mrun::cgroup {

// One mounted v1 hierarchy: its mount point and what it carries ("cpu", "cpuacct"; a
// named one as "name=systemd").
struct V1Hierarchy {
  std::string mount;
  std::vector<std::string> controllers;
  bool operator==(const V1Hierarchy&) const = default;
};

// Every cgroup v1 hierarchy of a mountinfo text, in its order.
std::vector<V1Hierarchy> v1_hierarchies_from(const std::string& mountinfo_text);

// What the plan reads of the group as it is (update): the order of the memory limit
// and memory+swap writes depends on today's limit.
struct V1Now {
  std::optional<std::uint64_t> memory_limit;  // memory.limit_in_bytes
};

// The writes, in order. Throws mrun::Error (exit 125) naming the field for a value no
// v1 file takes.
std::vector<FileWrite> plan_v1_files(const Resources& resources, const V1Now& now = {});

// Today's values of a v1 group as the update completion (complete_update) reads them:
// cpu.cfs_quota_us/period as "QUOTA PERIOD", memory+swap as the swap beyond the limit.
LeafValues v1_leaf_values(std::optional<std::string> quota, std::optional<std::string> period,
                          std::optional<std::string> limit, std::optional<std::string> memsw,
                          std::optional<std::uint64_t> usage);

// memory.limit_in_bytes and friends: the kernel shows "unlimited" as the largest page
// multiple of 2^63-1; read as nullopt (no limit).
std::optional<std::uint64_t> v1_limit_value(const std::string& text);

}  // namespace mrun::cgroup
