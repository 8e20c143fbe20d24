// crc32 as zlib computes it (IEEE 802.3, reflected, init and final xor ~0): what
// FAKEGPU_OP_CHECKSUM writes, so callers can check the device's answer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace fakegpu {

std::uint32_t crc32(std::span<const std::byte> data);

}  // namespace fakegpu
