#pragma once
// The JSON the trace tools write for an optional field: its value, or null when it has none.

#include <optional>

#include <nlohmann/json.hpp>

namespace shardscope::trace::detail {

template <class T>
nlohmann::json OrNull(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace shardscope::trace::detail
