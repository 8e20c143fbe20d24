// /etc/subuid and /etc/subgid: "name-or-uid:start:count" per line (shadow's format).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace mrun::userns {

struct SubIdRange {
  std::uint32_t start = 0;
  std::uint32_t count = 0;
  bool operator==(const SubIdRange&) const = default;
};

// The ranges that belong to `user` (matched by name or by decimal uid, as newuidmap
// does). Comments, blank and malformed lines are skipped: a broken line for someone
// else must not stop this user's container.
std::vector<SubIdRange> parse_subid(std::istream& in, const std::string& user, uid_t uid);
std::vector<SubIdRange> read_subid_file(const std::string& path, const std::string& user,
                                        uid_t uid);

}  // namespace mrun::userns
