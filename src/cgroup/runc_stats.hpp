// A cgroup v2 leaf's figures in the shape `runc events --stats` prints them (runc's
// types.Stats: cpu, cpuset, memory, pids, blkio, hugetlb, intel_rdt,
// network_interfaces), for tools and engines that parse runc's output. Read from the
// leaf's files only; a file the kernel does not have (no swap accounting, no
// memory.peak before 5.19) leaves its figures at zero, as runc does.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mrun::cgroup {

nlohmann::json runc_stats(const std::string& leaf);

// "0-3,7" -> [0, 1, 2, 3, 7] (cpuset.cpus, cpuset.cpus.effective).
std::vector<std::uint16_t> cpu_list_of(const std::string& text);

// The number after `key` in a flat keyed file's text ("oom_kill 2\n..."); 0 if absent.
std::uint64_t keyed_number(const std::string& text, const std::string& key);

}  // namespace mrun::cgroup
