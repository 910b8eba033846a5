#pragma once
// DispatchDType: the element type of a DType as a template argument, for the engine's kernels.

#include <cstdint>

#include "core/scalar_math.hpp"
#include "shardscope/engine/core/tensor.hpp"

namespace shardscope::engine {

static_assert(static_cast<int>(DType::kF32) == 0 && static_cast<int>(DType::kF64) == 1 &&
                  static_cast<int>(DType::kF16) == 2 && static_cast<int>(DType::kBF16) == 3 &&
                  static_cast<int>(DType::kI32) == 4 && static_cast<int>(DType::kI64) == 5,
              "DispatchDType lists the element types in DType's order");

/// Calls `fn(T{})` with the C++ element type of `dtype` (float, double, Half, BFloat16, int32_t,
/// int64_t). One switch per call: kernels are templates over T, never per-element virtual calls.
template <class Fn>
decltype(auto) DispatchDType(DType dtype, Fn&& fn) {
  return scalar::DispatchIndex<float, double, Half, BFloat16, int32_t, int64_t>(static_cast<int>(dtype), fn,
                                                                                [&] { return fn(float{}); });
}

}  // namespace shardscope::engine
