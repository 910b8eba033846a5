#include "shardscope/trace/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>

#include "collective_match.hpp"
#include "json_null.hpp"
#include "ordered_pieces.hpp"
#include "shardscope/printable.hpp"
#include "shardscope/text.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

// "[a, b]".
void AppendStrs(std::string& out, const std::vector<std::string>& v) {
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i != 0) out += ", ";
    out += v[i];
  }
  out += ']';
}

// "[1, 2]", as detail::FormatInts writes it.
void AppendInts(std::string& out, const std::vector<int64_t>& v) {
  out += '[';
  AppendJoinedInts(out, v, ", ");
  out += ']';
}

// "1, 2": a rank list.
void AppendRanks(std::string& out, const std::vector<int64_t>& ranks) { AppendJoinedInts(out, ranks, ", "); }

// "S(0)R": placements concatenated, as PlacementsText.
void AppendPlacements(std::string& out, const std::vector<std::string>& placements) {
  for (const std::string& p : placements) out += p;
}

void AppendBytes(std::string& out, int64_t n) {
  if (n < 1024) {
    AppendInt(out, n);
    out += " B";
  } else if (n < (int64_t{1} << 20)) {
    AppendFixed(out, n / 1024.0, 2);
    out += " KiB";
  } else if (n < (int64_t{1} << 30)) {
    AppendFixed(out, n / 1048576.0, 2);
    out += " MiB";
  } else {
    AppendFixed(out, n / 1073741824.0, 2);
    out += " GiB";
  }
}

void AppendMicros(std::string& out, int64_t ns) {
  AppendFixed(out, ns / 1000.0, 2);
  out += " us";
}

using CollectiveKey = std::tuple<int64_t, std::string, std::vector<int64_t>, bool>;

void AddCollectiveSummary(std::vector<CollectiveSummary>& out, std::map<CollectiveKey, size_t>& index,
                          const Collective& c);

RedistributeSummary SummarizeOne(int64_t id, const std::vector<const RedistributeRecord*>& recs) {
  RedistributeSummary s;
  const RedistributeBegin& b = recs.front()->begin;
  s.id = id;
  s.tensor = b.tensor();
  s.dtype = b.dtype();
  s.planner = b.planner();
  s.planner_reason = b.planner_reason();
  s.notation = b.notation();
  s.imported = b.imported;
  s.global_shape = b.global_shape();
  s.src_placements = b.src_placements();
  s.dst_placements = b.dst_placements();
  s.predicted_us = b.cost_us();
  s.plan_steps = static_cast<int64_t>(b.optimized_plan().size());
  s.raw_plan_steps = static_cast<int64_t>(b.raw_plan().size());
  s.skipped_merges = static_cast<int64_t>(b.skipped_merges().size());
  s.op_id = b.op_id;
  s.op_input = b.op_input;

  std::map<CollectiveKey, size_t> index;
  for (const RedistributeRecord* rec : recs) {
    if (!rec->end) {
      s.ranks_incomplete.push_back(rec->rank);
    } else {
      if (rec->end->ok)
        s.ranks_ok.push_back(rec->rank);
      else
        s.ranks_failed.emplace_back(rec->rank, rec->end->error);
      int64_t ns = rec->end->t_ns - rec->begin->t_ns;
      if (!s.min_ns || ns < *s.min_ns) s.min_ns = ns;
      if (!s.max_ns || ns > *s.max_ns) {
        s.max_ns = ns;
        s.max_rank = rec->rank;
      }
    }
    for (const Collective& c : rec->collectives) AddCollectiveSummary(s.collectives, index, c);
    RankLayout layout;
    layout.rank = rec->rank;
    const StepRecord* first = nullptr;
    const StepRecord* last_ended = nullptr;
    for (const StepRecord& st : rec->steps) {
      if (!first || st.begin->step < first->begin->step) first = &st;
      if (st.end && (!last_ended || st.begin->step > last_ended->begin->step)) last_ended = &st;
    }
    if (first) {
      layout.shape_before = first->begin->local_shape_before;
      layout.offset_before = first->begin->global_offset_before;
    }
    if (last_ended) {
      layout.shape_after = last_ended->end->local_shape_after;
      layout.offset_after = last_ended->end->global_offset_after;
    }
    s.layouts.push_back(std::move(layout));
  }
  std::stable_sort(s.collectives.begin(), s.collectives.end(),
                   [](const CollectiveSummary& x, const CollectiveSummary& y) { return x.step < y.step; });
  return s;
}

// "[2, 3] @ [0, 0]": a shard's local shape and global offset, "?" when unknown.
void AppendLayout(std::string& out, const std::optional<std::vector<int64_t>>& shape,
                  const std::optional<std::vector<int64_t>>& offset) {
  if (!shape || !offset) {
    out += '?';
    return;
  }
  AppendInts(out, *shape);
  out += " @ ";
  AppendInts(out, *offset);
}

// What every rank must agree on about one op: name, args, chosen strategy and its outputs'
// placements and global shapes (local shapes legitimately differ across ranks).
std::string OpSignatureText(const Op& op) {
  std::string out = OpCallText(op) + " chosen " + std::to_string(op.chosen());
  for (const OpOutput& o : op.outputs()) {
    if (o.requested)
      out += " " + (o.tensor.empty() ? std::string("-") : Printable(o.tensor)) + " " +
             detail::FormatInts(o.global_shape);
  }
  return out;
}

// The view of one rank that differs from the reference, for show: its outputs with global shapes.
std::string OpOutputsText(const Op& op) {
  return "chosen " + std::to_string(op.chosen()) + ", outputs " + detail::OpOutputsText(op);
}

void AppendCost(std::string& out, double us) {
  if (std::isinf(us)) {
    out += "inf";
    return;
  }
  AppendFixed(out, us, 2);
  out += " us";
}

json CostJson(double us) { return std::isfinite(us) ? json(us) : json(nullptr); }

void AddCollectiveSummary(std::vector<CollectiveSummary>& out, std::map<CollectiveKey, size_t>& index,
                          const Collective& c) {
  // A record has a few distinct keys, found by a scan without copying the key; `index` serves
  // records with many (built on the first call past kScanned).
  constexpr size_t kScanned = 16;
  size_t at = 0;
  if (out.size() <= kScanned) {
    while (at < out.size() && !(out[at].step == c.step() && out[at].negotiated == c.negotiated() &&
                                c.kind() == out[at].kind && c.mesh_dims() == out[at].mesh_dims))
      ++at;
  } else {
    if (index.empty()) {
      for (size_t i = 0; i < out.size(); ++i)
        index.try_emplace({out[i].step, out[i].kind, out[i].mesh_dims, out[i].negotiated}, i);
    }
    at = index.try_emplace({c.step(), c.kind(), c.mesh_dims(), c.negotiated()}, out.size()).first->second;
  }
  if (at == out.size()) out.push_back({c.step(), c.kind(), c.mesh_dims(), c.negotiated(), 0, 0, 0});
  CollectiveSummary& cs = out[at];
  ++cs.calls;
  cs.bytes_sent = detail::SaturatingAdd(cs.bytes_sent, detail::SumBytes(c.bytes_sent()));
  cs.bytes_recv = detail::SaturatingAdd(cs.bytes_recv, detail::SumBytes(c.bytes_recv()));
}

// "step 0  all_gather  mesh dims [1]  x8  sent 3.12 KiB  recv 3.12 KiB" (no step for an op's).
void AppendCollectiveLine(std::string& out, const CollectiveSummary& c, bool with_step) {
  if (with_step) {
    out += "step ";
    AppendInt(out, c.step);
    out += "  ";
  }
  out += c.kind;
  if (c.negotiated) out += " (negotiated)";
  out += "  mesh dims ";
  AppendInts(out, c.mesh_dims);
  out += "  x";
  AppendInt(out, c.calls);
  out += "  sent ";
  AppendBytes(out, c.bytes_sent);
  out += "  recv ";
  AppendBytes(out, c.bytes_recv);
}

// OpCallText appended to `out`.
void AppendOpCall(std::string& out, const Op& op) {
  out += op.name();
  out += '(';
  for (size_t i = 0; i < op.inputs().size(); ++i) {
    const OpInput& in = op.inputs()[i];
    if (i != 0) out += ", ";
    if (in.tensor.empty() && in.placements.empty()) {  // an absent optional input
      out += '-';
      continue;
    }
    AppendPrintable(out, in.tensor);
    out += ": ";
    AppendPlacements(out, in.placements);
    if (in.required != in.placements) {
      out += "->";
      AppendPlacements(out, in.required);
    }
  }
  if (!op.args().empty()) {
    if (!op.inputs().empty()) out += ", ";
    AppendPrintable(out, op.args());
  }
  out += ") -> ";
  if (op.outputs().size() != 1) out += '(';
  for (size_t i = 0; i < op.outputs().size(); ++i) {
    const OpOutput& o = op.outputs()[i];
    if (i != 0) out += ", ";
    if (!o.requested) {
      out += '-';
      continue;
    }
    AppendPrintable(out, o.tensor);
    out += ": ";
    AppendPlacements(out, o.placements);
  }
  if (op.outputs().size() != 1) out += ')';
}

// True when OpSignatureText(a) == OpSignatureText(b) because every field it prints is equal (the
// texts of ops that differ in a field may still be equal: compare them then).
bool SameSignatureFields(const Op& a, const Op& b) {
  if (a.name() != b.name() || a.args() != b.args() || a.chosen() != b.chosen() ||
      !(a.inputs() == b.inputs()) || a.outputs().size() != b.outputs().size())
    return false;
  for (size_t i = 0; i < a.outputs().size(); ++i) {
    const OpOutput& x = a.outputs()[i];
    const OpOutput& y = b.outputs()[i];
    if (x.requested != y.requested || x.tensor != y.tensor || !(x.placements == y.placements) ||
        !(x.global_shape == y.global_shape))
      return false;
  }
  return true;
}

OpSummary SummarizeOp(const Model& model, int64_t id) {
  OpSummary s;
  s.id = id;
  std::vector<const OpRecord*> recs = model.OpsWithId(id);
  s.reference = recs.front();
  std::optional<std::string> reference;  // the reference's signature text, made when first needed
  std::map<CollectiveKey, size_t> index;
  for (const OpRecord* rec : recs) {
    s.ranks.push_back(rec->rank);
    if (!rec->op->ok()) s.ranks_failed.emplace_back(rec->rank, rec->op->error());
    if (rec != s.reference && !SameSignatureFields(rec->op, s.reference->op)) {
      if (!reference) reference = OpSignatureText(s.reference->op);
      if (OpSignatureText(rec->op) != *reference)
        s.ranks_differing.emplace_back(rec->rank, OpOutputsText(rec->op));
    }
    for (const Collective& c : rec->collectives) AddCollectiveSummary(s.collectives, index, c);
  }
  for (const RankTrace& rt : model.ranks) {
    if (std::find(s.ranks.begin(), s.ranks.end(), rt.header.rank) == s.ranks.end())
      s.ranks_missing.push_back(rt.header.rank);
  }
  return s;
}

}  // namespace

std::string PlacementsText(const std::vector<std::string>& placements) {
  return detail::ConcatPlacements(placements);
}

std::string OpCallText(const Op& op) {
  std::string out;
  AppendOpCall(out, op);
  return out;
}

std::vector<OpSummary> SummarizeOps(const Model& model) {
  std::vector<OpSummary> out;
  for (int64_t id : model.OpIds()) out.push_back(SummarizeOp(model, id));
  return out;
}

std::vector<RedistributeSummary> Summarize(const Model& model) {
  std::vector<RedistributeSummary> out;
  for (int64_t id : model.RedistributeIds()) out.push_back(SummarizeOne(id, model.RedistributesWithId(id)));
  return out;
}

namespace {

// "  FAILED on rank R: error", a line per failed rank.
void AppendFailed(std::string& out, const std::vector<std::pair<int64_t, std::string>>& failed) {
  for (const auto& [rank, error] : failed) {
    out += "  FAILED on rank ";
    AppendInt(out, rank);
    out += ": ";
    AppendPrintable(out, error);
    out += '\n';
  }
}

// The trace line (world, ranks, mesh, backend, format) and the diagnostics.
std::string ShowHeaderText(const Model& model) {
  std::string out;
  if (!model.ranks.empty()) {
    const Header& h = model.ranks.front().header;
    out += "trace: world " + std::to_string(model.world) + ", " + std::to_string(model.ranks.size()) +
           " rank file(s), mesh " + detail::FormatInts(h.mesh_shape);
    bool named = std::any_of(h.mesh_dim_names.begin(), h.mesh_dim_names.end(),
                             [](const std::string& n) { return !n.empty(); });
    if (named) {
      out += ' ';
      AppendStrs(out, h.mesh_dim_names);
    }
    out += ", backend " + h.backend + ", format v" + std::to_string(h.version) + "\n";
  }
  if (!model.diagnostics.empty()) {
    out += "diagnostics:\n";
    for (const Diagnostic& d : model.diagnostics) {
      out += "  " + (d.file.empty() ? std::string("trace") : d.file) +
             (d.line > 0 ? ":" + std::to_string(d.line) : std::string()) + ": " + d.message + "\n";
    }
  }
  return out;
}

void AppendOpText(std::string& out, const Model& model, const OpSummary& s) {
  const Op& op = s.reference->op;
  out += "op #";
  AppendInt(out, s.id);
  out += ' ';
  AppendOpCall(out, op);
  out += "  [chosen ";
  AppendInt(out, op.chosen());
  out += '/';
  AppendInt(out, op.candidates().size());
  if (op.chosen() >= 0 && op.chosen() < static_cast<int64_t>(op.candidates().size())) {
    out += ", cost ";
    AppendCost(out, op.candidates()[static_cast<size_t>(op.chosen())].cost_us);
  }
  if (!op.rule().empty()) {
    out += ", rule ";
    AppendPrintable(out, op.rule());
  }
  out += "]\n";
  for (int64_t rid : s.reference->redistribute_ids) {
    const RedistributeRecord* rec = model.FindRedistribute(s.reference->rank, rid);
    if (rec == nullptr) continue;
    const RedistributeBegin& b = rec->begin;
    out += "  redistribute ";
    AppendInt(out, rid);
    out += ": ";
    if (b.tensor().empty())
      out += "<unnamed>";
    else
      AppendPrintable(out, b.tensor());
    out += "  ";
    AppendPlacements(out, b.src_placements());
    out += " -> ";
    AppendPlacements(out, b.dst_placements());
    out += "  ";
    out += b.notation();
    out += '\n';
  }
  for (const CollectiveSummary& c : s.collectives) {
    out += "  ";
    AppendCollectiveLine(out, c, false);
    out += '\n';
  }
  if (!op.note().empty()) {
    out += "  note: ";
    AppendPrintable(out, op.note());
    out += '\n';
  }
  AppendFailed(out, s.ranks_failed);
  for (const auto& [rank, text] : s.ranks_differing) {
    out += "  differs on rank ";
    AppendInt(out, rank);
    out += ": ";
    out += text;
    out += '\n';
  }
  if (!s.ranks_missing.empty()) {
    out += "  missing on rank(s) ";
    AppendRanks(out, s.ranks_missing);
    out += '\n';
  }
}

void AppendRedistributeText(std::string& out, const Model& model, const RedistributeSummary& s) {
  out += "\nredistribute ";
  AppendInt(out, s.id);
  out += ": ";
  if (s.tensor.empty())
    out += "<unnamed>";
  else
    AppendPrintable(out, s.tensor);
  out += ' ';
  out += s.dtype;
  out += ' ';
  AppendInts(out, s.global_shape);
  out += "  ";
  AppendStrs(out, s.src_placements);
  out += " -> ";
  AppendStrs(out, s.dst_placements);
  out += '\n';
  if (s.op_id >= 0) {
    const std::vector<const OpRecord*> ops = model.OpsWithId(s.op_id);
    out += "  op: #";
    AppendInt(out, s.op_id);
    if (!ops.empty()) {
      out += ' ';
      out += ops.front()->op->name();
    }
    out += " input ";
    AppendInt(out, s.op_input);
    out += '\n';
  }
  out += "  notation: ";
  out += s.notation;
  out += '\n';
  if (s.imported) {
    out += "  ";
    out += s.imported->source;
    out += " (line ";
    AppendInt(out, s.imported->line);
    out += "): ";
    out +=
        s.imported->notation.empty() ? std::string_view("no notation recorded") : s.imported->notation.view();
    out += ", ";
    out += s.imported->verdict;
    if (!s.imported->reason.empty()) {
      out += ": ";
      out += s.imported->reason;
    }
    out += '\n';
  }
  out += "  plan: ";
  out += s.planner;
  if (!s.planner_reason.empty()) {
    out += " (";
    AppendPrintable(out, s.planner_reason);
    out += ')';
  }
  out += ", ";
  AppendInt(out, s.plan_steps);
  out += " step(s) (raw ";
  AppendInt(out, s.raw_plan_steps);
  out += "), ";
  AppendInt(out, s.skipped_merges);
  out += " skipped merge(s), predicted ";
  AppendFixed(out, s.predicted_us, 2);
  out += " us\n";
  out += "  time: ";
  if (s.max_ns) {
    out += "max ";
    AppendMicros(out, *s.max_ns);
    out += " (rank ";
    AppendInt(out, s.max_rank);
    out += "), min ";
    AppendMicros(out, *s.min_ns);
  } else {
    out += '-';
  }
  out += "; ok on ";
  AppendInt(out, s.ranks_ok.size());
  out += " of ";
  AppendInt(out, s.ranks_ok.size() + s.ranks_failed.size() + s.ranks_incomplete.size());
  out += " rank(s)\n";
  AppendFailed(out, s.ranks_failed);
  if (!s.ranks_incomplete.empty()) {
    out += "  incomplete on rank(s) ";
    AppendRanks(out, s.ranks_incomplete);
    out += '\n';
  }
  if (s.collectives.empty()) {
    out += "  collectives: none\n";
  } else {
    out += "  collectives:\n";
    for (const CollectiveSummary& c : s.collectives) {
      out += "    ";
      AppendCollectiveLine(out, c, true);
      out += '\n';
    }
  }
  out += "  layouts (local shape @ global offset, before -> after):\n";
  for (const RankLayout& l : s.layouts) {
    out += "    rank ";
    AppendInt(out, l.rank);
    out += ": ";
    AppendLayout(out, l.shape_before, l.offset_before);
    out += " -> ";
    AppendLayout(out, l.shape_after, l.offset_after);
    out += '\n';
  }
}

// Ids per piece of show's text: about a megabyte each (an op's block is some 250 bytes, a
// redistribute's on 8 ranks some 1,300), large enough that handing pieces over costs nothing.
constexpr size_t kOpsPerPiece = 4096;
constexpr size_t kRedistributesPerPiece = 1024;

}  // namespace

void WriteShowText(const Model& model, const std::function<void(std::string_view)>& write, unsigned threads) {
  std::string head = ShowHeaderText(model);
  if (HasFlightRecords(model)) head += FormatFlightText(model);
  const std::vector<int64_t> op_ids = model.OpIds();
  if (!op_ids.empty()) {
    head += "\nprogram: ";
    AppendInt(head, op_ids.size());
    head += " op(s)\n";
  }
  write(head);
  head = std::string();
  const std::vector<int64_t> redistribute_ids = model.RedistributeIds();
  const size_t op_pieces = (op_ids.size() + kOpsPerPiece - 1) / kOpsPerPiece;
  const size_t pieces =
      op_pieces + (redistribute_ids.size() + kRedistributesPerPiece - 1) / kRedistributesPerPiece;
  // An op's or a redistribute's block depends on nothing printed before it (each is summarized
  // on its own), so the pieces can be made in any order and concatenated in id order.
  auto make = [&](size_t piece) {
    std::string out;
    if (piece < op_pieces) {
      const size_t end = std::min(op_ids.size(), (piece + 1) * kOpsPerPiece);
      for (size_t i = piece * kOpsPerPiece; i < end; ++i)
        AppendOpText(out, model, SummarizeOp(model, op_ids[i]));
    } else {
      const size_t first = (piece - op_pieces) * kRedistributesPerPiece;
      const size_t end = std::min(redistribute_ids.size(), first + kRedistributesPerPiece);
      for (size_t i = first; i < end; ++i) {
        const int64_t id = redistribute_ids[i];
        AppendRedistributeText(out, model, SummarizeOne(id, model.RedistributesWithId(id)));
      }
    }
    return out;
  };
  detail::MakeInOrder(pieces, threads, make, [&](const std::string& piece) { write(piece); });
}

std::string FormatShowText(const Model& model) {
  std::string out;
  WriteShowText(model, [&out](std::string_view piece) { out += piece; });
  return out;
}

namespace {

// [{"rank": r, "error": text}, ...]: the ranks a redistribute or op failed on.
template <class RankErrors>
json RankErrorsJson(const RankErrors& errors) {
  json failed = json::array();
  for (const auto& [rank, error] : errors) failed.push_back({{"rank", rank}, {"error", error}});
  return failed;
}

// The collectives of a redistribute (with their plan step and whether they negotiated shapes) or
// of an op, as AppendCollectiveLine prints them.
json CollectivesJson(const std::vector<CollectiveSummary>& collectives, bool redistribute) {
  json out = json::array();
  for (const CollectiveSummary& c : collectives) {
    json e = {{"kind", c.kind},
              {"mesh_dims", c.mesh_dims},
              {"calls", c.calls},
              {"bytes_sent", c.bytes_sent},
              {"bytes_recv", c.bytes_recv}};
    if (redistribute) {
      e["step"] = c.step;
      e["negotiated"] = c.negotiated;
    }
    out.push_back(std::move(e));
  }
  return out;
}

json RedistributeJson(const RedistributeSummary& s) {
  json colls = CollectivesJson(s.collectives, true);
  json layouts = json::array();
  for (const RankLayout& l : s.layouts) {
    layouts.push_back({{"rank", l.rank},
                       {"local_shape_before", detail::OrNull(l.shape_before)},
                       {"global_offset_before", detail::OrNull(l.offset_before)},
                       {"local_shape_after", detail::OrNull(l.shape_after)},
                       {"global_offset_after", detail::OrNull(l.offset_after)}});
  }
  return json{{"id", s.id},
              {"tensor", s.tensor},
              {"dtype", s.dtype},
              {"global_shape", s.global_shape},
              {"src_placements", s.src_placements},
              {"dst_placements", s.dst_placements},
              {"planner", s.planner},
              {"planner_reason", s.planner_reason},
              {"notation", s.notation},
              {"imported", s.imported ? json{{"source", s.imported->source},
                                             {"line", s.imported->line},
                                             {"notation", s.imported->notation},
                                             {"verdict", s.imported->verdict},
                                             {"reason", s.imported->reason}}
                                      : json(nullptr)},
              {"op_id", s.op_id >= 0 ? json(s.op_id) : json(nullptr)},
              {"op_input", s.op_id >= 0 ? json(s.op_input) : json(nullptr)},
              {"predicted_cost_us", s.predicted_us},
              {"plan_steps", s.plan_steps},
              {"raw_plan_steps", s.raw_plan_steps},
              {"skipped_merges", s.skipped_merges},
              {"ranks_ok", s.ranks_ok},
              {"ranks_failed", RankErrorsJson(s.ranks_failed)},
              {"ranks_incomplete", s.ranks_incomplete},
              {"min_ns", detail::OrNull(s.min_ns)},
              {"max_ns", detail::OrNull(s.max_ns)},
              {"max_rank", s.max_ns ? json(s.max_rank) : json(nullptr)},
              {"collectives", std::move(colls)},
              {"layouts", std::move(layouts)}};
}

json OpJson(const OpSummary& s) {
  const Op& op = s.reference->op;
  json inputs = json::array();
  for (const OpInput& in : op.inputs()) {
    inputs.push_back({{"tensor", in.tensor},
                      {"placements", in.placements},
                      {"required", in.required},
                      {"redistribute_id", in.redistribute_id}});
  }
  json outputs = json::array();
  for (const OpOutput& o : op.outputs()) {
    outputs.push_back({{"tensor", o.tensor},
                       {"requested", o.requested},
                       {"placements", o.placements},
                       {"global_shape", o.global_shape}});
  }
  json colls = CollectivesJson(s.collectives, false);
  bool has_chosen = op.chosen() >= 0 && op.chosen() < static_cast<int64_t>(op.candidates().size());
  json differing = json::array();
  for (const auto& [rank, text] : s.ranks_differing) differing.push_back({{"rank", rank}, {"view", text}});
  return json{
      {"id", s.id},
      {"step", op.step},
      {"name", op.name()},
      {"args", op.args()},
      {"call", OpCallText(op)},
      {"inputs", std::move(inputs)},
      {"outputs", std::move(outputs)},
      {"candidates", op.candidates().size()},
      {"chosen", op.chosen()},
      {"chosen_cost_us",
       has_chosen ? CostJson(op.candidates()[static_cast<size_t>(op.chosen())].cost_us) : json(nullptr)},
      {"rule", op.rule()},
      {"note", op.note()},
      {"redistributes", s.reference->redistribute_ids.ToVector()},
      {"collectives", std::move(colls)},
      {"ranks", s.ranks},
      {"ranks_missing", s.ranks_missing},
      {"ranks_failed", RankErrorsJson(s.ranks_failed)},
      {"ranks_differing", std::move(differing)}};
}

// Every member of show's JSON but the two that grow with the trace, "redistributes" and "ops".
json ShowJsonHead(const Model& model) {
  json out;
  out["world"] = model.world;
  json ranks = json::array();
  for (const RankTrace& r : model.ranks) {
    ranks.push_back({{"rank", r.header.rank},
                     {"file", r.file},
                     {"version", r.header.version},
                     {"backend", r.header.backend},
                     {"host", r.header.host},
                     {"events", r.events.size()}});
  }
  out["ranks"] = std::move(ranks);
  if (!model.ranks.empty()) {
    out["mesh_shape"] = model.ranks.front().header.mesh_shape;
    out["mesh_dim_names"] = model.ranks.front().header.mesh_dim_names;
  }
  json diags = json::array();
  for (const Diagnostic& d : model.diagnostics) {
    diags.push_back({{"file", d.file}, {"line", d.line}, {"message", d.message}});
  }
  out["diagnostics"] = std::move(diags);
  if (HasFlightRecords(model)) out["flight"] = FlightJson(model);
  return out;
}

// What --json prints of `j` (app's DumpJson): nlohmann's dump, indent 2, bytes that are not UTF-8 replaced.
std::string JsonText(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

// `text` with `indent` spaces after each newline: a value's dump as it reads nested that deep (a
// dump's newlines are all its own; those of strings are escaped).
void AppendIndented(std::string& out, std::string_view text, size_t indent) {
  for (size_t at = 0; at < text.size();) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) {
      out.append(text.substr(at));
      break;
    }
    out.append(text.substr(at, nl + 1 - at));
    out.append(indent, ' ');
    at = nl + 1;
  }
}

// Elements of "ops" and "redistributes" per piece of WriteShowJson's text.
constexpr size_t kJsonOpsPerPiece = 1024;
constexpr size_t kJsonRedistributesPerPiece = 256;

}  // namespace

json ShowJson(const Model& model) {
  json out = ShowJsonHead(model);
  json reds = json::array();
  for (const RedistributeSummary& s : Summarize(model)) reds.push_back(RedistributeJson(s));
  out["redistributes"] = std::move(reds);
  json ops = json::array();
  for (const OpSummary& s : SummarizeOps(model)) ops.push_back(OpJson(s));
  out["ops"] = std::move(ops);
  return out;
}

void WriteShowJson(const Model& model, const std::function<void(std::string_view)>& write, unsigned threads) {
  const std::vector<int64_t> op_ids = model.OpIds();
  const std::vector<int64_t> redistribute_ids = model.RedistributeIds();
  json head = ShowJsonHead(model);
  head["ops"] = json::array();  // placeholders that put the two in their place among the members
  head["redistributes"] = json::array();
  // nlohmann's layout of an object at the top (dump with indent 2): "{\n", the members each on a
  // line indented by 2 as `"key": value`, separated by ",\n", then "\n}"; an array member's
  // elements each on a line indented by 4, separated by ",\n", then "\n  ]" ("[]" when empty).
  std::string text = "{\n";
  bool first = true;
  for (const auto& [key, value] : head.items()) {
    text += first ? "  " : ",\n  ";
    first = false;
    text += JsonText(key);
    text += ": ";
    const bool is_ops = key == "ops";
    if (!is_ops && key != "redistributes") {
      AppendIndented(text, JsonText(value), 2);
      continue;
    }
    const size_t count = is_ops ? op_ids.size() : redistribute_ids.size();
    if (count == 0) {
      text += "[]";
      continue;
    }
    text += '[';
    write(text);
    text.clear();
    const size_t per_piece = is_ops ? kJsonOpsPerPiece : kJsonRedistributesPerPiece;
    auto make = [&](size_t piece) {
      std::string out;
      const size_t end = std::min(count, (piece + 1) * per_piece);
      for (size_t i = piece * per_piece; i < end; ++i) {
        out += i == 0 ? "\n    " : ",\n    ";
        const json element = is_ops
                                 ? OpJson(SummarizeOp(model, op_ids[i]))
                                 : RedistributeJson(SummarizeOne(
                                       redistribute_ids[i], model.RedistributesWithId(redistribute_ids[i])));
        AppendIndented(out, JsonText(element), 4);
      }
      return out;
    };
    detail::MakeInOrder((count + per_piece - 1) / per_piece, threads, make,
                        [&](const std::string& piece) { write(piece); });
    text += "\n  ]";
  }
  text += "\n}";
  write(text);
}

}  // namespace shardscope::trace
