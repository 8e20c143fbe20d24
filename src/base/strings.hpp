// Small string helpers shared by parsers (subuid files, volume specs, signals).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mrun {

std::vector<std::string> split(std::string_view text, char sep);
std::string_view trim(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
// Decimal, no sign, no spaces, fits in uint64_t.
std::optional<std::uint64_t> parse_u64(std::string_view text);
std::string join(const std::vector<std::string>& parts, std::string_view sep);

}  // namespace mrun
