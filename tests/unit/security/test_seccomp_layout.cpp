// The binary-tree layout of the seccomp program (SeccompLayout::binary_tree) must decide
// exactly as libseccomp's linear chain did: both programs of the built-in profile are run
// through a classic-BPF interpreter on every syscall number of every architecture the
// filter knows (and some it does not), and, where a decision reads the syscall's
// arguments, on argument values taken from the profile's own conditions.
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "security/capabilities.hpp"
#include "security/seccomp_compile.hpp"
#include "security/seccomp_profile.hpp"
#include "security/security_plan.hpp"

using namespace mrun;
using namespace mrun::security;

namespace {

struct Outcome {
  std::uint32_t action = 0;
  bool read_beyond_arch = false;  // loaded the instruction pointer or an argument
  bool operator==(const Outcome& o) const { return action == o.action; }
};

// Runs a classic BPF program the way the kernel runs a seccomp filter on `data`. Any
// program the kernel would refuse (a jump out of range, a load out of seccomp_data, a
// path without RET) fails the test instead of returning.
std::optional<Outcome> run_filter(const std::vector<sock_filter>& prog, const seccomp_data& data) {
  std::uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {};
  Outcome out;
  std::size_t pc = 0;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&data);
  for (std::size_t steps = 0; pc < prog.size() && steps <= prog.size(); ++steps) {
    const sock_filter& in = prog[pc++];
    const std::uint32_t k = in.k;
    switch (BPF_CLASS(in.code)) {
      case BPF_LD:
        if (in.code == (BPF_LD | BPF_W | BPF_ABS)) {
          if (k % 4 != 0 || k + 4 > sizeof data) return std::nullopt;
          std::memcpy(&a, bytes + k, 4);
          if (k >= offsetof(seccomp_data, instruction_pointer)) out.read_beyond_arch = true;
        } else if (in.code == (BPF_LD | BPF_W | BPF_LEN)) {
          a = sizeof data;
        } else if (in.code == (BPF_LD | BPF_IMM)) {
          a = k;
        } else if (in.code == (BPF_LD | BPF_MEM)) {
          if (k >= BPF_MEMWORDS) return std::nullopt;
          a = mem[k];
        } else {
          return std::nullopt;
        }
        break;
      case BPF_LDX:
        if (in.code == (BPF_LDX | BPF_IMM)) {
          x = k;
        } else if (in.code == (BPF_LDX | BPF_MEM) && k < BPF_MEMWORDS) {
          x = mem[k];
        } else if (in.code == (BPF_LDX | BPF_W | BPF_LEN)) {
          x = sizeof data;
        } else {
          return std::nullopt;
        }
        break;
      case BPF_ST:
        if (k >= BPF_MEMWORDS) return std::nullopt;
        mem[k] = a;
        break;
      case BPF_STX:
        if (k >= BPF_MEMWORDS) return std::nullopt;
        mem[k] = x;
        break;
      case BPF_ALU: {
        const std::uint32_t operand = BPF_SRC(in.code) == BPF_X ? x : k;
        switch (BPF_OP(in.code)) {
          case BPF_ADD: a += operand; break;
          case BPF_SUB: a -= operand; break;
          case BPF_MUL: a *= operand; break;
          case BPF_DIV:
            if (operand == 0) return std::nullopt;
            a /= operand;
            break;
          case BPF_MOD:
            if (operand == 0) return std::nullopt;
            a %= operand;
            break;
          case BPF_AND: a &= operand; break;
          case BPF_OR: a |= operand; break;
          case BPF_XOR: a ^= operand; break;
          case BPF_LSH: a = operand < 32 ? a << operand : 0; break;
          case BPF_RSH: a = operand < 32 ? a >> operand : 0; break;
          case BPF_NEG: a = 0u - a; break;
          default: return std::nullopt;
        }
        break;
      }
      case BPF_JMP: {
        const std::uint32_t operand = BPF_SRC(in.code) == BPF_X ? x : k;
        bool taken = false;
        switch (BPF_OP(in.code)) {
          case BPF_JA: pc += k; continue;
          case BPF_JEQ: taken = a == operand; break;
          case BPF_JGT: taken = a > operand; break;
          case BPF_JGE: taken = a >= operand; break;
          case BPF_JSET: taken = (a & operand) != 0; break;
          default: return std::nullopt;
        }
        pc += taken ? in.jt : in.jf;
        break;
      }
      case BPF_RET: out.action = BPF_RVAL(in.code) == BPF_A ? a : k; return out;
      case BPF_MISC:
        if (BPF_MISCOP(in.code) == BPF_TAX) {
          x = a;
        } else {
          a = x;
        }
        break;
      default: return std::nullopt;
    }
  }
  return std::nullopt;  // ran off the end, or looped (classic BPF only jumps forward)
}

// Argument values worth trying: every datum of the profile's conditions, its neighbours,
// the masks' combinations, and the same with high 32 bits set (libseccomp compares the
// two halves of a 64-bit argument separately).
std::vector<std::uint64_t> interesting_values(const SeccompProfile& profile) {
  std::set<std::uint64_t> values{0, 1, ~0ULL, 0xffffffffULL, 1ULL << 32};
  for (const auto& rule : profile.syscalls) {
    for (const auto& arg : rule.args) {
      for (std::uint64_t v : {arg.value, arg.value_two, arg.value | arg.value_two,
                              arg.value & arg.value_two, arg.value + 1, arg.value - 1}) {
        values.insert(v);
        values.insert(v | (1ULL << 32));
        values.insert(v ^ 0xffffffffULL);
      }
    }
  }
  return {values.begin(), values.end()};
}

struct Compared {
  std::size_t decisions = 0;
  std::size_t with_args = 0;
};

// Both programs, every syscall number (with and without the x32 bit), every architecture
// token the filter may meet; argument vectors where either program looks at arguments.
Compared compare_layouts(const std::vector<sock_filter>& linear,
                         const std::vector<sock_filter>& tree,
                         const std::vector<std::uint64_t>& values) {
  Compared done;
  std::mt19937_64 rng(13);
  const std::uint32_t arches[] = {AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64, 0};
  std::vector<std::int32_t> numbers;
  for (std::int32_t nr = 0; nr < 1100; ++nr) {
    numbers.push_back(nr);
    numbers.push_back(nr | 0x40000000);  // __X32_SYSCALL_BIT
  }
  for (std::int32_t nr : {-1, -101, 0x7fffffff, static_cast<std::int32_t>(0x80000000)}) {
    numbers.push_back(nr);
  }
  for (std::uint32_t arch : arches) {
    for (std::int32_t nr : numbers) {
      seccomp_data data{};
      data.nr = nr;
      data.arch = arch;
      auto check = [&](const seccomp_data& d) {
        auto old_way = run_filter(linear, d);
        auto new_way = run_filter(tree, d);
        REQUIRE(old_way);
        REQUIRE(new_way);
        INFO("arch 0x" << std::hex << arch << std::dec << " nr " << nr << " args " << d.args[0]
                       << " " << d.args[1] << " " << d.args[2] << " " << d.args[3]);
        REQUIRE(new_way->action == old_way->action);
        ++done.decisions;
        return old_way->read_beyond_arch || new_way->read_beyond_arch;
      };
      if (!check(data)) continue;  // decided on the number and architecture alone
      ++done.with_args;
      for (std::uint64_t v : values) {
        for (std::size_t i = 0; i < 6; ++i) {
          seccomp_data one = data;
          one.args[i] = v;
          check(one);
        }
      }
      for (int n = 0; n < 500; ++n) {
        seccomp_data mixed = data;
        for (auto& arg : mixed.args) arg = values[rng() % values.size()];
        check(mixed);
      }
    }
  }
  return done;
}

}  // namespace

TEST_CASE("the binary-tree program decides as the linear one on every syscall number",
          "[security][seccomp-layout]") {
  auto policy = default_policy();
  auto profile = parse_seccomp_profile(policy.profile_json, policy.profile_origin);
  const auto values = interesting_values(profile);
  const CapMask defaults = parse_caps_conf(policy.caps_conf, "caps.conf");
  for (CapMask caps : {defaults, all_capabilities(CAP_LAST_CAP)}) {
    for (bool x32 : {false, true}) {
      SeccompTarget target;
      target.capabilities = caps;
      target.x32_syscalls = x32;
      auto linear = compile_seccomp(profile, target, SeccompLayout::linear);
      auto tree = compile_seccomp(profile, target, SeccompLayout::binary_tree);
      INFO("caps " << caps << " x32 " << x32 << ": " << linear.program.size() << " -> "
                   << tree.program.size() << " instructions");
      CHECK(tree.flags == linear.flags);
      CHECK(tree.architectures == linear.architectures);
      CHECK(tree.rules_added == linear.rules_added);
      CHECK(tree.program.size() != linear.program.size());  // the layout did change
      auto done = compare_layouts(linear.program, tree.program, values);
      CHECK(done.with_args > 0);  // some rules look at arguments (clone, personality...)
      CHECK(done.decisions > 4 * 2 * 1100);
    }
  }
}

TEST_CASE("the interpreter the comparison relies on tells decisions apart",
          "[security][seccomp-layout]") {
  // A test of the test: a profile that errors keyctl only with arg 0 == 7 must differ
  // from one without that rule, on that number and argument alone.
  auto with_rule = parse_seccomp_profile(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
      {"names": ["keyctl"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13,
       "args": [{"index": 0, "value": 7, "op": "SCMP_CMP_EQ"}]}]})",
                                         "a.json");
  auto other = parse_seccomp_profile(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
      {"names": ["keyctl"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13,
       "args": [{"index": 0, "value": 8, "op": "SCMP_CMP_EQ"}]}]})",
                                     "b.json");
  auto a = compile_seccomp(with_rule, SeccompTarget{}, SeccompLayout::binary_tree);
  auto b = compile_seccomp(other, SeccompTarget{}, SeccompLayout::linear);
  seccomp_data data{};
  data.arch = a.architectures.front() == "x86_64" ? AUDIT_ARCH_X86_64 : 0;
  data.nr = 250;  // keyctl on x86_64
  data.args[0] = 7;
  if (data.arch == 0) return;
  auto ra = run_filter(a.program, data);
  auto rb = run_filter(b.program, data);
  REQUIRE(ra);
  REQUIRE(rb);
  CHECK(ra->action == (SECCOMP_RET_ERRNO | 13));
  CHECK(rb->action == SECCOMP_RET_ALLOW);
  CHECK(ra->read_beyond_arch);
}
