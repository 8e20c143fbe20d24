// -p/--publish [IP:]HOSTPORT:CTRPORT[/tcp|/udp], parsed into data (pure, unit tested).
// The same struct feeds slirp4netns's add_hostfwd and pasta's -t/-u, so both
// back ends accept exactly the same syntax.
#pragma once

#include <cstdint>
#include <string>

namespace mrun::net {

enum class Protocol { tcp, udp };

struct PublishSpec {
  std::string host_ip;  // dotted IPv4; empty means every host address (0.0.0.0)
  std::uint16_t host_port = 0;
  std::uint16_t container_port = 0;
  Protocol protocol = Protocol::tcp;
  bool operator==(const PublishSpec&) const = default;
};

std::string to_string(Protocol protocol);
// Back to the canonical spec text, e.g. "127.0.0.1:8080:80/tcp" (used in messages).
std::string to_string(const PublishSpec& spec);

// Throws mrun::Error (EINVAL) naming the spec, the bad part and the expected form.
PublishSpec parse_publish(const std::string& text);

// True for a dotted-quad IPv4 address with each part 0-255 and no leading junk.
bool valid_ipv4(const std::string& text);

}  // namespace mrun::net
