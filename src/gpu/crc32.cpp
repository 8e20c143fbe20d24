#include "crc32.hpp"

#include <array>

namespace fakegpu {
namespace {

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr auto table = make_table();

}  // namespace

std::uint32_t crc32(std::span<const std::byte> data) {
  std::uint32_t c = ~0u;
  for (std::byte b : data) c = table[(c ^ std::to_integer<std::uint32_t>(b)) & 0xff] ^ (c >> 8);
  return ~c;
}

}  // namespace fakegpu
