// libFuzzer target: the pure path handling around mrun's volumes. Each input line is a
// -v SRC:DST[:ro|rw] spec for mrun::mount::parse_volume; what parses goes through
// check_volume_destination and, all together as a config's bind entries (what mrun run
// writes for them, oci/run_config.hpp), plan_config_mounts.
//
// The property: a destination the checks accept does not resolve to /proc or below it
// (CVE-2019-16884), except the lxcfs-style files; resolved as openat2(RESOLVE_IN_ROOT)
// resolves it at apply time, i.e. "//", "." and ".." (which stops at the root) taken
// lexically, as no symlink of the image is involved here.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "fuzz_check.hpp"
#include "mount/config_mounts.hpp"
#include "mount/mount_plan.hpp"

namespace {

std::string resolve_in_root(const std::string& path) {
  std::vector<std::string> parts;
  for (const auto& part : mrun::split(path, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (const auto& part : parts) out += "/" + part;
  return out.empty() ? "/" : out;
}

bool covers_proc(const std::string& destination) {
  static const std::vector<std::string> lxcfs{"/proc/cpuinfo", "/proc/diskstats", "/proc/meminfo",
                                              "/proc/stat",    "/proc/swaps",     "/proc/uptime",
                                              "/proc/loadavg", "/proc/slabinfo"};
  std::string dst = resolve_in_root(destination);
  if (dst != "/proc" && !mrun::starts_with(dst, "/proc/")) return false;
  return std::find(lxcfs.begin(), lxcfs.end(), dst) == lxcfs.end();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<mrun::mount::VolumeSpec> volumes;
  bool refused = false;
  for (const auto& line : mrun::split(text, '\n')) {
    mrun::mount::VolumeSpec volume;
    try {
      volume = mrun::mount::parse_volume(line);
    } catch (const mrun::Error&) {
      continue;
    }
    FUZZ_CHECK(volume.source.front() == '/' && volume.destination.front() == '/',
               "a relative path parsed");
    FUZZ_CHECK(volume.destination != "/", "a volume over the root parsed");
    try {
      mrun::mount::check_volume_destination(volume);
    } catch (const mrun::Error&) {
      refused = true;
      volumes.push_back(volume);
      continue;
    }
    if (covers_proc(volume.destination)) {
      std::fprintf(stderr, "accepted: %s (resolves to %s)\n", volume.destination.c_str(),
                   resolve_in_root(volume.destination).c_str());
    }
    FUZZ_CHECK(!covers_proc(volume.destination), "a volume over /proc accepted");
    volumes.push_back(volume);
  }
  mrun::mount::ConfigMountInput input;
  for (const auto& v : volumes) {
    std::vector<std::string> options{"rbind"};
    if (v.read_only) options.emplace_back("rro");
    input.mounts.push_back({v.destination, "bind", v.source, options});
  }
  std::vector<mrun::mount::MountStep> plan;
  try {
    plan = mrun::mount::plan_config_mounts(input);
  } catch (const mrun::Error&) {
    FUZZ_CHECK(refused, "the plan refused a volume the check accepts");
    return 0;
  }
  FUZZ_CHECK(!refused, "the plan accepted a volume the check refuses");
  // The volumes are bound first (the table holds nothing else), in order.
  FUZZ_CHECK(plan.size() >= volumes.size(), "volumes missing from the plan");
  for (std::size_t i = 0; i < volumes.size(); ++i) {
    const auto& step = plan[i];
    FUZZ_CHECK(step.kind == mrun::mount::StepKind::bind && step.recursive,
               "a volume that is not an rbind");
    FUZZ_CHECK(step.source == volumes[i].source && step.target == volumes[i].destination,
               "a volume bound elsewhere");
  }
  return 0;
}
