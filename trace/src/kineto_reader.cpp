// Reading PyTorch profiler (Kineto) traces into the one Model (docs/kineto.md). Each file is
// streamed (kineto_stream.cpp); what an event says is kept in small records, and once the file is
// read the NCCL kernels are joined to their launches (correlation, else the ac2g flow) and the
// launches to the CPU record of the collective (External id, else the record around the launch).
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "event_pools.hpp"
#include "kineto_names.hpp"
#include "kineto_stream.hpp"
#include "missing_ranks.hpp"
#include "shardscope/error.hpp"
#include "shardscope/files.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/kineto.hpp"

namespace shardscope::trace {

namespace fs = std::filesystem;
using detail::DtypeOfInputType;
using detail::IsP2pKind;
using detail::KindOfCollectiveName;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

namespace {

constexpr int64_t kNone = -1;

// The array / object an element holds (callers check the type first). By value: a range-for over
// the simdjson_result temporary itself would dangle.
simdjson::dom::array AsArray(element v) {
  simdjson::dom::array a;
  if (v.get_array().get(a)) return {};
  return a;
}
object AsObject(element v) {
  object o;
  if (v.get_object().get(o)) return {};
  return o;
}

// A number or a decimal string as an int64; kNone otherwise.
int64_t IntOf(element v) {
  switch (v.type()) {
    case element_type::INT64:
      return v.get_int64().value_unsafe();
    case element_type::UINT64: {
      uint64_t u = v.get_uint64().value_unsafe();
      return u > static_cast<uint64_t>(INT64_MAX) ? kNone : static_cast<int64_t>(u);
    }
    case element_type::DOUBLE: {
      double d = v.get_double().value_unsafe();
      return std::isfinite(d) && std::fabs(d) < 9e18 ? static_cast<int64_t>(d) : kNone;
    }
    case element_type::STRING: {
      std::string_view s = v.get_string().value_unsafe();
      if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string_view::npos)
        return kNone;
      return std::stoll(std::string(s));
    }
    default:
      return kNone;
  }
}

// A number (or numeric string) as a double; NaN otherwise.
double DoubleOf(element v) {
  switch (v.type()) {
    case element_type::INT64:
      return static_cast<double>(v.get_int64().value_unsafe());
    case element_type::UINT64:
      return static_cast<double>(v.get_uint64().value_unsafe());
    case element_type::DOUBLE:
      return v.get_double().value_unsafe();
    default:
      return NAN;
  }
}

std::string_view StrOf(element v) {
  return v.is_string() ? v.get_string().value_unsafe() : std::string_view();
}

// A pid or tid: a number, or a name ("stream 7") hashed to a number.
int64_t IdOf(element v) {
  if (v.is_string())
    return static_cast<int64_t>(std::hash<std::string_view>{}(v.get_string().value_unsafe()) >> 1);
  return IntOf(v);
}

// "[0, 1, 2]" or a JSON list -> ranks; empty when neither.
std::vector<int64_t> RanksOf(element v) {
  std::vector<int64_t> out;
  if (v.is_array()) {
    for (element e : AsArray(v)) {
      int64_t r = IntOf(e);
      if (r < 0 || r >= kMaxRanks) return {};
      out.push_back(r);
    }
    return out;
  }
  std::string_view s = StrOf(v);
  int64_t cur = -1;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      cur = (cur < 0 ? 0 : cur) * 10 + (c - '0');
      if (cur >= kMaxRanks) return {};
    } else {
      if (cur >= 0) out.push_back(cur);
      cur = -1;
      if (c != '[' && c != ']' && c != ',' && c != ' ') return {};
    }
  }
  if (cur >= 0) out.push_back(cur);
  return out;
}

int64_t ToNs(double us) { return std::llround(us * 1000.0); }

// Asks for transparent huge pages under a large allocation not yet touched (where the kernel
// leaves it to madvise). Filling a model of a million ops through 4 KiB pages cost this reader as
// much time again as the filling itself on the 2-core VM of docs/performance.md ("Kineto").
void AdviseHugePages(const void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

// Doubles v's capacity into a buffer advised as above before anything is written to it.
template <typename V>
void GrowOnHugePages(V& v) {
  V bigger;
  bigger.reserve(std::max<size_t>(4096, v.capacity() * 2));
  AdviseHugePages(bigger.data(), bigger.capacity() * sizeof(typename V::value_type));
  bigger.insert(bigger.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
  v.swap(bigger);
}

// `k` equals the literal: a length test and a fixed-size memcmp the compiler inlines.
template <size_t N>
bool KeyIs(std::string_view k, const char (&literal)[N]) {
  return k.size() == N - 1 && std::memcmp(k.data(), literal, N - 1) == 0;
}
template <size_t N>
bool StartsWith(std::string_view k, const char (&literal)[N]) {
  return k.size() >= N - 1 && std::memcmp(k.data(), literal, N - 1) == 0;
}

// One CPU-side record of a collective: a record_param_comms op or an nccl:* op (or the comms args
// a kernel carries).
struct CommRecord {
  int64_t ts = 0, end = 0, tid = 0, ext = kNone;
  bool rpc = false;  // record_param_comms (else nccl:*)
  std::string kind;  // "" when the record does not say
  std::string pg_name, pg_desc, dtype;
  std::vector<int64_t> ranks;
  int64_t group_size = kNone, rank_start = kNone, rank_stride = kNone;
  int64_t in_n = kNone, out_n = kNone, seq = kNone, src = kNone, dst = kNone;
  int merged_into = -1;  // an nccl:* op inside a record_param_comms
};

struct Launch {
  int64_t ts = 0, tid = 0, ext = kNone;
};

struct Kernel {
  int64_t ts = 0, end = 0, corr = kNone, ext = kNone, pid = 0, tid = 0;
  std::string kind;
  int args = -1;  // index into RankData::kernel_args when the kernel carries comms args
};

struct FlowEnd {
  int64_t id = 0, pid = 0, tid = 0, ts = 0;
};

struct PendingOp {
  IStr name;
  int64_t t = 0, end = 0;
};

struct StepSpan {
  int64_t n = 0, ts = 0, end = 0;
};

// Fills a record from the comms args of record_param_comms (or of a kernel).
void ReadCommArgs(object args, CommRecord& r) {
  for (auto field : args) {
    std::string_view k = field.key;
    element v = field.value;
    if (k == "Collective name") {
      r.kind = KindOfCollectiveName(StrOf(v));
      if (r.kind.empty() && !StrOf(v).empty()) r.kind = "wait";
    } else if (k == "In msg nelems") {
      r.in_n = IntOf(v);
    } else if (k == "Out msg nelems") {
      r.out_n = IntOf(v);
    } else if (k == "Group size") {
      r.group_size = IntOf(v);
    } else if (k == "dtype") {
      r.dtype = std::string(StrOf(v));
    } else if (k == "Process Group Name") {
      r.pg_name = v.is_string() ? std::string(StrOf(v)) : std::to_string(IntOf(v));
    } else if (k == "Process Group Description") {
      r.pg_desc = std::string(StrOf(v));
    } else if (k == "Process Group Ranks") {
      r.ranks = RanksOf(v);
    } else if (k == "Global rank start") {
      r.rank_start = IntOf(v);
    } else if (k == "Global rank stride") {
      r.rank_stride = IntOf(v);
    } else if (k == "Seq") {
      r.seq = IntOf(v);
    } else if (k == "Src Rank") {
      r.src = IntOf(v);
    } else if (k == "Dst Rank") {
      r.dst = IntOf(v);
    } else if (k == "External id") {
      r.ext = IntOf(v);
    }
  }
}

// nccl:* ops of older traces: "Input Dims" ([[n], ...]) and "Input type" (["float"]).
void ReadInputDims(object args, CommRecord& r) {
  for (auto field : args) {
    std::string_view k = field.key;
    if (k == "External id") {
      r.ext = IntOf(field.value);
    } else if (k == "Input Dims" && field.value.is_array()) {
      for (element shape : AsArray(field.value)) {
        if (!shape.is_array()) continue;
        int64_t n = 1;
        for (element d : AsArray(shape)) {
          int64_t e = IntOf(d);
          if (e < 0 || __builtin_mul_overflow(n, e, &n)) n = kNone;
          if (n == kNone) break;
        }
        r.in_n = n;
        break;  // the first tensor
      }
    } else if (k == "Input type" && field.value.is_array()) {
      for (element t : AsArray(field.value)) {
        r.dtype = DtypeOfInputType(StrOf(t));
        break;
      }
    }
  }
}

// Everything one file said, before the world is known.
struct RankData : detail::KinetoVisitor {
  KinetoRankInfo info;
  bool has_dist_info = false;
  int64_t di_rank = kNone, di_world = kNone;
  std::map<std::string, std::pair<std::string, std::vector<int64_t>>> pg_config;  // name -> (desc, ranks)
  int64_t base_ns = 0;
  std::vector<CommRecord> records;
  std::vector<CommRecord> kernel_args;
  std::vector<Kernel> kernels;
  std::unordered_map<int64_t, Launch> launches;                          // correlation -> launch
  std::unordered_map<int64_t, std::pair<int64_t, int64_t>> flow_starts;  // ac2g id -> (ts, tid)
  std::vector<FlowEnd> flow_ends;
  std::vector<PendingOp> ops;  // 24 bytes each until the file is read; an Op is ten times that
  std::vector<StepSpan> steps;

  void TopLevel(std::string_view key, element value) override {
    if (key == "distributedInfo" && value.is_object()) {
      has_dist_info = true;
      for (auto field : AsObject(value)) {
        if (field.key == "rank") di_rank = IntOf(field.value);
        if (field.key == "world_size") di_world = IntOf(field.value);
        if (field.key == "pg_config" && field.value.is_array()) {
          for (element pg : AsArray(field.value)) {
            if (!pg.is_object()) continue;
            std::string name, desc;
            std::vector<int64_t> ranks;
            for (auto f : AsObject(pg)) {
              if (f.key == "pg_name")
                name = f.value.is_string() ? std::string(StrOf(f.value)) : std::to_string(IntOf(f.value));
              if (f.key == "pg_desc") desc = std::string(StrOf(f.value));
              if (f.key == "ranks") ranks = RanksOf(f.value);
            }
            if (!name.empty()) pg_config[name] = {desc, ranks};
          }
        }
      }
    } else if (key == "baseTimeNanoseconds") {
      int64_t b = IntOf(value);
      if (b > 0) base_ns = b;
    }
  }

  void Event(element e) override {
    ++info.events;
    object o;
    if (e.get_object().get(o)) {
      ++info.unknown["(not an object)"];
      return;
    }
    std::string_view ph, cat, name;
    double ts = NAN, dur = 0;
    int64_t pid = 0, tid = 0, id = kNone;
    element args;
    bool has_args = false;
    // Keys are told apart by length and then compared as fixed-size byte strings (the profile of a
    // 1M-event trace showed generic string comparisons here as its second cost after parsing).
    for (auto field : o) {
      std::string_view k = field.key;
      switch (k.size()) {
        case 2:
          if (KeyIs(k, "ph"))
            ph = StrOf(field.value);
          else if (KeyIs(k, "ts"))
            ts = DoubleOf(field.value);
          else if (KeyIs(k, "id"))
            id = IdOf(field.value);
          break;
        case 3:
          if (KeyIs(k, "cat"))
            cat = StrOf(field.value);
          else if (KeyIs(k, "dur"))
            dur = DoubleOf(field.value);
          else if (KeyIs(k, "pid"))
            pid = IdOf(field.value);
          else if (KeyIs(k, "tid"))
            tid = IdOf(field.value);
          break;
        case 4:
          if (KeyIs(k, "name")) {
            name = StrOf(field.value);
          } else if (KeyIs(k, "args")) {
            args = field.value;
            has_args = field.value.is_object();
          }
          break;
        default:
          break;
      }
    }
    const char phase = ph.size() == 1 ? ph[0] : '\0';
    if (phase == 'X') {
      if (!std::isfinite(ts) || std::fabs(ts) > 9e15 || !(dur >= 0) || dur > 9e15) {
        ++info.unknown["(event without a valid ts/dur)"];
        return;
      }
      const int64_t t = ToNs(ts), end = t + ToNs(dur);
      if (KeyIs(cat, "cpu_op")) {
        if (KeyIs(name, "record_param_comms") || StartsWith(name, "nccl:")) {
          CommRecord r;
          r.ts = t;
          r.end = end;
          r.tid = tid;
          r.rpc = KeyIs(name, "record_param_comms");
          if (!r.rpc) r.kind = KindOfCollectiveName(name);
          if (has_args) {
            if (r.rpc)
              ReadCommArgs(AsObject(args), r);
            else
              ReadInputDims(AsObject(args), r);
          }
          records.push_back(std::move(r));
          return;
        }
        if (!StartsWith(name, "ProfilerStep#")) {
          if (ops.size() == ops.capacity()) GrowOnHugePages(ops);
          ops.push_back({Intern(name), t, end});
          return;
        }
      }
      if (StartsWith(name, "ProfilerStep#")) {
        int64_t n = kNone;
        std::string_view digits = name.substr(13);
        if (!digits.empty() && digits.size() < 12 &&
            digits.find_first_not_of("0123456789") == std::string_view::npos)
          n = std::stoll(std::string(digits));
        if (n >= 0) steps.push_back({n, t, end});
        return;
      }
      if (KeyIs(cat, "kernel")) {
        ++info.kernels;
        std::string kind = detail::KindOfNcclKernel(name);
        if (kind.empty()) return;
        ++info.nccl_kernels;
        Kernel k;
        k.ts = t;
        k.end = end;
        k.pid = pid;
        k.tid = tid;
        k.kind = std::move(kind);
        if (has_args) {
          object ao = AsObject(args);
          bool carries_comms_args = false;  // some traces copy the collective's args onto its kernel
          for (auto f : ao) {
            if (f.key == "correlation") k.corr = IntOf(f.value);
            if (f.key == "External id") k.ext = IntOf(f.value);
            if (f.key == "Collective name") carries_comms_args = true;
          }
          if (carries_comms_args) {
            CommRecord a;
            ReadCommArgs(ao, a);
            a.ts = t;
            a.end = end;
            k.args = static_cast<int>(kernel_args.size());
            kernel_args.push_back(std::move(a));
          }
        }
        kernels.push_back(std::move(k));
        return;
      }
      if (KeyIs(cat, "cuda_runtime") || KeyIs(cat, "cuda_driver")) {
        if (!has_args || name.find("Launch") == std::string_view::npos) return;
        Launch l{t, tid, kNone};
        int64_t corr = kNone;
        for (auto f : AsObject(args)) {
          if (f.key == "correlation") corr = IntOf(f.value);
          if (f.key == "External id") l.ext = IntOf(f.value);
        }
        if (corr != kNone) launches[corr] = l;
        return;
      }
      static constexpr std::string_view kKnownX[] = {"user_annotation",
                                                     "gpu_user_annotation",
                                                     "python_function",
                                                     "gpu_memcpy",
                                                     "gpu_memset",
                                                     "Trace",
                                                     "cpu_instant_event",
                                                     "overhead",
                                                     "async_cpu_to_gpu",
                                                     "cuda_profiler_range",
                                                     "Runtime",
                                                     "Kernel",
                                                     "Memcpy",
                                                     "Memset",
                                                     "fwdbwd",
                                                     "ac2g",
                                                     "cpu_to_cuda",
                                                     "mtia_ccp_events",
                                                     "privateuse1_runtime",
                                                     "privateuse1_driver"};
      if (std::find(std::begin(kKnownX), std::end(kKnownX), cat) == std::end(kKnownX))
        ++info.unknown[std::string(cat.empty() ? "(no cat)" : cat)];
      return;
    }
    if (phase == 's' || phase == 'f' || phase == 't') {
      if (!KeyIs(cat, "ac2g") || !std::isfinite(ts)) return;
      if (phase == 's') flow_starts[id] = {ToNs(ts), tid};
      if (phase == 'f') flow_ends.push_back({id, pid, tid, ToNs(ts)});
      return;
    }
    static constexpr std::string_view kKnownPh = "MiICbenBEPOND";
    if (phase == '\0' || kKnownPh.find(phase) == std::string_view::npos)
      ++info.unknown["ph '" + std::string(ph) + "'"];
  }

 private:
  // Op names repeat: the last few interned ones are looked up here before the global table (whose
  // lookup hashes the name and takes a lock).
  IStr Intern(std::string_view name) {
    for (const IStr& s : recent_names_)
      if (s.view() == name) return s;
    IStr s(name);
    recent_names_[recent_next_] = s;
    recent_next_ = (recent_next_ + 1) % recent_names_.size();
    return s;
  }
  std::array<IStr, 8> recent_names_{};
  size_t recent_next_ = 0;
};

// The ProfilerStep that contains `t` (steps sorted by ts), or kNone.
int64_t StepAt(const std::vector<StepSpan>& steps, int64_t t) {
  auto it =
      std::upper_bound(steps.begin(), steps.end(), t, [](int64_t x, const StepSpan& s) { return x < s.ts; });
  if (it == steps.begin()) return kNone;
  --it;
  return t <= it->end ? it->n : kNone;
}

// One collective of a rank before its sequence number is known.
struct Pending {
  Collective c;
  FlightRecord f;
  int64_t seq_arg = kNone;
  int64_t in_n = kNone, out_n = kNone;
  std::string dtype;  // PyTorch name
  int64_t src = kNone, dst = kNone;
};

class RankBuilder {
 public:
  RankBuilder(RankData& d, int64_t rank, int64_t world, std::vector<Diagnostic>& diags)
      : d_(d), rank_(rank), world_(world), diags_(diags) {}

  RankTrace Build() {
    RankTrace rt;
    rt.file = d_.info.file;
    rt.header.rank = rank_;
    rt.header.world = world_;
    rt.header.mesh_shape = {world_};
    rt.header.mesh_dim_names = {""};
    rt.header.backend = "kineto";
    rt.header.clock.name = "kineto";
    std::sort(d_.steps.begin(), d_.steps.end(),
              [](const StepSpan& a, const StepSpan& b) { return a.ts < b.ts; });
    d_.info.steps = static_cast<int64_t>(d_.steps.size());
    MergeRecords();
    std::vector<Pending> pending = d_.kernels.empty() ? FromRecords() : FromKernels();
    AssignSeq(pending);
    // ProfilerStep#N as ops named so (step N), then the ops, then the collectives.
    rt.events.reserve(d_.steps.size() + d_.ops.size() + pending.size());
    rt.events.ReserveOf<Op>(d_.steps.size() + d_.ops.size());
    AdviseHugePages(rt.events.Of<Op>().data(), rt.events.Of<Op>().capacity() * sizeof(Op));
    rt.events.ReserveOf<Collective>(pending.size());
    int64_t next_id = 0;
    // An op here is its name, ids and times: ops of one name share one shape.
    std::unordered_map<const std::string*, Shared<OpShape>> shapes;  // by the IStr's identity
    auto shape_of = [&shapes](const IStr& name) -> const Shared<OpShape>& {
      auto [it, fresh] = shapes.try_emplace(&name.str());
      if (fresh) it->second = Shared<OpShape>(OpShape{.name = name});
      return it->second;
    };
    for (const StepSpan& s : d_.steps) {
      Op& op = rt.events.EmplaceOf<Op>();
      op.id = next_id++;
      op.step = s.n;
      op.shape = shape_of(IStr("ProfilerStep#" + std::to_string(s.n)));
      op.t_ns = s.ts + d_.base_ns;
      op.end_ns = s.end + d_.base_ns;
    }
    for (const PendingOp& p : d_.ops) {
      Op& op = rt.events.EmplaceOf<Op>();
      op.step = std::max<int64_t>(0, StepAt(d_.steps, p.t));
      op.id = next_id++;
      op.shape = shape_of(p.name);
      op.t_ns = p.t + d_.base_ns;
      op.end_ns = p.end + d_.base_ns;
    }
    d_.info.ops = static_cast<int64_t>(d_.ops.size());
    std::vector<PendingOp>().swap(d_.ops);
    for (Pending& p : pending) {
      ++d_.info.collectives[p.c.kind()];
      p.c.flight = std::move(p.f);
      rt.events.emplace_back(std::move(p.c));
    }
    d_.info.counted_from_kernels = !d_.kernels.empty();
    rt.events.shrink_to_fit();
    return rt;
  }

 private:
  // nccl:* ops inside a record_param_comms on the same thread belong to it.
  void MergeRecords() {
    auto& recs = d_.records;
    std::stable_sort(recs.begin(), recs.end(), [](const CommRecord& a, const CommRecord& b) {
      return a.tid != b.tid ? a.tid < b.tid : a.ts < b.ts;
    });
    int open = -1;
    for (size_t i = 0; i < recs.size(); ++i) {
      CommRecord& r = recs[i];
      if (open >= 0 && (recs[open].tid != r.tid || recs[open].end < r.ts)) open = -1;
      if (r.rpc) {
        open = static_cast<int>(i);
        continue;
      }
      if (open < 0 || r.end > recs[open].end) continue;
      CommRecord& host = recs[open];
      r.merged_into = open;
      if (host.kind.empty()) host.kind = r.kind;
      if (host.in_n == kNone) host.in_n = r.in_n;
      if (host.dtype.empty()) host.dtype = r.dtype;
    }
    for (size_t i = 0; i < recs.size(); ++i) {
      if (recs[i].ext == kNone) continue;
      ext_[recs[i].ext] = recs[i].merged_into >= 0 ? recs[i].merged_into : static_cast<int>(i);
    }
    for (size_t i = 0; i < recs.size(); ++i)
      if (recs[i].merged_into < 0) by_tid_[recs[i].tid].push_back(static_cast<int>(i));
    for (const CommRecord& r : recs)
      if (r.merged_into < 0 && r.kind != "wait") ++d_.info.cpu_records;
  }

  // The top-level record around `t` on thread `tid`, or -1.
  int Around(int64_t tid, int64_t t) const {
    auto it = by_tid_.find(tid);
    if (it == by_tid_.end()) return -1;
    const auto& v = it->second;
    auto pos =
        std::upper_bound(v.begin(), v.end(), t, [&](int64_t x, int i) { return x < d_.records[i].ts; });
    if (pos == v.begin()) return -1;
    const CommRecord& r = d_.records[*(pos - 1)];
    return t <= r.end ? *(pos - 1) : -1;
  }

  std::vector<Pending> FromKernels() {
    std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> flow_by_end;  // (pid, tid, ts) -> id
    for (const FlowEnd& f : d_.flow_ends) flow_by_end[{f.pid, f.tid, f.ts}] = f.id;
    std::sort(d_.kernels.begin(), d_.kernels.end(),
              [](const Kernel& a, const Kernel& b) { return a.ts < b.ts; });
    std::vector<Pending> out;
    int64_t unlinked = 0;
    for (const Kernel& k : d_.kernels) {
      const Launch* launch = nullptr;
      Launch flow_launch;
      if (k.corr != kNone) {
        auto it = d_.launches.find(k.corr);
        if (it != d_.launches.end()) launch = &it->second;
      }
      if (launch == nullptr) {
        auto fe = flow_by_end.find({k.pid, k.tid, k.ts});
        if (fe != flow_by_end.end()) {
          auto it = d_.launches.find(fe->second);
          if (it != d_.launches.end()) {
            launch = &it->second;
          } else if (auto fs = d_.flow_starts.find(fe->second); fs != d_.flow_starts.end()) {
            flow_launch = {fs->second.first, fs->second.second, kNone};
            launch = &flow_launch;
          }
        }
      }
      int rec = -1;
      if (launch != nullptr && launch->ext != kNone && ext_.count(launch->ext)) rec = ext_.at(launch->ext);
      if (rec < 0 && k.ext != kNone && ext_.count(k.ext)) rec = ext_.at(k.ext);
      if (rec < 0 && launch != nullptr) rec = Around(launch->tid, launch->ts);
      const CommRecord* r = rec >= 0 ? &d_.records[static_cast<size_t>(rec)] : nullptr;
      if (k.args >= 0 && (r == nullptr || (r->in_n == kNone && r->pg_name.empty())))
        r = &d_.kernel_args[static_cast<size_t>(k.args)];
      if (r == nullptr) ++unlinked;
      out.push_back(
          Describe(k.kind, r, launch != nullptr ? launch->ts : (r != nullptr ? r->ts : k.ts), k.ts, k.end));
    }
    if (unlinked > 0) {
      diags_.push_back(
          {d_.info.file, 0,
           std::to_string(unlinked) + " NCCL kernel(s) have no CPU record of their collective (no " +
               "record_param_comms or nccl:* op found through correlation, flow or External id): " +
               "kind from the kernel name, group taken as the default process group, size unknown"});
    }
    return out;
  }

  std::vector<Pending> FromRecords() {
    std::vector<int> top;
    for (size_t i = 0; i < d_.records.size(); ++i) {
      const CommRecord& r = d_.records[i];
      if (r.merged_into < 0 && !r.kind.empty() && r.kind != "wait") top.push_back(static_cast<int>(i));
    }
    std::sort(top.begin(), top.end(), [&](int a, int b) { return d_.records[a].ts < d_.records[b].ts; });
    std::vector<Pending> out;
    for (int i : top) {
      const CommRecord& r = d_.records[static_cast<size_t>(i)];
      out.push_back(Describe(r.kind, &r, r.ts, r.ts, r.end));
    }
    return out;
  }

  // The group of a record: its ranks, else pg_config's, else start/stride/size, else the world.
  std::vector<int64_t> GroupOf(const CommRecord* r, const std::string& pg) const {
    if (r != nullptr && !r->ranks.empty()) return r->ranks;
    auto it = d_.pg_config.find(pg);
    if (it != d_.pg_config.end() && !it->second.second.empty()) return it->second.second;
    if (r != nullptr && r->rank_start >= 0 && r->group_size > 0 && r->group_size <= kMaxRanks &&
        !IsP2pKind(r->kind)) {
      const int64_t stride = r->rank_stride > 0 ? r->rank_stride : 1;
      std::vector<int64_t> g;
      for (int64_t i = 0; i < r->group_size; ++i) g.push_back(r->rank_start + i * stride);
      if (g.back() < kMaxRanks) return g;
    }
    std::vector<int64_t> g(static_cast<size_t>(world_));
    for (int64_t i = 0; i < world_; ++i) g[static_cast<size_t>(i)] = i;
    return g;
  }

  Pending Describe(const std::string& kernel_kind, const CommRecord* r, int64_t launch_ts, int64_t start,
                   int64_t end) {
    Pending p;
    std::string kind = r != nullptr && !r->kind.empty() && r->kind != "wait" ? r->kind : kernel_kind;
    // A SendRecv kernel of a record that names no kind stays send_recv; a record's all_to_all,
    // send or recv says which.
    const std::string pg = r != nullptr && !r->pg_name.empty() ? r->pg_name : "0";
    std::vector<int64_t> group = GroupOf(r, pg);
    if (std::find(group.begin(), group.end(), rank_) == group.end()) {
      if (!bad_group_warned_) {
        diags_.push_back({d_.info.file, 0,
                          "warning: process group '" + pg + "' does not contain this file's rank " +
                              std::to_string(rank_) + "; its collectives are taken as this rank's alone"});
        bad_group_warned_ = true;
      }
      group = {rank_};
    }
    Collective& c = p.c;
    c.redistribute_id = -1;
    c.Mutable().step = 0;
    c.op_id = -1;
    c.Mutable().kind = kind;
    c.Mutable().group = group;
    c.start_ns = start + d_.base_ns;
    c.end_ns = std::max(end, start) + d_.base_ns;
    FlightRecord& f = p.f;
    FlightShape& shape = c.Mutable().flight.Mutable();
    shape.pg_name = pg;
    shape.pg_desc = r != nullptr && !r->pg_desc.empty() ? r->pg_desc
                    : d_.pg_config.count(pg)            ? d_.pg_config.at(pg).first
                    : pg == "0"                         ? "default_pg"
                                                        : "";
    shape.state = "completed";
    shape.is_p2p = IsP2pKind(kind);
    f.created_ns = launch_ts + d_.base_ns;
    f.duration_ms = static_cast<double>(c.end_ns - c.start_ns) / 1e6;
    if (r != nullptr) {
      p.seq_arg = r->seq;
      p.src = r->src;
      p.dst = r->dst;
      p.dtype = r->dtype;
      p.in_n = r->in_n;
      p.out_n = r->out_n;
    }
    const auto n = static_cast<int64_t>(group.size());
    if (p.in_n >= 0 && p.out_n < 0) {  // only Input Dims: the output follows from the kind
      p.out_n = kind == "all_gather"       ? p.in_n * n
                : kind == "reduce_scatter" ? (n > 0 ? p.in_n / n : 0)
                                           : p.in_n;
    }
    if (p.in_n >= 0) shape.input_sizes = {{p.in_n}};
    if (p.out_n >= 0) shape.output_sizes = {{p.out_n}};
    if (!p.dtype.empty()) {
      shape.input_dtypes = {p.dtype};
      shape.output_dtypes = {p.dtype};
      c.Mutable().dtype = detail::ShortDtypeName(p.dtype);
    }
    std::string profiling_name = "nccl:" + kind;
    auto local = [&](int64_t global) -> int64_t {
      auto it = std::find(group.begin(), group.end(), global);
      return it == group.end() ? -1 : it - group.begin();
    };
    if (kind == "send" && p.dst >= 0 && local(p.dst) >= 0)
      profiling_name += " " + std::to_string(local(rank_)) + "->" + std::to_string(local(p.dst));
    if (kind == "recv" && p.src >= 0 && local(p.src) >= 0)
      profiling_name += " " + std::to_string(local(rank_)) + "<-" + std::to_string(local(p.src));
    shape.profiling_name = profiling_name;
    shapes_.Intern(c.Mutable().flight);
    PeerBytes(p, local);
    collective_shapes_.Intern(c.shape);
    return p;
  }

  // Bytes per peer, as the sizes imply: all_gather and all_reduce move the input to every peer,
  // reduce_scatter the output-sized chunk, all_to_all an n-th of each side, send/recv the tensor to
  // or from the one peer.
  template <typename Local>
  void PeerBytes(Pending& p, Local local) {
    Collective& c = p.c;
    const size_t n = c.group().size();
    std::vector<int64_t> sent(n, 0), recv(n, 0);
    const int64_t es = detail::DtypeBytes(p.dtype);
    auto bytes = [&](int64_t elems) {
      int64_t b = 0;
      return elems > 0 && !__builtin_mul_overflow(elems, es, &b) ? std::min(b, int64_t{1} << 42) : int64_t{0};
    };
    const int64_t in_b = bytes(p.in_n), out_b = bytes(p.out_n);
    for (size_t k = 0; k < n; ++k) {
      if (c.group()[k] == rank_) continue;
      if (c.kind() == "all_gather" || c.kind() == "all_reduce") {
        sent[k] = recv[k] = in_b;
      } else if (c.kind() == "reduce_scatter") {
        sent[k] = recv[k] = out_b;
      } else if (c.kind() == "all_to_all") {
        sent[k] = in_b / static_cast<int64_t>(n);
        recv[k] = out_b / static_cast<int64_t>(n);
      }
    }
    if (c.kind() == "send" && p.dst >= 0 && local(p.dst) >= 0) sent[static_cast<size_t>(local(p.dst))] = in_b;
    if (c.kind() == "recv" && p.src >= 0 && local(p.src) >= 0)
      recv[static_cast<size_t>(local(p.src))] = std::max(in_b, out_b);
    c.Mutable().bytes_sent = std::move(sent);
    c.Mutable().bytes_recv = std::move(recv);
  }

  // Sequence numbers per (process group, p2p or not): the trace's Seq where every record of that
  // series has one, else the order of the CPU launches (1, 2, ...).
  void AssignSeq(std::vector<Pending>& pending) {
    std::stable_sort(pending.begin(), pending.end(),
                     [](const Pending& a, const Pending& b) { return a.f.created_ns < b.f.created_ns; });
    std::map<std::pair<std::string, bool>, bool> all_have;
    for (const Pending& p : pending) {
      auto key = std::make_pair(p.c.flight_shape().pg_name.str(), p.c.flight_shape().is_p2p);
      auto [it, inserted] = all_have.emplace(key, true);
      it->second = it->second && p.seq_arg >= 0;
    }
    std::map<std::pair<std::string, bool>, int64_t> counter;
    int64_t record_id = 0;
    for (Pending& p : pending) {
      auto key = std::make_pair(p.c.flight_shape().pg_name.str(), p.c.flight_shape().is_p2p);
      const int64_t seq = all_have[key] ? p.seq_arg : ++counter[key];
      if (p.c.flight_shape().is_p2p)
        p.f.p2p_seq_id = seq;
      else
        p.f.seq_id = seq;
      p.f.record_id = record_id++;
    }
  }

  RankData& d_;
  int64_t rank_, world_;
  std::vector<Diagnostic>& diags_;
  std::unordered_map<int64_t, int> ext_;
  std::map<int64_t, std::vector<int>> by_tid_;
  bool bad_group_warned_ = false;
  detail::RecentShapes<FlightShape> shapes_;  // equal shapes of this rank's collectives: one buffer
  detail::RecentShapes<CollectiveShape> collective_shapes_;  // the same for their collective shapes
};

struct KinetoFile {
  fs::path path;
  std::string name;
};

std::vector<KinetoFile> ListFiles(const std::vector<fs::path>& paths) {
  std::vector<KinetoFile> out;
  for (const fs::path& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> entries;
      for (const auto& e : ListDirectory(p, "kineto")) entries.push_back(e.path());
      std::sort(entries.begin(), entries.end());
      size_t found = 0;
      for (const fs::path& e : entries) {
        std::string name = e.filename().string();
        if (name.empty() || name.front() == '.' || !IsKinetoFileName(name) || !fs::is_regular_file(e, ec))
          continue;
        out.push_back({e, name});
        ++found;
      }
      if (found == 0)
        throw InvalidInput("kineto: no profiler trace in '" + p.string() +
                           "' (expected *.json or *.json.gz files)");
    } else if (fs::is_regular_file(p, ec)) {
      out.push_back({p, p.filename().string()});
    } else {
      throw InvalidInput(p.string() + ": no such file or directory");
    }
  }
  if (out.empty()) throw InvalidInput("kineto: no profiler trace files given");
  return out;
}

}  // namespace

bool IsKinetoFileName(const std::string& name) {
  auto ends = [&](const char* s) {
    std::string e = s;
    return name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

int64_t KinetoRankOfFileName(const std::string& file_name) {
  std::string lower = file_name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto digits_at = [&](size_t i) -> int64_t {
    size_t j = i;
    while (j < lower.size() && std::isdigit(static_cast<unsigned char>(lower[j]))) ++j;
    if (j == i || j - i > 7) return -1;
    int64_t r = std::stoll(lower.substr(i, j - i));
    return r < kMaxRanks ? r : -1;
  };
  size_t at = lower.find("rank");
  if (at != std::string::npos) {
    size_t i = at + 4;
    if (i < lower.size() && (lower[i] == '-' || lower[i] == '_' || lower[i] == '.')) ++i;
    int64_t r = digits_at(i);
    if (r >= 0) return r;
  }
  // Otherwise the only run of digits in the name, if there is exactly one.
  int64_t found = -1;
  int runs = 0;
  for (size_t i = 0; i < lower.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(lower[i])) &&
        (i == 0 || !std::isdigit(static_cast<unsigned char>(lower[i - 1])))) {
      ++runs;
      found = digits_at(i);
    }
  }
  return runs == 1 ? found : -1;
}

bool IsKinetoTrace(const fs::path& path) {
  auto looks = [](const fs::path& p) {
    try {
      detail::KinetoInput in(p, p.filename().string());
      std::string head(4096, '\0');
      size_t n = 0;
      while (n < head.size()) {
        size_t got = in.Read(head.data() + n, head.size() - n);
        if (got == 0) break;
        n += got;
      }
      head.resize(n);
      size_t first = head.find_first_not_of(" \t\r\n");
      if (first == std::string::npos || head[first] != '{') return false;
      return head.find("\"traceEvents\"") != std::string::npos ||
             head.find("\"schemaVersion\"") != std::string::npos ||
             head.find("\"distributedInfo\"") != std::string::npos ||
             head.find("\"deviceProperties\"") != std::string::npos;
    } catch (const std::exception&) {
      return false;
    }
  };
  return RecognisesFiles(path, IsKinetoFileName, looks);
}

KinetoImport ReadKineto(const std::vector<fs::path>& paths, const ReadOptions& options) {
  std::vector<KinetoFile> files = ListFiles(paths);
  std::vector<RankData> data(files.size());
  if (options.progress != nullptr) {
    options.progress->files_total = static_cast<int64_t>(files.size());
    int64_t total = 0;
    for (const KinetoFile& f : files) {
      std::error_code ec;
      auto s = fs::file_size(f.path, ec);
      if (!ec) total += static_cast<int64_t>(s);
    }
    options.progress->bytes_total = total;
  }
  // Files are read concurrently, one per thread; the first error (in file order) is thrown.
  unsigned jobs = options.jobs > 0 ? static_cast<unsigned>(options.jobs)
                                   : std::max(1u, std::thread::hardware_concurrency());
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min<unsigned>(jobs, static_cast<unsigned>(files.size()));
  // With a core to spare per file being read, each file is parsed on a second thread while its
  // reader visits the batches parsed before (kineto_stream.cpp, Pipe).
  const bool pipelined = jobs * 2 <= cores;
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(files.size());
  auto work = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      try {
        data[i].info.file = files[i].name;
        data[i].info.bytes = detail::StreamKineto(files[i].path, files[i].name, data[i], pipelined);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      if (options.progress != nullptr) {
        ++options.progress->files_done;
        std::error_code ec;
        auto s = fs::file_size(files[i].path, ec);
        if (!ec) options.progress->bytes_done += static_cast<int64_t>(s);
      }
    }
  };
  if (jobs <= 1) {
    work();
  } else {
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < jobs; ++t) threads.emplace_back(work);
    for (std::thread& t : threads) t.join();
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);

  KinetoImport out;
  Model& model = out.model;
  model.source = paths.size() == 1 ? paths.front() : fs::path();
  // Ranks: distributedInfo.rank, else the file name.
  std::map<int64_t, size_t> by_rank;
  int64_t world = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    RankData& d = data[i];
    int64_t rank = d.di_rank;
    if (rank < 0 || rank >= kMaxRanks) {
      rank = KinetoRankOfFileName(d.info.file);
      if (rank < 0) {
        throw InvalidInput(
            d.info.file + ": cannot tell the rank: " +
            (d.has_dist_info ? "distributedInfo has no rank" : "the trace has no distributedInfo") +
            " and the file name holds no rank (name it rank-N..., e.g. rank-3.pt.trace.json)");
      }
      d.info.rank_from_file_name = true;
      model.diagnostics.push_back(
          {d.info.file, 0,
           std::string("warning: ") +
               (d.has_dist_info ? "distributedInfo has no rank" : "no distributedInfo") + "; rank " +
               std::to_string(rank) + " taken from the file name"});
    }
    auto [it, inserted] = by_rank.emplace(rank, i);
    if (!inserted) {
      throw InvalidInput("kineto: two traces of rank " + std::to_string(rank) + ": " +
                         data[it->second].info.file + " and " + d.info.file);
    }
    d.info.rank = rank;
    world = std::max(world, rank + 1);
    if (d.di_world > 0 && d.di_world <= kMaxRanks) world = std::max(world, d.di_world);
    for (const auto& [name, pg] : d.pg_config)
      for (int64_t r : pg.second) world = std::max(world, r + 1);
  }
  std::set<int64_t> claimed;
  for (const RankData& d : data)
    if (d.di_world > 0) claimed.insert(d.di_world);
  if (claimed.size() > 1) {
    std::string list;
    for (int64_t w : claimed) list += (list.empty() ? "" : ", ") + std::to_string(w);
    model.diagnostics.push_back(
        {"", 0, "warning: the traces disagree on world_size (" + list + "); using " + std::to_string(world)});
  }
  model.world = world;
  std::vector<int64_t> present;
  for (const auto& [rank, i] : by_rank) {
    RankData& d = data[i];
    d.info.world = world;
    std::vector<Diagnostic> diags;
    model.ranks.push_back(RankBuilder(d, rank, world, diags).Build());
    for (Diagnostic& g : diags) model.diagnostics.push_back(std::move(g));
    if (!d.info.unknown.empty()) {
      std::string list;
      int64_t total = 0;
      for (const auto& [kind, n] : d.info.unknown) {
        list += (list.empty() ? "" : ", ") + kind + " " + std::to_string(n);
        total += n;
      }
      model.diagnostics.push_back(
          {d.info.file, 0, std::to_string(total) + " event(s) of unknown kinds skipped (" + list + ")"});
    }
    present.push_back(rank);
    out.ranks.push_back(std::move(d.info));
  }
  if (auto missing = detail::MissingRanks(present, world, "profiler trace"))
    model.diagnostics.push_back(std::move(*missing));
  std::vector<RankData>().swap(data);  // the files' leftovers go before the records come
  // Every op event gets its record, as the trace reader gives the trace `import kineto -o` writes:
  // one model from a directory and from its import, whoever reads it.
  AddKinetoOpRecords(model);
  return out;
}

Model ReadKinetoModel(const std::vector<fs::path>& paths, const ReadOptions& options) {
  return std::move(ReadKineto(paths, options).model);
}

void AddKinetoOpRecords(Model& model) {
  size_t count = 0;
  for (const RankTrace& rt : model.ranks) count += rt.events.Of<Op>().size();
  if (!model.ops.empty() || count == 0) return model.Reindex();
  model.ops.reserve(count);
  // The reader numbers each rank's ops from 0 in event order and the ranks are sorted, so the
  // records come out sorted by (rank, id) unless a model was built otherwise.
  for (const RankTrace& rt : model.ranks) {
    for (const Op& op : rt.events.Of<Op>()) {
      OpRecord& rec = model.ops.emplace_back();
      rec.rank = rt.header.rank;
      rec.op = EventRef<Op>::To(&op);
    }
  }
  auto by_rank_id = [](const OpRecord& a, const OpRecord& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.op->id < b.op->id;
  };
  if (!std::is_sorted(model.ops.begin(), model.ops.end(), by_rank_id))
    std::stable_sort(model.ops.begin(), model.ops.end(), by_rank_id);
  model.Reindex();
}

}  // namespace shardscope::trace
