#pragma once
// Internals of the DebugMode reader shared by its source files.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/program/debugmode.hpp"

namespace shardscope::program::detail {

std::string_view Trim(std::string_view s);
/// Strips one pair of surrounding quotes ('x' or "x") and spaces.
std::string_view Unquote(std::string_view s);
/// A whole (optionally quoted) integer.
bool ParseInt64(std::string_view s, int64_t& out);
/// Splits at `sep` outside (), [], {} and quotes; parts are trimmed; "" gives no parts.
std::vector<std::string_view> SplitTopLevel(std::string_view text, char sep);
/// Position of `needle` outside brackets and quotes, npos when absent.
size_t FindTopLevel(std::string_view text, std::string_view needle);

/// "NAME(ARGS)" where the argument list closes at the end of the text.
struct Call {
  std::string_view name;
  std::string_view args;
};
std::optional<Call> SplitCall(std::string_view text);

/// PyTorch's concatenated placement text with "[k]" where an order is non-trivial.
std::string ConcatText(const engine::Placements& placements, const std::optional<engine::ShardOrder>& order);

}  // namespace shardscope::program::detail
