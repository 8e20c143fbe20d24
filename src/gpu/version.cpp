#include "version.hpp"

#include <fakegpu.h>

#include <charconv>
#include <cstring>

// A build for another driver (src/gpu/fakegpu-skew) says so on the command line.
#ifndef FAKEGPU_LIBRARY_VERSION
#define FAKEGPU_LIBRARY_VERSION FAKEGPU_DRIVER_VERSION
#define FAKEGPU_LIBRARY_VERSION_STRING FAKEGPU_DRIVER_VERSION_STRING
#endif
#define FAKEGPU_STR2(x) #x
#define FAKEGPU_STR(x) FAKEGPU_STR2(x)

namespace fakegpu {

namespace {

constexpr std::uint32_t kVersion = FAKEGPU_LIBRARY_VERSION;
constexpr std::uint32_t kUnversionedDriver = 1u << 16;  // 1.0.0

// In the file for anyone to read (strings(1), the doctor); "used" keeps it in.
[[gnu::used]] const char kMarker[] = "FAKEGPU_LIBRARY_VERSION=" FAKEGPU_LIBRARY_VERSION_STRING
                                     " ABI=" FAKEGPU_STR(FAKEGPU_ABI_VERSION);

}  // namespace

std::uint32_t library_version() noexcept {
  return kVersion;
}

std::string version_string(std::uint32_t v) {
  if (v == 0) v = kUnversionedDriver;
  return std::to_string(FAKEGPU_VERSION_MAJOR(v)) + "." + std::to_string(FAKEGPU_VERSION_MINOR(v)) +
         "." + std::to_string(FAKEGPU_VERSION_PATCH(v));
}

std::optional<std::string> driver_mismatch(std::uint32_t abi_version,
                                           std::uint32_t driver_version) {
  if (abi_version != FAKEGPU_ABI_VERSION)
    return "driver ABI " + std::to_string(abi_version) + ", libfakegpu built for ABI " +
           std::to_string(FAKEGPU_ABI_VERSION) +
           ": use the host's libfakegpu (mrun run --gpu injects it)";
  const std::uint32_t driver = driver_version ? driver_version : kUnversionedDriver;
  if (driver < kVersion)
    return "driver version is insufficient for library version: driver " + version_string(driver) +
           ", libfakegpu " + version_string(kVersion) +
           " needs a driver >= " + version_string(kVersion) +
           ": use the host's libfakegpu (mrun run --gpu injects it) or upgrade the driver";
  return std::nullopt;
}

std::optional<std::uint32_t> parse_version(const std::string& text) {
  unsigned part[3] = {0, 0, 0};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    auto [next, ec] = std::from_chars(p, end, part[i]);
    if (ec != std::errc{} || part[i] > 255) return std::nullopt;
    p = next;
    if (i < 2) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
  }
  return (part[0] << 16) | (part[1] << 8) | part[2];
}

std::optional<std::uint32_t> version_from_marker(const std::string& bytes) {
  // The prefix also stands alone in the file (version_marker_prefix itself): the
  // marker is the occurrence followed by "x.y.z ABI=".
  const std::size_t len = std::strlen(version_marker_prefix);
  for (auto at = bytes.find(version_marker_prefix); at != std::string::npos;
       at = bytes.find(version_marker_prefix, at + 1)) {
    const auto stop = bytes.find(" ABI=", at + len);
    if (stop == std::string::npos || stop - (at + len) > 11) continue;
    if (auto v = parse_version(bytes.substr(at + len, stop - (at + len)))) return v;
  }
  return std::nullopt;
}

}  // namespace fakegpu
