#include "cgroup/limits.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "base/error.hpp"

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
  auto quota = static_cast<std::uint64_t>(std::llround(cpus * cpu_period_usec));
  if (quota < 1000) quota = 1000;
  return std::to_string(quota) + " " + std::to_string(cpu_period_usec);
}

std::vector<std::pair<std::string, std::string>> plan_limit_files(const Limits& limits) {
  std::vector<std::pair<std::string, std::string>> files;
  if (limits.memory_swap && !limits.memory) {
    throw Error("--memory-swap needs --memory", EINVAL,
                "give --memory too: --memory-swap is memory plus swap, as in podman");
  }
  if (limits.memory) {
    files.emplace_back("memory.max", std::to_string(*limits.memory));
    // As docker and podman: --memory-swap is the total of memory and swap; unset, the
    // container may swap as much again as its memory.
    std::int64_t total = limits.memory_swap.value_or(static_cast<std::int64_t>(*limits.memory) * 2);
    if (total == unlimited) {
      files.emplace_back("memory.swap.max", "max");
    } else {
      if (total < static_cast<std::int64_t>(*limits.memory)) {
        throw Error("--memory-swap " + std::to_string(total) + " is below --memory " +
                        std::to_string(*limits.memory),
                    EINVAL, "--memory-swap is memory plus swap: give at least --memory, or -1");
      }
      files.emplace_back("memory.swap.max",
                         std::to_string(total - static_cast<std::int64_t>(*limits.memory)));
    }
  }
  if (limits.pids) files.emplace_back("pids.max", std::to_string(*limits.pids));
  if (limits.cpus) files.emplace_back("cpu.max", cpu_max_for(*limits.cpus));
  return files;
}

std::vector<std::string> controllers_for(const Limits& limits) {
  std::vector<std::string> controllers;
  if (limits.memory || limits.memory_swap) controllers.emplace_back("memory");
  if (limits.pids) controllers.emplace_back("pids");
  if (limits.cpus) controllers.emplace_back("cpu");
  return controllers;
}

std::string describe(const Limits& limits) {
  std::string out;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ", ";
    out += name;
  };
  add(limits.memory.has_value(), "--memory");
  add(limits.memory_swap.has_value(), "--memory-swap");
  add(limits.pids.has_value(), "--pids-limit");
  add(limits.cpus.has_value(), "--cpus");
  return out;
}

}  // namespace mrun::cgroup
