// "TERM", "SIGTERM", "15" -> 15, for mrun kill.
#pragma once

#include <optional>
#include <string>

namespace mrun::cli {

std::optional<int> parse_signal(const std::string& text);

}  // namespace mrun::cli
