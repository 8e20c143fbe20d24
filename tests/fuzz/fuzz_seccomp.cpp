// libFuzzer target: a seccomp profile (OCI / containers JSON) through
// mrun::security::parse_seccomp_profile, then, when it parses, compile_seccomp, which
// is pure (libseccomp builds the BPF program in memory and exports it to a memfd;
// nothing is loaded). Only mrun::Error may leave either.
#include <linux/filter.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.hpp"
#include "fuzz_check.hpp"
#include "security/seccomp_compile.hpp"
#include "security/seccomp_profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mrun::security::SeccompProfile profile;
  try {
    profile = mrun::security::parse_seccomp_profile(text, "fuzz.json");
  } catch (const mrun::Error& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("seccomp profile fuzz.json: ", 0) == 0,
               "an error that does not name the profile");
    return 0;
  }
  for (const auto& rule : profile.syscalls) {
    FUZZ_CHECK(!rule.names.empty(), "a rule without a syscall");
    for (const auto& arg : rule.args) FUZZ_CHECK(arg.index <= 5, "an argument index above 5");
    if (rule.errno_ret) FUZZ_CHECK(*rule.errno_ret <= 4095, "an errno out of range");
  }
  // Both sides of every includes/excludes: all capabilities, none; a kernel release
  // and "" (every minKernel met).
  for (const mrun::security::SeccompTarget& target :
       {mrun::security::SeccompTarget{~mrun::security::CapMask{0}, "6.1.0-fuzz"},
        mrun::security::SeccompTarget{0, ""}}) {
    try {
      auto compiled = mrun::security::compile_seccomp(profile, target);
      FUZZ_CHECK(!compiled.program.empty(), "an empty BPF program");
      FUZZ_CHECK(compiled.program.size() <= BPF_MAXINSNS, "a program over the kernel's limit");
    } catch (const mrun::Error&) {
    }
  }
  return 0;
}
