// The import verdicts' one name table: every verdict has the name docs/import.md and
// docs/trace-format.md give it, and parsing a name gives the verdict back.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <string_view>

#include "shardscope/trace/import_verdict.hpp"

using shardscope::trace::ImportVerdict;
using shardscope::trace::ImportVerdictName;
using shardscope::trace::ParseImportVerdict;

TEST_CASE("import verdicts: one name each, parsed back", "[trace][import]") {
  const std::pair<ImportVerdict, std::string_view> documented[] = {
      {ImportVerdict::kSame, "same"},
      {ImportVerdict::kDiffers, "differs"},
      {ImportVerdict::kCorruptingMerge, "corrupting_merge"},
      {ImportVerdict::kNotReplayable, "not_replayable"},
      {ImportVerdict::kNotComputed, "not_computed"},
      {ImportVerdict::kOpaque, "opaque"},
  };
  std::set<std::string_view> names;
  for (const auto& [verdict, name] : documented) {
    CHECK(ImportVerdictName(verdict) == name);
    CHECK(ParseImportVerdict(name) == verdict);
    names.insert(ImportVerdictName(verdict));
  }
  CHECK(names.size() == std::size(documented));
  CHECK(std::size(shardscope::trace::kImportVerdicts) == std::size(documented));
  CHECK_FALSE(ParseImportVerdict("Same").has_value());
  CHECK_FALSE(ParseImportVerdict("").has_value());
  CHECK_FALSE(ParseImportVerdict("corrupting merge").has_value());
  static_assert(ImportVerdictName(ImportVerdict::kCorruptingMerge) == "corrupting_merge");
}
