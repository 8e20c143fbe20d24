// The Xid events of fakegpu.ko (fakegpu(4), XID EVENTS): their names, what they
// mean and what to do, for the errors libfakegpu throws and for `mrun gpu doctor`.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace fakegpu {

struct XidInfo {
  unsigned code;
  std::string_view name;     // NVIDIA's: "MMU fault"
  bool device_level;         // fails every context until RESET (79)
  std::string_view meaning;  // what fakegpu raises it for
  std::string_view fix;      // what to do
};

// Every Xid fakegpu.ko raises, by code.
std::span<const XidInfo> xid_table() noexcept;
// The entry for code, or nullptr.
const XidInfo* find_xid(unsigned code) noexcept;
// "Xid 31 (MMU fault)"; "Xid 99" for a code not in the table.
std::string xid_label(unsigned code);

}  // namespace fakegpu
