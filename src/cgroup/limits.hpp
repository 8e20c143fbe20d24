// mrun run's resource flags (--memory, --memory-swap, --pids-limit, --cpus) as typed
// data, and the linux.resources they stand for (cgroup/resources.hpp), as podman fills
// them in a config. Pure: no file is touched here, so unit tests check every rule
// without a kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cgroup/resources.hpp"

namespace mrun::cgroup {

// unlimited: the "-1" of --memory-swap (docker/podman), written as "max".
inline constexpr std::int64_t unlimited = -1;

struct Limits {
  std::optional<std::uint64_t> memory;      // bytes -> memory.max
  std::optional<std::int64_t> memory_swap;  // memory + swap in bytes, or unlimited
  std::optional<std::uint64_t> pids;        // pids.max
  std::optional<double> cpus;               // cpu.max quota / period
  bool any() const { return memory || memory_swap || pids || cpus; }
  bool operator==(const Limits&) const = default;
};

// "100M", "1g", "512k", "1048576", "1.5G" (binary units, as docker and podman; an
// optional trailing "b"/"ib"). nullopt when malformed or zero.
std::optional<std::uint64_t> parse_size(const std::string& text);
// --memory-swap: a size, or -1 for unlimited swap.
std::optional<std::int64_t> parse_swap(const std::string& text);
// "0.5", "2": positive, at most 1024 CPUs. nullopt otherwise.
std::optional<double> parse_cpus(const std::string& text);

inline constexpr std::uint64_t cpu_period_usec = 100000;  // the kernel's default period
// cpu.max for N CPUs: "50000 100000" for 0.5 (the quota never goes below the kernel's
// 1000 us minimum).
std::string cpu_max_for(double cpus);

// The flags as linux.resources (named by the flags in messages): --memory as the
// limit with, unless --memory-swap says otherwise, as much swap again (docker, podman);
// --cpus as a quota per 100 ms period. Throws mrun::Error when the combination is
// invalid (--memory-swap below --memory, or without --memory).
Resources to_resources(const Limits& limits);

}  // namespace mrun::cgroup
