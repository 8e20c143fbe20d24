// libFuzzer target: the policy of mrun-gpu-helper(8) (/etc/mrun/gpu-helper.conf)
// through src/gpupolicy/gpu_policy.c's policy_parse, then policy_allows for a few
// devices and callers. The parser runs in a setuid program: every bound is checked
// here, and the input is an exact-size heap copy so that ASan sees any read past it.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "fuzz_check.hpp"
#include "gpupolicy/gpu_policy.h"

namespace {

int group_gid(const char* name, gid_t* gid) {
  if (std::strcmp(name, "fakegpu") != 0) return -1;
  *gid = 44;
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::unique_ptr<char[]> text(new char[size == 0 ? 1 : size]);
  if (size > 0) std::memcpy(text.get(), data, size);
  static policy parsed;  // about 280 KiB: not on the stack
  char err[128];
  std::memset(err, 'x', sizeof err);
  int rc = policy_parse(text.get(), size, &parsed, err, sizeof err);
  std::size_t lines = 1;
  for (std::size_t i = 0; i < size; ++i) lines += data[i] == '\n';
  FUZZ_CHECK(rc >= 0 && static_cast<std::size_t>(rc) <= lines, "not 0 or a line number");
  if (rc != 0) {
    FUZZ_CHECK(std::memchr(err, '\0', sizeof err) != nullptr, "an unterminated error");
    FUZZ_CHECK(err[0] != '\0', "a bad line without a reason");
  }
  // A tiny error buffer must be honoured too.
  char small[4];
  static policy again;
  int rc_small = policy_parse(text.get(), size, &again, small, sizeof small);
  FUZZ_CHECK(rc_small == rc, "the result depends on the error buffer");
  if (rc != 0) return 0;

  FUZZ_CHECK(parsed.count >= 0 && parsed.count <= POLICY_MAX_RULES, "rule count out of bounds");
  FUZZ_CHECK(
      parsed.max_filters_per_user >= 0 && parsed.max_filters_per_user <= POLICY_MAX_FILTERS_BOUND,
      "max_filters_per_user out of bounds");
  for (int r = 0; r < parsed.count; ++r) {
    const policy_rule& rule = parsed.rules[r];
    FUZZ_CHECK(std::memchr(rule.pattern, '\0', sizeof rule.pattern) != nullptr,
               "an unterminated pattern");
    FUZZ_CHECK(std::strncmp(rule.pattern, "/dev/", 5) == 0, "a pattern outside /dev/");
    FUZZ_CHECK(std::strstr(rule.pattern, "/../") == nullptr, "a pattern with /../");
    FUZZ_CHECK(rule.nwho >= 1 && rule.nwho <= POLICY_MAX_WHO, "who count out of bounds");
    for (int w = 0; w < rule.nwho; ++w) {
      FUZZ_CHECK(std::memchr(rule.who[w].name, '\0', sizeof rule.who[w].name) != nullptr,
                 "an unterminated name");
    }
  }
  const gid_t gids[] = {1000, 44};
  const policy_caller callers[] = {
      {1000, "mrun-test", gids, 2, group_gid},
      {0, nullptr, gids, 0, nullptr},
  };
  for (const char* device : {"/dev/fakegpu0", "/dev/fakegpuctl", "/dev/sda", "/dev/../etc/shadow",
                             "/dev/dri/card0", ""}) {
    for (const auto& caller : callers) {
      int allowed = policy_allows(&parsed, device, &caller);
      FUZZ_CHECK(allowed == 0 || allowed == 1, "policy_allows is not 0 or 1");
      // Textually outside /dev/: no rule may allow it (patterns are under /dev/ and
      // fnmatch with FNM_PATHNAME cannot match ".." with a wildcard).
      if (std::strncmp(device, "/dev/", 5) != 0) FUZZ_CHECK(!allowed, "a device outside /dev/");
    }
  }
  return 0;
}
