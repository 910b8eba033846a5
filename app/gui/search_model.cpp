#include "search_model.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include "profiler_model.hpp"
#include "shardscope/text.hpp"
#include "shardscope/trace/import_verdict.hpp"

namespace shardscope::app::gui {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Words separated by ' ' and '|' so that a term never matches across two fields.
void Add(std::string& hay, std::string_view word) {
  if (word.empty()) return;
  hay += '|';
  hay += Lower(word);
}

SearchEntry RedistributeEntry(const trace::Model& model, int64_t id) {
  SearchEntry e;
  e.id = id;
  const auto recs = model.RedistributesWithId(id);
  const trace::RedistributeBegin& b = recs.front()->begin;
  e.failed = std::any_of(recs.begin(), recs.end(), [](const auto* r) { return !r->end || !r->end->ok; });
  // A DebugMode import names tensors by its ids (dt$2) or not at all: the op and argument that
  // caused the redistribute say more.
  std::string cause;
  if (b.op_id >= 0) {
    const auto ops = model.OpsWithId(b.op_id);
    if (!ops.empty()) {
      std::string name = ops.front()->op->name();
      if (name.rfind("aten::", 0) == 0) name = name.substr(6);
      cause = name + " arg " + std::to_string(b.op_input);
    }
  }
  const bool opaque_name =
      b.tensor().empty() || b.tensor().rfind("dt$", 0) == 0 || b.tensor().rfind("line ", 0) == 0;
  std::string name = b.tensor().empty() ? "-" : b.tensor();
  if (opaque_name && !cause.empty()) name = cause + " (" + name + ")";
  e.text = "#" + std::to_string(id) + "  " + name + "  " + Join(b.src_placements(), ",") + " -> " +
           Join(b.dst_placements(), ",") + "  " + std::to_string(b.optimized_plan().size()) + " step" +
           (b.optimized_plan().size() == 1 ? "" : "s");
  const std::optional<trace::ImportVerdict> verdict =
      b.imported ? trace::ParseImportVerdict(b.imported->verdict) : std::nullopt;
  if (b.imported && verdict != trace::ImportVerdict::kSame && !b.imported->verdict.empty()) {
    e.verdict = b.imported->verdict;
    const char* mark = verdict == trace::ImportVerdict::kCorruptingMerge ? "!!"
                       : verdict == trace::ImportVerdict::kDiffers       ? "!="
                                                                         : "??";
    // Right after the id, where a narrow list still shows it.
    const std::string head = "#" + std::to_string(id);
    e.text.insert(head.size(), "  " + std::string(mark) + " " + e.verdict);
  }
  std::string& hay = e.haystack;
  if (opaque_name && !cause.empty()) Add(hay, cause);
  for (const auto* r : recs) e.ranks.push_back(r->rank);
  std::sort(e.ranks.begin(), e.ranks.end());
  if (b.imported) {
    const trace::ImportedPlan& imp = *b.imported;
    Add(hay, imp.verdict);
    Add(hay, imp.reason);
    Add(hay, imp.notation);
    Add(hay, "line " + std::to_string(imp.line));
    for (const trace::ImportedCollective& c : imp.collectives) {
      Add(hay, c.kind);
      if (!c.group_name.empty()) Add(hay, "pg " + c.group_name), Add(hay, "group " + c.group_name);
    }
  }
  Add(hay, "#" + std::to_string(id));
  Add(hay, b.tensor());
  Add(hay, Join(b.src_placements(), ","));
  Add(hay, Join(b.dst_placements(), ","));
  for (const std::string& p : b.src_placements()) Add(hay, p);
  for (const std::string& p : b.dst_placements()) Add(hay, p);
  Add(hay, b.dtype());
  for (const trace::PlanStep& s : b.optimized_plan()) Add(hay, s.comm);
  for (const trace::PlanStep& s : b.raw_plan()) Add(hay, s.comm);
  for (const trace::Collective& c : recs.front()->collectives) Add(hay, c.kind());
  hay += '|';
  return e;
}

SearchEntry OpEntry(const trace::Model& model, int64_t id) {
  SearchEntry e;
  e.kind = SearchEntry::Kind::kOp;
  e.id = id;
  const auto recs = model.OpsWithId(id);
  const trace::Op& op = recs.front()->op;
  e.failed = std::any_of(recs.begin(), recs.end(), [](const auto* r) { return !r->op->ok(); });
  std::string ins, outs;
  for (const trace::OpInput& in : op.inputs()) ins += (ins.empty() ? "" : ", ") + in.tensor;
  for (const trace::OpOutput& out : op.outputs()) {
    if (out.requested) outs += (outs.empty() ? "" : ", ") + out.tensor;
  }
  e.text =
      "op " + std::to_string(id) + "  " + op.name() + "(" + ins + ")" + (outs.empty() ? "" : " -> " + outs);
  std::string& hay = e.haystack;
  Add(hay, "op");
  Add(hay, op.name());
  for (const trace::OpInput& in : op.inputs()) {
    Add(hay, in.tensor);
    Add(hay, Join(in.placements, ","));
    Add(hay, Join(in.required, ","));
    for (const std::string& p : in.placements) Add(hay, p);
  }
  for (const trace::OpOutput& out : op.outputs()) {
    Add(hay, out.tensor);
    Add(hay, Join(out.placements, ","));
    for (const std::string& p : out.placements) Add(hay, p);
  }
  for (const trace::Collective& c : recs.front()->collectives) Add(hay, c.kind());
  hay += '|';
  return e;
}

}  // namespace

std::vector<SearchEntry> BuildSearchIndex(const trace::Model& model, size_t limit) {
  std::vector<SearchEntry> out;
  for (int64_t id : model.RedistributeIds()) {
    if (out.size() >= limit) break;
    if (!model.RedistributesWithId(id).empty()) out.push_back(RedistributeEntry(model, id));
  }
  const size_t redistributes = out.size();
  // Ops that carry no sharding decision (a profiler's CPU ops, hundreds of thousands of them,
  // numbered per rank) have nothing here but a name: the profiler view lists them.
  for (int64_t id : model.OpIds()) {
    if (out.size() - redistributes >= limit) break;
    const auto recs = model.OpsWithId(id);
    if (!recs.empty() && !IsPlainOp(recs.front()->op)) out.push_back(OpEntry(model, id));
  }
  return out;
}

namespace {

// A query term "r<N>" names rank N (else "r" would match every placement R): the rank as a number.
std::optional<int64_t> RankTerm(std::string_view term) {
  if (term.size() < 2 || (term[0] != 'r' && term[0] != 'R') || term.size() > 12) return std::nullopt;
  int64_t rank = 0;
  for (char c : term.substr(1)) {
    if (c < '0' || c > '9') return std::nullopt;
    rank = rank * 10 + (c - '0');
  }
  return rank;
}

}  // namespace

bool SearchMatches(const SearchEntry& entry, std::string_view query) {
  size_t i = 0;
  while (i < query.size()) {
    while (i < query.size() && std::isspace(static_cast<unsigned char>(query[i]))) ++i;
    size_t j = i;
    while (j < query.size() && !std::isspace(static_cast<unsigned char>(query[j]))) ++j;
    const std::string_view term = query.substr(i, j - i);
    if (const auto rank = RankTerm(term); rank && !entry.ranks.empty()) {
      if (!std::binary_search(entry.ranks.begin(), entry.ranks.end(), *rank)) return false;
      i = j;
      continue;
    }
    if (j > i && entry.haystack.find(Lower(term)) == std::string::npos) return false;
    i = j;
  }
  return true;
}

std::vector<size_t> Search(const std::vector<SearchEntry>& entries, std::string_view query) {
  std::vector<size_t> out;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (SearchMatches(entries[i], query)) out.push_back(i);
  }
  return out;
}

}  // namespace shardscope::app::gui
