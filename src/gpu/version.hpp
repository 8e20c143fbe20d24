// Which drivers this libfakegpu serves (fakegpu(4), VERSIONS): the rule is CUDA's. A
// library is built for one driver release and needs a driver at least that new, of
// the same ABI; a newer driver serves every older library of its ABI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fakegpu {

// The driver release this library was built for, and so the oldest it works with,
// encoded as FAKEGPU_DRIVER_VERSION is.
std::uint32_t library_version() noexcept;
// "1.1.0"; a driver reporting 0 (1.0, before the field existed) is "1.0.0".
std::string version_string(std::uint32_t version);
// Why a driver of this ABI and release (INFO's abi_version and driver_version, 0 read
// as 1.0.0) cannot serve this library, in the words a CUDA user knows ("driver version
// is insufficient for library version: ..."), or nothing. No <fakegpu.h> here: mrun
// includes this without the driver's header.
std::optional<std::string> driver_mismatch(std::uint32_t abi_version, std::uint32_t driver_version);

// The marker built into the library's file, "FAKEGPU_LIBRARY_VERSION=1.1.0 ABI=1", so
// a library can be told apart without loading it (`mrun gpu doctor --container`).
inline constexpr const char* version_marker_prefix = "FAKEGPU_LIBRARY_VERSION=";
// The version in a library file's bytes, from its marker; nothing without one.
std::optional<std::uint32_t> version_from_marker(const std::string& bytes);
std::optional<std::uint32_t> parse_version(const std::string& text);

}  // namespace fakegpu
