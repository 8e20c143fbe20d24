#include "visible_devices.hpp"

#include <algorithm>
#include <charconv>

namespace fakegpu {
namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

std::optional<unsigned> parse_index(std::string_view s) {
  unsigned value = 0;
  const char* end = s.data() + s.size();
  if (s.empty() || s.size() > 3) return std::nullopt;
  const auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

bool contains(const std::vector<unsigned>& v, unsigned x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

Visibility parse_visible_devices(std::optional<std::string_view> value,
                                 const std::vector<unsigned>& present) {
  std::vector<unsigned> sorted = present;
  std::sort(sorted.begin(), sorted.end());
  if (!value) return {sorted, {}};

  const std::string_view all = trim(*value);
  if (all.empty() || all == "none") return {};
  if (all == "all") return {sorted, {}};

  Visibility out;
  std::string_view rest = all;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view entry = trim(rest.substr(0, comma));
    const auto index = parse_index(entry);
    if (!index) {
      out.note = "stopped at '" + std::string(entry) + "': not a device index";
      break;
    }
    if (!contains(present, *index)) {
      out.note = "stopped at '" + std::string(entry) + "': no such device";
      break;
    }
    if (contains(out.devices, *index)) {
      out.note = "stopped at '" + std::string(entry) + "': listed twice";
      break;
    }
    out.devices.push_back(*index);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return out;
}

}  // namespace fakegpu
