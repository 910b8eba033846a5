#include "shardscope/trace/check.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <tuple>

#include "check_flight.hpp"
#include "collective_match.hpp"
#include "collective_sizes.hpp"
#include "json_null.hpp"
#include "shardscope/names.hpp"
#include "shardscope/printable.hpp"
#include "vote.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

using detail::RanksPhrase;

using detail::AllSame;
using detail::CallAt;
using detail::Majority;
using detail::Vote;
using detail::VoteText;

// Who issued a collective: a redistribute step, or an op itself (a halo exchange).
std::string IssuerText(const Collective& c) {
  if (c.redistribute_id < 0) return "op #" + std::to_string(c.op_id);
  return "redistribute #" + std::to_string(c.redistribute_id) + " step " + std::to_string(c.step());
}

std::string CallText(const Collective& c) {
  return c.kind() + " on mesh dims " + detail::FormatInts(c.mesh_dims()) + " (" + IssuerText(c) + ")";
}

std::string OpSubject(const Op& op) { return "op #" + std::to_string(op.id) + " " + detail::OpCallText(op); }

// A field whose values the ranks put to a vote: `text` is what the vote compares and the message
// quotes; `same` holds only for values with equal texts (AllSame), mostly decided by comparing
// interned strings and shared lists, so that text is built only where ranks differ.
template <typename T>
struct VotedField {
  const char* noun;
  bool (*same)(const T&, const T&);
  std::string (*text)(const T&);
};

struct CollectiveField {
  MismatchClass kind;
  VotedField<Collective> field;
};

const CollectiveField kCollectiveFields[] = {
    {MismatchClass::kCollectiveType,
     {"kind", [](const Collective& a, const Collective& b) { return a.kind() == b.kind(); },
      [](const Collective& c) { return std::string(c.kind()); }}},
    {MismatchClass::kCollectiveSequence,
     {"issuer",
      [](const Collective& a, const Collective& b) {
        return a.redistribute_id == b.redistribute_id &&
               (a.redistribute_id < 0 ? a.op_id == b.op_id : a.step() == b.step());
      },
      IssuerText}},
    {MismatchClass::kDtype,
     {"dtype", [](const Collective& a, const Collective& b) { return a.dtype() == b.dtype(); },
      [](const Collective& c) { return std::string(c.dtype()); }}},
    {MismatchClass::kSizeOrSyntax,
     {"group order",
      [](const Collective& a, const Collective& b) {
        return a.group() == b.group() && a.mesh_dims() == b.mesh_dims();
      },
      [](const Collective& c) {
        return detail::FormatRanks(c.group()) + " on mesh dims " + detail::FormatInts(c.mesh_dims());
      }}},
    {MismatchClass::kSizeOrSyntax,
     {"shape negotiation",
      [](const Collective& a, const Collective& b) { return a.negotiated() == b.negotiated(); },
      [](const Collective& c) { return std::string(c.negotiated() ? "negotiated" : "not negotiated"); }}},
};

// The candidate OpStrategyText shows for `op`, nullptr for "none".
const OpStrategy* ChosenStrategy(const Op& op) {
  if (op.chosen() < 0 || op.chosen() >= static_cast<int64_t>(op.candidates().size())) return nullptr;
  return &op.candidates()[static_cast<size_t>(op.chosen())];
}

const VotedField<Op> kOpFields[] = {
    {"name", [](const Op& a, const Op& b) { return a.name() == b.name() && a.args() == b.args(); },
     [](const Op& op) { return op.name() + (op.args().empty() ? "" : "(" + op.args() + ")"); }},
    {"inputs",
     [](const Op& a, const Op& b) {
       return a.inputs().SharesWith(b.inputs()) ||
              std::equal(a.inputs().begin(), a.inputs().end(), b.inputs().begin(), b.inputs().end(),
                         [](const OpInput& x, const OpInput& y) { return x.tensor == y.tensor; });
     },
     [](const Op& op) {
       std::string out;
       for (size_t i = 0; i < op.inputs().size(); ++i) out += (i ? ", " : "") + op.inputs()[i].tensor;
       return out;
     }},
    {"chosen strategy",
     [](const Op& a, const Op& b) {
       if (a.candidates().SharesWith(b.candidates()) && a.chosen() == b.chosen()) return true;
       const OpStrategy *x = ChosenStrategy(a), *y = ChosenStrategy(b);
       return x == nullptr || y == nullptr ? x == y : x->inputs == y->inputs && x->outputs == y->outputs;
     },
     [](const Op& op) { return detail::OpStrategyText(op, op.chosen()); }},
    {"outputs",
     [](const Op& a, const Op& b) {
       return a.outputs().SharesWith(b.outputs()) ||
              std::equal(a.outputs().begin(), a.outputs().end(), b.outputs().begin(), b.outputs().end(),
                         [](const OpOutput& x, const OpOutput& y) {
                           return x.requested == y.requested &&
                                  (!x.requested || (x.tensor == y.tensor && x.placements == y.placements &&
                                                    x.global_shape == y.global_shape));
                         });
     },
     detail::OpOutputsText},
    {"outcome",
     [](const Op& a, const Op& b) { return a.ok() == b.ok() && (a.ok() || a.error() == b.error()); },
     [](const Op& op) { return op.ok() ? std::string("ok") : "failed: " + op.error(); }},
};

const VotedField<RedistributeBegin> kRedistributeFields[] = {
    {"tensor",
     [](const RedistributeBegin& a, const RedistributeBegin& b) { return a.tensor() == b.tensor(); },
     [](const RedistributeBegin& b) { return std::string(b.tensor()); }},
    {"global shape",
     [](const RedistributeBegin& a, const RedistributeBegin& b) {
       return a.global_shape() == b.global_shape();
     },
     [](const RedistributeBegin& b) { return detail::FormatInts(b.global_shape()); }},
    {"dtype", [](const RedistributeBegin& a, const RedistributeBegin& b) { return a.dtype() == b.dtype(); },
     [](const RedistributeBegin& b) { return std::string(b.dtype()); }},
    {"source placements",
     [](const RedistributeBegin& a, const RedistributeBegin& b) {
       return a.src_placements() == b.src_placements() && a.src_order() == b.src_order();
     },
     [](const RedistributeBegin& b) { return detail::JoinComma(b.src_placements()) + " " + b.src_order(); }},
    {"target placements",
     [](const RedistributeBegin& a, const RedistributeBegin& b) {
       return a.dst_placements() == b.dst_placements() && a.dst_order() == b.dst_order();
     },
     [](const RedistributeBegin& b) { return detail::JoinComma(b.dst_placements()) + " " + b.dst_order(); }},
    {"planner",
     [](const RedistributeBegin& a, const RedistributeBegin& b) { return a.planner() == b.planner(); },
     [](const RedistributeBegin& b) { return std::string(b.planner()); }},
    {"plan",
     [](const RedistributeBegin& a, const RedistributeBegin& b) { return a.notation() == b.notation(); },
     [](const RedistributeBegin& b) { return std::string(b.notation()); }},
};

// Whether `recs` (in rank order) holds a record of `rank`.
template <typename Record>
bool HasRank(const std::vector<const Record*>& recs, int64_t rank) {
  auto it = std::lower_bound(recs.begin(), recs.end(), rank,
                             [](const Record* r, int64_t x) { return r->rank < x; });
  return it != recs.end() && (*it)->rank == rank;
}

enum class PlacementKind { kShard, kReplicate, kPartial };

PlacementKind KindOf(const std::string& p) {
  if (p == "R") return PlacementKind::kReplicate;
  if (p.rfind("P(", 0) == 0) return PlacementKind::kPartial;
  return PlacementKind::kShard;  // S(d), _S(d, k) and anything unknown: claim nothing replicated
}

class Checker {
 public:
  explicit Checker(const Model& model) : Checker(model, detail::FlightRules(model)) {}
  Checker(const Model& model, detail::FlightRules flight) : model_(model), flight_(std::move(flight)) {
    for (const RankTrace& rt : model.ranks) with_file_.insert(rt.header.rank);
    if (!model.ranks.empty()) mesh_ = model.ranks.front().header.mesh_shape;
  }

  // The rules apply where their fields are present, so a model may hold any mix: run-level (rank
  // files), collectives with a flight record (per process group and sequence number), the other
  // collectives (per group in call order), redistributes and ops.
  CheckResult Run() {
    result_.ranks = static_cast<int64_t>(model_.ranks.size());
    result_.world = model_.world;
    MissingRankFiles();
    flight_.Check(result_);
    for (const RedistributeRecord& r : model_.redistributes) {
      if (!r.end || r.end->ok) continue;
      auto [it, inserted] = first_failure_.try_emplace(r.rank, r.begin->id);
      if (!inserted) it->second = std::min(it->second, r.begin->id);
    }
    std::vector<detail::GroupCalls> groups = detail::GroupCollectives(model_, /*with_flight_records=*/false);
    result_.groups += static_cast<int64_t>(groups.size());
    for (const detail::GroupCalls& g : groups) CheckGroup(g);
    const std::vector<const RedistributeRecord*> by_id = detail::RedistributesByIdRank(model_);
    std::vector<const RedistributeRecord*> recs;  // one id's, in rank order
    for (size_t lo = 0, hi = 0; lo < by_id.size(); lo = hi) {
      const int64_t id = by_id[lo]->begin->id;
      recs.clear();
      for (hi = lo; hi < by_id.size() && by_id[hi]->begin->id == id; ++hi) recs.push_back(by_id[hi]);
      CheckRedistribute(id, recs);
      ++result_.redistributes;
    }
    CheckOps();
    std::stable_sort(result_.mismatches.begin(), result_.mismatches.end(),
                     [](const Mismatch& a, const Mismatch& b) {
                       // Trace order: run-level and process group findings first (in the order
                       // found: groups by name), then ops by id (a rank that ran a different
                       // program explains the rest), then by redistribute; within one, a plan that
                       // differs across ranks (the usual root cause) first, then its collectives by
                       // step, then outcome, shapes and checksums.
                       auto key = [](const Mismatch& m) {
                         int tier = m.kind == MismatchClass::kRedistribute || m.kind == MismatchClass::kOp ? 0
                                    : m.call                                                               ? 1
                                             : 2;
                         int level = m.redistribute_id ? 2 : m.op_id ? 1 : 0;
                         return std::make_tuple(level, m.redistribute_id.value_or(m.op_id.value_or(-1)), tier,
                                                m.step.value_or(-1));
                       };
                       return key(a) < key(b);
                     });
    return std::move(result_);
  }

 private:
  // A rank of the world with no file; one in a process group of a flight record is reported by
  // that group's rules instead, in its words.
  void MissingRankFiles() {
    // One report per missing rank up to kListedMissing, then one for all the rest: a header may
    // claim 2^20 ranks in a file of a few bytes, and the check's work follows the files.
    constexpr int64_t kListedMissing = 64, kNamedCulprits = 1024;
    std::optional<Mismatch> rest;
    int64_t missing = 0, rest_last = -1;
    for (int64_t r = 0; r < model_.world; ++r) {
      if (with_file_.count(r) || flight_.Covers(r)) continue;
      if (++missing <= kListedMissing) {
        Mismatch m;
        m.kind = MismatchClass::kMissingRankFile;
        m.culprits = {r};
        m.message = "rank " + std::to_string(r) + " of world " + std::to_string(model_.world) +
                    " has no trace file; its collectives cannot be checked";
        result_.mismatches.push_back(std::move(m));
        continue;
      }
      if (!rest) {
        rest.emplace();
        rest->kind = MismatchClass::kMissingRankFile;
      }
      if (static_cast<int64_t>(rest->culprits.size()) < kNamedCulprits) rest->culprits.push_back(r);
      rest_last = r;
      // Past the files and the process groups there are no more to find: the rest of the world is missing.
      if ((with_file_.empty() || r > *with_file_.rbegin()) && r > flight_.LastCovered()) {
        missing += model_.world - 1 - r;
        rest_last = model_.world - 1;
        break;
      }
    }
    if (rest) {
      const int64_t more = missing - kListedMissing;
      rest->message = std::to_string(more) + " more ranks of world " + std::to_string(model_.world) + " (" +
                      std::to_string(rest->culprits.front()) + ".." + std::to_string(rest_last) +
                      ") have no trace file; their collectives cannot be checked (the first " +
                      std::to_string(rest->culprits.size()) + " are named as culprits)";
      result_.mismatches.push_back(std::move(*rest));
    }
  }

  void Report(MismatchClass kind, std::vector<int64_t> culprits, const Collective* at,
              const detail::GroupCalls* group, int64_t call, std::string message) {
    Mismatch m;
    m.kind = kind;
    m.culprits = std::move(culprits);
    if (at != nullptr && at->redistribute_id < 0) {
      m.op_id = at->op_id;
    } else if (at != nullptr) {
      m.redistribute_id = at->redistribute_id;
      m.step = at->step();
    }
    if (group != nullptr) {
      m.group = group->ranks;
      m.call = call;
    }
    m.message = std::move(message);
    result_.mismatches.push_back(std::move(m));
  }

  // ---- collectives, paired per group in call order ----

  void CheckGroup(const detail::GroupCalls& g) {
    if (g.calls.empty()) return;
    size_t shortest = g.calls.begin()->second.size(), longest = 0;
    for (const auto& [rank, calls] : g.calls) {
      shortest = std::min(shortest, calls.size());
      longest = std::max(longest, calls.size());
    }
    CallAt at;
    at.reserve(g.calls.size());
    for (size_t n = 0; n < shortest; ++n) {
      at.clear();
      for (const auto& [rank, calls] : g.calls) at.emplace_back(rank, calls[n]);
      const auto call = static_cast<int64_t>(n);
      if (!SameSignature(g, call, at)) return;
      if (!ConsistentSizes(g, call, at)) return;
      ++result_.collectives;
    }
    if (shortest < longest) MissingCall(g, shortest);
  }

  static std::string Where(const detail::GroupCalls& g, int64_t call, const Collective& ref) {
    return "call " + std::to_string(call) + " of group " + detail::FormatRanks(g.ranks) + ", " +
           CallText(ref);
  }

  // Call `n` of group `g`, which some members never issued.
  void MissingCall(const detail::GroupCalls& g, size_t n) {
    std::vector<int64_t> have, missing;
    for (const auto& [rank, calls] : g.calls) (calls.size() > n ? have : missing).push_back(rank);
    const Collective& ref = *g.calls.at(have.front())[n];
    const auto call = static_cast<int64_t>(n);
    // As for a redistribute (Blamed): a rank the waiting ranks' roll call names is the cause.
    std::vector<int64_t> blamed = missing;
    if (ref.redistribute_id >= 0)
      blamed = Blamed(missing, model_.RedistributesWithId(ref.redistribute_id), ref.redistribute_id);
    if (blamed.empty()) return;  // every missing rank had failed earlier: reported there
    Report(MismatchClass::kMissingRanks, blamed, &ref, &g, call,
           Where(g, call, ref) + ": " + RanksPhrase(missing) + " never issued it; " + RanksPhrase(have) +
               " did" +
               (blamed != missing ? "; the ranks that failed found " + RanksPhrase(blamed) +
                                        " missing from their roll call (the others' records were lost)"
                                  : ""));
  }

  bool SameSignature(const detail::GroupCalls& g, int64_t call, const CallAt& at) {
    for (const auto& [kind, field] : kCollectiveFields) {
      if (AllSame(at, [&](const auto& a, const auto& b) { return field.same(*a.second, *b.second); }))
        continue;
      std::vector<std::pair<int64_t, std::string>> values;
      for (const auto& [rank, c] : at) values.emplace_back(rank, field.text(*c));
      Vote vote = Majority(values);
      if (vote.deviants.empty()) continue;
      auto agreed =
          std::find_if(at.begin(), at.end(), [&](const auto& a) { return a.first == vote.agree.front(); });
      Report(kind, vote.deviants, agreed->second, &g, call,
             Where(g, call, *at.front().second) + ": " + field.noun + " differs: " + VoteText(values, vote));
      return false;
    }
    return true;
  }

  bool ConsistentSizes(const detail::GroupCalls& g, int64_t call, const CallAt& at) {
    std::optional<detail::SizeFinding> found = detail::CheckCallSizes(g, at);
    if (!found) return true;
    Report(found->kind, std::move(found->culprits), found->at, &g, call,
           Where(g, call, *at.front().second) + ": " + found->message);
    return false;
  }

  // ---- ops: every rank runs the same program ----

  // Per op id, the ranks' values of each field are put to a vote; a rank is reported once, at its
  // first divergent op (later ops of a diverged rank follow from it).
  void CheckOps() {
    const std::vector<const OpRecord*> by_id = detail::OpsByIdRank(model_);
    std::set<int64_t> reported;
    std::vector<const OpRecord*> recs;  // one id's, one per rank (the last where a rank repeats the id)
    for (size_t lo = 0, hi = 0; lo < by_id.size(); lo = hi) {
      const int64_t id = by_id[lo]->op->id;
      recs.clear();
      for (hi = lo; hi < by_id.size() && by_id[hi]->op->id == id; ++hi) {
        if (!recs.empty() && recs.back()->rank == by_id[hi]->rank)
          recs.back() = by_id[hi];
        else
          recs.push_back(by_id[hi]);
      }
      ++result_.ops;
      CheckOp(id, recs, reported);
    }
  }

  void CheckOp(int64_t id, const std::vector<const OpRecord*>& recs, std::set<int64_t>& reported) {
    const Op& ref = recs.front()->op;
    bool any_ran = false, any_missing = false;
    for (int64_t r : with_file_) {
      if (reported.count(r)) continue;
      (HasRank(recs, r) ? any_ran : any_missing) = true;
    }
    if (!any_ran) return;
    if (any_missing) {
      std::vector<std::pair<int64_t, std::string>> values;
      for (int64_t r : with_file_)
        if (!reported.count(r)) values.emplace_back(r, HasRank(recs, r) ? "ran it" : "no op event");
      Vote vote = Majority(values);
      ReportOp(vote.deviants, id,
               OpSubject(ref) + ": " + VoteText(values, vote) + " (first divergent op of " +
                   RanksPhrase(vote.deviants) + ")");
      reported.insert(vote.deviants.begin(), vote.deviants.end());
    }
    std::vector<const OpRecord*> live;  // of the ranks not reported yet
    for (const VotedField<Op>& field : kOpFields) {
      live.clear();
      for (const OpRecord* rec : recs)
        if (!reported.count(rec->rank)) live.push_back(rec);
      if (live.empty()) break;
      std::vector<std::pair<int64_t, std::string>> values;
      Vote vote;
      if (!AllSame(live, [&](const OpRecord* a, const OpRecord* b) { return field.same(a->op, b->op); })) {
        for (const OpRecord* rec : live) values.emplace_back(rec->rank, field.text(rec->op));
        vote = Majority(values);
      }
      if (vote.deviants.empty() && std::string_view(field.noun) == "outcome" && !live.front()->op->ok()) {
        // Every rank failed this op the same way: consistent, but not clean.
        std::vector<int64_t> all;
        for (const OpRecord* rec : live) all.push_back(rec->rank);
        ReportOp(all, id, OpSubject(ref) + ": every rank " + field.text(live.front()->op));
        reported.insert(all.begin(), all.end());
        break;
      }
      if (vote.deviants.empty()) continue;
      ReportOp(vote.deviants, id,
               OpSubject(ref) + ": " + field.noun + " differs across ranks: " + VoteText(values, vote) +
                   " (first divergent op of " + RanksPhrase(vote.deviants) + ")");
      reported.insert(vote.deviants.begin(), vote.deviants.end());
    }
  }

  void ReportOp(std::vector<int64_t> culprits, int64_t op_id, std::string message) {
    Mismatch m;
    m.kind = MismatchClass::kOp;
    m.culprits = std::move(culprits);
    m.op_id = op_id;
    m.message = std::move(message);
    result_.mismatches.push_back(std::move(m));
  }

  // ---- redistributes, compared across ranks ----

  static std::string Subject(const RedistributeBegin& b) {
    return "redistribute #" + std::to_string(b.id) + " (" +
           (b.tensor().empty() ? "<anonymous>" : Printable(b.tensor())) + " " +
           detail::FormatInts(b.global_shape()) + " " + detail::JoinComma(b.src_placements()) + " -> " +
           detail::JoinComma(b.dst_placements()) + ")";
  }

  void ReportRedistribute(MismatchClass kind, std::vector<int64_t> culprits, int64_t id,
                          std::optional<int64_t> step, std::string message) {
    Mismatch m;
    m.kind = kind;
    m.culprits = std::move(culprits);
    m.redistribute_id = id;
    m.step = step;
    m.message = std::move(message);
    result_.mismatches.push_back(std::move(m));
  }

  // A rank that never began a redistribute its peers began is what they waited for: their failure
  // or stop inside it follows from its absence (a stopped or dead rank), so the blame is its alone.
  static std::vector<int64_t> OrElse(std::vector<int64_t> v, const std::vector<int64_t>& otherwise) {
    return v.empty() ? otherwise : v;
  }

  static std::string Waited(const std::vector<int64_t>& never) {
    if (never.empty()) return "";
    return "; the ranks that began it were waiting for " + RanksPhrase(never) + ", which never began it";
  }

  // Who is to blame among `candidates` (ranks without a record of redistribute `id`, or every rank
  // when all failed it), from what the trace knows of a stopped or dead rank:
  // - a rank that had already failed an earlier redistribute did not go on: that failure, reported
  //   where it happened, explains this absence;
  // - the ranks that failed `id` name the members that did not answer their roll call ("rank(s)
  //   2,3 did not answer a roll call", the MPI backend's timeout message): the ranks named most are
  //   what they waited for (a candidate without a record may only have lost its open lines when the
  //   job was killed), so they are blamed even when they are not candidates.
  // Empty when every candidate had failed earlier and no one is named: a consequence, not news.
  std::vector<int64_t> Blamed(const std::vector<int64_t>& candidates,
                              const std::vector<const RedistributeRecord*>& recs, int64_t id) const {
    if (candidates.empty()) return candidates;
    std::vector<int64_t> going;
    for (int64_t r : candidates) {
      auto failed = first_failure_.find(r);
      if (failed == first_failure_.end() || failed->second >= id) going.push_back(r);
    }
    static constexpr std::string_view kBefore = "rank(s) ", kAfter = " did not answer a roll call";
    std::map<int64_t, int64_t> named;  // rank -> failed ranks naming it
    for (const RedistributeRecord* r : recs) {
      if (!r->end || r->end->ok) continue;
      std::set<int64_t> by_this;
      const std::string& error = r->end->error;
      for (size_t at = error.find(kAfter); at != std::string::npos; at = error.find(kAfter, at + 1)) {
        const size_t list = error.rfind(kBefore, at);
        if (list == std::string::npos) continue;
        std::string_view ranks(error.data() + list + kBefore.size(), at - list - kBefore.size());
        while (!ranks.empty()) {
          const size_t comma = std::min(ranks.find(','), ranks.size());
          int64_t value = -1;
          const auto [end, ec] = std::from_chars(ranks.data(), ranks.data() + comma, value);
          if (ec == std::errc() && end == ranks.data() + comma) by_this.insert(value);
          ranks.remove_prefix(std::min(comma + 1, ranks.size()));
        }
      }
      for (int64_t n : by_this) ++named[n];
    }
    // The ranks named most often: positive evidence of a rank that did not answer, where a
    // missing record may only be a killed rank's lost lines.
    // A rank that had failed an earlier one not answering is no news: it had left.
    for (auto it = named.begin(); it != named.end();) {
      auto failed = first_failure_.find(it->first);
      it = failed != first_failure_.end() && failed->second < id ? named.erase(it) : std::next(it);
    }
    int64_t most = 0;
    for (const auto& [r, count] : named) most = std::max(most, count);
    std::vector<int64_t> waited_for;
    for (const auto& [r, count] : named)
      if (count == most) waited_for.push_back(r);
    return waited_for.empty() ? going : waited_for;
  }

  void CheckRedistribute(int64_t id, const std::vector<const RedistributeRecord*>& recs) {
    const RedistributeBegin& first = recs.front()->begin;
    std::vector<int64_t> never;
    for (int64_t r : with_file_)
      if (!HasRank(recs, r)) never.push_back(r);
    // A rank killed inside a redistribute loses its open lines, so "never began it" may hold a
    // victim of the job's end beside the rank everyone waited for. The waiting ranks' own errors
    // may name that one (the MPI backend's roll call): then the blame is its alone.
    const std::vector<int64_t> blamed = Blamed(never, recs, id);
    // Every rank that never began it had failed an earlier redistribute (reported there): after a
    // job's failure the survivors go on alone, which is no new finding.
    if (!never.empty() && !blamed.empty()) {
      std::string note;
      if (blamed != never) {
        note = "; the ranks that failed it found " + RanksPhrase(blamed) +
               " missing from their roll call, so the others' records of it were lost (killed inside it?)";
      }
      std::vector<int64_t> began;
      for (const RedistributeRecord* r : recs) began.push_back(r->rank);
      ReportRedistribute(MismatchClass::kState, blamed, id, std::nullopt,
                         Subject(first) + ": " + RanksPhrase(never) + " never began it; " +
                             RanksPhrase(began) + " did" + note);
    }

    bool same_spec = true;
    for (const VotedField<RedistributeBegin>& field : kRedistributeFields) {
      if (AllSame(recs, [&](const auto* a, const auto* b) { return field.same(a->begin, b->begin); }))
        continue;
      std::vector<std::pair<int64_t, std::string>> values;
      for (const RedistributeRecord* r : recs) values.emplace_back(r->rank, field.text(r->begin));
      Vote vote = Majority(values);
      if (vote.deviants.empty()) continue;
      ReportRedistribute(
          MismatchClass::kRedistribute, vote.deviants, id, std::nullopt,
          Subject(first) + ": " + field.noun + " differs across ranks: " + VoteText(values, vote));
      same_spec = false;
      break;
    }

    auto outcome = [](const RedistributeRecord* r) {
      return std::string_view(!r->end ? "incomplete" : r->end->ok ? "ok" : "failed");
    };
    std::vector<std::pair<int64_t, std::string>> outcomes;
    Vote vote;
    if (!AllSame(recs, [&](const auto* a, const auto* b) { return outcome(a) == outcome(b); })) {
      for (const RedistributeRecord* r : recs) outcomes.emplace_back(r->rank, outcome(r));
      vote = Majority(outcomes);
    }
    if (!vote.deviants.empty()) {
      std::string detail;
      for (const RedistributeRecord* r : recs) {
        if (std::find(vote.deviants.begin(), vote.deviants.end(), r->rank) == vote.deviants.end()) continue;
        if (!r->end) {
          int64_t last = -1;
          for (const StepRecord& s : r->steps) last = std::max<int64_t>(last, s.begin->step);
          detail +=
              "; rank " + std::to_string(r->rank) + " stopped " +
              (last < 0 ? std::string("before its first step") : "in or after step " + std::to_string(last));
        } else if (!r->end->ok) {
          detail += "; rank " + std::to_string(r->rank) + " failed: " + r->end->error;
        }
      }
      ReportRedistribute(
          MismatchClass::kState,
          OrElse(never.empty() ? Blamed(vote.deviants, recs, id) : blamed, vote.deviants), id, std::nullopt,
          Subject(first) + ": outcome differs: " + VoteText(outcomes, vote) + detail + Waited(blamed));
    }
    std::string waited_note;
    if (vote.deviants.empty() && outcome(recs.front()) != "ok") {
      // Every rank agrees, but on a failure: consistent, yet not a clean trace (a job whose
      // ranks all timed out, or all were killed inside this redistribute).
      std::vector<int64_t> all;
      for (const RedistributeRecord* r : recs) all.push_back(r->rank);
      if (never.empty()) {
        const std::vector<int64_t> waited_for = Blamed(all, recs, id);
        if (waited_for != all) {
          all = waited_for;
          waited_note = "; most ranks found " + RanksPhrase(all) + " missing from their roll call";
        }
      }
      const RedistributeRecord* first = recs.front();
      ReportRedistribute(MismatchClass::kState, never.empty() || blamed.empty() ? all : blamed, id,
                         std::nullopt,
                         Subject(first->begin) + ": " +
                             (first->end ? "every rank failed it (rank " + std::to_string(first->rank) +
                                               ": " + first->end->error + ")"
                                         : std::string("no rank finished it (the job ended inside it)")) +
                             Waited(blamed) + waited_note);
    }
    bool all_ok = std::all_of(recs.begin(), recs.end(), [](auto* r) { return r->end && r->end->ok; });
    if (same_spec && all_ok) {
      CheckShapes(id, recs);
      CheckChecksums(id, recs, true);
      CheckChecksums(id, recs, false);
    }
  }

  // Ranks that must hold the same data under `placements` share their class coordinates: a rank's
  // mesh coordinates with -1 on every dim whose placement kind `collapse` names.
  using Collapse = bool (*)(PlacementKind);
  void ClassCoords(int64_t rank, const std::vector<std::string>& placements, Collapse collapse,
                   std::span<int64_t> c) const {
    std::fill(c.begin(), c.end(), 0);
    for (size_t d = mesh_.size(); d-- > 0;) {
      if (mesh_[d] <= 0) break;
      c[d] = rank % mesh_[d];
      rank /= mesh_[d];
    }
    for (size_t d = 0; d < c.size() && d < placements.size(); ++d)
      if (collapse(KindOf(placements[d]))) c[d] = -1;
  }

  std::string ClassKey(int64_t rank, const std::vector<std::string>& placements, Collapse collapse) const {
    std::vector<int64_t> c(mesh_.size());
    ClassCoords(rank, placements, collapse, c);
    return detail::FormatInts(c);
  }

  // Whether the ranks of each class hold equal values, found without text (ClassKey's text is one
  // per coordinates and each value's text one per value): then no class's vote has a deviant.
  template <typename Value>
  bool ClassesAgree(const std::vector<std::pair<int64_t, Value>>& values,
                    const std::vector<std::string>& placements, Collapse collapse) const {
    const size_t dims = mesh_.size();
    std::vector<int64_t> coords(values.size() * dims);
    for (size_t i = 0; i < values.size(); ++i)
      ClassCoords(values[i].first, placements, collapse, std::span(coords).subspan(i * dims, dims));
    auto key = [&](size_t i) { return std::span<const int64_t>(coords).subspan(i * dims, dims); };
    std::vector<size_t> order(values.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return std::ranges::lexicographical_compare(key(x), key(y)); });
    for (size_t k = 1; k < order.size(); ++k) {
      if (std::ranges::equal(key(order[k - 1]), key(order[k])) &&
          !(values[order[k - 1]].second == values[order[k]].second))
        return false;
    }
    return true;
  }

  struct Shard {
    const SharedVec<int64_t>* shape;
    const SharedVec<int64_t>* offset;
    bool operator==(const Shard& o) const { return *shape == *o.shape && *offset == *o.offset; }
  };
  // Shards by rank; a rank's second record of one redistribute id replaces its first.
  using Shards = std::vector<std::pair<int64_t, Shard>>;
  static void Put(Shards& shards, int64_t rank, Shard s) {
    if (!shards.empty() && shards.back().first == rank)
      shards.back().second = s;
    else
      shards.emplace_back(rank, s);
  }

  void CheckShapes(int64_t id, const std::vector<const RedistributeRecord*>& recs) {
    const RedistributeBegin& b = recs.front()->begin;
    Shards before, after;
    before.reserve(recs.size());
    after.reserve(recs.size());
    std::vector<const StepRecord*> steps;
    for (const RedistributeRecord* r : recs) {
      steps.clear();
      for (const StepRecord& s : r->steps) steps.push_back(&s);
      std::sort(steps.begin(), steps.end(), [](auto* x, auto* y) { return x->begin->step < y->begin->step; });
      if (steps.empty() || !steps.back()->end) continue;
      Put(before, r->rank,
          {&steps.front()->begin->local_shape_before, &steps.front()->begin->global_offset_before});
      Put(after, r->rank, {&steps.back()->end->local_shape_after, &steps.back()->end->global_offset_after});
      // One rank's steps chain: a step starts from the shard the previous one left.
      for (size_t k = 0; k + 1 < steps.size(); ++k) {
        if (!steps[k]->end) continue;
        const StepEnd& e = *steps[k]->end;
        const StepBegin& n = steps[k + 1]->begin;
        if (e.local_shape_after != n.local_shape_before || e.global_offset_after != n.global_offset_before) {
          ReportRedistribute(MismatchClass::kShape, {r->rank}, id, n.step,
                             Subject(b) + ": rank " + std::to_string(r->rank) + " ends step " +
                                 std::to_string(steps[k]->begin->step) + " with shape " +
                                 detail::FormatInts(e.local_shape_after) + " offset " +
                                 detail::FormatInts(e.global_offset_after) + " but starts step " +
                                 std::to_string(n.step) + " from shape " +
                                 detail::FormatInts(n.local_shape_before) + " offset " +
                                 detail::FormatInts(n.global_offset_before));
          return;
        }
      }
    }
    if (before.empty()) return;
    if (!CheckLayout(id, b, "before", before, b.src_placements())) return;
    CheckLayout(id, b, "after", after, b.dst_placements());
  }

  bool CheckLayout(int64_t id, const RedistributeBegin& b, const std::string& when, const Shards& shards,
                   const std::vector<std::string>& placements) {
    const std::vector<int64_t>& global = b.global_shape();
    // Each shard lies inside the global tensor.
    for (const auto& [rank, shard] : shards) {
      const std::vector<int64_t>& shape = *shard.shape;
      const std::vector<int64_t>& offset = *shard.offset;
      bool ok = shape.size() == global.size() && offset.size() == global.size();
      for (size_t d = 0; ok && d < global.size(); ++d) {
        ok = shape[d] >= 0 && shape[d] <= global[d] && offset[d] >= 0 && offset[d] <= global[d] &&
             (shape[d] == 0 || offset[d] + shape[d] <= global[d]);
      }
      if (!ok) {
        ReportRedistribute(MismatchClass::kShape, {rank}, id, std::nullopt,
                           Subject(b) + ": " + when + ": rank " + std::to_string(rank) + " holds shape " +
                               detail::FormatInts(shape) + " at offset " + detail::FormatInts(offset) +
                               ", outside the global shape " + detail::FormatInts(global));
        return false;
      }
    }
    // Ranks that differ only along Replicate or Partial mesh dims hold the same index set.
    Collapse unsharded = [](PlacementKind k) { return k != PlacementKind::kShard; };
    if (!ClassesAgree(shards, placements, unsharded)) {
      std::map<std::string, std::vector<std::pair<int64_t, std::string>>> classes;
      for (const auto& [rank, shard] : shards) {
        classes[ClassKey(rank, placements, unsharded)].emplace_back(
            rank,
            "shape " + detail::FormatInts(*shard.shape) + " offset " + detail::FormatInts(*shard.offset));
      }
      for (const auto& [key, values] : classes) {
        Vote vote = Majority(values);
        if (vote.deviants.empty()) continue;
        ReportRedistribute(MismatchClass::kShape, vote.deviants, id, std::nullopt,
                           Subject(b) + ": " + when + ": shards replicated under " +
                               detail::JoinComma(placements) + " differ: " + VoteText(values, vote));
        return false;
      }
    }
    // Every element is held by exactly (product of the Replicate/Partial mesh extents) ranks, so
    // the shards' element counts add up to numel x that product (decidable with every rank).
    if (static_cast<int64_t>(shards.size()) != model_.world) return true;
    int64_t expected = 1, held = 0;
    bool overflow = false;
    for (int64_t e : global) overflow = overflow || __builtin_mul_overflow(expected, e, &expected);
    for (size_t d = 0; d < mesh_.size() && d < placements.size(); ++d) {
      if (KindOf(placements[d]) != PlacementKind::kShard)
        overflow = overflow || __builtin_mul_overflow(expected, mesh_[d], &expected);
    }
    for (const auto& [rank, shard] : shards) {
      int64_t numel = 1;
      for (int64_t e : *shard.shape) overflow = overflow || __builtin_mul_overflow(numel, e, &numel);
      overflow = overflow || __builtin_add_overflow(held, numel, &held);
    }
    if (!overflow && held != expected) {
      ReportRedistribute(MismatchClass::kShape, {}, id, std::nullopt,
                         Subject(b) + ": " + when + ": the shards hold " + std::to_string(held) +
                             " elements in total, but " + detail::JoinComma(placements) + " over mesh " +
                             detail::FormatInts(mesh_) + " needs " + std::to_string(expected));
      return false;
    }
    return true;
  }

  void CheckChecksums(int64_t id, const std::vector<const RedistributeRecord*>& recs, bool after) {
    const RedistributeBegin& b = recs.front()->begin;
    const std::vector<std::string>& placements = after ? b.dst_placements() : b.src_placements();
    // Only Replicate dims repeat the data; Partial ranks hold different partial values.
    Collapse replicated = [](PlacementKind k) { return k == PlacementKind::kReplicate; };
    std::vector<std::pair<int64_t, uint64_t>> sums;
    for (const RedistributeRecord* r : recs) {
      const std::optional<uint64_t>& sum = after ? r->end->checksum_after() : r->end->checksum_before();
      if (sum) sums.emplace_back(r->rank, *sum);
    }
    if (ClassesAgree(sums, placements, replicated)) return;
    std::map<std::string, std::vector<std::pair<int64_t, std::string>>> classes;
    for (const auto& [rank, sum] : sums)
      classes[ClassKey(rank, placements, replicated)].emplace_back(rank, std::to_string(sum));
    for (const auto& [key, values] : classes) {
      Vote vote = Majority(values);
      if (vote.deviants.empty()) continue;
      ReportRedistribute(MismatchClass::kChecksum, vote.deviants, id, std::nullopt,
                         Subject(b) + ": checksum " + (after ? "after" : "before") +
                             " differs between replicas under " + detail::JoinComma(placements) + ": " +
                             VoteText(values, vote));
      return;
    }
  }

  const Model& model_;
  std::set<int64_t> with_file_;
  std::map<int64_t, int64_t> first_failure_;  ///< rank -> id of the first redistribute it failed
  std::vector<int64_t> mesh_;
  detail::FlightRules flight_;
  CheckResult result_;
};

}  // namespace

CheckResult CheckTrace(const Model& model) { return Checker(model).Run(); }

namespace detail {

CheckResult CheckTraceWith(const Model& model, FlightRules rules) {
  return Checker(model, std::move(rules)).Run();
}

}  // namespace detail

}  // namespace shardscope::trace
