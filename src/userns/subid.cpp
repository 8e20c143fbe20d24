#include "userns/subid.hpp"

#include <fstream>
#include <limits>

#include "base/strings.hpp"

namespace mrun::userns {

namespace {
// All ranges, or those whose owner field `matches`.
template <typename Match>
std::vector<SubIdRange> parse_ranges(std::istream& in, Match matches) {
  std::vector<SubIdRange> ranges;
  std::string line;
  while (std::getline(in, line)) {
    std::string_view text = trim(line);
    if (text.empty() || text.front() == '#') continue;
    auto fields = split(text, ':');
    if (fields.size() != 3) continue;
    if (!matches(fields[0])) continue;
    auto start = parse_u64(fields[1]);
    auto count = parse_u64(fields[2]);
    constexpr auto max_id = std::numeric_limits<std::uint32_t>::max();
    if (!start || !count || *count == 0 || *start > max_id || *count > max_id ||
        *start + *count - 1 > max_id) {
      continue;
    }
    ranges.push_back({static_cast<std::uint32_t>(*start), static_cast<std::uint32_t>(*count)});
  }
  return ranges;
}
}  // namespace

std::vector<SubIdRange> parse_subid(std::istream& in, const std::string& user, uid_t uid) {
  const std::string uid_text = std::to_string(uid);
  return parse_ranges(in,
                      [&](const std::string& owner) { return owner == user || owner == uid_text; });
}

std::vector<SubIdRange> parse_all_subid(std::istream& in) {
  return parse_ranges(in, [](const std::string&) { return true; });
}

SubIdRange free_subid_range(const std::vector<SubIdRange>& taken, std::uint32_t count) {
  std::uint64_t start = 100000;
  const std::uint64_t limit = std::numeric_limits<std::uint32_t>::max();
  while (start + count - 1 <= limit) {
    bool overlaps = false;
    for (const auto& r : taken) {
      const std::uint64_t end = std::uint64_t{r.start} + r.count;
      if (start < end && r.start < start + count) {
        overlaps = true;
        // The next aligned block after this range.
        start = 100000 + ((end - 100000 + count - 1) / count) * count;
        break;
      }
    }
    if (!overlaps) return {static_cast<std::uint32_t>(start), count};
  }
  return {0, 0};
}

std::string add_subids_command(const std::string& user, const std::string& subuid_file,
                               const std::string& subgid_file) {
  std::vector<SubIdRange> taken;
  for (const auto& path : {subuid_file, subgid_file}) {
    std::ifstream in(path);
    if (!in) continue;
    auto ranges = parse_all_subid(in);
    taken.insert(taken.end(), ranges.begin(), ranges.end());
  }
  SubIdRange free = free_subid_range(taken);
  const std::string range =
      std::to_string(free.start) + "-" + std::to_string(std::uint64_t{free.start} + free.count - 1);
  return "usermod --add-subuids " + range + " --add-subgids " + range + " " + user;
}

std::vector<SubIdRange> read_subid_file(const std::string& path, const std::string& user,
                                        uid_t uid) {
  std::ifstream in(path);
  if (!in) return {};
  return parse_subid(in, user, uid);
}

}  // namespace mrun::userns
