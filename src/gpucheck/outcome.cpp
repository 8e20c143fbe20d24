#include "gpucheck/outcome.hpp"

#include <cstring>
#include <vector>

#include "base/error.hpp"
#include "base/strings.hpp"

namespace mrun::gpucheck {

namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) lines.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

bool is_upper_word_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// A word "E[A-Z0-9]+" that errno_name() knows, standing alone in `text`.
std::string errno_word(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != 'E' || (i > 0 && (is_upper_word_char(text[i - 1]) || text[i - 1] == '_')))
      continue;
    std::size_t end = i + 1;
    while (end < text.size() && is_upper_word_char(text[end])) ++end;
    if (end == i + 1 || (end < text.size() && text[end] == '_')) continue;
    std::string word(text.substr(i, end - i));
    for (int err = 1; err < 134; ++err) {
      if (errno_name(err) == word) return word;
    }
  }
  return {};
}

// The longest strerror(3) message contained in `text` (longest: "No such device" must
// not win over "No such device or address").
std::string errno_of_message(std::string_view text) {
  std::string best;
  std::size_t best_len = 0;
  for (int err = 1; err < 134; ++err) {
    const char* message = std::strerror(err);
    std::size_t len = std::strlen(message);
    if (len > best_len && text.find(message) != std::string_view::npos &&
        !starts_with(message, "Unknown error")) {
      best = errno_name(err);
      best_len = len;
    }
  }
  return best;
}

}  // namespace

std::string errno_in(std::string_view text) {
  auto word = errno_word(text);
  return word.empty() ? errno_of_message(text) : word;
}

Outcome parse_outcome(std::string_view output, int exit_status) {
  Outcome out;
  out.exit_status = exit_status;
  const auto lines = lines_of(output);

  for (auto line : lines) {
    if (starts_with(std::string(line), "FAIL ")) {
      auto rest = line.substr(5);
      auto colon = rest.find(':');
      out.step = std::string(rest.substr(0, colon));
      out.line = std::string(line);
      // "FAIL open: open /dev/fakegpu0: EACCES (Permission denied)": the errno is the
      // word after the last ": ", before the message in parentheses.
      auto paren = rest.rfind(" (");
      auto head = paren == std::string_view::npos ? rest : rest.substr(0, paren);
      auto last = head.rfind(": ");
      if (colon != std::string_view::npos && last != std::string_view::npos && last > colon)
        out.errno_name = errno_word(head.substr(last + 2));
      return out;
    }
  }
  for (auto line : lines) {
    if (line == "ALL CHECKS PASSED") {
      out.step = step_passed;
      out.line = std::string(line);
      return out;
    }
  }
  for (auto line : lines) {
    if (line.find("error while loading shared libraries") != std::string_view::npos) {
      out.step = "load libraries";
      out.line = std::string(line);
      out.errno_name = errno_of_message(line);
      return out;
    }
  }
  for (auto line : lines) {
    std::string text(line);
    if (!starts_with(text, "mrun: ") || starts_with(text, "mrun: warning: ") ||
        starts_with(text, "mrun: debug: "))
      continue;
    out.line = text;
    out.step = text.find("BPF_PROG_LOAD") != std::string::npos     ? "BPF_PROG_LOAD"
               : text.find("BPF_PROG_ATTACH") != std::string::npos ? "BPF_PROG_ATTACH"
                                                                   : "mrun";
    out.errno_name = errno_in(line);
    return out;
  }
  // Another program's error ("mknod: /dev/fakegpu0: Operation not permitted"): the last
  // line that reads PROG: ...: message.
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    auto colon = it->find(": ");
    if (colon == std::string_view::npos || colon == 0) continue;
    auto prog = it->substr(0, colon);
    if (prog.find(' ') != std::string_view::npos) continue;
    auto err = errno_in(it->substr(colon + 2));
    if (err.empty()) continue;
    out.step = std::string(prog);
    out.errno_name = err;
    out.line = std::string(*it);
    return out;
  }
  out.step = exit_status == 0 ? "exit 0" : "exit " + std::to_string(exit_status);
  return out;
}

}  // namespace mrun::gpucheck
