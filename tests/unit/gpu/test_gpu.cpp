// Unit tests of libfakegpu's pure parts: FAKEGPU_VISIBLE_DEVICES, ring index
// arithmetic across the u32 wrap, crc32, the ABI's layout, and fakegpu-client's
// check table, exit statuses and JSON.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <fakegpu.h>

#include <cerrno>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "client_checks.hpp"
#include "crc32.hpp"
#include "fakegpu.hpp"
#include "ring_index.hpp"
#include "visible_devices.hpp"

using fakegpu::parse_visible_devices;
using V = std::vector<unsigned>;

TEST_CASE("FAKEGPU_VISIBLE_DEVICES unset shows every present device in order", "[visible]") {
  const auto v = parse_visible_devices(std::nullopt, V{2, 0, 1});
  CHECK(v.devices == V{0, 1, 2});
  CHECK(v.note.empty());
}

TEST_CASE("FAKEGPU_VISIBLE_DEVICES empty, none and all", "[visible]") {
  CHECK(parse_visible_devices("", V{0, 1}).devices.empty());
  CHECK(parse_visible_devices("  ", V{0, 1}).devices.empty());
  CHECK(parse_visible_devices("none", V{0, 1}).devices.empty());
  CHECK(parse_visible_devices("all", V{1, 0}).devices == V{0, 1});
}

TEST_CASE("FAKEGPU_VISIBLE_DEVICES keeps the listed order and ignores spaces", "[visible]") {
  CHECK(parse_visible_devices("1,0", V{0, 1}).devices == V{1, 0});
  CHECK(parse_visible_devices(" 1 , 0 ", V{0, 1}).devices == V{1, 0});
  CHECK(parse_visible_devices("1", V{0, 1}).devices == V{1});
}

TEST_CASE("FAKEGPU_VISIBLE_DEVICES stops at the first bad entry, like CUDA", "[visible]") {
  auto v = parse_visible_devices("0,7,1", V{0, 1});
  CHECK(v.devices == V{0});
  CHECK(v.note.find("'7': no such device") != std::string::npos);

  v = parse_visible_devices("1,x,0", V{0, 1});
  CHECK(v.devices == V{1});
  CHECK(v.note.find("not a device index") != std::string::npos);

  v = parse_visible_devices("1,1,0", V{0, 1});
  CHECK(v.devices == V{1});
  CHECK(v.note.find("listed twice") != std::string::npos);

  CHECK(parse_visible_devices("-1", V{0}).devices.empty());
  CHECK(parse_visible_devices("0x1", V{0, 1}).devices.empty());
  CHECK(parse_visible_devices("1,", V{0, 1}).devices ==
        V{1});  // trailing comma: an empty entry stops it
  CHECK(parse_visible_devices("99999999999", V{0}).devices.empty());
}

TEST_CASE("ring sizes must be powers of two", "[ring]") {
  CHECK(fakegpu::ring::valid_size(1));
  CHECK(fakegpu::ring::valid_size(1024));
  CHECK_FALSE(fakegpu::ring::valid_size(0));
  CHECK_FALSE(fakegpu::ring::valid_size(1000));
}

TEST_CASE("ring occupancy is exact across the u32 wrap", "[ring]") {
  namespace r = fakegpu::ring;
  CHECK(r::used(0, 0) == 0);
  CHECK(r::free_slots(0, 0, 1024) == 1024);
  CHECK(r::free_slots(10, 1034, 1024) == 0);
  const std::uint32_t head = 0xfffffff0u;
  const std::uint32_t tail = head + 100;  // wrapped
  CHECK(tail < head);
  CHECK(r::used(head, tail) == 100);
  CHECK(r::free_slots(head, tail, 1024) == 924);
  CHECK(r::slot(0xffffffffu, 1024) == 1023);
  CHECK(r::slot(0x100000000ull & 0xffffffffu, 1024) == 0);
  CHECK(r::slot(tail, 1024) == ((head + 100) & 1023));
}

TEST_CASE("ring head plausibility and fences of batch entries", "[ring]") {
  namespace r = fakegpu::ring;
  CHECK(r::head_plausible(5, 5, 10, 1024));        // nothing consumed yet
  CHECK(r::head_plausible(10, 10, 10, 1024));      // everything consumed
  CHECK_FALSE(r::head_plausible(8, 7, 10, 1024));  // consumed what was never handed over
  CHECK_FALSE(r::head_plausible(11, 10, 10, 1024));
  CHECK_FALSE(r::head_plausible(0, 2000, 2000, 1024));  // more than a ring behind
  CHECK(r::head_plausible(0xfffffffeu, 2, 3, 1024));    // across the wrap
  CHECK_FALSE(r::head_plausible(3, 2, 3, 1024));        // across the wrap, past claimed
  CHECK(r::fence_of(100, 7, 100) == 7);
  CHECK(r::fence_of(100, 7, 163) == 70);
  CHECK(r::fence_of(0xffffffffu, 50, 1) == 52);  // entry counters wrap, fences do not
}

TEST_CASE("crc32 is zlib's", "[crc32]") {
  const std::string check = "123456789";
  CHECK(fakegpu::crc32(std::as_bytes(std::span(check.data(), check.size()))) == 0xCBF43926u);
  CHECK(fakegpu::crc32({}) == 0u);
  const std::vector<std::byte> zeros(32);
  CHECK(fakegpu::crc32(zeros) == 0x190A55ADu);
}

TEST_CASE("the ABI has the layout the driver checks", "[abi]") {
  CHECK(sizeof(fakegpu_job) == 64);
  CHECK(sizeof(fakegpu_fence_page) == 32);
  CHECK(sizeof(fakegpu_sq_ctrl) == 128);
  CHECK(offsetof(fakegpu_sq_ctrl, tail) == 64);
  CHECK(sizeof(fakegpu_info) == 112);
  CHECK(sizeof(fakegpu_submit) == 80);
  CHECK(sizeof(fakegpu_wait) == 40);
  // Every struct is a multiple of 8 bytes: no tail padding differs between ABIs.
  for (std::size_t s : {sizeof(fakegpu_alloc), sizeof(fakegpu_free), sizeof(fakegpu_map),
                        sizeof(fakegpu_doorbell), sizeof(fakegpu_reset)})
    CHECK(s % 8 == 0);
  // The ioctl number encodes the struct size: a wrong-sized struct is another command.
  CHECK(_IOC_SIZE(FAKEGPU_IOCTL_SUBMIT) == sizeof(fakegpu_submit));
  CHECK(_IOC_DIR(FAKEGPU_IOCTL_INFO) == (_IOC_READ | _IOC_WRITE));
  CHECK(FAKEGPU_MMAP_SQ_OFFSET % 65536 == 0);
}

TEST_CASE("job builders fill only the fields an op uses", "[abi]") {
  const auto f = fakegpu::job::fill(3, 8, 16, 0xabcd);
  CHECK(f.op == FAKEGPU_OP_FILL);
  CHECK(f.dst_handle == 3);
  CHECK(f.src_handle == 0);
  CHECK(f.src_offset == 0);
  CHECK(f.flags == 0);
  const auto c = fakegpu::job::checksum(1, 4, 2, 0, 100);
  CHECK(c.op == FAKEGPU_OP_CHECKSUM);
  CHECK(c.value == 0);
  CHECK(c.src_handle == 2);
  const auto n = fakegpu::job::nop();
  CHECK(n.op == FAKEGPU_OP_NOP);
  CHECK(n.length == 0);
}

TEST_CASE("errno names", "[errors]") {
  CHECK(fakegpu::errno_name(EACCES) == "EACCES");
  CHECK(fakegpu::errno_name(EDQUOT) == "EDQUOT");
  CHECK(fakegpu::errno_name(0) == "0");
  const fakegpu::Error e("open /dev/fakegpu0", EACCES);
  CHECK(std::string(e.what()) == "open /dev/fakegpu0: EACCES (Permission denied)");
  CHECK(e.step() == "open /dev/fakegpu0");
  CHECK(e.code() == EACCES);
}

namespace client = fakegpu::client;

TEST_CASE("client check names and exit codes are distinct", "[client]") {
  std::set<std::string_view> names;
  std::set<int> codes{client::kExitPassed, client::kExitInternal, client::kExitUsage,
                      client::kExitNoDevice};
  for (const auto& c : client::kChecks) {
    CHECK(names.insert(c.name).second);
    CHECK(codes.insert(c.exit_code).second);
    CHECK(c.exit_code < 126);  // shells reserve 126 and above
  }
  CHECK(client::kChecks.front().name == "open");
}

TEST_CASE("client selection: default set, --check, unknown names", "[client]") {
  auto sel = client::select_checks({});
  CHECK(sel.checks.front().name == "open");
  bool has_reset = false;
  for (const auto& c : sel.checks) has_reset = has_reset || c.name == "reset";
  CHECK_FALSE(has_reset);
  CHECK(sel.checks.size() == client::kChecks.size() - 1);

  sel = client::select_checks({"reset"});
  REQUIRE(sel.checks.size() == 2);
  CHECK(sel.checks[0].name == "open");
  CHECK(sel.checks[1].name == "reset");

  sel = client::select_checks({"ring", "map", "bogus"});
  REQUIRE(sel.checks.size() == 3);
  CHECK(sel.checks[1].name == "map");  // table order, not argument order
  CHECK(sel.unknown == std::vector<std::string>{"bogus"});
}

TEST_CASE("client exit status and report name the first failure", "[client]") {
  std::vector<client::Outcome> out{{"open", true, "opened", "", 0}, {"info", true, "abi 1", "", 0}};
  CHECK(client::exit_status(out) == 0);
  CHECK(client::render_text(out).ends_with("ALL CHECKS PASSED\n"));

  out = {{"open", false, "", "open /dev/fakegpu0", EACCES}};
  CHECK(client::exit_status(out) == 10);
  CHECK(client::render_text(out) == "FAIL open: open /dev/fakegpu0: EACCES (Permission denied)\n");
  const std::string json = client::render_json("/dev/fakegpu0", out);
  CHECK(json.find("\"passed\":false") != std::string::npos);
  CHECK(json.find("\"exit_code\":10") != std::string::npos);
  CHECK(json.find("\"errno_name\":\"EACCES\"") != std::string::npos);
  CHECK(json.find("\"step\":\"open /dev/fakegpu0\"") != std::string::npos);

  out = {{"open", true, "", "", 0}, {"reset", false, "", "reset /dev/fakegpu0", EPERM}};
  CHECK(client::exit_status(out) == 22);
}

TEST_CASE("client JSON escaping", "[client]") {
  CHECK(client::json_escape("a\"b\\c\n") == "a\\\"b\\\\c\\n");
  CHECK(client::json_escape(std::string(1, '\x01')) == "\\u0001");
}
