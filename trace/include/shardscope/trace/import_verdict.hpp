#pragma once
// The verdicts of `shardscope import debugmode`: what shardscope made of a redistribute or op that
// another tool recorded (docs/import.md). A closed vocabulary: one enum and one name table, so a
// misspelt verdict does not compile, and the names that traces, JSON and tables print come from
// the table alone. Header-only.

#include <optional>
#include <string_view>

#include "shardscope/names.hpp"

namespace shardscope::trace {

/// Redistributes are kSame, kDiffers, kCorruptingMerge or kNotReplayable; ops are kSame,
/// kDiffers, kNotComputed or kOpaque.
enum class ImportVerdict {
  kSame,             ///< shardscope plans (or places) it as the tool recorded
  kDiffers,          ///< shardscope plans or places it otherwise (the reason shows both)
  kCorruptingMerge,  ///< the recorded plan merges steps that corrupt the data (PyTorch's bug)
  kNotReplayable,    ///< a redistribute shardscope cannot plan or run (the reason says why)
  kNotComputed,      ///< an op shardscope could not propagate or run
  kOpaque,           ///< an op that is not one of shardscope's
};

inline constexpr Named<ImportVerdict> kImportVerdicts[] = {
    {ImportVerdict::kSame, "same"},
    {ImportVerdict::kDiffers, "differs"},
    {ImportVerdict::kCorruptingMerge, "corrupting_merge"},
    {ImportVerdict::kNotReplayable, "not_replayable"},
    {ImportVerdict::kNotComputed, "not_computed"},
    {ImportVerdict::kOpaque, "opaque"},
};

/// "same", "differs", "corrupting_merge", "not_replayable", "not_computed" or "opaque".
constexpr std::string_view ImportVerdictName(ImportVerdict verdict) {
  return NameIn(kImportVerdicts, verdict, "?");
}

/// The verdict named `name` (e.g. a trace's ImportedPlan::verdict), or nullopt for other text.
constexpr std::optional<ImportVerdict> ParseImportVerdict(std::string_view name) {
  return ParseIn(kImportVerdicts, name);
}

}  // namespace shardscope::trace
