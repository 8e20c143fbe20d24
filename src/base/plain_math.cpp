#include "base/plain_math.hpp"

namespace mrun {

namespace {

constexpr double ln2 = 0.69314718055994530942;
constexpr double log2_of_10 = 3.32192809488736234787;

// ln(m) for m in [1, 2]: 2·atanh(z) with z = (m-1)/(m+1) <= 1/3, whose series
// z + z³/3 + z⁵/5 + ... has fallen below double precision by its 17th term.
double ln_1_to_2(double m) {
  const double z = (m - 1) / (m + 1);
  const double z2 = z * z;
  double term = z, sum = 0;
  for (int k = 1; k <= 41; k += 2) {
    sum += term / k;
    term *= z2;
  }
  return 2 * sum;
}

// e^x for x in [0, ln 2): its Taylor series, 1e-17 after 20 terms.
double exp_0_to_ln2(double x) {
  double term = 1, sum = 1;
  for (int k = 1; k <= 22; ++k) {
    term *= x / k;
    sum += term;
  }
  return sum;
}

}  // namespace

double log2_of(std::uint64_t n) {
  int exponent = 63 - __builtin_clzll(n);
  const double mantissa = static_cast<double>(n) / static_cast<double>(1ULL << exponent);
  return exponent + ln_1_to_2(mantissa) / ln2;
}

double pow10_of(double y) {
  // Powers of ten that are integers come out exact, as libm's pow gives them.
  if (y == static_cast<double>(static_cast<int>(y))) {
    double r = 1;
    for (int i = 0; i < static_cast<int>(y); ++i) r *= 10;
    return r;
  }
  // 10^y = 2^k · e^(f·ln 2), k the integer part of y·log2(10) and f its fraction.
  const double t = y * log2_of_10;
  const int k = static_cast<int>(t);
  return static_cast<double>(1ULL << k) * exp_0_to_ln2((t - k) * ln2);
}

std::int64_t round_non_negative(double x) {
  auto whole = static_cast<std::int64_t>(x);  // truncates: x - whole is exact below 2^52
  return x - static_cast<double>(whole) >= 0.5 ? whole + 1 : whole;
}

}  // namespace mrun
