// The few real-number functions mrun needs, without libm. Why: mrun is started once per
// container, and linking libm for three functions (the cgroup v1 -> v2 conversions'
// log2, pow and llround) costs every start its loading and 300 KiB resident (bench/
// README.md, "Peak RSS"). Each agrees with libm to within a few units in the last place
// over the inputs mrun gives it; tests/unit/base/test_plain_math.cpp checks that, and that
// the conversions built on them give libm's results for every input.
#pragma once

#include <cstdint>

namespace mrun {

// log2(n), n >= 1.
double log2_of(std::uint64_t n);
// 10^y, for 0 <= y <= 15.
double pow10_of(double y);
// The nearest integer to x >= 0, halves away from zero (llround, for x < 2^62).
std::int64_t round_non_negative(double x);

}  // namespace mrun
