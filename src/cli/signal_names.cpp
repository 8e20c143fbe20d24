#include "cli/signal_names.hpp"

#include <signal.h>
#include <string.h>

#include <cctype>

#include "base/strings.hpp"

namespace mrun::cli {

std::optional<int> parse_signal(const std::string& text) {
  if (auto number = parse_u64(text)) {
    if (*number >= 1 && *number < static_cast<std::uint64_t>(NSIG))
      return static_cast<int>(*number);
    return std::nullopt;
  }
  std::string name;
  for (char c : text) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (starts_with(name, "SIG")) name = name.substr(3);
  for (int sig = 1; sig < SIGRTMIN; ++sig) {
    const char* abbrev = ::sigabbrev_np(sig);
    if (abbrev != nullptr && name == abbrev) return sig;
  }
  return std::nullopt;
}

}  // namespace mrun::cli
