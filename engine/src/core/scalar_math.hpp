#pragma once
// Scalar arithmetic of reductions and element conversions, in one place for the host and the
// device: tensor.cpp and view_ops.cpp (local and MPI backends) and the CUDA kernels
// (nccl/cuda_kernels.cu, compiled by nvcc) include this header, so the GPU backends' results are
// bitwise the local backend's by construction, and the host tests exercise the code the kernels
// run. Plain C++17 without the standard library beyond <cstdint>/<cstring>/<type_traits>.

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define SHARDSCOPE_HD __host__ __device__
#else
#define SHARDSCOPE_HD
#endif

namespace shardscope::engine::scalar {

/// The bits of one trivially copyable value as another type of the same size (C++20's
/// std::bit_cast, which nvcc's device code lacks): memcpy, which host compilers and nvcc alike
/// reduce to a register move.
template <typename To, typename From>
SHARDSCOPE_HD inline To BitCast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "BitCast needs two types of one size");
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

SHARDSCOPE_HD inline uint32_t FloatBits(float value) { return BitCast<uint32_t>(value); }
SHARDSCOPE_HD inline float BitsFloat(uint32_t bits) { return BitCast<float>(bits); }

/// fn(T{}) for the index-th type of T, Rest..., or fallback() for an index outside them: the one
/// switch over element types. DType and the CUDA kernels' KernelType number theirs from 0 in one
/// order (f32, f64, f16, bf16, i32, i64), each with its own types for the 16-bit floats. Host code.
template <typename T, typename... Rest, typename Fn, typename Fallback>
decltype(auto) DispatchIndex(int index, Fn&& fn, Fallback&& fallback) {
  if (index == 0) return fn(T{});
  if constexpr (sizeof...(Rest) == 0) {
    return fallback();
  } else {
    return DispatchIndex<Rest...>(index - 1, fn, fallback);
  }
}

/// binary32 -> binary16 bits: round to nearest even, overflow to inf, NaN stays NaN (quiet, the
/// payload's top bits kept).
SHARDSCOPE_HD inline uint16_t FloatToHalfBits(float value) {
  uint32_t x = FloatBits(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  // 65520 is the midpoint between the largest half (65504) and 2^16: it and above round to inf.
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  int32_t exp = static_cast<int32_t>(abs >> 23) - 127 + 15;
  uint32_t mant = abs & 0x7FFFFFu;
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    // Subnormal half: the value in units of 2^-24 is the 24-bit significand shifted right.
    mant |= 0x800000u;
    int shift = 14 - exp;
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1FFFu;
  // A carry out of the mantissa bumps the exponent, which is the correct rounding.
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

/// binary16 bits -> binary32 (exact).
SHARDSCOPE_HD inline float HalfBitsToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1Fu;
  uint32_t mant = bits & 0x3FFu;
  if (exp == 0) {
    float magnitude = static_cast<float>(mant) * 5.9604644775390625e-8f;  // 2^-24, exact
    return sign ? -magnitude : magnitude;
  }
  if (exp == 31) return BitsFloat(sign | 0x7F800000u | (mant << 13));
  return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

/// binary32 -> bfloat16 bits: round to nearest even, NaN stays NaN (quiet).
SHARDSCOPE_HD inline uint16_t FloatToBFloat16Bits(float value) {
  uint32_t x = FloatBits(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

/// bfloat16 bits -> binary32 (exact).
SHARDSCOPE_HD inline float BFloat16BitsToFloat(uint16_t bits) {
  return BitsFloat(static_cast<uint32_t>(bits) << 16);
}

// Reduction steps on accumulator values. Integer sums and products wrap like unsigned
// arithmetic instead of overflowing into undefined behaviour; min and max keep the accumulator
// unless the new value compares strictly less/greater (so a NaN accumulator stays, a NaN value
// is skipped), exactly as the host loops of view_ops.cpp do.
template <class A>
SHARDSCOPE_HD inline A Plus(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <class A>
SHARDSCOPE_HD inline A Times(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <class A>
SHARDSCOPE_HD inline A Min(A acc, A v) {
  return v < acc ? v : acc;
}

template <class A>
SHARDSCOPE_HD inline A Max(A acc, A v) {
  return v > acc ? v : acc;
}

/// The final division of avg and flattened reductions: integers truncate toward zero.
template <class A>
SHARDSCOPE_HD inline A Divide(A acc, int64_t divisor) {
  return static_cast<A>(acc / static_cast<A>(divisor));
}

}  // namespace shardscope::engine::scalar
