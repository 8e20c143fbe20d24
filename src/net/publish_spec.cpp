#include "net/publish_spec.hpp"

#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"

namespace mrun::net {

namespace {
const char* const form =
    "use -p [IP:]HOSTPORT:CTRPORT[/tcp|/udp], ports 1-65535, IP an IPv4 address";

std::uint16_t parse_port(const std::string& spec, const std::string& text, const char* which) {
  auto value = parse_u64(text);
  bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  if (!value && digits) value = 65536;  // too long for 64 bits: out of range all the same
  if (!value) {
    throw Error("publish \"" + spec + "\": " + which + " port \"" + text + "\" is not a number",
                EINVAL, form);
  }
  // Port 0 would ask the kernel for "any port", which the user could not find out.
  if (*value < 1 || *value > 65535) {
    throw Error("publish \"" + spec + "\": " + which + " port " + text + " is out of range 1-65535",
                EINVAL, form);
  }
  return static_cast<std::uint16_t>(*value);
}
}  // namespace

std::string to_string(Protocol protocol) {
  return protocol == Protocol::udp ? "udp" : "tcp";
}

std::string to_string(const PublishSpec& spec) {
  std::string text = spec.host_ip.empty() ? "" : spec.host_ip + ":";
  return text + std::to_string(spec.host_port) + ":" + std::to_string(spec.container_port) + "/" +
         to_string(spec.protocol);
}

bool valid_ipv4(const std::string& text) {
  auto parts = split(text, '.');
  if (parts.size() != 4) return false;
  for (const auto& part : parts) {
    if (part.empty() || part.size() > 3) return false;
    auto value = parse_u64(part);
    if (!value || *value > 255) return false;
  }
  return true;
}

PublishSpec parse_publish(const std::string& text) {
  PublishSpec spec;
  std::string rest = text;
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    std::string proto = rest.substr(slash + 1);
    if (proto == "tcp") {
      spec.protocol = Protocol::tcp;
    } else if (proto == "udp") {
      spec.protocol = Protocol::udp;
    } else {
      throw Error("publish \"" + text + "\": unknown protocol \"" + proto + "\"", EINVAL, form);
    }
    rest = rest.substr(0, slash);
  }
  auto parts = split(rest, ':');
  if (parts.size() == 3) {
    if (!valid_ipv4(parts[0])) {
      throw Error("publish \"" + text + "\": \"" + parts[0] + "\" is not an IPv4 address", EINVAL,
                  form);
    }
    spec.host_ip = parts[0];
    parts.erase(parts.begin());
  }
  if (parts.size() != 2) {
    throw Error("publish \"" + text + "\" is malformed", EINVAL, form);
  }
  spec.host_port = parse_port(text, parts[0], "host");
  spec.container_port = parse_port(text, parts[1], "container");
  return spec;
}

}  // namespace mrun::net
