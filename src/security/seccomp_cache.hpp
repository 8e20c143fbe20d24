// A cache of compiled seccomp programs. Compiling the default profile with libseccomp
// is a large part of a start, measured against seccomp=unconfined by
// bench/seccomp-start.sh (figures in bench/README.md); a cached program is only read back.
//
// Trust: the cache lives in the caller's own data dir (rootless: ~/.local/share/mrun,
// rootful: /var/lib/mrun), in a 0700 directory that must be owned by the caller and
// not writable by anyone else; an entry is used only if it is owned by the caller, and
// if the complete key stored in it (profile text, capability set, kernel, libseccomp
// version) equals the one asked for byte for byte, so that neither a hash collision nor
// an entry for another profile can slip a different filter in. Any doubt: recompile.
#pragma once

#include <optional>
#include <string>

#include "base/log.hpp"
#include "security/seccomp_compile.hpp"

namespace mrun::security {

// Everything the compiled program depends on.
std::string seccomp_cache_key(const std::string& profile_text, const SeccompTarget& target);

std::optional<CompiledSeccomp> load_cached_seccomp(const std::string& dir, const std::string& key,
                                                   const Logger& log);
// Best effort: a failure to write is logged under --debug and otherwise ignored.
void store_cached_seccomp(const std::string& dir, const std::string& key,
                          const CompiledSeccomp& filter, const Logger& log);

}  // namespace mrun::security
