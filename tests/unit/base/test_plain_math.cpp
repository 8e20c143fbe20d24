// base/plain_math against libm, which this test (not mrun) links: mrun's own log2, 10^y
// and rounding, and the cgroup conversions built on them, must give libm's results.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>

#include "base/plain_math.hpp"
#include "cgroup/resources.hpp"

namespace {

bool close(double got, double want, double relative) {
  return std::fabs(got - want) <= relative * std::fabs(want);
}

}  // namespace

TEST_CASE("log2_of agrees with libm's log2 over cgroup v1's share range and beyond") {
  for (std::uint64_t n = 1; n <= 300000; ++n) {
    INFO(n);
    REQUIRE(close(mrun::log2_of(n), std::log2(static_cast<double>(n)), 1e-15));
  }
  for (int e = 0; e < 63; ++e) REQUIRE(mrun::log2_of(1ULL << e) == e);  // exact powers
}

TEST_CASE("pow10_of agrees with libm's pow(10, y) for 0 <= y <= 15") {
  for (int i = 0; i <= 15000; ++i) {
    const double y = i / 1000.0 + 0.000123 * (i % 7);
    INFO(y);
    REQUIRE(close(mrun::pow10_of(y), std::pow(10.0, y), 1e-14));
  }
  REQUIRE(mrun::pow10_of(0) == 1);
  REQUIRE(mrun::pow10_of(4) == 10000);
}

TEST_CASE("round_non_negative is llround for non-negative numbers, halves away from zero") {
  for (double x : {0.0, 0.4, 0.5, 0.49999999999999994, 1.5, 2.5, 2.4999999, 125000.0, 1e15 + 0.5,
                   4611686018427387904.0 / 2}) {
    INFO(x);
    REQUIRE(mrun::round_non_negative(x) == std::llround(x));
  }
  for (int i = 0; i < 200000; ++i) {
    const double cpus = i / 1000.0;  // --cpus 0.000 .. 199.999, times the period
    REQUIRE(mrun::round_non_negative(cpus * 100000) == std::llround(cpus * 100000));
  }
}

TEST_CASE("cpu.shares -> cpu.weight without libm gives libm's answer for every share") {
  for (std::uint64_t shares = 3; shares < 262144; ++shares) {
    const double l = std::log2(static_cast<double>(shares));
    const double exponent = (l * l + 125 * l) / 612.0 - 7.0 / 34.0;
    const auto want = static_cast<std::uint64_t>(std::ceil(std::pow(10, exponent)));
    INFO(shares);
    REQUIRE(mrun::cgroup::cpu_weight_from_shares(shares) == want);
  }
}
