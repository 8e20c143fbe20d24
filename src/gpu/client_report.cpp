// Selection of checks, exit status and output of fakegpu-client: pure functions,
// unit-tested without a device.
#include <cstring>
#include <sstream>

#include "client_checks.hpp"
#include "fakegpu.hpp"

namespace fakegpu::client {

std::optional<CheckSpec> find_check(std::string_view name) {
  for (const auto& c : kChecks)
    if (c.name == name) return c;
  return std::nullopt;
}

Selection select_checks(const std::vector<std::string>& requested) {
  Selection sel;
  for (const auto& name : requested)
    if (!find_check(name)) sel.unknown.push_back(name);
  for (const auto& c : kChecks) {
    bool wanted = requested.empty() ? c.by_default : c.name == "open";
    for (const auto& name : requested) wanted = wanted || name == c.name;
    if (wanted) sel.checks.push_back(c);
  }
  return sel;
}

int exit_status(const std::vector<Outcome>& outcomes) {
  for (const auto& o : outcomes) {
    if (o.ok) continue;
    const auto spec = find_check(o.name);
    return spec ? spec->exit_code : kExitInternal;
  }
  return kExitPassed;
}

static std::string failure_text(const Outcome& o) {
  std::string s = o.step;
  if (o.err) s += std::string(": ") + errno_name(o.err) + " (" + std::strerror(o.err) + ")";
  return s;
}

std::string render_text(const std::vector<Outcome>& outcomes) {
  std::ostringstream out;
  for (const auto& o : outcomes) {
    if (o.ok)
      out << "ok " << o.name << ": " << o.detail << '\n';
    else
      out << "FAIL " << o.name << ": " << failure_text(o) << '\n';
  }
  if (exit_status(outcomes) == kExitPassed) out << "ALL CHECKS PASSED\n";
  return out.str();
}

std::string json_escape(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          static const char hex[] = "0123456789abcdef";
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out;
}

std::string render_json(const std::string& device, const std::vector<Outcome>& outcomes) {
  std::ostringstream out;
  const int status = exit_status(outcomes);
  out << "{\"device\":\"" << json_escape(device)
      << "\",\"passed\":" << (status == kExitPassed ? "true" : "false")
      << ",\"exit_code\":" << status << ",\"checks\":[";
  bool first = true;
  for (const auto& o : outcomes) {
    out << (first ? "" : ",") << "{\"name\":\"" << json_escape(o.name)
        << "\",\"ok\":" << (o.ok ? "true" : "false");
    first = false;
    if (o.ok) {
      out << ",\"detail\":\"" << json_escape(o.detail) << "\"}";
      continue;
    }
    out << ",\"step\":\"" << json_escape(o.step) << "\",\"errno\":" << o.err;
    if (o.err)
      out << ",\"errno_name\":\"" << errno_name(o.err) << "\",\"message\":\""
          << json_escape(std::strerror(o.err)) << '"';
    out << '}';
  }
  out << "]}\n";
  return out.str();
}

}  // namespace fakegpu::client
