#include "shardscope/trace/check.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <set>
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

using detail::Majority;
using detail::Vote;
using detail::VoteText;

// Who issued a collective: a redistribute step, or an op itself (a halo exchange).
std::string IssuerText(const Collective& c) {
  if (c.redistribute_id < 0) return "op #" + std::to_string(c.op_id);
  return "redistribute #" + std::to_string(c.redistribute_id) + " step " + std::to_string(c.step);
}

std::string CallText(const Collective& c) {
  return c.kind + " on mesh dims " + detail::FormatInts(c.mesh_dims) + " (" + IssuerText(c) + ")";
}

std::string StrategyText(const Op& op) { return detail::OpStrategyText(op, op.chosen); }

std::string OutputsText(const Op& op) { return detail::OpOutputsText(op); }

std::string OpSubject(const Op& op) { return "op #" + std::to_string(op.id) + " " + detail::OpCallText(op); }

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
    const auto by_id = detail::RecordsById(model_);
    for (const auto& [id, recs] : by_id) CheckRedistribute(id, recs);
    result_.redistributes = static_cast<int64_t>(by_id.size());
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
      m.step = at->step;
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
    size_t longest = 0;
    for (const auto& [rank, calls] : g.calls) longest = std::max(longest, calls.size());
    for (size_t n = 0; n < longest; ++n) {
      std::vector<int64_t> have, missing;
      for (const auto& [rank, calls] : g.calls) (calls.size() > n ? have : missing).push_back(rank);
      const Collective& ref = *g.calls.at(have.front())[n];
      std::string where =
          "call " + std::to_string(n) + " of group " + detail::FormatRanks(g.ranks) + ", " + CallText(ref);
      const auto call = static_cast<int64_t>(n);
      if (!missing.empty()) {
        // As for a redistribute (Blamed): a rank the waiting ranks' roll call names is the cause.
        std::vector<int64_t> blamed = missing;
        if (ref.redistribute_id >= 0)
          blamed = Blamed(missing, model_.RedistributesWithId(ref.redistribute_id), ref.redistribute_id);
        if (blamed.empty()) return;  // every missing rank had failed earlier: reported there
        Report(MismatchClass::kMissingRanks, blamed, &ref, &g, call,
               where + ": " + RanksPhrase(missing) + " never issued it; " + RanksPhrase(have) + " did" +
                   (blamed != missing ? "; the ranks that failed found " + RanksPhrase(blamed) +
                                            " missing from their roll call (the others' records were lost)"
                                      : ""));
        return;
      }
      std::map<int64_t, const Collective*> at;
      for (const auto& [rank, calls] : g.calls) at[rank] = calls[n];
      if (!SameSignature(g, call, at, where)) return;
      if (!ConsistentSizes(g, call, at, where)) return;
      ++result_.collectives;
    }
  }

  bool SameSignature(const detail::GroupCalls& g, int64_t call,
                     const std::map<int64_t, const Collective*>& at, const std::string& where) {
    using Field = std::function<std::string(const Collective&)>;
    const std::vector<std::tuple<MismatchClass, std::string, Field>> fields = {
        {MismatchClass::kCollectiveType, "kind", [](const Collective& c) { return c.kind; }},
        {MismatchClass::kCollectiveSequence, "issuer", [](const Collective& c) { return IssuerText(c); }},
        {MismatchClass::kDtype, "dtype", [](const Collective& c) { return c.dtype; }},
        {MismatchClass::kSizeOrSyntax, "group order",
         [](const Collective& c) {
           return detail::FormatRanks(c.group) + " on mesh dims " + detail::FormatInts(c.mesh_dims);
         }},
        {MismatchClass::kSizeOrSyntax, "shape negotiation",
         [](const Collective& c) { return std::string(c.negotiated ? "negotiated" : "not negotiated"); }},
    };
    for (const auto& [cls, noun, field] : fields) {
      std::vector<std::pair<int64_t, std::string>> values;
      for (const auto& [rank, c] : at) values.emplace_back(rank, field(*c));
      Vote vote = Majority(values);
      if (vote.deviants.empty()) continue;
      Report(cls, vote.deviants, at.at(vote.agree.front()), &g, call,
             where + ": " + noun + " differs: " + VoteText(values, vote));
      return false;
    }
    return true;
  }

  bool ConsistentSizes(const detail::GroupCalls& g, int64_t call,
                       const std::map<int64_t, const Collective*>& at, const std::string& where) {
    std::optional<detail::SizeFinding> found = detail::CheckCallSizes(g, at, where);
    if (!found) return true;
    Report(found->kind, std::move(found->culprits), found->at, &g, call, std::move(found->message));
    return false;
  }

  // ---- ops: every rank runs the same program ----

  // Per op id, the ranks' values of each field are put to a vote; a rank is reported once, at its
  // first divergent op (later ops of a diverged rank follow from it).
  void CheckOps() {
    std::map<int64_t, std::map<int64_t, const OpRecord*>> by_id;
    for (const OpRecord& rec : model_.ops) by_id[rec.op->id][rec.rank] = &rec;
    result_.ops = static_cast<int64_t>(by_id.size());
    std::set<int64_t> reported;
    using Field = std::function<std::string(const Op&)>;
    const std::vector<std::pair<std::string, Field>> fields = {
        {"name", [](const Op& op) { return op.name + (op.args.empty() ? "" : "(" + op.args + ")"); }},
        {"inputs",
         [](const Op& op) {
           std::string out;
           for (size_t i = 0; i < op.inputs.size(); ++i) out += (i ? ", " : "") + op.inputs[i].tensor;
           return out;
         }},
        {"chosen strategy", [](const Op& op) { return StrategyText(op); }},
        {"outputs", [](const Op& op) { return OutputsText(op); }},
        {"outcome", [](const Op& op) { return op.ok ? std::string("ok") : "failed: " + op.error; }},
    };
    for (const auto& [id, recs] : by_id) {
      const Op& ref = recs.begin()->second->op;
      const std::string subject = OpSubject(ref);
      std::vector<int64_t> ran, missing;
      for (int64_t r : with_file_) {
        if (reported.count(r)) continue;
        (recs.count(r) ? ran : missing).push_back(r);
      }
      if (ran.empty()) continue;
      if (!missing.empty()) {
        std::vector<std::pair<int64_t, std::string>> values;
        for (int64_t r : with_file_)
          if (!reported.count(r)) values.emplace_back(r, recs.count(r) ? "ran it" : "no op event");
        Vote vote = Majority(values);
        ReportOp(vote.deviants, id,
                 subject + ": " + VoteText(values, vote) + " (first divergent op of " +
                     RanksPhrase(vote.deviants) + ")");
        reported.insert(vote.deviants.begin(), vote.deviants.end());
      }
      for (const auto& [noun, field] : fields) {
        std::vector<std::pair<int64_t, std::string>> values;
        for (const auto& [rank, rec] : recs)
          if (!reported.count(rank)) values.emplace_back(rank, field(rec->op));
        if (values.empty()) break;
        Vote vote = Majority(values);
        if (vote.deviants.empty() && noun == "outcome" && values.front().second != "ok") {
          // Every rank failed this op the same way: consistent, but not clean.
          std::vector<int64_t> all;
          for (const auto& v : values) all.push_back(v.first);
          ReportOp(all, id, subject + ": every rank " + values.front().second);
          reported.insert(all.begin(), all.end());
          break;
        }
        if (vote.deviants.empty()) continue;
        ReportOp(vote.deviants, id,
                 subject + ": " + noun + " differs across ranks: " + VoteText(values, vote) +
                     " (first divergent op of " + RanksPhrase(vote.deviants) + ")");
        reported.insert(vote.deviants.begin(), vote.deviants.end());
      }
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
           (b.tensor.empty() ? "<anonymous>" : Printable(b.tensor)) + " " +
           detail::FormatInts(b.global_shape) + " " + detail::JoinComma(b.src_placements) + " -> " +
           detail::JoinComma(b.dst_placements) + ")";
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
    const std::string subject = Subject(first);
    std::vector<int64_t> began, never;
    for (const RedistributeRecord* r : recs) began.push_back(r->rank);
    const std::set<int64_t> began_set(began.begin(), began.end());
    for (int64_t r : with_file_)
      if (began_set.count(r) == 0) never.push_back(r);
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
      ReportRedistribute(
          MismatchClass::kState, blamed, id, std::nullopt,
          subject + ": " + RanksPhrase(never) + " never began it; " + RanksPhrase(began) + " did" + note);
    }

    using Field = std::function<std::string(const RedistributeBegin&)>;
    const std::vector<std::pair<std::string, Field>> fields = {
        {"tensor", [](const RedistributeBegin& b) { return b.tensor; }},
        {"global shape", [](const RedistributeBegin& b) { return detail::FormatInts(b.global_shape); }},
        {"dtype", [](const RedistributeBegin& b) { return b.dtype; }},
        {"source placements",
         [](const RedistributeBegin& b) { return detail::JoinComma(b.src_placements) + " " + b.src_order; }},
        {"target placements",
         [](const RedistributeBegin& b) { return detail::JoinComma(b.dst_placements) + " " + b.dst_order; }},
        {"planner", [](const RedistributeBegin& b) { return b.planner; }},
        {"plan", [](const RedistributeBegin& b) { return b.notation; }},
    };
    bool same_spec = true;
    for (const auto& [noun, field] : fields) {
      std::vector<std::pair<int64_t, std::string>> values;
      for (const RedistributeRecord* r : recs) values.emplace_back(r->rank, field(r->begin));
      Vote vote = Majority(values);
      if (vote.deviants.empty()) continue;
      ReportRedistribute(MismatchClass::kRedistribute, vote.deviants, id, std::nullopt,
                         subject + ": " + noun + " differs across ranks: " + VoteText(values, vote));
      same_spec = false;
      break;
    }

    std::vector<std::pair<int64_t, std::string>> outcomes;
    for (const RedistributeRecord* r : recs) {
      std::string o = !r->end ? "incomplete" : r->end->ok ? "ok" : "failed";
      outcomes.emplace_back(r->rank, o);
    }
    Vote vote = Majority(outcomes);
    if (!vote.deviants.empty()) {
      std::string detail;
      for (const RedistributeRecord* r : recs) {
        if (std::find(vote.deviants.begin(), vote.deviants.end(), r->rank) == vote.deviants.end()) continue;
        if (!r->end) {
          int64_t last = -1;
          for (const StepRecord& s : r->steps) last = std::max(last, s.begin->step);
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
          subject + ": outcome differs: " + VoteText(outcomes, vote) + detail + Waited(blamed));
    }
    std::string waited_note;
    if (vote.deviants.empty() && !outcomes.empty() && outcomes.front().second != "ok") {
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
                         subject + ": " +
                             (first->end ? "every rank failed it (rank " + std::to_string(first->rank) +
                                               ": " + first->end->error + ")"
                                         : std::string("no rank finished it (the job ended inside it)")) +
                             Waited(blamed) + waited_note);
    }
    bool all_ok = std::all_of(recs.begin(), recs.end(), [](auto* r) { return r->end && r->end->ok; });
    if (same_spec && all_ok) {
      CheckShapes(id, subject, recs);
      CheckChecksums(id, subject, recs, true);
      CheckChecksums(id, subject, recs, false);
    }
  }

  std::vector<int64_t> Coord(int64_t rank) const {
    std::vector<int64_t> c(mesh_.size(), 0);
    for (size_t d = mesh_.size(); d-- > 0;) {
      if (mesh_[d] <= 0) return c;
      c[d] = rank % mesh_[d];
      rank /= mesh_[d];
    }
    return c;
  }

  // Ranks that must hold the same data under `placements` share a key: their coordinates agree on
  // every mesh dim that is not collapsed (`collapse` says which placement kinds are collapsed).
  std::string ClassKey(int64_t rank, const std::vector<std::string>& placements,
                       const std::function<bool(PlacementKind)>& collapse) const {
    std::vector<int64_t> c = Coord(rank);
    for (size_t d = 0; d < c.size() && d < placements.size(); ++d)
      if (collapse(KindOf(placements[d]))) c[d] = -1;
    return detail::FormatInts(c);
  }

  struct Shard {
    std::vector<int64_t> shape, offset;
  };

  void CheckShapes(int64_t id, const std::string& subject,
                   const std::vector<const RedistributeRecord*>& recs) {
    const RedistributeBegin& b = recs.front()->begin;
    std::map<int64_t, Shard> before, after;
    for (const RedistributeRecord* r : recs) {
      std::vector<const StepRecord*> steps;
      for (const StepRecord& s : r->steps) steps.push_back(&s);
      std::sort(steps.begin(), steps.end(), [](auto* x, auto* y) { return x->begin->step < y->begin->step; });
      if (steps.empty() || !steps.back()->end) continue;
      before[r->rank] = {steps.front()->begin->local_shape_before,
                         steps.front()->begin->global_offset_before};
      after[r->rank] = {steps.back()->end->local_shape_after, steps.back()->end->global_offset_after};
      // One rank's steps chain: a step starts from the shard the previous one left.
      for (size_t k = 0; k + 1 < steps.size(); ++k) {
        if (!steps[k]->end) continue;
        const StepEnd& e = *steps[k]->end;
        const StepBegin& n = steps[k + 1]->begin;
        if (e.local_shape_after != n.local_shape_before || e.global_offset_after != n.global_offset_before) {
          ReportRedistribute(MismatchClass::kShape, {r->rank}, id, n.step,
                             subject + ": rank " + std::to_string(r->rank) + " ends step " +
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
    if (!CheckLayout(id, subject, "before", before, b.src_placements, b.global_shape)) return;
    CheckLayout(id, subject, "after", after, b.dst_placements, b.global_shape);
  }

  bool CheckLayout(int64_t id, const std::string& subject, const std::string& when,
                   const std::map<int64_t, Shard>& shards, const std::vector<std::string>& placements,
                   const std::vector<int64_t>& global) {
    // Each shard lies inside the global tensor.
    for (const auto& [rank, s] : shards) {
      bool ok = s.shape.size() == global.size() && s.offset.size() == global.size();
      for (size_t d = 0; ok && d < global.size(); ++d) {
        ok = s.shape[d] >= 0 && s.shape[d] <= global[d] && s.offset[d] >= 0 && s.offset[d] <= global[d] &&
             (s.shape[d] == 0 || s.offset[d] + s.shape[d] <= global[d]);
      }
      if (!ok) {
        ReportRedistribute(MismatchClass::kShape, {rank}, id, std::nullopt,
                           subject + ": " + when + ": rank " + std::to_string(rank) + " holds shape " +
                               detail::FormatInts(s.shape) + " at offset " + detail::FormatInts(s.offset) +
                               ", outside the global shape " + detail::FormatInts(global));
        return false;
      }
    }
    // Ranks that differ only along Replicate or Partial mesh dims hold the same index set.
    std::map<std::string, std::vector<std::pair<int64_t, std::string>>> classes;
    for (const auto& [rank, s] : shards) {
      std::string key =
          ClassKey(rank, placements, [](PlacementKind k) { return k != PlacementKind::kShard; });
      classes[key].emplace_back(
          rank, "shape " + detail::FormatInts(s.shape) + " offset " + detail::FormatInts(s.offset));
    }
    for (const auto& [key, values] : classes) {
      Vote vote = Majority(values);
      if (vote.deviants.empty()) continue;
      ReportRedistribute(MismatchClass::kShape, vote.deviants, id, std::nullopt,
                         subject + ": " + when + ": shards replicated under " +
                             detail::JoinComma(placements) + " differ: " + VoteText(values, vote));
      return false;
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
    for (const auto& [rank, s] : shards) {
      int64_t numel = 1;
      for (int64_t e : s.shape) overflow = overflow || __builtin_mul_overflow(numel, e, &numel);
      overflow = overflow || __builtin_add_overflow(held, numel, &held);
    }
    if (!overflow && held != expected) {
      ReportRedistribute(MismatchClass::kShape, {}, id, std::nullopt,
                         subject + ": " + when + ": the shards hold " + std::to_string(held) +
                             " elements in total, but " + detail::JoinComma(placements) + " over mesh " +
                             detail::FormatInts(mesh_) + " needs " + std::to_string(expected));
      return false;
    }
    return true;
  }

  void CheckChecksums(int64_t id, const std::string& subject,
                      const std::vector<const RedistributeRecord*>& recs, bool after) {
    const RedistributeBegin& b = recs.front()->begin;
    const std::vector<std::string>& placements = after ? b.dst_placements : b.src_placements;
    // Only Replicate dims repeat the data; Partial ranks hold different partial values.
    std::map<std::string, std::vector<std::pair<int64_t, std::string>>> classes;
    for (const RedistributeRecord* r : recs) {
      const std::optional<uint64_t>& sum = after ? r->end->checksum_after : r->end->checksum_before;
      if (!sum) continue;
      std::string key =
          ClassKey(r->rank, placements, [](PlacementKind k) { return k == PlacementKind::kReplicate; });
      classes[key].emplace_back(r->rank, std::to_string(*sum));
    }
    for (const auto& [key, values] : classes) {
      Vote vote = Majority(values);
      if (vote.deviants.empty()) continue;
      ReportRedistribute(MismatchClass::kChecksum, vote.deviants, id, std::nullopt,
                         subject + ": checksum " + (after ? "after" : "before") +
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
