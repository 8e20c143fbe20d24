// linux.resources of the runtime spec as typed data, and its conversion to the cgroup
// v2 interface files of the container's leaf, as runc and crun convert it. Pure: the
// plan is a list of (file, value) writes that unit tests check without a kernel; the
// writing is cgroup.cpp's.
//
// The conversions (mrun-oci(1), RESOURCES):
//   memory.limit        -> memory.max              (-1: "max")
//   memory.reservation  -> memory.low              (-1: "max")
//   memory.swap         -> memory.swap.max = swap - limit (the spec's swap is memory
//                          plus swap, v2's is swap alone; -1: "max"; runc's rules)
//   cpu.shares          -> cpu.weight (runc's and crun's quadratic map: 1024 -> 100)
//   cpu.quota/period    -> cpu.max "QUOTA PERIOD" ("max" for no quota; period 100000)
//   cpu.burst           -> cpu.max.burst,  cpu.idle -> cpu.idle
//   cpu.cpus/mems       -> cpuset.cpus / cpuset.mems
//   pids.limit          -> pids.max                (-1: "max"; 0: unset, as crun)
//   blockIO.weight      -> io.bfq.weight, else io.weight = 1 + (w - 10) * 9999 / 990
//   blockIO.weightDevice-> io.bfq.weight "MAJ:MIN W", else io.weight (converted)
//   blockIO.throttle*   -> io.max "MAJ:MIN rbps=.. wbps=.. riops=.. wiops=.."
//   hugepageLimits      -> hugetlb.<size>.max (and .rsvd.max where the kernel has it)
//   rdma                -> rdma.max "DEV hca_handle=N hca_object=M"
//   unified             -> the named file, line by line, last (it overrides the rest)
// What no cgroup can do is refused where the spec is read (oci/resources.hpp); what only
// cgroup v1 can (swappiness, disableOOMKiller) is refused here, for a v2 leaf.
// cgroup v1 (a rootful container on a v1 or hybrid host) has its own plan: v1_limits.hpp.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mrun::cgroup {

struct DeviceRate {
  std::int64_t major = 0;
  std::int64_t minor = 0;
  std::uint64_t rate = 0;
  bool operator==(const DeviceRate&) const = default;
};

struct DeviceWeight {
  std::int64_t major = 0;
  std::int64_t minor = 0;
  std::uint16_t weight = 0;
  bool operator==(const DeviceWeight&) const = default;
};

struct HugepageLimit {
  std::string page_size;  // "2MB", "1GB": the <size> of hugetlb.<size>.max
  std::uint64_t limit = 0;
  bool operator==(const HugepageLimit&) const = default;
};

struct RdmaLimit {
  std::optional<std::uint32_t> hca_handles;
  std::optional<std::uint32_t> hca_objects;
  bool operator==(const RdmaLimit&) const = default;
};

// Only what cgroup v2 can carry: every field here becomes a file write. Absent means
// "leave the file as it is" (a fresh leaf's default, or today's value on update).
struct Resources {
  struct Memory {
    std::optional<std::int64_t> limit;        // bytes, -1 unlimited
    std::optional<std::int64_t> reservation;  // bytes, -1 unlimited
    std::optional<std::int64_t> swap;         // memory + swap in bytes, -1 unlimited
    // mrun run's --memory without --memory-swap (as much swap again as memory): not
    // written where the kernel has no swap accounting, unlike an explicit swap.
    bool swap_implied = false;
    bool check_before_update = false;  // update: refuse a limit below today's usage
    // cgroup v1 only (memory.swappiness, memory.oom_control): cgroup v2 has neither, so
    // plan_resource_files refuses them, naming the field.
    std::optional<std::uint64_t> swappiness;
    bool disable_oom_killer = false;
    bool operator==(const Memory&) const = default;
  } memory;
  struct Cpu {
    std::optional<std::uint64_t> shares;
    std::optional<std::int64_t> quota;  // microseconds per period; -1: no quota
    std::optional<std::uint64_t> period;
    std::optional<std::uint64_t> burst;
    std::optional<std::int64_t> idle;
    // Realtime bandwidth (cpu.rt_runtime_us per cpu.rt_period_us): cgroup v1 only.
    std::optional<std::int64_t> realtime_runtime;
    std::optional<std::uint64_t> realtime_period;
    std::optional<std::string> cpus;
    std::optional<std::string> mems;
    bool operator==(const Cpu&) const = default;
  } cpu;
  std::optional<std::int64_t> pids_limit;  // -1 unlimited
  struct BlockIo {
    std::optional<std::uint16_t> weight;  // 10..1000 (the spec's blkio range)
    std::vector<DeviceWeight> weight_device;
    std::vector<DeviceRate> read_bps, write_bps, read_iops, write_iops;
    bool operator==(const BlockIo&) const = default;
  } block_io;
  std::vector<HugepageLimit> hugepage_limits;
  std::map<std::string, RdmaLimit> rdma;
  std::map<std::string, std::string> unified;
  // Names for messages: false, the spec's ("linux.resources.memory.limit"); true, mrun
  // run's flags ("--memory"), for a config built from them.
  bool named_by_flags = false;
  // Accepted and not acted on (the spec's deprecated kernel memory limits, as runc):
  // one line each, for a warning.
  std::vector<std::string> ignored;

  bool operator==(const Resources&) const = default;
};

// One write(2) to a file of the leaf.
struct FileWrite {
  std::string file;   // a plain name in the leaf: "memory.max"
  std::string value;  // one line, written as one write(2)
  std::string field;  // what asked for it, for messages: "linux.resources.memory.limit"
  // What a fresh cgroup already has (cpu.weight 100, cpu.max "max 100000", ...): such a
  // write asks for nothing, so it may be left out where there is no cgroup to write.
  bool is_default = false;
  // Left out, with a debug line, when the leaf has no such file (swap without swap
  // accounting, hugetlb reservations on kernels before 5.7).
  bool skip_if_absent = false;
  // Written instead when `file` does not exist (io.bfq.weight -> io.weight).
  std::string fallback_file;
  std::string fallback_value;
  bool operator==(const FileWrite&) const = default;
};

// The kernel's cgroup.weight for a cgroup v1 cpu.shares value: the quadratic map runc
// (opencontainers/cgroups) and crun use, which keeps v1's default 1024 at v2's 100,
// 2 at 1 and 262144 at 10000. 0 stays 0 ("unset").
std::uint64_t cpu_weight_from_shares(std::uint64_t shares);
// io.weight for a blkio weight (10..1000 -> 1..10000), runc's and crun's linear map.
std::uint64_t io_weight_from_blkio(std::uint64_t weight);
// memory.swap.max for the spec's memory+swap total, as runc's
// ConvertMemorySwapToCgroupV2Value: -1 "max", 0 nothing to write (nullopt), equal to
// the limit "0". Throws mrun::Error naming `swap_field` when the total is below the
// limit or there is no limit to subtract.
std::optional<std::string> swap_max_for(std::int64_t swap, std::optional<std::int64_t> limit,
                                        const std::string& swap_field,
                                        const std::string& limit_field);

// The name a field goes by in messages ("memory.limit"): the spec's
// ("linux.resources.memory.limit"), or mrun run's flag ("--memory") for a config built
// from flags.
std::string field_name(const Resources& resources, const std::string& field);

// The writes, in the order they are made: memory, pids, cpu, cpuset, io, hugetlb,
// rdma, then unified (which overrides what came before, as in runc and crun). Throws
// mrun::Error naming the field for a combination no file can express.
std::vector<FileWrite> plan_resource_files(const Resources& resources);

// The controller a file belongs to ("memory" for memory.swap.max); empty for the
// cgroup core's own files (cgroup.*), which need none.
std::string controller_of(const std::string& file);
// The controllers `writes` need enabled in the parent's cgroup.subtree_control, each
// once, in order.
std::vector<std::string> controllers_for(const std::vector<FileWrite>& writes);
// Whether `value` in `file` is what a new cgroup v2 leaf has anyway.
bool fresh_default(const std::string& file, const std::string& value);

// The fields of the writes that ask for something ("linux.resources.cpu.shares,
// linux.resources.memory.limit"), each once; empty when all are defaults.
std::string describe_requests(const std::vector<FileWrite>& writes);
// The same for the default-only writes, with what they ask for
// ("linux.resources.cpu.shares (cpu.weight 100)").
std::string describe_defaults(const std::vector<FileWrite>& writes);

// Today's values of a leaf, read by `update` (cgroup.cpp) to complete a partial request
// as runc's update does: a quota without a period keeps today's period, and a memory
// limit without swap keeps today's memory + swap total.
struct LeafValues {
  std::optional<std::string> cpu_max;          // "QUOTA PERIOD"
  std::optional<std::string> memory_max;       // bytes or "max"
  std::optional<std::string> memory_swap_max;  // bytes or "max"; nullopt: no swap accounting
  std::optional<std::uint64_t> memory_current;
};
// `asked` completed from `now`; throws mrun::Error when memory.checkBeforeUpdate is set
// and the new limit (or memory + swap total) is at or below memory.current (runc's
// check).
Resources complete_update(const Resources& asked, const LeafValues& now);

}  // namespace mrun::cgroup
