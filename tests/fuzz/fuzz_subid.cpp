// libFuzzer target: /etc/subuid-style text through mrun::userns::parse_subid, for a
// fixed user and for the name on the input's first line, then the id-map planning
// (plan_id_maps, format_map, map_to_host), which is pure.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "userns/idmap.hpp"
#include "userns/subid.hpp"

namespace {

void check_plan(const std::vector<mrun::userns::IdMapEntry>& entries, std::uint32_t caller) {
  FUZZ_CHECK(!entries.empty(), "an empty map");
  FUZZ_CHECK(entries[0] == (mrun::userns::IdMapEntry{0, caller, 1}), "root is not the caller");
  std::uint64_t next = 0;
  for (const auto& e : entries) {
    FUZZ_CHECK(e.count > 0, "an empty map line");
    FUZZ_CHECK(e.inside == next, "container ids not contiguous from 0");
    FUZZ_CHECK(std::uint64_t{e.outside} + e.count - 1 <= std::numeric_limits<std::uint32_t>::max(),
               "a host range past 2^32-1");
    next += e.count;
  }
  FUZZ_CHECK(next <= mrun::userns::max_container_ids, "more than 65536 container ids");
  FUZZ_CHECK(mrun::userns::map_to_host(entries, 0) == caller, "container root maps elsewhere");
  FUZZ_CHECK(mrun::userns::map_to_host(entries, static_cast<std::uint32_t>(next)) == -1,
             "an id past the map maps");
  std::istringstream lines(mrun::userns::format_map(entries));
  std::string line;
  std::size_t n = 0;
  while (std::getline(lines, line)) ++n;
  FUZZ_CHECK(n == entries.size(), "format_map wrote a line per entry");
}

void check(const std::string& text, const std::string& user, uid_t uid) {
  std::istringstream in(text);
  auto ranges = mrun::userns::parse_subid(in, user, uid);
  for (const auto& r : ranges) {
    FUZZ_CHECK(r.count > 0, "an empty range");
    FUZZ_CHECK(std::uint64_t{r.start} + r.count - 1 <= std::numeric_limits<std::uint32_t>::max(),
               "a range past 2^32-1");
  }
  auto plan = mrun::userns::plan_id_maps(uid, uid, ranges, ranges, true);
  FUZZ_CHECK((plan.kind == mrun::userns::MapKind::subordinate) == !ranges.empty(),
             "subordinate ids planned without ranges, or ranges ignored");
  check_plan(plan.uids, uid);
  check_plan(plan.gids, uid);
  auto single = mrun::userns::plan_id_maps(uid, uid, ranges, ranges, false);
  FUZZ_CHECK(single.kind == mrun::userns::MapKind::single && single.uids.size() == 1,
             "--userns=single planned more than root");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check(text, "mrun-test", 1000);
  check(text, text.substr(0, text.find_first_of(":\n")), 0);
  return 0;
}
