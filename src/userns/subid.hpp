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

// Every well-formed range of the file, whoever it belongs to.
std::vector<SubIdRange> parse_all_subid(std::istream& in);
// The lowest block of `count` ids from 100000 up (useradd's SUB_UID_MIN) that overlaps
// none of `taken`, aligned to `count` as useradd allocates.
SubIdRange free_subid_range(const std::vector<SubIdRange>& taken, std::uint32_t count = 65536);
// "usermod --add-subuids S-E --add-subgids S-E USER" with a block free in both files:
// the fix a message suggests, never one that overlaps another user's range.
std::string add_subids_command(const std::string& user,
                               const std::string& subuid_file = "/etc/subuid",
                               const std::string& subgid_file = "/etc/subgid");

}  // namespace mrun::userns
