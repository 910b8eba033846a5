// The scalar arithmetic shared by the host backends and the CUDA kernels (engine/src/core/scalar_math.hpp),
// checked against the IEEE 754 definitions: every binary16 and bfloat16 bit pattern decodes to
// (-1)^s x 1.m x 2^(e-bias) (0.m x 2^(1-bias) when subnormal), and encoding rounds to the nearest
// representable value with ties to the even significand, overflowing to infinity at the midpoint
// above the largest finite value. Since the kernels compile this same header, these tests cover
// the device conversions too.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "../../engine/src/core/scalar_math.hpp"

namespace scalar = shardscope::engine::scalar;

namespace {

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// The definition of a binary format with `mant_bits` significand bits and exponent bias `bias`
// (binary16: 10, 15; bfloat16: 7, 127), evaluated in double (exact for both formats).
double Decode(uint16_t bits, int mant_bits, int bias) {
  const int exp_bits = 15 - mant_bits;
  const uint32_t exp_max = (1u << exp_bits) - 1;
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  const uint32_t exp = (bits >> mant_bits) & exp_max;
  const uint32_t mant = bits & ((1u << mant_bits) - 1);
  if (exp == exp_max)
    return mant == 0 ? sign * std::numeric_limits<double>::infinity()
                     : std::numeric_limits<double>::quiet_NaN();
  if (exp == 0) return sign * std::ldexp(static_cast<double>(mant), 1 - bias - mant_bits);
  return sign *
         std::ldexp(static_cast<double>(mant + (1u << mant_bits)), static_cast<int>(exp) - bias - mant_bits);
}

// Checks that `got` is the round-to-nearest-even encoding of finite `f` in the format: its value
// is at least as close as both neighbours in magnitude, a tie goes to the even significand, and
// infinity only at or beyond the midpoint above the largest finite value.
void CheckNearest(float f, uint16_t got, int mant_bits, int bias) {
  const uint16_t inf = static_cast<uint16_t>(((1u << (15 - mant_bits)) - 1) << mant_bits);
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  INFO("f = " << f << " got bits " << got);
  REQUIRE((got & 0x8000u) == sign);
  const uint16_t mag = got & 0x7FFFu;
  const double x = std::fabs(static_cast<double>(f));
  const double max_finite = Decode(static_cast<uint16_t>(inf - 1), mant_bits, bias);
  const double ulp_top = max_finite - Decode(static_cast<uint16_t>(inf - 2), mant_bits, bias);
  if (mag == inf) {
    REQUIRE(x >= max_finite + ulp_top / 2);
    return;
  }
  REQUIRE(mag < inf);
  const double v = Decode(mag, mant_bits, bias);
  const double err = std::fabs(x - v);
  const double up =
      mag + 1 < inf ? Decode(static_cast<uint16_t>(mag + 1), mant_bits, bias) : max_finite + ulp_top;
  REQUIRE(err <= std::fabs(up - x));
  if (err == std::fabs(up - x)) REQUIRE((mag & 1u) == 0);
  if (mag > 0) {
    const double down = Decode(static_cast<uint16_t>(mag - 1), mant_bits, bias);
    REQUIRE(err <= std::fabs(x - down));
    if (err == std::fabs(x - down)) REQUIRE((mag & 1u) == 0);
  }
}

// A 16-bit float format (sign, exponent, `mant_bits` significand bits, exponent `bias`) and the
// scalar conversions under test.
struct Format16 {
  int mant_bits;
  int bias;
  float (*decode)(uint16_t);
  uint16_t (*encode)(float);
};

// Every one of the 65536 patterns decodes to the definition's value (Decode) and encodes back to
// itself; a NaN decodes to NaN and encodes back to a NaN (exponent all ones, a non-zero quiet
// significand) with its sign kept.
void CheckEveryPattern(const Format16& f) {
  const uint32_t mant_mask = (1u << f.mant_bits) - 1u;
  const uint32_t exp_mask = 0x7FFFu & ~mant_mask;
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const double want = Decode(h, f.mant_bits, f.bias);
    const float got = f.decode(h);
    INFO("bits " << b);
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got));
      const uint16_t back = f.encode(got);
      REQUIRE((back & exp_mask) == exp_mask);
      REQUIRE((back & mant_mask) != 0);
      REQUIRE((back & 0x8000u) == (h & 0x8000u));
    } else {
      REQUIRE(static_cast<double>(got) == want);
      REQUIRE(std::signbit(got) == ((h & 0x8000u) != 0));
      REQUIRE(f.encode(got) == h);
    }
  }
}

}  // namespace

TEST_CASE("every binary16 pattern decodes by the definition and encodes back to itself", "[engine][scalar]") {
  CheckEveryPattern({10, 15, scalar::HalfBitsToFloat, scalar::FloatToHalfBits});
}

TEST_CASE("every bfloat16 pattern decodes by the definition and encodes back to itself", "[engine][scalar]") {
  CheckEveryPattern({7, 127, scalar::BFloat16BitsToFloat, scalar::FloatToBFloat16Bits});
}

TEST_CASE("binary32 to binary16 and bfloat16 rounds to nearest even (200000 random floats)",
          "[engine][scalar]") {
  std::mt19937_64 rng(0x5ca1a7);
  std::uniform_int_distribution<uint32_t> any_bits;
  std::uniform_int_distribution<int> half_exp(-27, 17);  // subnormal halves to overflow
  std::uniform_int_distribution<uint32_t> mantissa(0, 0x7FFFFF);
  for (int k = 0; k < 200000; ++k) {
    float f;
    if (k % 2 == 0) {
      f = FromBits(any_bits(rng));
    } else {
      // Concentrated where binary16 is interesting; every 8th has a tie-shaped mantissa.
      uint32_t m = mantissa(rng);
      if (k % 16 == 1) m = (m & ~0x1FFFu) | 0x1000u;
      const uint32_t e = static_cast<uint32_t>(half_exp(rng) + 127);
      f = FromBits((any_bits(rng) & 0x80000000u) | (e << 23) | m);
    }
    if (std::isnan(f)) continue;
    if (std::isinf(f)) {
      REQUIRE(scalar::FloatToHalfBits(f) == (std::signbit(f) ? 0xFC00 : 0x7C00));
      REQUIRE(scalar::FloatToBFloat16Bits(f) == (std::signbit(f) ? 0xFF80 : 0x7F80));
      continue;
    }
    CheckNearest(f, scalar::FloatToHalfBits(f), 10, 15);
    CheckNearest(f, scalar::FloatToBFloat16Bits(f), 7, 127);
  }
}

TEST_CASE("reduction steps: integers wrap modulo 2^bits, min/max keep the accumulator, division truncates",
          "[engine][scalar]") {
  std::mt19937_64 rng(7);
  for (int k = 0; k < 10000; ++k) {
    const uint64_t a = rng(), b = rng();
    const int32_t a32 = static_cast<int32_t>(a), b32 = static_cast<int32_t>(b);
    // Two's complement wrap: the result's bits are the low 32/64 bits of the exact result.
    CHECK(static_cast<uint32_t>(scalar::Plus<int32_t>(a32, b32)) ==
          static_cast<uint32_t>(static_cast<uint64_t>(static_cast<uint32_t>(a32)) +
                                static_cast<uint32_t>(b32)));
    CHECK(static_cast<uint32_t>(scalar::Times<int32_t>(a32, b32)) ==
          static_cast<uint32_t>(static_cast<uint64_t>(static_cast<uint32_t>(a32)) *
                                static_cast<uint32_t>(b32)));
    CHECK(static_cast<uint64_t>(scalar::Plus<int64_t>(static_cast<int64_t>(a), static_cast<int64_t>(b))) ==
          a + b);
    CHECK(static_cast<uint64_t>(scalar::Times<int64_t>(static_cast<int64_t>(a), static_cast<int64_t>(b))) ==
          a * b);
    CHECK(scalar::Min<int32_t>(a32, b32) == std::min(a32, b32));
    CHECK(scalar::Max<int32_t>(a32, b32) == std::max(a32, b32));
  }
  CHECK(scalar::Plus<int32_t>(std::numeric_limits<int32_t>::max(), 1) == std::numeric_limits<int32_t>::min());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(scalar::Min<float>(nan, 1.0f)));  // a NaN accumulator stays
  CHECK(scalar::Min<float>(1.0f, nan) == 1.0f);      // a NaN value is skipped
  CHECK(std::isnan(scalar::Max<float>(nan, 1.0f)));
  CHECK(scalar::Max<float>(1.0f, nan) == 1.0f);
  CHECK(scalar::Divide<int32_t>(-7, 2) == -3);  // toward zero, as C++ and torch.div(rounding_mode="trunc")
  CHECK(scalar::Divide<int64_t>(7, 2) == 3);
  CHECK(scalar::Divide<float>(1.0f, 3) == 1.0f / 3.0f);
  CHECK(scalar::Divide<double>(-1.0, 4) == -0.25);
}
