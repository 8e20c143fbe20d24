// Index arithmetic of the submission ring, shared by libfakegpu and its unit tests.
//
// head and tail are free-running u32 counters (they wrap at 2^32, not at the ring
// size); the slot of counter i is i & (entries - 1). The driver owns head (entries
// it has copied out), user space owns tail (entries it has published). Everything
// here is pure and constexpr so the wrap-around cases are tested without a device.
#pragma once

#include <cstdint>

namespace fakegpu::ring {

constexpr bool valid_size(std::uint32_t entries) {
  return entries != 0 && (entries & (entries - 1)) == 0;
}

// Entries published and not yet copied out by the driver. Unsigned subtraction
// is exact across the 2^32 wrap as long as tail - head <= entries.
constexpr std::uint32_t used(std::uint32_t head, std::uint32_t tail) {
  return tail - head;
}

constexpr std::uint32_t free_slots(std::uint32_t head, std::uint32_t tail, std::uint32_t entries) {
  return entries - used(head, tail);
}

constexpr std::uint32_t slot(std::uint32_t counter, std::uint32_t entries) {
  return counter & (entries - 1);
}

// A head read from shared memory is plausible: the driver consumed only entries it
// was handed (head not past `claimed`) and never more than a ring behind tail.
constexpr bool head_plausible(std::uint32_t head, std::uint32_t claimed, std::uint32_t tail,
                              std::uint32_t entries) {
  return used(head, claimed) <= used(head, tail) && used(head, tail) <= entries;
}

// Fence of the entry with counter `index` inside a doorbell batch that accepted
// `count` entries starting at counter `start` with fence `first_fence`.
constexpr std::uint64_t fence_of(std::uint32_t start, std::uint64_t first_fence,
                                 std::uint32_t index) {
  return first_fence + static_cast<std::uint32_t>(index - start);
}

}  // namespace fakegpu::ring
