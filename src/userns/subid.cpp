#include "userns/subid.hpp"

#include <fstream>
#include <limits>

#include "base/strings.hpp"

namespace mrun::userns {

std::vector<SubIdRange> parse_subid(std::istream& in, const std::string& user, uid_t uid) {
  std::vector<SubIdRange> ranges;
  const std::string uid_text = std::to_string(uid);
  std::string line;
  while (std::getline(in, line)) {
    std::string_view text = trim(line);
    if (text.empty() || text.front() == '#') continue;
    auto fields = split(text, ':');
    if (fields.size() != 3) continue;
    if (fields[0] != user && fields[0] != uid_text) continue;
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

std::vector<SubIdRange> read_subid_file(const std::string& path, const std::string& user,
                                        uid_t uid) {
  std::ifstream in(path);
  if (!in) return {};
  return parse_subid(in, user, uid);
}

}  // namespace mrun::userns
