#include "cgroup/limits.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "base/error.hpp"
#include "base/plain_math.hpp"

namespace mrun::cgroup {

namespace {

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// Digits with an optional fraction; returns the number and the rest of the text.
std::optional<std::pair<double, std::string>> leading_number(const std::string& text) {
  std::size_t i = 0;
  bool digits = false, dot = false;
  while (i < text.size()) {
    if (text[i] >= '0' && text[i] <= '9') {
      digits = true;
    } else if (text[i] == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (!digits || (i > 0 && text[i - 1] == '.')) return std::nullopt;
  return std::make_pair(std::strtod(text.substr(0, i).c_str(), nullptr), text.substr(i));
}

}  // namespace

std::optional<std::uint64_t> parse_size(const std::string& text) {
  auto parsed = leading_number(text);
  if (!parsed) return std::nullopt;
  auto [number, unit] = *parsed;
  std::string u;
  for (char c : unit) u += lower(c);
  if (u.size() >= 2 && u.substr(u.size() - 2) == "ib") u.resize(u.size() - 2);
  if (u.size() == 2 && u[1] == 'b') u.resize(1);
  double scale = 1;
  if (u.empty() || u == "b") {
    scale = 1;
  } else if (u == "k") {
    scale = 1024.0;
  } else if (u == "m") {
    scale = 1024.0 * 1024;
  } else if (u == "g") {
    scale = 1024.0 * 1024 * 1024;
  } else if (u == "t") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  // Bytes must be whole: "1.5" alone is not a size.
  if ((u.empty() || u == "b") && number != std::floor(number)) return std::nullopt;
  double bytes = std::floor(number * scale);
  if (bytes < 1 || bytes > 9.2e18) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

std::optional<std::int64_t> parse_swap(const std::string& text) {
  if (text == "-1") return unlimited;
  auto size = parse_size(text);
  if (!size) return std::nullopt;
  return static_cast<std::int64_t>(*size);
}

std::optional<double> parse_cpus(const std::string& text) {
  auto parsed = leading_number(text);
  if (!parsed || !parsed->second.empty()) return std::nullopt;
  double cpus = parsed->first;
  if (cpus <= 0 || cpus > 1024) return std::nullopt;
  return cpus;
}

std::string cpu_max_for(double cpus) {
  auto quota = static_cast<std::uint64_t>(round_non_negative(cpus * cpu_period_usec));
  if (quota < 1000) quota = 1000;
  return std::to_string(quota) + " " + std::to_string(cpu_period_usec);
}

Resources to_resources(const Limits& limits) {
  Resources r;
  r.named_by_flags = true;
  if (limits.memory_swap && !limits.memory) {
    throw Error("--memory-swap needs --memory", EINVAL,
                "give --memory too: --memory-swap is memory plus swap, as in podman");
  }
  if (limits.memory) {
    const auto memory = static_cast<std::int64_t>(*limits.memory);
    r.memory.limit = memory;
    // As docker and podman: --memory-swap is the total of memory and swap; unset, the
    // container may swap as much again as its memory.
    if (limits.memory_swap) {
      if (*limits.memory_swap != unlimited && *limits.memory_swap < memory) {
        throw Error("--memory-swap " + std::to_string(*limits.memory_swap) + " is below --memory " +
                        std::to_string(memory),
                    EINVAL, "--memory-swap is memory plus swap: give at least --memory, or -1");
      }
      r.memory.swap = *limits.memory_swap;
    } else {
      r.memory.swap = memory * 2;
      r.memory.swap_implied = true;
    }
  }
  if (limits.pids) r.pids_limit = static_cast<std::int64_t>(*limits.pids);
  if (limits.cpus) {
    auto quota = static_cast<std::int64_t>(round_non_negative(*limits.cpus * cpu_period_usec));
    r.cpu.quota = std::max<std::int64_t>(quota, 1000);  // the kernel's minimum quota
    r.cpu.period = cpu_period_usec;
  }
  return r;
}

}  // namespace mrun::cgroup
