// The check's words: the mismatch class names and the text and JSON reports of a CheckResult
// (docs/trace-tools.md).
#include <algorithm>
#include <string>

#include "collective_match.hpp"
#include "json_null.hpp"
#include "shardscope/names.hpp"
#include "shardscope/printable.hpp"
#include "shardscope/trace/check.hpp"

namespace shardscope::trace {

using detail::RanksPhrase;
using nlohmann::json;

std::string_view MismatchClassName(MismatchClass c) {
  static constexpr Named<MismatchClass> kNames[] = {
      {MismatchClass::kMissingRankFile, "missing_rank_file"},
      {MismatchClass::kMissingRanks, "missing_ranks"},
      {MismatchClass::kCollectiveType, "collective_type"},
      {MismatchClass::kCollectiveSequence, "collective_sequence"},
      {MismatchClass::kDtype, "dtype"},
      {MismatchClass::kSizeOrSyntax, "size_or_syntax"},
      {MismatchClass::kAllToAllTotal, "all_to_all_total"},
      {MismatchClass::kRedistribute, "redistribute"},
      {MismatchClass::kState, "state"},
      {MismatchClass::kShape, "shape"},
      {MismatchClass::kChecksum, "checksum"},
      {MismatchClass::kOp, "op"},
  };
  return NameIn(kNames, c, "?");
}

std::string FormatCheckText(const CheckResult& result, int64_t max_reports) {
  std::string out;
  const auto total = static_cast<int64_t>(result.mismatches.size());
  const int64_t shown = std::min(total, std::max<int64_t>(max_reports, 0));
  for (int64_t i = 0; i < shown; ++i) {
    const Mismatch& m = result.mismatches[static_cast<size_t>(i)];
    out += std::string(MismatchClassName(m.kind)) + ": " + m.message;
    if (!m.culprits.empty()) out += " [culprit: " + RanksPhrase(m.culprits) + "]";
    out += "\n";
  }
  for (const std::string& note : result.notes) out += "note: " + Printable(note) + "\n";
  std::string counts = std::to_string(result.ranks) + " of " + std::to_string(result.world) +
                       " rank files, " + std::to_string(result.groups) + " groups, " +
                       std::to_string(result.collectives) + " collective calls paired, " +
                       std::to_string(result.redistributes) + " redistributes";
  if (result.ops > 0) counts += ", " + std::to_string(result.ops) + " ops";
  if (result.undecided > 0) counts += ", " + std::to_string(result.undecided) + " all_to_all undecided";
  if (total > 0 && !result.mismatches.front().process_group.empty()) {
    const Mismatch& first = result.mismatches.front();
    out += "first divergence: process group " + first.process_group +
           (first.seq_id ? " seq " + std::to_string(*first.seq_id) : std::string()) +
           (first.culprits.empty() ? std::string() : ", culprit " + RanksPhrase(first.culprits)) + "\n";
  }
  if (total == 0) {
    out += "clean: " + counts + "\n";
  } else {
    out += std::to_string(total) + " mismatch" + (total == 1 ? "" : "es");
    if (shown < total)
      out += " (" + std::to_string(shown) + " shown, --max-reports " + std::to_string(max_reports) + ")";
    out += ": " + counts + "\n";
  }
  return out;
}

json CheckJson(const CheckResult& result, int64_t max_reports) {
  json j;
  j["clean"] = result.Clean();
  j["mismatch_count"] = result.mismatches.size();
  j["ranks"] = result.ranks;
  j["world"] = result.world;
  j["groups"] = result.groups;
  j["collectives"] = result.collectives;
  j["redistributes"] = result.redistributes;
  j["ops"] = result.ops;
  j["undecided"] = result.undecided;
  j["notes"] = result.notes;
  json list = json::array();
  for (size_t i = 0; i < result.mismatches.size() && static_cast<int64_t>(i) < max_reports; ++i) {
    const Mismatch& m = result.mismatches[i];
    json e;
    e["class"] = std::string(MismatchClassName(m.kind));
    e["culprits"] = m.culprits;
    e["redistribute_id"] = detail::OrNull(m.redistribute_id);
    e["op_id"] = detail::OrNull(m.op_id);
    e["step"] = detail::OrNull(m.step);
    e["group"] = m.group;
    e["call"] = detail::OrNull(m.call);
    e["process_group"] = m.process_group.empty() ? json() : json(m.process_group);
    e["seq_id"] = detail::OrNull(m.seq_id);
    e["message"] = m.message;
    list.push_back(std::move(e));
  }
  j["mismatches"] = list;
  return j;
}

}  // namespace shardscope::trace
