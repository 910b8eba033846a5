#pragma once
// Enum <-> name tables: one table per enum gives both its printed name and its parser, so the
// two can never drift apart. Lives in the trace library, the bottom layer (like text.hpp);
// header-only.
//
// A table is any range of entries with members `value` (the enum) and `name` (a string_view):
//   constexpr Named<CommKind> kCommKinds[] = {{CommKind::kLocal, "local"}, ...};
//   NameIn(kCommKinds, kind, "local");    ParseIn(kCommKinds, "all_gather");
// An alias (a second name for a value) goes after the canonical entry: NameIn returns the first.

#include <iterator>
#include <optional>
#include <string_view>
#include <type_traits>

namespace shardscope {

/// The plain table entry: a value and its name.
template <class E>
struct Named {
  E value;
  std::string_view name;
};

/// The name of `value` in `table` (the first entry that has it), or `fallback`.
template <class Table, class E>
constexpr std::string_view NameIn(const Table& table, E value, std::string_view fallback) {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return fallback;
}

/// The value named `name` in `table`, or nullopt.
template <class Table>
constexpr auto ParseIn(const Table& table, std::string_view name)
    -> std::optional<std::remove_cvref_t<decltype(std::begin(table)->value)>> {
  for (const auto& entry : table) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

/// The entry of `value` in `table` (the first that has it), or nullptr.
template <class Table, class E>
constexpr const auto* EntryIn(const Table& table, E value) {
  for (const auto& entry : table) {
    if (entry.value == value) return &entry;
  }
  return static_cast<decltype(&*std::begin(table))>(nullptr);
}

}  // namespace shardscope
