#include "shardscope/trace/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "collective_match.hpp"
#include "json_null.hpp"
#include "shardscope/printable.hpp"
#include "shardscope/text.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

std::string JoinStrs(const std::vector<std::string>& v) { return "[" + Join(v, ", ") + "]"; }

std::string Bytes(int64_t n) {
  if (n < 1024) return std::to_string(n) + " B";
  if (n < (int64_t{1} << 20)) return Fixed(n / 1024.0, 2) + " KiB";
  if (n < (int64_t{1} << 30)) return Fixed(n / 1048576.0, 2) + " MiB";
  return Fixed(n / 1073741824.0, 2) + " GiB";
}

std::string Micros(int64_t ns) { return Fixed(ns / 1000.0, 2) + " us"; }

std::string Ranks(const std::vector<int64_t>& ranks) { return JoinInts(ranks, ", "); }

void AddCollectiveSummary(
    std::vector<CollectiveSummary>& out,
    std::map<std::tuple<int64_t, std::string, std::vector<int64_t>, bool>, size_t>& index,
    const Collective& c);

RedistributeSummary SummarizeOne(int64_t id, const std::vector<const RedistributeRecord*>& recs) {
  RedistributeSummary s;
  const RedistributeBegin& b = recs.front()->begin;
  s.id = id;
  s.tensor = b.tensor;
  s.dtype = b.dtype;
  s.planner = b.planner;
  s.planner_reason = b.planner_reason;
  s.notation = b.notation;
  s.imported = b.imported;
  s.global_shape = b.global_shape;
  s.src_placements = b.src_placements;
  s.dst_placements = b.dst_placements;
  s.predicted_us = b.cost_us;
  s.plan_steps = static_cast<int64_t>(b.optimized_plan.size());
  s.raw_plan_steps = static_cast<int64_t>(b.raw_plan.size());
  s.skipped_merges = static_cast<int64_t>(b.skipped_merges.size());
  s.op_id = b.op_id;
  s.op_input = b.op_input;

  using Key = std::tuple<int64_t, std::string, std::vector<int64_t>, bool>;
  std::map<Key, size_t> index;
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

std::string LayoutText(const std::optional<std::vector<int64_t>>& shape,
                       const std::optional<std::vector<int64_t>>& offset) {
  if (!shape || !offset) return "?";
  return detail::FormatInts(*shape) + " @ " + detail::FormatInts(*offset);
}

// What every rank must agree on about one op: name, args, chosen strategy and its outputs'
// placements and global shapes (local shapes legitimately differ across ranks).
std::string OpSignatureText(const Op& op) {
  std::string out = OpCallText(op) + " chosen " + std::to_string(op.chosen);
  for (const OpOutput& o : op.outputs) {
    if (o.requested)
      out += " " + (o.tensor.empty() ? std::string("-") : Printable(o.tensor)) + " " +
             detail::FormatInts(o.global_shape);
  }
  return out;
}

// The view of one rank that differs from the reference, for show: its outputs with global shapes.
std::string OpOutputsText(const Op& op) {
  return "chosen " + std::to_string(op.chosen) + ", outputs " + detail::OpOutputsText(op);
}

std::string CostText(double us) { return std::isinf(us) ? std::string("inf") : Fixed(us, 2) + " us"; }

json CostJson(double us) { return std::isfinite(us) ? json(us) : json(nullptr); }

void AddCollectiveSummary(
    std::vector<CollectiveSummary>& out,
    std::map<std::tuple<int64_t, std::string, std::vector<int64_t>, bool>, size_t>& index,
    const Collective& c) {
  auto [it, inserted] = index.try_emplace({c.step, c.kind, c.mesh_dims, c.negotiated}, out.size());
  if (inserted) out.push_back({c.step, c.kind, c.mesh_dims, c.negotiated, 0, 0, 0});
  CollectiveSummary& cs = out[it->second];
  ++cs.calls;
  cs.bytes_sent = detail::SaturatingAdd(cs.bytes_sent, detail::SumBytes(c.bytes_sent));
  cs.bytes_recv = detail::SaturatingAdd(cs.bytes_recv, detail::SumBytes(c.bytes_recv));
}

std::string CollectiveLine(const CollectiveSummary& c, bool with_step) {
  return std::string(with_step ? "step " + std::to_string(c.step) + "  " : "") + c.kind +
         (c.negotiated ? " (negotiated)" : "") + "  mesh dims " + detail::FormatInts(c.mesh_dims) + "  x" +
         std::to_string(c.calls) + "  sent " + Bytes(c.bytes_sent) + "  recv " + Bytes(c.bytes_recv);
}

}  // namespace

std::string PlacementsText(const std::vector<std::string>& placements) {
  return detail::ConcatPlacements(placements);
}

std::string OpCallText(const Op& op) {
  std::string out = op.name + "(";
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const OpInput& in = op.inputs[i];
    if (in.tensor.empty() && in.placements.empty()) {  // an absent optional input
      out += (i ? ", -" : "-");
      continue;
    }
    out += (i ? ", " : "") + Printable(in.tensor) + ": " + PlacementsText(in.placements);
    if (in.required != in.placements) out += "->" + PlacementsText(in.required);
  }
  if (!op.args.empty()) out += (op.inputs.empty() ? "" : ", ") + Printable(op.args);
  out += ") -> ";
  std::string outs;
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    const OpOutput& o = op.outputs[i];
    outs += (i ? ", " : "") +
            (o.requested ? Printable(o.tensor) + ": " + PlacementsText(o.placements) : std::string("-"));
  }
  return out + (op.outputs.size() == 1 ? outs : "(" + outs + ")");
}

std::vector<OpSummary> SummarizeOps(const Model& model) {
  std::vector<OpSummary> out;
  for (int64_t id : model.OpIds()) {
    OpSummary s;
    s.id = id;
    std::vector<const OpRecord*> recs = model.OpsWithId(id);
    s.reference = recs.front();
    // The reference's text only when another rank holds the op (a single-rank import: never).
    const std::string reference = recs.size() > 1 ? OpSignatureText(s.reference->op) : std::string();
    std::map<std::tuple<int64_t, std::string, std::vector<int64_t>, bool>, size_t> index;
    for (const OpRecord* rec : recs) {
      s.ranks.push_back(rec->rank);
      if (!rec->op->ok) s.ranks_failed.emplace_back(rec->rank, rec->op->error);
      if (rec != s.reference && OpSignatureText(rec->op) != reference)
        s.ranks_differing.emplace_back(rec->rank, OpOutputsText(rec->op));
      for (const Collective& c : rec->collectives) AddCollectiveSummary(s.collectives, index, c);
    }
    for (const RankTrace& rt : model.ranks) {
      if (std::find(s.ranks.begin(), s.ranks.end(), rt.header.rank) == s.ranks.end())
        s.ranks_missing.push_back(rt.header.rank);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<RedistributeSummary> Summarize(const Model& model) {
  std::vector<RedistributeSummary> out;
  for (int64_t id : model.RedistributeIds()) out.push_back(SummarizeOne(id, model.RedistributesWithId(id)));
  return out;
}

namespace {

// "  FAILED on rank R: error", a line per failed rank.
std::string FailedText(const std::vector<std::pair<int64_t, std::string>>& failed) {
  std::string out;
  for (const auto& [rank, error] : failed)
    out += "  FAILED on rank " + std::to_string(rank) + ": " + Printable(error) + "\n";
  return out;
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
    if (named) out += " " + JoinStrs(h.mesh_dim_names);
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

std::string ShowOpText(const Model& model, const OpSummary& s) {
  std::string out;
  const Op& op = s.reference->op;
  out += "op #" + std::to_string(s.id) + " " + OpCallText(op) + "  [chosen " + std::to_string(op.chosen) +
         "/" + std::to_string(op.candidates.size());
  if (op.chosen >= 0 && op.chosen < static_cast<int64_t>(op.candidates.size()))
    out += ", cost " + CostText(op.candidates[static_cast<size_t>(op.chosen)].cost_us);
  out += (op.rule.empty() ? "" : ", rule " + Printable(op.rule)) + "]\n";
  for (int64_t rid : s.reference->redistribute_ids) {
    const RedistributeRecord* rec = model.FindRedistribute(s.reference->rank, rid);
    if (rec == nullptr) continue;
    const RedistributeBegin& b = rec->begin;
    out += "  redistribute " + std::to_string(rid) + ": " +
           (b.tensor.empty() ? "<unnamed>" : Printable(b.tensor)) + "  " + PlacementsText(b.src_placements) +
           " -> " + PlacementsText(b.dst_placements) + "  " + b.notation + "\n";
  }
  for (const CollectiveSummary& c : s.collectives) out += "  " + CollectiveLine(c, false) + "\n";
  if (!op.note.empty()) out += "  note: " + Printable(op.note) + "\n";
  out += FailedText(s.ranks_failed);
  for (const auto& [rank, text] : s.ranks_differing)
    out += "  differs on rank " + std::to_string(rank) + ": " + text + "\n";
  if (!s.ranks_missing.empty()) out += "  missing on rank(s) " + Ranks(s.ranks_missing) + "\n";
  return out;
}

std::string ShowRedistributeText(const Model& model, const RedistributeSummary& s) {
  std::string out;
  out += "\nredistribute " + std::to_string(s.id) + ": " +
         (s.tensor.empty() ? "<unnamed>" : Printable(s.tensor)) + " " + s.dtype + " " +
         detail::FormatInts(s.global_shape) + "  " + JoinStrs(s.src_placements) + " -> " +
         JoinStrs(s.dst_placements) + "\n";
  if (s.op_id >= 0) {
    const OpRecord* op = nullptr;
    for (const OpRecord* rec : model.OpsWithId(s.op_id)) op = op ? op : rec;
    out += "  op: #" + std::to_string(s.op_id) + (op ? " " + op->op->name : std::string()) + " input " +
           std::to_string(s.op_input) + "\n";
  }
  out += "  notation: " + s.notation + "\n";
  if (s.imported) {
    out += "  " + s.imported->source + " (line " + std::to_string(s.imported->line) +
           "): " + (s.imported->notation.empty() ? "no notation recorded" : s.imported->notation) + ", " +
           s.imported->verdict + (s.imported->reason.empty() ? "" : ": " + s.imported->reason) + "\n";
  }
  out += "  plan: " + s.planner + (s.planner_reason.empty() ? "" : " (" + Printable(s.planner_reason) + ")") +
         ", " + std::to_string(s.plan_steps) + " step(s) (raw " + std::to_string(s.raw_plan_steps) + "), " +
         std::to_string(s.skipped_merges) + " skipped merge(s), predicted " + Fixed(s.predicted_us, 2) +
         " us\n";
  out += "  time: ";
  if (s.max_ns) {
    out +=
        "max " + Micros(*s.max_ns) + " (rank " + std::to_string(s.max_rank) + "), min " + Micros(*s.min_ns);
  } else {
    out += "-";
  }
  size_t total = s.ranks_ok.size() + s.ranks_failed.size() + s.ranks_incomplete.size();
  out += "; ok on " + std::to_string(s.ranks_ok.size()) + " of " + std::to_string(total) + " rank(s)\n";
  out += FailedText(s.ranks_failed);
  if (!s.ranks_incomplete.empty()) out += "  incomplete on rank(s) " + Ranks(s.ranks_incomplete) + "\n";
  if (s.collectives.empty()) {
    out += "  collectives: none\n";
  } else {
    out += "  collectives:\n";
    for (const CollectiveSummary& c : s.collectives) out += "    " + CollectiveLine(c, true) + "\n";
  }
  out += "  layouts (local shape @ global offset, before -> after):\n";
  for (const RankLayout& l : s.layouts) {
    out += "    rank " + std::to_string(l.rank) + ": " + LayoutText(l.shape_before, l.offset_before) +
           " -> " + LayoutText(l.shape_after, l.offset_after) + "\n";
  }
  return out;
}

}  // namespace

std::string FormatShowText(const Model& model) {
  std::string out = ShowHeaderText(model);
  if (HasFlightRecords(model)) out += FormatFlightText(model);
  std::vector<OpSummary> ops = SummarizeOps(model);
  if (!ops.empty()) out += "\nprogram: " + std::to_string(ops.size()) + " op(s)\n";
  for (const OpSummary& s : ops) out += ShowOpText(model, s);
  for (const RedistributeSummary& s : Summarize(model)) out += ShowRedistributeText(model, s);
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
// of an op, as CollectiveLine prints them.
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
  const json colls = CollectivesJson(s.collectives, true);
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
              {"collectives", colls},
              {"layouts", layouts}};
}

json OpJson(const OpSummary& s) {
  const Op& op = s.reference->op;
  json inputs = json::array();
  for (const OpInput& in : op.inputs) {
    inputs.push_back({{"tensor", in.tensor},
                      {"placements", in.placements},
                      {"required", in.required},
                      {"redistribute_id", in.redistribute_id}});
  }
  json outputs = json::array();
  for (const OpOutput& o : op.outputs) {
    outputs.push_back({{"tensor", o.tensor},
                       {"requested", o.requested},
                       {"placements", o.placements},
                       {"global_shape", o.global_shape}});
  }
  const json colls = CollectivesJson(s.collectives, false);
  bool has_chosen = op.chosen >= 0 && op.chosen < static_cast<int64_t>(op.candidates.size());
  json differing = json::array();
  for (const auto& [rank, text] : s.ranks_differing) differing.push_back({{"rank", rank}, {"view", text}});
  return json{{"id", s.id},
              {"step", op.step},
              {"name", op.name},
              {"args", op.args},
              {"call", OpCallText(op)},
              {"inputs", inputs},
              {"outputs", outputs},
              {"candidates", op.candidates.size()},
              {"chosen", op.chosen},
              {"chosen_cost_us",
               has_chosen ? CostJson(op.candidates[static_cast<size_t>(op.chosen)].cost_us) : json(nullptr)},
              {"rule", op.rule},
              {"note", op.note},
              {"redistributes", s.reference->redistribute_ids.ToVector()},
              {"collectives", colls},
              {"ranks", s.ranks},
              {"ranks_missing", s.ranks_missing},
              {"ranks_failed", RankErrorsJson(s.ranks_failed)},
              {"ranks_differing", differing}};
}

}  // namespace

json ShowJson(const Model& model) {
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
  out["ranks"] = ranks;
  if (!model.ranks.empty()) {
    out["mesh_shape"] = model.ranks.front().header.mesh_shape;
    out["mesh_dim_names"] = model.ranks.front().header.mesh_dim_names;
  }
  json diags = json::array();
  for (const Diagnostic& d : model.diagnostics) {
    diags.push_back({{"file", d.file}, {"line", d.line}, {"message", d.message}});
  }
  out["diagnostics"] = diags;
  json reds = json::array();
  for (const RedistributeSummary& s : Summarize(model)) reds.push_back(RedistributeJson(s));
  out["redistributes"] = reds;
  json ops = json::array();
  for (const OpSummary& s : SummarizeOps(model)) ops.push_back(OpJson(s));
  out["ops"] = ops;
  if (HasFlightRecords(model)) out["flight"] = FlightJson(model);
  return out;
}

}  // namespace shardscope::trace
