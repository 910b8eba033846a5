// Triage of Flight Recorder dumps (docs/triage.md). The dumps are reduced to one compact record per
// entry (TEntry); the analysis then (1) votes on every collective's signature across its group,
// (2) builds a wait-for graph whose nodes are ranks and stuck collectives (a rank waits in its
// oldest incomplete collective; a started collective waits for the members that have not started
// it; a scheduled one waits for its own stream, so for nothing older on that rank), (3) takes the
// terminal strongly connected components reachable from the blocked ranks as the root causes and
// classifies each, and (4) without a hang or mismatch, looks for a straggler in the durations (in
// profiler traces, in the arrivals AnalyzeKineto computed: triage_kineto.cpp).
#include "shardscope/trace/triage.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "shardscope/error.hpp"
#include "shardscope/files.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/kineto.hpp"
#include "shardscope/trace/kineto_diff.hpp"
#include "triage_kineto.hpp"

namespace shardscope::trace {

namespace fs = std::filesystem;

namespace {

enum : uint8_t { kScheduled = 0, kStarted = 1, kCompleted = 2 };

struct TEntry {
  int64_t seq = 0;        // collective_seq_id (p2p: p2p_seq_id)
  int64_t record_id = 0;  // order on the rank
  int64_t dur_ns = -1;    // completed: end - start on the rank's own clock
  int32_t group = 0;
  int32_t peer = -1;  // p2p: the global peer
  uint32_t sig = 0;   // interned profiling name, sizes and dtypes
  uint8_t state = kScheduled;
  bool p2p = false;
  bool send = false;
};

struct TGroup {
  std::string name, desc;
  std::vector<int64_t> ranks;   // pg order
  std::vector<int64_t> sorted;  // ascending
};

struct TRank {
  bool dump = false;
  bool wrapped = false;
  std::vector<TEntry> entries;  // record order
};

// An entry's signature by identity: its interned profiling name and its shared size and dtype lists.
using FlightKey = std::tuple<const void*, const void*, const void*, const void*, const void*>;
struct FlightKeyHash {
  template <typename... P>
  size_t operator()(const std::tuple<P...>& t) const {
    size_t h = 0;
    std::apply([&](auto... p) { ((h = h * 1000003u ^ std::hash<const void*>()(p)), ...); }, t);
    return h;
  }
  size_t operator()(const std::pair<const void*, const void*>& p) const {
    return std::hash<const void*>()(p.first) * 1000003u ^ std::hash<const void*>()(p.second);
  }
};

// Everything triage keeps of the input; filled from models (several threads, one file each).
class Store {
 public:
  std::vector<TGroup> groups;
  std::vector<std::string> sigs;  // interned signatures
  std::map<int64_t, TRank> ranks;
  int64_t world = 0;
  std::vector<std::string> notes;

  void Add(const Model& model) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      world = std::max(world, model.world);
    }
    for (const RankTrace& rt : model.ranks) AddRank(rt, model.world);
  }

  // One rank's collectives; `rank_world` is the world its model (or dump) names. Thread-safe.
  void AddRank(const RankTrace& rt, int64_t rank_world) {
    static const IStr kCompletedState("completed"), kStartedState("started");
    TRank tr;
    tr.dump = true;
    // Per rank, by identity: a dump's entries share their interned strings and their lists, so the
    // group and signature of an entry are looked up by pointers, not by building their text.
    std::unordered_map<FlightKey, uint32_t, FlightKeyHash> flight_sigs;
    std::unordered_map<std::pair<const void*, const void*>, int32_t, FlightKeyHash> flight_groups;
    std::unordered_map<std::string, int32_t> group_cache;
    std::unordered_map<std::string, uint32_t> sig_cache;
    bool first = true;
    int64_t seq_fallback = 0;
    std::map<std::vector<int64_t>, int64_t> plain_seq;  // shardscope traces: per group order
    const std::vector<Collective>& collectives = rt.events.Of<Collective>();
    tr.entries.reserve(collectives.size());
    for (const Collective& c : collectives) {
      TEntry e;
      if (c.HasFlight()) {
        const FlightRecord& f = c.flight;
        const FlightShape& shape = c.flight_shape();
        if (first) tr.wrapped = f.record_id > 0;
        e.record_id = f.record_id;
        e.state = shape.state == kCompletedState ? kCompleted
                  : shape.state == kStartedState ? kStarted
                                                 : kScheduled;
        e.p2p = shape.is_p2p;
        e.seq = shape.is_p2p ? f.p2p_seq_id : f.seq_id;
        const FlightKey key{&shape.profiling_name.str(), &shape.input_sizes.get(), &shape.output_sizes.get(),
                            &shape.input_dtypes.get(), &shape.output_dtypes.get()};
        auto sit = flight_sigs.find(key);
        if (sit == flight_sigs.end()) {
          const std::string sig = shape.profiling_name + "|" + SizesText(shape.input_sizes) + "|" +
                                  SizesText(shape.output_sizes) + "|" + JoinText(shape.input_dtypes) + "|" +
                                  JoinText(shape.output_dtypes);
          sit = flight_sigs.emplace(key, InternSig(sig)).first;
        }
        e.sig = sit->second;
        auto git = flight_groups.find({&shape.pg_name.str(), &c.group().get()});
        if (git == flight_groups.end())
          git =
              flight_groups
                  .emplace(std::make_pair(&shape.pg_name.str(), &c.group().get()), GroupOf(shape, c.group()))
                  .first;
        e.group = git->second;
        if (shape.is_p2p) ParsePeer(shape.profiling_name, c.group(), e);
      } else {
        // A shardscope trace: every recorded collective completed; seq ids count per group.
        std::vector<int64_t> key(c.group().begin(), c.group().end());
        const std::string pg_name = FormatRankRanges(Sorted(key));
        e.record_id = seq_fallback++;
        e.state = kCompleted;
        e.seq = ++plain_seq[key];
        const std::string sig =
            std::string(c.kind().view()) + "|" + std::string(c.dtype().view()) + "|" +
            std::to_string(std::accumulate(c.bytes_sent().begin(), c.bytes_sent().end(), int64_t{0}));
        auto git = group_cache.find(pg_name);
        if (git == group_cache.end()) {
          std::vector<int64_t> ranks(c.group().begin(), c.group().end());
          git = group_cache.emplace(pg_name, InternGroup(pg_name, "", std::move(ranks))).first;
        }
        e.group = git->second;
        auto sit = sig_cache.find(sig);
        if (sit == sig_cache.end()) sit = sig_cache.emplace(sig, InternSig(sig)).first;
        e.sig = sit->second;
      }
      first = false;
      if (e.state == kCompleted) e.dur_ns = std::max<int64_t>(0, c.end_ns - c.start_ns);
      tr.entries.push_back(e);
    }
    const int64_t r = rt.header.rank;
    std::lock_guard<std::mutex> lock(mutex_);
    world = std::max(world, rank_world);
    if (ranks.count(r) && ranks[r].dump)
      throw InvalidInput("triage: two inputs hold rank " + std::to_string(r));
    ranks[r] = std::move(tr);
  }

  static std::vector<int64_t> Sorted(std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
  }

 private:
  static std::string SizesText(const std::vector<std::vector<int64_t>>& shapes) {
    std::string s;
    for (const auto& shape : shapes) {
      s += '[';
      for (int64_t x : shape) s += std::to_string(x) + ',';
      s += ']';
    }
    return s;
  }
  static std::string JoinText(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += x + ',';
    return s;
  }
  // "nccl:send 1->2" / "nccl:recv 2<-1": group ranks; the peer as a global rank.
  static void ParsePeer(const std::string& name, const SharedVec<int64_t>& group, TEntry& e) {
    const bool send = name.find("send") != std::string::npos;
    const size_t arrow = name.find(send ? "->" : "<-");
    e.send = send;
    if (arrow == std::string::npos) return;
    int64_t peer = 0;
    size_t i = arrow + 2;
    bool digits = false;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
      peer = peer * 10 + (name[i++] - '0');
      digits = true;
      if (peer > kMaxRanks) return;
    }
    if (digits && peer < static_cast<int64_t>(group.size())) e.peer = static_cast<int32_t>(group[peer]);
  }
  int32_t InternGroup(const std::string& name, const std::string& desc, std::vector<int64_t> ranks) {
    std::vector<int64_t> sorted = Sorted(ranks);
    std::lock_guard<std::mutex> lock(mutex_);
    auto key = std::make_pair(name, sorted);
    auto it = group_ids_.find(key);
    if (it != group_ids_.end()) return it->second;
    const auto id = static_cast<int32_t>(groups.size());
    groups.push_back({name, desc, std::move(ranks), std::move(sorted)});
    group_ids_.emplace(std::move(key), id);
    return id;
  }
  // The group of a dump's entry: the reader shares one rank list among every file that names it, so
  // groups are found by (name, list) address first; the list is kept so that its address stays its own.
  int32_t GroupOf(const FlightShape& f, const SharedVec<int64_t>& group) {
    const std::pair<const void*, const void*> key{&f.pg_name.str(), &group.get()};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = group_by_address_.find(key);
      if (it != group_by_address_.end()) return it->second;
    }
    const int32_t id = InternGroup(f.pg_name, f.pg_desc, std::vector<int64_t>(group.begin(), group.end()));
    std::lock_guard<std::mutex> lock(mutex_);
    group_by_address_.emplace(key, id);
    group_lists_.push_back(group);
    return id;
  }
  uint32_t InternSig(const std::string& sig) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sig_ids_.find(sig);
    if (it != sig_ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(sigs.size());
    sigs.push_back(sig);
    sig_ids_.emplace(sig, id);
    return id;
  }
  std::mutex mutex_;
  std::map<std::pair<std::string, std::vector<int64_t>>, int32_t> group_ids_;
  std::unordered_map<std::string, uint32_t> sig_ids_;
  std::unordered_map<std::pair<const void*, const void*>, int32_t, FlightKeyHash> group_by_address_;
  std::vector<SharedVec<int64_t>> group_lists_;  // keeps the addresses of group_by_address_ taken
};

std::string SigName(const std::string& sig) { return sig.substr(0, sig.find('|')); }

// "kind" / "size" / "dtype": how two signatures differ (profiling name, sizes, dtypes).
std::string SigDiff(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t i = 0; i <= s.size(); ++i) {
      if (i == s.size() || s[i] == '|') {
        parts.push_back(s.substr(start, i - start));
        start = i + 1;
      }
    }
    parts.resize(5);
    return parts;
  };
  auto pa = split(a), pb = split(b);
  if (pa[0] != pb[0]) return "kind";
  if (pa[1] != pb[1] || pa[2] != pb[2]) return "size";
  return "dtype";
}

std::string Pretty(const std::string& sig) {
  // "nccl:all_reduce|[4096,]|[4096,]|Float,|Float," -> "nccl:all_reduce in [4096] out [4096] Float"
  std::vector<std::string> p;
  size_t start = 0;
  for (size_t i = 0; i <= sig.size(); ++i)
    if (i == sig.size() || sig[i] == '|') {
      p.push_back(sig.substr(start, i - start));
      start = i + 1;
    }
  p.resize(5);
  auto clean = [](std::string s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == ',' && (i + 1 == s.size() || s[i + 1] == ']')) continue;
      if (s[i] == ']' && i + 1 < s.size() && s[i + 1] == '[') {
        out += "], ";
        continue;
      }
      out += s[i] == ',' ? ", " : std::string(1, s[i]);
    }
    return out;
  };
  return p[0] + " in " + clean(p[1]) + " out " + clean(p[2]) + " " + clean(p[3]);
}

class Analyzer {
 public:
  /// `kineto`: the cross-rank analysis of profiler traces (stragglers from arrivals), else null.
  Analyzer(Store& s, const TriageMesh& mesh, const KinetoAnalysis* kineto = nullptr)
      : s_(s), mesh_(mesh), kineto_(kineto) {}

  TriageResult Run() {
    result_.world = std::max<int64_t>(s_.world, s_.ranks.empty() ? 0 : s_.ranks.rbegin()->first + 1);
    for (const auto& [r, tr] : s_.ranks) {
      if (tr.dump) ++result_.dumps;
      result_.entries += static_cast<int64_t>(tr.entries.size());
    }
    IndexMembers();
    Vote();
    BuildGraph();
    FindRoots();
    result_.profiler = kineto_ != nullptr;
    if (result_.roots.empty() && blocked_.empty()) {
      if (kineto_ != nullptr)
        KinetoStragglers();
      else
        Stragglers();
    }
    Finish();
    return std::move(result_);
  }

 private:
  // One rank's entries of one group: positions into TRank::entries, in seq order.
  struct Member {
    int64_t rank = 0;
    const TRank* tr = nullptr;  // nullptr: no dump
    std::vector<uint32_t> colls;
    std::vector<uint32_t> p2p;
    int64_t first_seq = 0, last_seq = -1;  // collectives held
    const TEntry* At(int64_t seq) const {
      if (colls.empty() || seq < first_seq || seq > last_seq) return nullptr;
      uint64_t i = static_cast<uint64_t>(seq) - static_cast<uint64_t>(first_seq);
      if (i < colls.size() && tr->entries[colls[i]].seq == seq) return &tr->entries[colls[i]];
      auto it = std::lower_bound(colls.begin(), colls.end(), seq,
                                 [&](uint32_t k, int64_t s) { return tr->entries[k].seq < s; });
      return it != colls.end() && tr->entries[*it].seq == seq ? &tr->entries[*it] : nullptr;
    }
  };
  struct GroupIndex {
    std::vector<Member> members;  // sorted by rank
    std::unordered_map<int64_t, size_t> pos;
    Member* Find(int64_t r) {
      auto it = pos.find(r);
      return it == pos.end() ? nullptr : &members[it->second];
    }
  };
  struct Deviance {
    std::vector<int64_t> ranks;
    int64_t seq = 0;
    std::string cls;
    std::string evidence;
  };

  void IndexMembers() {
    gi_.resize(s_.groups.size());
    for (size_t g = 0; g < s_.groups.size(); ++g) {
      for (int64_t r : s_.groups[g].sorted) {
        Member m;
        m.rank = r;
        auto it = s_.ranks.find(r);
        m.tr = it != s_.ranks.end() && it->second.dump ? &it->second : nullptr;
        gi_[g].pos[r] = gi_[g].members.size();
        rank_groups_[r].push_back(static_cast<int32_t>(g));
        gi_[g].members.push_back(std::move(m));
      }
    }
    for (auto& [r, tr] : s_.ranks) {
      for (size_t k = 0; k < tr.entries.size(); ++k) {
        const TEntry& e = tr.entries[k];
        Member* m = gi_[e.group].Find(r);
        if (m == nullptr) continue;  // the reader refuses such a dump; be safe
        if (e.p2p) {
          m->p2p.push_back(static_cast<uint32_t>(k));
        } else if (m->colls.empty() || tr.entries[m->colls.back()].seq < e.seq) {
          if (m->colls.empty()) m->first_seq = e.seq;
          m->colls.push_back(static_cast<uint32_t>(k));
          m->last_seq = e.seq;
        }
      }
    }
  }

  // The members of group g holding collective `seq` with their entry (cached: a deadlock asks the
  // same few per group for every rank of a cycle).
  const std::vector<std::pair<int64_t, const TEntry*>>& Holders(size_t g, int64_t seq) {
    auto key = std::make_pair(g, seq);
    auto it = holders_.find(key);
    if (it != holders_.end()) return it->second;
    std::vector<std::pair<int64_t, const TEntry*>> out;
    for (const Member& m : gi_[g].members)
      if (m.tr)
        if (const TEntry* e = m.At(seq)) out.emplace_back(m.rank, e);
    return holders_.emplace(key, std::move(out)).first->second;
  }

  // The sequence ids some member holds, ascending (a dump's ids may have any gaps).
  std::vector<int64_t> Seqs(const GroupIndex& G) const {
    std::vector<int64_t> seqs;
    for (const Member& m : G.members)
      for (uint32_t k : m.colls) seqs.push_back(m.tr->entries[k].seq);
    std::sort(seqs.begin(), seqs.end());
    seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
    return seqs;
  }

  // ---- (1) signatures voted per collective ----
  void Vote() {
    for (size_t g = 0; g < gi_.size(); ++g) {
      GroupIndex& G = gi_[g];
      std::set<int64_t> deviant_ranks;
      for (int64_t seq : Seqs(G)) {
        uint32_t ref = 0;
        bool have = false, differ = false;
        for (const Member& m : G.members) {
          const TEntry* e = m.At(seq);
          if (!e) continue;
          if (!have)
            ref = e->sig, have = true;
          else if (e->sig != ref)
            differ = true;
        }
        if (!differ) continue;
        std::map<uint32_t, std::vector<int64_t>> by;
        for (const Member& m : G.members)
          if (const TEntry* e = m.At(seq)) by[e->sig].push_back(m.rank);
        uint32_t major = 0;
        size_t best = 0, second = 0;
        for (const auto& [sig, rs] : by) {
          if (rs.size() > best)
            second = best, best = rs.size(), major = sig;
          else if (rs.size() > second)
            second = rs.size();
        }
        if (best == second) {
          result_.notes.push_back(GroupText(g) + " seq " + std::to_string(seq) +
                                  ": the members disagree with no majority; no rank is blamed for it");
          continue;
        }
        for (const auto& [sig, rs] : by) {
          if (sig == major) continue;
          std::vector<int64_t> fresh;
          for (int64_t r : rs)
            if (!deviant_ranks.count(r)) fresh.push_back(r);
          if (fresh.empty()) continue;
          for (int64_t r : fresh) deviant_ranks.insert(r);
          Deviance d;
          d.ranks = fresh;
          d.seq = seq;
          const std::string& a = s_.sigs[major];
          const std::string& b = s_.sigs[sig];
          d.cls = SigDiff(a, b) + "_mismatch";
          // Seq ids shifted: the deviant's seq matches the majority's next (it skipped one) or its
          // next matches the majority's seq (it issued an extra one).
          const Member* dm = G.Find(fresh.front());
          std::optional<uint32_t> major_next;
          for (const Member& m : G.members) {
            if (deviant_ranks.count(m.rank)) continue;
            const TEntry* e = m.At(seq);
            if (e && e->sig == major) {
              if (const TEntry* n = m.At(seq + 1)) major_next = n->sig;
              break;
            }
          }
          const TEntry* own_next = dm ? dm->At(seq + 1) : nullptr;
          if (major_next && *major_next == sig && *major_next != major)
            d.cls = "skipped_collective";
          else if (own_next && own_next->sig == major && sig != major)
            d.cls = "extra_collective";
          d.evidence = RanksWord(fresh) + " issued " + Pretty(b) + " as seq " + std::to_string(seq) + " of " +
                       GroupText(g) + " where " + std::to_string(best) + " of its members issued " +
                       Pretty(a);
          if (d.cls == "skipped_collective")
            d.evidence += "; its seq " + std::to_string(seq) + " is the others' seq " +
                          std::to_string(seq + 1) +
                          ": it skipped one collective and its seq ids run one ahead from there";
          if (d.cls == "extra_collective")
            d.evidence += "; its seq " + std::to_string(seq + 1) + " is the others' seq " +
                          std::to_string(seq) +
                          ": it issued one collective more and its seq ids run one behind from there";
          deviances_[std::make_pair(static_cast<int32_t>(g), seq)].push_back(d);
        }
      }
    }
  }

  // ---- (2) the wait-for graph ----
  // Nodes: ranks [0, world), then one node per stuck collective.
  struct Coll {
    int32_t group = 0;
    int64_t seq = 0;
    bool p2p = false;
    int64_t owner = -1;  // p2p: the rank whose op it is
    std::vector<int64_t> waiting_for;
    std::vector<int64_t> unknown;  // wrapped buffers holding nothing of the group
  };

  const TEntry* FirstIncomplete(const TRank& tr) const {
    for (const TEntry& e : tr.entries)
      if (e.state != kCompleted) return &e;
    return nullptr;
  }

  // The k-th p2p op of `m` from/to `peer` in direction `send`, or nullptr.
  const TEntry* P2pPartner(int32_t g, int64_t owner, const TEntry& op) {
    // k: how many earlier ops of the owner go the same way to the same peer.
    Member* om = gi_[g].Find(owner);
    int k = 0;
    for (uint32_t i : om->p2p) {
      const TEntry& e = om->tr->entries[i];
      if (&e == &op) break;
      if (e.send == op.send && e.peer == op.peer) ++k;
    }
    Member* pm = op.peer >= 0 ? gi_[g].Find(op.peer) : nullptr;
    if (!pm || !pm->tr) return nullptr;
    for (uint32_t i : pm->p2p) {
      const TEntry& e = pm->tr->entries[i];
      if (e.send != op.send && e.peer == owner && k-- == 0) return &e;
    }
    return nullptr;
  }

  void BuildGraph() {
    const int64_t W = result_.world;
    out_.assign(static_cast<size_t>(W), {});
    // p2p ops with no partner at all, per rank: (op owner, op)
    std::map<int64_t, std::vector<const TEntry*>> unmatched_own;
    std::map<int64_t, std::vector<int64_t>> unmatched_toward;  // peer -> owners whose op lacks it
    for (auto& [r, tr] : s_.ranks) {
      if (!tr.dump) continue;
      const TEntry* f = FirstIncomplete(tr);
      if (!f) continue;
      blocked_.push_back(r);
      first_[r] = f;
      if (f->p2p && f->state == kStarted && !P2pPartner(f->group, r, *f)) {
        unmatched_own[r].push_back(f);
        if (f->peer >= 0) unmatched_toward[f->peer].push_back(r);
      }
    }
    // A p2p mismatch: a rank whose own op has no partner while another rank's op toward it has none
    // either: it posted the wrong peer (or direction), so it is not waiting for a healthy rank.
    for (const auto& [r, ops] : unmatched_own) {
      auto it = unmatched_toward.find(r);
      if (it == unmatched_toward.end()) continue;
      bool wrong = false;
      for (int64_t a : it->second)
        if (a != ops.front()->peer) wrong = true;
      if (wrong) p2p_wrong_[r] = it->second;
    }
    std::map<std::pair<int32_t, int64_t>, int64_t> coll_node;
    for (int64_t r : blocked_) {
      const TEntry* f = first_[r];
      if (f->state == kScheduled) continue;  // waits for its own stream: nothing older is incomplete
      if (p2p_wrong_.count(r)) continue;
      if (f->p2p) {
        const TEntry* partner = P2pPartner(f->group, r, *f);
        Coll c;
        c.group = f->group;
        c.seq = f->seq;
        c.p2p = true;
        c.owner = r;
        if ((!partner || partner->state == kScheduled) && f->peer >= 0) c.waiting_for.push_back(f->peer);
        AddEdge(r, NewColl(std::move(c)));
        continue;
      }
      auto key = std::make_pair(f->group, f->seq);
      auto it = coll_node.find(key);
      if (it == coll_node.end()) {
        Coll c;
        c.group = f->group;
        c.seq = f->seq;
        for (const Member& m : gi_[f->group].members) {
          if (!m.tr) {
            c.waiting_for.push_back(m.rank);
            continue;
          }
          const TEntry* e = m.At(f->seq);
          if (e) {
            if (e->state == kScheduled) c.waiting_for.push_back(m.rank);
          } else if (!m.colls.empty() && m.last_seq > f->seq) {
            // it issued this one too; its wrapped buffer no longer holds it
          } else if (m.colls.empty() && m.tr->wrapped) {
            c.unknown.push_back(m.rank);
          } else {
            c.waiting_for.push_back(m.rank);
          }
        }
        it = coll_node.emplace(key, NewColl(std::move(c))).first;
      }
      AddEdge(r, it->second);
    }
    for (size_t i = 0; i < colls_.size(); ++i)
      for (int64_t m : colls_[i].waiting_for) AddEdge(W + static_cast<int64_t>(i), m);
  }

  int64_t NewColl(Coll c) {
    colls_.push_back(std::move(c));
    out_.emplace_back();
    return result_.world + static_cast<int64_t>(colls_.size()) - 1;
  }
  void AddEdge(int64_t from, int64_t to) {
    if (to >= 0 && to < static_cast<int64_t>(out_.size())) out_[static_cast<size_t>(from)].push_back(to);
  }

  // ---- (3) roots: terminal strongly connected components reachable from the blocked ranks ----
  void FindRoots() {
    const size_t N = out_.size();
    std::vector<char> reach(N, 0);
    std::vector<int64_t> stack(blocked_.begin(), blocked_.end());
    for (int64_t r : blocked_) reach[static_cast<size_t>(r)] = 1;
    in_edges_.assign(N, {});
    while (!stack.empty()) {
      int64_t v = stack.back();
      stack.pop_back();
      for (int64_t w : out_[static_cast<size_t>(v)]) {
        in_edges_[static_cast<size_t>(w)].push_back(v);
        if (!reach[static_cast<size_t>(w)]) reach[static_cast<size_t>(w)] = 1, stack.push_back(w);
      }
    }
    // Iterative Tarjan over the reachable nodes.
    std::vector<int64_t> index(N, -1), low(N, 0), comp(N, -1);
    std::vector<char> on(N, 0);
    std::vector<int64_t> st;
    int64_t counter = 0, ncomp = 0;
    std::vector<std::vector<int64_t>> comps;
    for (size_t root = 0; root < N; ++root) {
      if (!reach[root] || index[root] >= 0) continue;
      std::vector<std::pair<int64_t, size_t>> call{{static_cast<int64_t>(root), 0}};
      index[root] = low[root] = counter++;
      st.push_back(static_cast<int64_t>(root));
      on[root] = 1;
      while (!call.empty()) {
        auto& [v, i] = call.back();
        const auto& edges = out_[static_cast<size_t>(v)];
        if (i < edges.size()) {
          int64_t w = edges[i++];
          auto uw = static_cast<size_t>(w);
          if (index[uw] < 0) {
            index[uw] = low[uw] = counter++;
            st.push_back(w);
            on[uw] = 1;
            call.emplace_back(w, 0);
          } else if (on[uw]) {
            low[static_cast<size_t>(v)] = std::min(low[static_cast<size_t>(v)], index[uw]);
          }
          continue;
        }
        auto uv = static_cast<size_t>(v);
        if (low[uv] == index[uv]) {
          std::vector<int64_t> members;
          int64_t w;
          do {
            w = st.back();
            st.pop_back();
            on[static_cast<size_t>(w)] = 0;
            comp[static_cast<size_t>(w)] = ncomp;
            members.push_back(w);
          } while (w != v);
          comps.push_back(std::move(members));
          ++ncomp;
        }
        const int64_t done = v;
        call.pop_back();
        if (!call.empty()) {
          auto up = static_cast<size_t>(call.back().first);
          low[up] = std::min(low[up], low[static_cast<size_t>(done)]);
        }
      }
    }
    for (const auto& members : comps) {
      bool terminal = true;
      for (int64_t v : members)
        for (int64_t w : out_[static_cast<size_t>(v)])
          if (comp[static_cast<size_t>(w)] != comp[static_cast<size_t>(members.front())]) terminal = false;
      if (!terminal) continue;
      if (members.size() == 1) {
        Single(members.front());
      } else {
        Deadlock(members);
      }
    }
    // Mismatches in collectives that completed (or hang without being a root) are roots too.
    for (const auto& [key, devs] : deviances_) {
      for (const Deviance& d : devs) {
        std::vector<int64_t> fresh;
        for (int64_t r : d.ranks)
          if (!blamed_.count(r)) fresh.push_back(r);
        if (fresh.empty()) continue;
        TriageRoot root = MakeRoot(d.cls, fresh, key.first, d.seq);
        root.summary = RanksWord(fresh) + " issued a different collective from its group (" + d.cls + ")";
        root.evidence.push_back(d.evidence);
        AddRoot(std::move(root));
      }
    }
  }

  // A terminal node on its own.
  void Single(int64_t v) {
    const int64_t W = result_.world;
    if (v >= W) {
      const Coll& c = colls_[static_cast<size_t>(v - W)];
      if (!c.waiting_for.empty()) return;
      auto dev = deviances_.find(std::make_pair(c.group, c.seq));
      if (!c.p2p && dev != deviances_.end()) {
        for (const Deviance& d : dev->second) {
          TriageRoot root = MakeRoot(d.cls, d.ranks, c.group, c.seq);
          root.summary = RanksWord(d.ranks) + " issued a different collective from the rest of " +
                         GroupText(c.group) + " at seq " + std::to_string(c.seq) + ", which then hung";
          root.evidence.push_back(d.evidence);
          root.evidence.push_back("every member started seq " + std::to_string(c.seq) +
                                  " and none completed it");
          AddRoot(std::move(root));
        }
        return;
      }
      TriageRoot root = MakeRoot("network_hang", {}, c.group, c.seq);
      const TEntry* e = AnyEntry(c.group, c.seq);
      root.summary = "no rank is at fault: every member of " + GroupText(c.group) +
                     " started collective seq " + std::to_string(c.seq) +
                     (e ? " (" + SigName(s_.sigs[e->sig]) + ")" : "") +
                     ", their sizes and dtypes agree, and it never completed: a network or NCCL-level hang";
      root.evidence.push_back(root.summary);
      if (!c.unknown.empty())
        root.evidence.push_back(RanksWord(c.unknown) + ": wrapped buffers hold nothing of this group");
      AddRoot(std::move(root));
      return;
    }
    // A rank that waits for nobody and that someone waits for.
    const int64_t r = v;
    auto it = s_.ranks.find(r);
    const bool dump = it != s_.ranks.end() && it->second.dump;
    if (p2p_wrong_.count(r)) {
      const TEntry* f = first_[r];
      TriageRoot root = MakeRoot("p2p_mismatch", {r}, f->group, f->seq);
      std::string own = SigName(s_.sigs[f->sig]);
      root.summary = "rank " + std::to_string(r) + " posted '" + own + "' (p2p seq " +
                     std::to_string(f->seq) + "), which no rank matches, while " + RanksWord(p2p_wrong_[r]) +
                     " wait(s) on a p2p op toward it";
      root.evidence.push_back("rank " + std::to_string(r) + "'s '" + own + "' on " + GroupText(f->group) +
                              " is started and has no partner: rank " + std::to_string(f->peer) +
                              " posted no matching op");
      for (int64_t a : p2p_wrong_[r]) {
        const TEntry* fa = first_[a];
        root.evidence.push_back("rank " + std::to_string(a) + "'s '" + SigName(s_.sigs[fa->sig]) +
                                "' is started and rank " + std::to_string(r) + " posted no matching op");
      }
      AddRoot(std::move(root));
      return;
    }
    if (in_edges_[static_cast<size_t>(r)].empty() && !first_.count(r)) return;
    if (dump && first_.count(r)) {
      const TEntry* f = first_[r];  // scheduled: its GPU never started it
      TriageRoot root = MakeRoot("not_started", {r}, f->group, f->seq);
      root.summary = "rank " + std::to_string(r) + " enqueued collective seq " + std::to_string(f->seq) +
                     " (" + SigName(s_.sigs[f->sig]) + ") of " + GroupText(f->group) +
                     " but never started it: its GPU stream is stuck before it (nothing older on the rank "
                     "is incomplete)";
      root.evidence.push_back("rank " + std::to_string(r) + "'s oldest incomplete entry is seq " +
                              std::to_string(f->seq) + ", state scheduled; every older entry completed");
      WaitersEvidence(r, root);
      AddRoot(std::move(root));
      return;
    }
    // Not enqueued (dump, nothing incomplete) or dead (no dump): which collective is it missing?
    const Coll* best = nullptr;
    int64_t best_depth = -1;
    for (int64_t w : in_edges_[static_cast<size_t>(r)]) {
      if (w < W) continue;
      const Coll& c = colls_[static_cast<size_t>(w - W)];
      const int64_t depth = Depth(c, w);
      const auto size = gi_[c.group].members.size();
      if (!best || depth > best_depth ||
          (depth == best_depth && (size < gi_[best->group].members.size() ||
                                   (size == gi_[best->group].members.size() && c.seq < best->seq)))) {
        best = &c;
        best_depth = depth;
      }
    }
    if (!best) return;
    const TEntry* e = AnyEntry(best->group, best->seq);
    const std::string what = "collective seq " + std::to_string(best->seq) +
                             (e ? " (" + SigName(s_.sigs[e->sig]) + ")" : "") + " of " +
                             GroupText(best->group);
    if (!dump) {
      TriageRoot root = MakeRoot("dead_rank", {r}, best->group, best->seq);
      root.summary = "rank " + std::to_string(r) + " left no dump and never joined " + what +
                     ": the process died or its host is gone";
      root.evidence.push_back("no Flight Recorder dump of rank " + std::to_string(r));
      WaitersEvidence(r, root);
      AddRoot(std::move(root));
      return;
    }
    TriageRoot root = MakeRoot("not_enqueued", {r}, best->group, best->seq);
    const Member* m = gi_[best->group].Find(r);
    root.summary = "rank " + std::to_string(r) + " never enqueued " + what +
                   ": every collective it issued completed, so it is stuck before it (in compute, data "
                   "loading or on the CPU)";
    root.evidence.push_back("rank " + std::to_string(r) + "'s entries all completed; its last of " +
                            s_.groups[static_cast<size_t>(best->group)].name + " is seq " +
                            (m && !m->colls.empty() ? std::to_string(m->last_seq) : std::string("(none)")));
    WaitersEvidence(r, root);
    AddRoot(std::move(root));
  }

  // How many entries the waiting ranks enqueued after this collective: the one blocked the longest
  // (earliest in program order) has the most.
  int64_t Depth(const Coll& c, int64_t node) {
    int64_t depth = 0;
    for (int64_t w : in_edges_[static_cast<size_t>(node)]) {
      if (w >= result_.world) continue;
      const TRank& tr = s_.ranks.at(w);
      const TEntry* f = first_.count(w) ? first_[w] : nullptr;
      if (!f || tr.entries.empty()) continue;
      depth = std::max(depth, tr.entries.back().record_id - f->record_id);
    }
    (void)c;
    return depth;
  }

  void WaitersEvidence(int64_t r, TriageRoot& root) {
    const int64_t W = result_.world;
    int shown = 0;
    for (int64_t w : in_edges_[static_cast<size_t>(r)]) {
      if (w < W || shown >= 4) continue;
      const Coll& c = colls_[static_cast<size_t>(w - W)];
      std::vector<int64_t> waiters;
      for (int64_t x : in_edges_[static_cast<size_t>(w)])
        if (x < W) waiters.push_back(x);
      std::sort(waiters.begin(), waiters.end());
      const TEntry* e = AnyEntry(c.group, c.seq);
      root.evidence.push_back(
          ShortRanksWord(waiters) + " started " + (c.p2p ? "p2p seq " : "seq ") + std::to_string(c.seq) +
          (e ? " (" + SigName(s_.sigs[e->sig]) + ")" : "") + " of " + GroupText(c.group) +
          (waiters.size() == 1 ? " and waits for rank " : " and wait for rank ") + std::to_string(r));
      ++shown;
    }
  }

  // A cycle: the rank that entered a collective out of the order the others followed.
  void Deadlock(const std::vector<int64_t>& members) {
    const int64_t W = result_.world;
    std::vector<int64_t> culprits;
    std::vector<std::string> evidence;
    const TEntry* where = nullptr;
    for (int64_t r : members) {
      if (r >= W || !first_.count(r)) continue;
      const TEntry* x = first_[r];
      if (x->p2p) continue;
      // Groups of r where it has not issued its next collective, which others hold with x; the
      // group r issued its latest entry in first (where it stands in its program).
      std::vector<std::pair<int64_t, size_t>> order;
      for (int32_t g32 : rank_groups_[r]) {
        const auto g = static_cast<size_t>(g32);
        if (g32 == x->group) continue;
        Member* m = gi_[g].Find(r);
        if (!m || !m->tr || m->colls.empty()) continue;
        order.emplace_back(-m->tr->entries[m->colls.back()].record_id, g);
      }
      std::sort(order.begin(), order.end());
      for (const auto& [neg, g] : order) {
        Member* m = gi_[g].Find(r);
        const int64_t next = m->last_seq + 1;
        int before = 0, after = 0, sampled = 0;
        for (const auto& [hrank, y] : Holders(g, next)) {
          if (sampled >= 64) break;
          const Member& h = *gi_[g].Find(hrank);
          if (h.rank == r) continue;
          Member* hx = gi_[x->group].Find(h.rank);
          const TEntry* hxe = hx && hx->tr ? hx->At(x->seq) : nullptr;
          if (!hxe) continue;
          ++sampled;
          (y->record_id < hxe->record_id ? before : after)++;
        }
        if (before > after) {
          culprits.push_back(r);
          where = x;
          const TEntry* y = AnyEntry(static_cast<int32_t>(g), next);
          evidence.push_back("rank " + std::to_string(r) + " entered seq " + std::to_string(x->seq) + " (" +
                             SigName(s_.sigs[x->sig]) + ") of " + GroupText(x->group) + " before seq " +
                             std::to_string(next) + (y ? " (" + SigName(s_.sigs[y->sig]) + ")" : "") +
                             " of " + GroupText(static_cast<int32_t>(g)) + "; " + std::to_string(before) +
                             " other member(s) of that group issued them in the opposite order");
          break;
        }
      }
    }
    std::vector<int64_t> ranks;
    for (int64_t v : members)
      if (v < W) ranks.push_back(v);
    std::sort(ranks.begin(), ranks.end());
    if (culprits.empty()) {
      TriageRoot root = MakeRoot("deadlock", {}, -1, std::nullopt);
      root.summary = "a wait-for cycle among " + RanksWord(ranks) + " with no rank out of order";
      root.evidence.push_back(root.summary);
      AddRoot(std::move(root));
      return;
    }
    std::sort(culprits.begin(), culprits.end());
    TriageRoot root = MakeRoot("deadlock", culprits, where->group, where->seq);
    root.summary = RanksWord(culprits) + " entered two process groups in a different order from " +
                   "their peers: a wait-for cycle among " + std::to_string(ranks.size()) + " ranks";
    root.evidence = evidence;
    AddRoot(std::move(root));
  }

  // ---- (4) stragglers: everything completed, one rank arrives last each time ----
  void Stragglers() {
    constexpr int64_t kSpreadNs = 1'000'000;  // a wait shorter than this is jitter
    struct Score {
      int64_t colls = 0, late = 0, wait = 0, delayed = 0;
    };
    std::map<int64_t, Score> score;
    for (size_t g = 0; g < gi_.size(); ++g) {
      GroupIndex& G = gi_[g];
      if (G.members.size() < 2) continue;
      std::vector<int64_t> d;
      for (int64_t seq : Seqs(G)) {
        d.clear();
        bool all = true;
        for (const Member& m : G.members) {
          const TEntry* e = m.tr ? m.At(seq) : nullptr;
          if (!e || e->dur_ns < 0) {
            all = false;
            break;
          }
          d.push_back(e->dur_ns);
        }
        if (!all) continue;
        std::vector<int64_t> sorted = d;
        std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(sorted.size() / 2), sorted.end());
        const int64_t median = sorted[sorted.size() / 2];
        const int64_t mn = *std::min_element(d.begin(), d.end());
        const bool spread = median - mn > kSpreadNs;
        for (size_t i = 0; i < G.members.size(); ++i) {
          Score& sc = score[G.members[i].rank];
          ++sc.colls;
          sc.wait += d[i] - mn;
          if (spread) {
            ++sc.delayed;
            if (d[i] - mn < kSpreadNs / 2) ++sc.late;
          }
        }
      }
    }
    std::vector<int64_t> stragglers;
    std::vector<std::string> evidence;
    for (const auto& [r, sc] : score) {
      if (sc.colls == 0 || sc.delayed < 3) continue;
      const int64_t mean_wait = sc.wait / sc.colls;
      if (2 * sc.late >= sc.delayed && 2 * sc.delayed >= sc.colls && mean_wait < kSpreadNs / 2) {
        stragglers.push_back(r);
        evidence.push_back("rank " + std::to_string(r) + " arrived last in " + std::to_string(sc.late) +
                           " of " + std::to_string(sc.colls) +
                           " collectives (its members waited for it over 1 ms each "
                           "time), and itself waited " +
                           std::to_string(mean_wait / 1000) +
                           " us on average (durations on each rank's own clock)");
      }
    }
    if (stragglers.empty()) return;
    TriageRoot root = MakeRoot("straggler", stragglers, -1, std::nullopt);
    root.summary = RanksWord(stragglers) +
                   " arrived late at its collectives each time; every collective "
                   "completed, the others waited for it";
    root.evidence = evidence;
    AddRoot(std::move(root));
    straggler_ = true;
    for (const auto& [r, sc] : score)
      if (!blamed_.count(r) && sc.wait / std::max<int64_t>(1, sc.colls) >= kSpreadNs / 2)
        slowed_.push_back(r);
  }

  // ---- (4') profiler traces: one clock for all ranks, so arrivals are compared directly ----
  void KinetoStragglers() {
    detail::KinetoStragglers found = detail::FindKinetoStragglers(*kineto_);
    if (!found.note.empty()) result_.notes.push_back(found.note);
    if (found.stragglers.empty()) return;
    std::vector<int64_t> ranks;
    for (const TriageStraggler& s : found.stragglers) ranks.push_back(s.rank);
    TriageRoot root = MakeRoot("straggler", ranks, -1, std::nullopt);
    root.summary =
        RanksWord(ranks) + " started its collectives last, over " + detail::WaitText(kKinetoLateNs) +
        " after the first member, most times; every collective completed, the others waited for it";
    root.evidence = std::move(found.evidence);
    root.stragglers = std::move(found.stragglers);
    AddRoot(std::move(root));
    straggler_ = true;
    for (int64_t r : found.slowed)
      if (!blamed_.count(r)) slowed_.push_back(r);
  }

  // ---- results ----
  TriageRoot MakeRoot(const std::string& cls, std::vector<int64_t> culprits, int32_t group,
                      std::optional<int64_t> seq) {
    TriageRoot root;
    root.cls = cls;
    std::sort(culprits.begin(), culprits.end());
    root.culprits = std::move(culprits);
    if (group >= 0) {
      const TGroup& g = s_.groups[static_cast<size_t>(group)];
      root.process_group = g.name;
      root.pg_desc = g.desc;
      root.mesh_dim = MeshDim(g.sorted);
      root.seq = seq;
      root.group = g.sorted;
    }
    return root;
  }
  void AddRoot(TriageRoot root) {
    for (int64_t r : root.culprits) blamed_.insert(r);
    result_.roots.push_back(std::move(root));
  }

  const TEntry* AnyEntry(int32_t g, int64_t seq) const {
    for (const Member& m : gi_[static_cast<size_t>(g)].members)
      if (m.tr)
        if (const TEntry* e = m.At(seq)) return e;
    return nullptr;
  }

  std::string GroupText(int32_t g) const {
    const TGroup& G = s_.groups[static_cast<size_t>(g)];
    std::string dim = MeshDim(G.sorted);
    return "process group " + G.name + " (" + (G.desc.empty() ? "" : G.desc + ", ") +
           std::to_string(G.ranks.size()) + " ranks" + (dim.empty() ? "" : ", mesh dim " + dim) + ")";
  }
  std::string GroupText(size_t g) const { return GroupText(static_cast<int32_t>(g)); }

  // At most 12 ranges, then the count.
  static std::string ShortRanksWord(std::vector<int64_t> ranks) {
    std::sort(ranks.begin(), ranks.end());
    std::string full = FormatRankRanges(ranks);
    size_t commas = 0;
    for (size_t i = 0; i < full.size(); ++i)
      if (full[i] == ',' && ++commas == 12) {
        full = full.substr(0, i) + ", ... (" + std::to_string(ranks.size()) + " ranks)";
        break;
      }
    return (ranks.size() == 1 ? "rank " : "ranks ") + full;
  }
  static std::string RanksWord(std::vector<int64_t> ranks) {
    std::sort(ranks.begin(), ranks.end());
    return (ranks.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(ranks);
  }

  // The mesh dims a group spans: its ranks vary along exactly those dims and fill them.
  std::string MeshDim(const std::vector<int64_t>& sorted) const {
    if (mesh_.shape.empty() || sorted.empty()) return "";
    const size_t n = mesh_.shape.size();
    std::vector<int64_t> stride(n, 1);
    for (size_t i = n - 1; i > 0; --i) stride[i - 1] = stride[i] * mesh_.shape[i];
    const int64_t total = stride[0] * mesh_.shape[0];
    if (sorted.back() >= total) return "";
    std::vector<char> varies(n, 0);
    for (int64_t r : sorted)
      for (size_t i = 0; i < n; ++i)
        if ((r / stride[i]) % mesh_.shape[i] != (sorted.front() / stride[i]) % mesh_.shape[i]) varies[i] = 1;
    int64_t product = 1;
    std::string names;
    for (size_t i = 0; i < n; ++i) {
      if (!varies[i]) continue;
      product *= mesh_.shape[i];
      names += (names.empty() ? "" : ",") + mesh_.names[i];
    }
    return product == static_cast<int64_t>(sorted.size()) ? names : "";
  }

  void Finish() {
    std::set<int64_t> all;
    for (const TriageRoot& root : result_.roots) all.insert(root.culprits.begin(), root.culprits.end());
    result_.culprits.assign(all.begin(), all.end());
    for (int64_t r : blocked_)
      if (!all.count(r)) result_.victims.push_back(r);
    for (int64_t r : slowed_)
      if (!all.count(r)) result_.victims.push_back(r);
    std::sort(result_.victims.begin(), result_.victims.end());
    result_.victims.erase(std::unique(result_.victims.begin(), result_.victims.end()), result_.victims.end());
    bool mismatch = false, hang = !blocked_.empty();
    for (const TriageRoot& root : result_.roots)
      if (root.cls.find("mismatch") != std::string::npos || root.cls.find("_collective") != std::string::npos)
        mismatch = true;
    result_.verdict = mismatch ? "mismatch" : hang ? "hang" : straggler_ ? "straggler" : "clean";
    if (hang && result_.roots.empty())
      result_.notes.push_back("ranks are blocked but no root was found (wrapped buffers hide it)");
    for (const auto& [r, tr] : s_.ranks) (void)tr;
    std::vector<int64_t> no_dump;
    for (int64_t r = 0; r < result_.world; ++r) {
      auto it = s_.ranks.find(r);
      if ((it == s_.ranks.end() || !it->second.dump) && !all.count(r)) no_dump.push_back(r);
    }
    if (!no_dump.empty())
      result_.notes.push_back(RanksWord(no_dump) +
                              (result_.profiler ? " left no profiler trace" : " left no dump") +
                              " and no blocked rank waits for them");
    Wavefront();
  }

  void Wavefront() {
    // Groups where some member is blocked or missing.
    std::set<int32_t> shown;
    for (int64_t r : blocked_) shown.insert(first_[r]->group);
    for (const TriageRoot& root : result_.roots)
      for (size_t g = 0; g < s_.groups.size(); ++g)
        if (s_.groups[g].name == root.process_group && !root.process_group.empty()) {
          for (int64_t c : root.culprits)
            if (gi_[g].Find(c)) shown.insert(static_cast<int32_t>(g));
        }
    for (int32_t g : shown) {
      WavefrontGroup wg;
      const TGroup& G = s_.groups[static_cast<size_t>(g)];
      wg.name = G.name;
      wg.desc = G.desc;
      wg.size = static_cast<int64_t>(G.ranks.size());
      wg.mesh_dim = MeshDim(G.sorted);
      int64_t front = -1;  // the most advanced incomplete seq in the group
      for (const Member& m : gi_[static_cast<size_t>(g)].members)
        if (m.tr && first_.count(m.rank) && first_[m.rank]->group == g)
          front = std::max(front, first_[m.rank]->seq);
      // state -> (order key, ranks)
      std::map<std::string, std::pair<std::pair<int, int64_t>, std::vector<int64_t>>> states;
      for (const Member& m : gi_[static_cast<size_t>(g)].members) {
        std::string st;
        std::pair<int, int64_t> order;
        if (!m.tr) {
          st = "no dump";
          order = {0, 0};
        } else if (first_.count(m.rank) && first_[m.rank]->group == g) {
          const TEntry* f = first_[m.rank];
          st = std::string(f->state == kStarted ? "started" : "scheduled") +
               (f->p2p ? " p2p seq " : " seq ") + std::to_string(f->seq) + " (" + SigName(s_.sigs[f->sig]) +
               ")";
          order = {f->state == kStarted ? 3 : 2, f->seq};
        } else {
          int64_t done = -1;
          for (auto it = m.colls.rbegin(); it != m.colls.rend(); ++it)
            if (m.tr->entries[*it].state == kCompleted) {
              done = m.tr->entries[*it].seq;
              break;
            }
          if (first_.count(m.rank)) {
            const TGroup& other = s_.groups[static_cast<size_t>(first_[m.rank]->group)];
            st = "done through seq " + std::to_string(done) + ", blocked in " +
                 (other.desc.empty() ? "process group " + other.name : "a " + other.desc + " group");
            order = {4, done};
          } else if (front > done) {
            st = "done through seq " + std::to_string(done) + ", never enqueued seq " +
                 std::to_string(done + 1);
            order = {1, done};
          } else {
            st = "done through seq " + std::to_string(done);
            order = {5, done};
          }
        }
        auto& slot = states[st];
        slot.first = order;
        slot.second.push_back(m.rank);
      }
      std::vector<std::pair<std::pair<int, int64_t>, WavefrontState>> list;
      for (auto& [st, v] : states) list.push_back({v.first, WavefrontState{st, v.second}});
      std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second.ranks.front() < b.second.ranks.front();
      });
      for (auto& [k, st] : list) wg.states.push_back(std::move(st));
      result_.wavefront.push_back(std::move(wg));
    }
    // Groups that hold a culprit first, then by size, then name.
    std::set<int64_t> culprits(result_.culprits.begin(), result_.culprits.end());
    auto holds = [&](const WavefrontGroup& w) {
      for (const auto& st : w.states)
        for (int64_t r : st.ranks)
          if (culprits.count(r)) return true;
      return false;
    };
    std::stable_sort(result_.wavefront.begin(), result_.wavefront.end(), [&](const auto& a, const auto& b) {
      const bool ha = holds(a), hb = holds(b);
      if (ha != hb) return ha;
      if (a.size != b.size) return a.size < b.size;
      return a.name.size() != b.name.size() ? a.name.size() < b.name.size() : a.name < b.name;
    });
  }

  Store& s_;
  const TriageMesh& mesh_;
  TriageResult result_;
  std::vector<GroupIndex> gi_;
  std::map<std::pair<int32_t, int64_t>, std::vector<Deviance>> deviances_;
  std::vector<int64_t> blocked_;
  std::unordered_map<int64_t, const TEntry*> first_;
  std::map<int64_t, std::vector<int64_t>> p2p_wrong_;
  std::vector<Coll> colls_;
  std::vector<std::vector<int64_t>> out_, in_edges_;
  const KinetoAnalysis* kineto_ = nullptr;
  std::set<int64_t> blamed_;
  std::vector<int64_t> slowed_;
  std::unordered_map<int64_t, std::vector<int32_t>> rank_groups_;
  std::map<std::pair<size_t, int64_t>, std::vector<std::pair<int64_t, const TEntry*>>> holders_;
  bool straggler_ = false;
};

// A mesh for the report from a trace's header when none was given (a 1-D header names none).
void MeshFromModel(const Model& model, TriageMesh& m) {
  if (!m.shape.empty() || model.ranks.empty() || model.ranks.front().header.mesh_shape.size() <= 1) return;
  m.shape = model.ranks.front().header.mesh_shape;
  m.names = model.ranks.front().header.mesh_dim_names;
  for (size_t i = 0; i < m.names.size(); ++i)
    if (m.names[i].empty()) m.names[i] = std::to_string(i);
  m.names.resize(m.shape.size());
}

}  // namespace

std::string TriageResult::Class() const {
  if (roots.empty()) return "";
  for (const TriageRoot& r : roots)
    if (r.cls != roots.front().cls) return "multiple";
  return roots.front().cls;
}

TriageMesh ParseTriageMesh(const std::string& text) {
  TriageMesh mesh;
  if (text.empty()) return mesh;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw InvalidInput("--mesh: '" + item + "' is not NAME=EXTENT (e.g. --mesh dp=8,tp=8)");
    int64_t n = 0;
    for (size_t i = eq + 1; i < item.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(item[i])) || n > kMaxRanks)
        throw InvalidInput("--mesh: '" + item + "': the extent must be a positive integer");
      n = n * 10 + (item[i] - '0');
    }
    if (n < 1 || n > kMaxRanks) throw InvalidInput("--mesh: '" + item + "': the extent must be in [1, 2^20]");
    mesh.names.push_back(item.substr(0, eq));
    mesh.shape.push_back(n);
  }
  if (mesh.shape.empty() || static_cast<int64_t>(mesh.shape.size()) > kMaxMeshDims)
    throw InvalidInput("--mesh: '" + text + "' names no dims or more than 16");
  int64_t total = 1;
  for (int64_t n : mesh.shape)
    if (__builtin_mul_overflow(total, n, &total) || total > kMaxRanks)
      throw InvalidInput("--mesh: '" + text + "' has more than 2^20 ranks");
  return mesh;
}

TriageResult TriageModel(const Model& model, const TriageMesh& mesh) {
  Store store;
  store.Add(model);
  store.world = std::max(store.world, model.world);
  TriageMesh m = mesh;
  MeshFromModel(model, m);
  if (!IsKinetoModel(model)) return Analyzer(store, m).Run();
  const KinetoAnalysis analysis = AnalyzeKineto(model);
  return Analyzer(store, m, &analysis).Run();
}

TriageResult TriagePaths(const std::vector<fs::path>& paths, const TriageMesh& mesh, int jobs,
                         const std::vector<const Model*>& context) {
  return TriagePaths(paths, mesh, jobs, context, nullptr, {});
}

TriageResult TriagePaths(const std::vector<fs::path>& paths, const TriageMesh& mesh, int jobs,
                         const std::vector<const Model*>& context, ReadProgress* progress,
                         const std::function<void(FlightRecorderDump&)>& each) {
  if (paths.empty()) throw InvalidInput("triage: no input given");
  std::vector<fs::path> dumps;  // directories or files: the FR reader lists them and refuses a rank twice
  std::vector<fs::path> traces;
  for (const fs::path& p : paths) {
    std::error_code ec;
    if (!fs::exists(p, ec)) throw InvalidInput(p.string() + ": no such file or directory");
    (IsFlightRecorderDump(p) ? dumps : traces).push_back(p);
  }
  // Profiler traces alone: every path is one job's ranks, read together and matched across ranks.
  if (dumps.empty() && std::all_of(traces.begin(), traces.end(),
                                   [](const fs::path& p) { return ImporterFor(p) == "kineto"; })) {
    return TriageModel(ReadKinetoModel(traces, {.jobs = jobs, .progress = progress}), mesh);
  }
  Store store;
  TriageMesh m = mesh;
  std::vector<Model> trace_models;
  trace_models.reserve(traces.size());
  for (const fs::path& t : traces) {
    trace_models.push_back(ReadAnyTrace(t));
    MeshFromModel(trace_models.back(), m);
    // Beside dumps a trace is context only: its ranks' dumps are the evidence.
    if (dumps.empty()) store.Add(trace_models.back());
  }
  for (const Model* c : context) MeshFromModel(*c, m);
  // One dump file at a time per thread: only the compact entries stay in memory.
  if (!dumps.empty()) {
    ReadFlightRecorderEach(
        dumps, jobs,
        [&](FlightRecorderDump& dump) {
          store.AddRank(dump.trace, dump.max_rank + 1);
          if (each) each(dump);  // last: it may take the dump
        },
        progress);
  }
  TriageResult result = Analyzer(store, m).Run();
  std::vector<const Model*> models = context;
  if (!dumps.empty())
    for (const Model& t : trace_models) models.push_back(&t);
  NameIssuers(result, models);
  return result;
}

namespace {

std::string Placements(const std::vector<std::string>& p) {
  std::string out;
  for (const std::string& x : p) out += (out.empty() ? "" : ",") + x;
  return out;
}

// The k-th (1-based) collective over `group` (sorted ranks) in one rank's trace, and what issued
// it; or, when the rank issued fewer, the redistribute it was inside at the trace's end.
std::optional<TriageIssuer> IssuerInTrace(const RankTrace& rt, const std::vector<int64_t>& group, int64_t k) {
  std::map<int64_t, const RedistributeBegin*> begins;
  for (const RedistributeBegin& b : rt.events.Of<RedistributeBegin>()) begins.emplace(b.id, &b);
  std::map<int64_t, const Op*> ops;
  for (const Op& op : rt.events.Of<Op>()) ops.emplace(op.id, &op);
  std::set<int64_t> ended;
  for (const RedistributeEnd& e : rt.events.Of<RedistributeEnd>()) ended.insert(e.id);
  TriageIssuer is;
  is.source = "trace";
  is.rank = rt.header.rank;
  auto describe = [&](int64_t redistribute_id, int64_t step, int64_t op_id) {
    if (auto b = begins.find(redistribute_id); b != begins.end()) {
      const RedistributeBegin& rb = *b->second;
      is.redistribute_id = rb.id;
      is.tensor = rb.tensor();
      is.src = Placements(rb.src_placements());
      is.dst = Placements(rb.dst_placements());
      if (step >= 0 && static_cast<size_t>(step) < rb.optimized_plan().size()) {
        const PlanStep& ps = rb.optimized_plan()[static_cast<size_t>(step)];
        is.step = step;
        is.step_src = ps.src;
        is.step_dst = ps.dst;
        is.comm = ps.comm;
      }
      if (rb.op_id >= 0) op_id = rb.op_id;
    }
    if (auto o = ops.find(op_id); o != ops.end())
      is.op = o->second->name(), is.program_step = o->second->step;
  };
  int64_t seen = 0, last_redistribute = -1;
  for (const Collective& c : rt.events.Of<Collective>()) {
    std::vector<int64_t> members(c.group().begin(), c.group().end());
    std::sort(members.begin(), members.end());
    if (members != group) continue;
    last_redistribute = c.redistribute_id;
    if (++seen < k) continue;
    describe(c.redistribute_id, c.step(), c.op_id);
    return is;
  }
  // Never issued: the redistribute left open at the end, else none can be named from this trace.
  is.issued = false;
  for (auto it = begins.rbegin(); it != begins.rend(); ++it) {
    if (ended.count(it->first) || it->first <= last_redistribute) continue;
    describe(it->first, -1, -1);
    return is;
  }
  return std::nullopt;
}

std::string IssuerText(const TriageIssuer& is) {
  std::string where;
  if (is.redistribute_id >= 0) {
    where = "redistribute #" + std::to_string(is.redistribute_id) +
            (is.tensor.empty() ? "" : " of '" + is.tensor + "'") +
            (is.line >= 0 ? " at line " + std::to_string(is.line) : "") + " (" + is.src + " -> " + is.dst +
            ")";
    if (is.step >= 0)
      where += ", plan step " + std::to_string(is.step) + " (" + is.step_src + " -> " + is.step_dst + ", " +
               is.comm + ")";
  }
  if (!is.op.empty()) {
    where += (where.empty() ? "op " : " for op ") + is.op;
    if (is.program_step >= 0) where += " (program step " + std::to_string(is.program_step) + ")";
  }
  const std::string source = is.source == "debugmode" ? "DebugMode log" : is.source;
  const std::string who = is.rank >= 0 ? "rank " + std::to_string(is.rank) + "'s " + source : source;
  return is.issued ? "issued by " + where + " (" + who + ")"
                   : "not issued; " + who + " ends inside " + where + ", which never finished";
}

}  // namespace

void NameIssuers(TriageResult& result, const std::vector<const Model*>& models) {
  if (models.empty()) return;
  for (TriageRoot& root : result.roots) {
    if (!root.seq || root.group.empty()) continue;
    std::vector<int64_t> order = root.culprits;  // the culprits first, then the group's other ranks
    for (int64_t r : root.group)
      if (!std::binary_search(root.culprits.begin(), root.culprits.end(), r)) order.push_back(r);
    std::optional<TriageIssuer> found;
    for (int64_t r : order) {
      for (const Model* m : models) {
        for (const RankTrace& rt : m->ranks) {
          if (rt.header.rank != r) continue;
          std::optional<TriageIssuer> is = IssuerInTrace(rt, root.group, *root.seq);
          // A rank that issued it names it best; one that never did only says where it stopped.
          if (is && (!found || (is->issued && !found->issued))) found = is;
        }
      }
      if (found && found->issued) break;
    }
    if (!found) continue;
    found->text = IssuerText(*found);
    root.evidence.push_back("stuck collective " + found->text);
    root.issuer = std::move(found);
  }
}

void NameIssuersFromLog(TriageResult& result, const std::vector<LoggedCollective>& log) {
  for (TriageRoot& root : result.roots) {
    if (!root.seq || root.process_group.empty() || (root.issuer && root.issuer->issued)) continue;
    int64_t seen = 0;
    for (const LoggedCollective& c : log) {
      if (c.group_name != root.process_group || ++seen < *root.seq) continue;
      TriageIssuer is = c.issuer;
      is.source = "debugmode";
      is.rank = -1;
      is.issued = true;
      is.text = IssuerText(is);
      root.evidence.push_back("stuck collective " + is.text);
      root.issuer = std::move(is);
      break;
    }
  }
}

std::string FormatRankRanges(const std::vector<int64_t>& r) {
  std::string out;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(r[i]) + (j > i ? "-" + std::to_string(r[j]) : "");
    i = j + 1;
  }
  return out;
}

namespace {

nlohmann::json LatenessJson(const TriageLateness& l) {
  nlohmann::json out = nlohmann::json::object();
  if (!l.process_group.empty()) {
    out["process_group"] = l.process_group;
    out["group_size"] = l.group_size;
  }
  out["collectives"] = l.collectives;
  out["delayed"] = l.delayed;
  out["last"] = l.last;
  out["caused_wait_us"] = static_cast<double>(l.caused_wait_ns) / 1e3;
  out["worst_wait_us"] = static_cast<double>(l.worst_wait_ns) / 1e3;
  out["mean_own_wait_us"] =
      l.collectives > 0 ? static_cast<double>(l.own_wait_ns) / 1e3 / static_cast<double>(l.collectives) : 0.0;
  out["worst"] = l.last == 0 ? nlohmann::json(nullptr)
                             : nlohmann::json{{"process_group", l.worst_process_group},
                                              {"kind", l.worst_kind},
                                              {"seq", l.worst_seq},
                                              {"p2p", l.worst_p2p},
                                              {"step", l.worst_step}};
  return out;
}

nlohmann::json StragglersJson(const std::vector<TriageStraggler>& stragglers) {
  nlohmann::json out = nlohmann::json::array();
  for (const TriageStraggler& s : stragglers) {
    nlohmann::json one = LatenessJson(s.overall);
    one["rank"] = s.rank;
    nlohmann::json groups = nlohmann::json::array();
    for (const TriageLateness& g : s.groups) groups.push_back(LatenessJson(g));
    one["groups"] = groups;
    out.push_back(std::move(one));
  }
  return out;
}

nlohmann::json IssuerJson(const std::optional<TriageIssuer>& is) {
  using nlohmann::json;
  if (!is) return nullptr;
  auto opt = [](int64_t v) { return v >= 0 ? json(v) : json(nullptr); };
  auto text = [](const std::string& v) { return v.empty() ? json(nullptr) : json(v); };
  return {{"source", is->source},
          {"rank", opt(is->rank)},
          {"issued", is->issued},
          {"redistribute_id", opt(is->redistribute_id)},
          {"tensor", text(is->tensor)},
          {"src", text(is->src)},
          {"dst", text(is->dst)},
          {"step", opt(is->step)},
          {"step_src", text(is->step_src)},
          {"step_dst", text(is->step_dst)},
          {"comm", text(is->comm)},
          {"op", text(is->op)},
          {"program_step", opt(is->program_step)},
          {"line", opt(is->line)},
          {"text", is->text}};
}

std::string Count(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// At most `limit` ranges of a rank list, then "... (N ranks)".
std::string ShortRanges(const std::vector<int64_t>& ranks, size_t limit = 12) {
  std::string full = FormatRankRanges(ranks);
  size_t commas = 0, cut = std::string::npos;
  for (size_t i = 0; i < full.size(); ++i)
    if (full[i] == ',' && ++commas == limit) cut = i;
  if (cut == std::string::npos) return full;
  return full.substr(0, cut) + ", ... (" + std::to_string(ranks.size()) + " ranks)";
}

}  // namespace

std::string FormatTriageText(const TriageResult& r) {
  std::ostringstream o;
  o << "verdict: " << r.verdict;
  if (!r.roots.empty())
    o << " (" << Count(r.culprits.size(), "culprit", "culprits") << ", "
      << Count(r.victims.size(), "victim", "victims") << ")";
  if (r.profiler)
    o << "; " << r.dumps << " of " << r.world << " ranks have a profiler trace, " << r.entries
      << " collectives\n";
  else
    o << "; " << r.dumps << " of " << r.world << " ranks have a dump, " << r.entries << " entries\n";
  if (r.roots.empty()) {
    o << (r.verdict != "clean" ? ""
          : r.profiler
              ? "every collective agrees across its group and no rank arrives last over " +
                    detail::WaitText(kKinetoLateNs) + " after the others most times\n"
              : "no rank is blocked, every collective agrees across its group and no rank arrives late\n");
  }
  for (size_t i = 0; i < r.roots.size(); ++i) {
    const TriageRoot& root = r.roots[i];
    o << (r.roots.size() > 1 ? "root cause " + std::to_string(i + 1) + ": " : "root cause: ") << root.summary
      << "\n";
    o << "  class: " << root.cls;
    if (!root.process_group.empty()) {
      o << "; process group " << root.process_group
        << (root.pg_desc.empty() ? "" : " (" + root.pg_desc + ")");
      if (!root.mesh_dim.empty()) o << ", mesh dim " << root.mesh_dim;
      if (root.seq) o << "; seq " << *root.seq;
    }
    o << "\n  culprits: "
      << (root.culprits.empty() ? "none (no rank is at fault)" : ShortRanges(root.culprits)) << "\n";
    if (root.issuer) o << "  stuck collective: " << root.issuer->text << "\n";
    o << "  evidence:\n";
    for (const std::string& e : root.evidence) o << "    - " << e << "\n";
  }
  if (!r.victims.empty())
    o << "victims (blocked behind the root, not at fault): " << ShortRanges(r.victims) << "\n";
  if (!r.wavefront.empty()) {
    o << "how the job got stuck (per process group, how far each rank got):\n";
    const size_t limit = 12;
    for (size_t i = 0; i < r.wavefront.size() && i < limit; ++i) {
      const WavefrontGroup& g = r.wavefront[i];
      o << "  process group " << g.name << (g.desc.empty() ? "" : " (" + g.desc + ")") << ", " << g.size
        << " ranks" << (g.mesh_dim.empty() ? "" : ", mesh dim " + g.mesh_dim) << ":\n";
      for (size_t k = 0; k < g.states.size(); ++k) {
        const WavefrontState& s = g.states[k];
        if (k == 8) {
          o << "    ... " << g.states.size() - 8 << " more states (--json lists them all)\n";
          break;
        }
        o << "    " << s.state << ": " << (s.ranks.size() == 1 ? "rank " : "ranks ")
          << ShortRanges(s.ranks, 8) << "\n";
      }
    }
    if (r.wavefront.size() > limit)
      o << "  ... " << r.wavefront.size() - limit << " more process groups (--json lists them all)\n";
  }
  for (const std::string& n : r.notes) o << "note: " << n << "\n";
  return o.str();
}

nlohmann::json TriageJson(const TriageResult& r) {
  using nlohmann::json;
  json out = json::object();
  out["verdict"] = r.verdict;
  out["culprits"] = r.culprits;
  out["class"] = r.roots.empty() ? json(nullptr) : json(r.Class());
  const TriageRoot* first = r.roots.empty() ? nullptr : &r.roots.front();
  out["process_group"] = first && !first->process_group.empty() ? json(first->process_group) : json(nullptr);
  out["pg_desc"] = first && !first->process_group.empty() ? json(first->pg_desc) : json(nullptr);
  out["seq"] = first && first->seq ? json(*first->seq) : json(nullptr);
  out["victims"] = r.victims;
  json wave = json::object();
  for (const WavefrontGroup& g : r.wavefront) {
    json states = json::array();
    for (const WavefrontState& s : g.states)
      states.push_back({{"state", s.state}, {"ranks", FormatRankRanges(s.ranks)}, {"count", s.ranks.size()}});
    wave[g.name] = {{"desc", g.desc}, {"size", g.size}, {"mesh_dim", g.mesh_dim}, {"states", states}};
  }
  out["wavefront"] = wave;
  json evidence = json::array();
  for (const TriageRoot& root : r.roots)
    for (const std::string& e : root.evidence) evidence.push_back(e);
  out["evidence"] = evidence;
  json roots = json::array();
  for (const TriageRoot& root : r.roots) {
    roots.push_back({{"class", root.cls},
                     {"culprits", root.culprits},
                     {"process_group", root.process_group.empty() ? json(nullptr) : json(root.process_group)},
                     {"pg_desc", root.process_group.empty() ? json(nullptr) : json(root.pg_desc)},
                     {"seq", root.seq ? json(*root.seq) : json(nullptr)},
                     {"mesh_dim", root.mesh_dim},
                     {"summary", root.summary},
                     {"evidence", root.evidence},
                     {"issued_by", IssuerJson(root.issuer)}});
    if (!root.stragglers.empty()) roots.back()["stragglers"] = StragglersJson(root.stragglers);
  }
  out["roots"] = roots;
  // The first root's issuer, beside its process group and seq at the top level.
  out["issued_by"] = r.roots.empty() ? json(nullptr) : IssuerJson(r.roots.front().issuer);
  out["notes"] = r.notes;
  out["world"] = r.world;
  out["dumps"] = r.dumps;
  out["entries"] = r.entries;
  out["profiler_traces"] = r.profiler;
  if (r.profiler) {
    json stragglers = json::array();
    for (const TriageRoot& root : r.roots)
      for (const json& one : StragglersJson(root.stragglers)) stragglers.push_back(one);
    out["stragglers"] = stragglers;
  }
  return out;
}

}  // namespace shardscope::trace
