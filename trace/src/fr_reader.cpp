// Flight Recorder dumps (torch/csrc/distributed/c10d/FlightRecorder*.hpp) into the trace Model.
// Field names and meanings: /work/shared/reference/pytorch-job-artifacts.md section 2 and
// docs/flight-recorder.md.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <system_error>

#include "missing_ranks.hpp"
#include "shardscope/error.hpp"
#include "shardscope/printable.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::trace {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// FR timestamps are wall-clock nanoseconds since the epoch (about 2^60.6 in 2026); the trace
// format bounds times by 2^61, which they fit until 2043.
constexpr int64_t kMaxTimeNs = int64_t{1} << 61;
constexpr int64_t kMaxEntries = int64_t{1} << 22;  // TORCH_FR_BUFFER_SIZE is 2000 by default

std::string ReadBounded(const fs::path& path, const std::string& name) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) throw InvalidInput(name + ": cannot read: " + ec.message());
  if (size > static_cast<uintmax_t>(kMaxPickleBytes)) {
    throw InvalidInput(name + ": " + std::to_string(size) + " bytes, larger than the limit of " +
                       std::to_string(kMaxPickleBytes >> 20) + " MiB for one Flight Recorder dump");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput(name + ": cannot open");
  std::string data(static_cast<size_t>(size), '\0');
  in.read(data.data(), static_cast<std::streamsize>(size));
  data.resize(static_cast<size_t>(in.gcount()));
  return data;
}

bool LooksLikeJson(std::string_view data) {
  size_t i = data.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && data[i] == '{';
}

json ParseDump(const std::string& data, const std::string& name) {
  if (!LooksLikeJson(data)) return ReadPickle(data, name);
  try {
    // The callback refuses deep nesting while parsing (depth counts from 0 at the top object).
    return json::parse(data, [&](int depth, json::parse_event_t, json&) {
      if (depth > kMaxPickleDepth)
        throw InvalidInput(name + ": JSON nested deeper than " + std::to_string(kMaxPickleDepth) + " levels");
      return true;
    });
  } catch (const json::exception& e) {
    std::string what = e.what();
    for (char& ch : what)
      if (static_cast<unsigned char>(ch) >= 0x80) ch = '?';
    throw InvalidInput(name + ": not a valid JSON dump: " + what);
  }
}

// Typed access to one JSON object of a dump, messages "file: entries[3].state: expected a string".
class Obj {
 public:
  Obj(const json& j, std::string file, std::string path)
      : j_(j), file_(std::move(file)), path_(std::move(path)) {
    if (!j_.is_object()) Fail("", "expected a dict");
  }
  [[noreturn]] void Fail(const std::string& field, const std::string& what) const {
    std::string where = path_.empty() ? field : field.empty() ? path_ : path_ + "." + field;
    throw InvalidInput(file_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }
  const json* Find(const char* name) const {
    auto it = j_.find(name);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  const json& Get(const char* name) const {
    const json* v = Find(name);
    if (v == nullptr) Fail(name, "missing");
    return *v;
  }
  int64_t Int(const char* name, int64_t min, int64_t max) const { return IntOf(Get(name), name, min, max); }
  int64_t IntOr(const char* name, int64_t fallback, int64_t min, int64_t max) const {
    const json* v = Find(name);
    return v == nullptr ? fallback : IntOf(*v, name, min, max);
  }
  std::string Str(const char* name) const {
    const json& v = Get(name);
    if (!v.is_string()) Fail(name, "expected a string");
    return Printable(v.get<std::string>());
  }
  std::string StrOr(const char* name, const std::string& fallback) const {
    const json* v = Find(name);
    if (v == nullptr) return fallback;
    if (!v->is_string()) Fail(name, "expected a string");
    return Printable(v->get<std::string>());
  }
  std::vector<std::vector<int64_t>> Shapes(const char* name) const {
    const json& v = Get(name);
    if (!v.is_array() || static_cast<int64_t>(v.size()) > kMaxOpOperands)
      Fail(name, "expected a list of at most " + std::to_string(kMaxOpOperands) + " shapes");
    std::vector<std::vector<int64_t>> out;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string field = std::string(name) + "[" + std::to_string(i) + "]";
      if (!v[i].is_array() || static_cast<int64_t>(v[i].size()) > kMaxTensorDims)
        Fail(field, "expected a list of at most " + std::to_string(kMaxTensorDims) + " sizes");
      std::vector<int64_t> shape;
      for (const json& x : v[i]) shape.push_back(IntOf(x, field.c_str(), 0, kMaxExtent));
      out.push_back(std::move(shape));
    }
    return out;
  }
  std::vector<std::string> Strs(const char* name) const {
    const json& v = Get(name);
    if (!v.is_array() || static_cast<int64_t>(v.size()) > kMaxOpOperands)
      Fail(name, "expected a list of at most " + std::to_string(kMaxOpOperands) + " strings");
    std::vector<std::string> out;
    for (const json& x : v) {
      if (!x.is_string()) Fail(name, "expected a list of strings");
      out.push_back(Printable(x.get<std::string>()));
    }
    return out;
  }
  const json& raw() const { return j_; }

 private:
  int64_t IntOf(const json& v, const char* name, int64_t min, int64_t max) const {
    if (v.is_boolean() || !(v.is_number_integer() || v.is_number_unsigned()))
      Fail(name, "expected an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max))
      Fail(name, std::to_string(v.get<uint64_t>()) + " is larger than " + std::to_string(max));
    int64_t x = v.get<int64_t>();
    if (x < min || x > max)
      Fail(name,
           std::to_string(x) + " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return x;
  }

  const json& j_;
  std::string file_, path_;
};

// "[0, 1, 2, 3]" (a string in pg_config) or a list of integers.
std::vector<int64_t> ParseRanks(const json& v, const Obj& pg) {
  std::vector<int64_t> out;
  auto add = [&](int64_t r) {
    if (r < 0 || r >= kMaxRanks) pg.Fail("ranks", "rank " + std::to_string(r) + " is outside [0, 2^20)");
    if (static_cast<int64_t>(out.size()) >= kMaxRanks) pg.Fail("ranks", "more than 2^20 ranks");
    out.push_back(r);
  };
  if (v.is_array()) {
    for (const json& x : v) {
      if (!x.is_number_integer() && !x.is_number_unsigned()) pg.Fail("ranks", "expected integers");
      add(x.is_number_unsigned() && x.get<uint64_t>() > uint64_t{1} << 40 ? -1 : x.get<int64_t>());
    }
    return out;
  }
  if (!v.is_string()) pg.Fail("ranks", "expected a string such as \"[0, 1, 2, 3]\" or a list");
  const std::string s = v.get<std::string>();
  size_t i = 0;
  auto skip = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == ',' || s[i] == '[' || s[i] == ']')) ++i;
  };
  for (skip(); i < s.size(); skip()) {
    if (!std::isdigit(static_cast<unsigned char>(s[i])))
      pg.Fail("ranks", "'" + s + "' is not a list of ranks");
    int64_t r = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      r = r * 10 + (s[i++] - '0');
      if (r >= kMaxRanks) pg.Fail("ranks", "'" + s + "' names a rank of 2^20 or more");
    }
    add(r);
  }
  return out;
}

struct ProcessGroup {
  std::string name, desc;
  std::vector<int64_t> ranks;
};

// "nccl:all_reduce" -> "all_reduce"; the kinds shardscope's own traces use where one fits.
std::string KindOf(const std::string& profiling_name) {
  std::string n = profiling_name;
  size_t colon = n.find(':');
  if (colon != std::string::npos) n = n.substr(colon + 1);
  size_t space = n.find(' ');
  if (space != std::string::npos) n = n.substr(0, space);  // "send 1->2"
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("reduce_scatter")) return "reduce_scatter";
  if (has("allgather") || has("all_gather")) return "all_gather";
  if (has("allreduce") || has("all_reduce")) return "all_reduce";
  if (has("alltoall") || has("all_to_all")) return "all_to_all";
  while (!n.empty() && n.front() == '_') n.erase(n.begin());
  return n.empty() ? std::string("unknown") : n;
}

// PyTorch's dtype names (c10::ScalarType) -> the trace's short names; others lower-cased.
std::string ShortDtype(const std::string& name) {
  static const std::map<std::string, std::string> kNames = {
      {"Float", "f32"}, {"Double", "f64"}, {"Half", "f16"}, {"BFloat16", "bf16"}, {"Int", "i32"},
      {"Long", "i64"},  {"Short", "i16"},  {"Char", "i8"},  {"Byte", "u8"},       {"Bool", "b8"}};
  auto it = kNames.find(name);
  if (it != kNames.end()) return it->second;
  std::string out = name;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int64_t ElementBytes(const std::string& name) {
  static const std::map<std::string, int64_t> kBytes = {
      {"Float", 4}, {"Double", 8}, {"Half", 2}, {"BFloat16", 2}, {"Int", 4},          {"Long", 8},
      {"Short", 2}, {"Char", 1},   {"Byte", 1}, {"Bool", 1},     {"ComplexFloat", 8}, {"ComplexDouble", 16}};
  auto it = kBytes.find(name);
  return it == kBytes.end() ? 0 : it->second;
}

// Bytes of the tensors of one side (saturating at 2^42, the trace's per-peer bound).
int64_t TensorBytes(const std::vector<std::vector<int64_t>>& shapes, const std::vector<std::string>& dtypes) {
  constexpr int64_t kCap = int64_t{1} << 42;
  int64_t total = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    int64_t n = i < dtypes.size() ? ElementBytes(dtypes[i]) : 0;
    for (int64_t e : shapes[i]) {
      if (e != 0 && n > kCap / e)
        n = kCap;
      else
        n *= e;
    }
    total = std::min(kCap, total + n);
  }
  return total;
}

// "send 1->2" / "recv 3<-0": the peer (a rank of the group, not global), or -1.
int64_t P2pPeer(const std::string& profiling_name) {
  size_t arrow = profiling_name.find("->");
  if (arrow == std::string::npos) arrow = profiling_name.find("<-");
  if (arrow == std::string::npos) return -1;
  std::string digits = profiling_name.substr(arrow + 2);
  if (digits.empty() || digits.size() > 7 || digits.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stoll(digits);
}

struct RankDump {
  RankTrace trace;
  std::vector<Diagnostic> diagnostics;
  int64_t max_rank = 0;  // largest rank the dump names (own rank and pg members)
};

// The version is checked first: another major version may have changed every field.
void CheckDumpVersion(const Obj& top, const std::string& name) {
  const json& v = top.Get("version");
  std::string version = v.is_string() ? v.get<std::string>() : v.is_number() ? v.dump() : "";
  if (version.rfind("2.", 0) != 0 || version.size() < 3 ||
      version.find_first_not_of("0123456789", 2) != std::string::npos) {
    throw Unsupported(name + ": Flight Recorder dump version '" + (version.empty() ? v.dump() : version) +
                      "' is not supported (this shardscope reads versions 2.x)");
  }
}

// pg_config by key; `max_rank` grows to the largest member named.
std::map<std::string, ProcessGroup> ParseProcessGroups(const Obj& top, const std::string& name,
                                                       int64_t& max_rank) {
  std::map<std::string, ProcessGroup> pgs;
  const json* cfg = top.Find("pg_config");
  if (cfg == nullptr) return pgs;
  if (!cfg->is_object()) top.Fail("pg_config", "expected a dict");
  for (const auto& [key, value] : cfg->items()) {
    Obj pg(value, name, "pg_config." + key);
    ProcessGroup g;
    g.name = pg.StrOr("name", key);
    g.desc = pg.StrOr("desc", "");
    g.ranks = ParseRanks(pg.Get("ranks"), pg);
    for (int64_t r : g.ranks) max_rank = std::max(max_rank, r);
    pgs[key] = std::move(g);
  }
  return pgs;
}

// One entry's own fields (pg_desc from the entry only: the caller fills it from pg_config).
FlightRecord ParseEntry(const Obj& e) {
  FlightRecord f;
  f.record_id = e.Int("record_id", 0, INT64_MAX);
  if (const json* pg = e.Find("process_group")) {
    if (!pg->is_array() || pg->size() != 2 || !(*pg)[0].is_string() || !(*pg)[1].is_string())
      e.Fail("process_group", "expected [name, desc]");
    f.pg_name = Printable((*pg)[0].get<std::string>());
    f.pg_desc = Printable((*pg)[1].get<std::string>());
  } else {
    f.pg_name = std::to_string(e.Int("pg_id", 0, INT64_MAX));
  }
  f.seq_id = e.Int("collective_seq_id", 0, INT64_MAX);
  f.p2p_seq_id = e.IntOr("p2p_seq_id", 0, 0, INT64_MAX);
  f.op_id = e.IntOr("op_id", 0, 0, INT64_MAX);
  f.profiling_name = e.Str("profiling_name");
  f.state = e.Str("state");
  if (f.state != "scheduled" && f.state != "started" && f.state != "completed")
    e.Fail("state", "'" + f.state + "' is not scheduled, started or completed");
  f.input_sizes = e.Shapes("input_sizes");
  f.output_sizes = e.Shapes("output_sizes");
  f.input_dtypes = e.Strs("input_dtypes");
  f.output_dtypes = e.Strs("output_dtypes");
  f.created_ns = e.Int("time_created_ns", 0, kMaxTimeNs);
  if (const json* d = e.Find("duration_ms")) {
    if (!d->is_number() || !(d->get<double>() >= 0.0)) e.Fail("duration_ms", "expected a number >= 0");
    // PyTorch writes inf (or nan) when it could not time the collective: an unknown duration.
    if (d->is_number() && std::isfinite(d->get<double>())) f.duration_ms = d->get<double>();
  }
  f.timeout_ms = e.IntOr("timeout_ms", 0, 0, INT64_MAX);
  if (const json* p = e.Find("is_p2p")) {
    if (!p->is_boolean()) e.Fail("is_p2p", "expected a bool");
    f.is_p2p = p->get<bool>();
  } else {  // versions before is_p2p: a send or recv by its profiling name
    const std::string kind = KindOf(f.profiling_name);
    f.is_p2p = kind == "send" || kind == "recv";
  }
  return f;
}

// Bytes per peer follow from the sizes: an all_gather sends its input to every peer, a
// reduce_scatter sends each peer its output-sized chunk, an all_reduce moves its tensor, a
// send/recv moves its tensor to/from the one peer named in its profiling name.
void PeerBytes(const FlightRecord& f, int64_t rank, Collective& c) {
  const size_t n = c.group.size();
  std::vector<int64_t>& sent = c.bytes_sent.Mutable();
  std::vector<int64_t>& recv = c.bytes_recv.Mutable();
  sent.assign(n, 0);
  recv.assign(n, 0);
  const int64_t in_bytes = TensorBytes(f.input_sizes, f.input_dtypes);
  const int64_t out_bytes = TensorBytes(f.output_sizes, f.output_dtypes);
  for (size_t k = 0; k < n; ++k) {
    if (c.group[k] == rank) continue;
    if (c.kind == "all_gather" || c.kind == "all_reduce") {
      sent[k] = in_bytes;
      recv[k] = in_bytes;
    } else if (c.kind == "reduce_scatter") {
      sent[k] = out_bytes;
      recv[k] = out_bytes;
    } else if (c.kind == "all_to_all" && n > 1) {
      sent[k] = in_bytes / static_cast<int64_t>(n);
      recv[k] = out_bytes / static_cast<int64_t>(n);
    }
  }
  const int64_t peer = f.is_p2p ? P2pPeer(f.profiling_name) : -1;
  if (peer >= 0 && peer < static_cast<int64_t>(n) && c.group[static_cast<size_t>(peer)] != rank) {
    if (c.kind == "send")
      sent[static_cast<size_t>(peer)] = in_bytes;
    else if (c.kind == "recv")
      recv[static_cast<size_t>(peer)] = std::max(in_bytes, out_bytes);
  }
}

// Entry `e` of the dump of `rank` as a collective of that rank; a process group missing from
// pg_config goes into `unknown_pgs` and the collective is taken as this rank's alone.
Collective EntryCollective(const Obj& e, int64_t rank, const std::map<std::string, ProcessGroup>& pgs,
                           std::set<std::string>& unknown_pgs) {
  FlightRecord f = ParseEntry(e);
  // Unknown discovered times are null in pickle and 0 in JSON.
  const int64_t started = e.IntOr("time_discovered_started_ns", 0, 0, kMaxTimeNs);
  const int64_t completed = e.IntOr("time_discovered_completed_ns", 0, 0, kMaxTimeNs);
  auto pg_it = pgs.find(f.pg_name);
  if (pg_it != pgs.end() && f.pg_desc.empty()) f.pg_desc = pg_it->second.desc;
  Collective c;
  c.redistribute_id = -1;
  c.kind = KindOf(f.profiling_name);
  if (pg_it != pgs.end()) {
    c.group = pg_it->second.ranks;
  } else {
    unknown_pgs.insert(f.pg_name);
    c.group = {rank};
  }
  if (std::find(c.group.begin(), c.group.end(), rank) == c.group.end()) {
    e.Fail("process_group", "group '" + f.pg_name +
                                "' (ranks from pg_config) does not contain this dump's rank " +
                                std::to_string(rank) + " (is the file name's rank right?)");
  }
  const std::vector<std::string>& dtypes = f.input_dtypes.empty() ? f.output_dtypes : f.input_dtypes;
  c.dtype = dtypes.empty() ? "" : ShortDtype(dtypes.front());
  PeerBytes(f, rank, c);
  c.start_ns = started > 0 ? started : f.created_ns;
  c.end_ns = completed > 0 ? completed
             : f.duration_ms && f.state == "completed"
                 ? c.start_ns + static_cast<int64_t>(std::min(*f.duration_ms, 1e12) * 1e6)
                 : c.start_ns;
  c.end_ns = std::max(c.end_ns, c.start_ns);
  c.flight = std::move(f);
  return c;
}

RankDump ConvertDump(const json& dump, int64_t rank, const std::string& name) {
  Obj top(dump, name, "");
  CheckDumpVersion(top, name);
  RankDump out;
  out.max_rank = rank;
  const std::map<std::string, ProcessGroup> pgs = ParseProcessGroups(top, name, out.max_rank);
  const json& entries = top.Get("entries");
  if (!entries.is_array()) top.Fail("entries", "expected a list");
  if (static_cast<int64_t>(entries.size()) > kMaxEntries) top.Fail("entries", "more than 2^22 entries");
  std::vector<Collective> collectives;
  std::set<std::string> unknown_pgs;
  for (size_t i = 0; i < entries.size(); ++i) {
    Obj e(entries[i], name, "entries[" + std::to_string(i) + "]");
    collectives.push_back(EntryCollective(e, rank, pgs, unknown_pgs));
  }
  // A dump lists the ring buffer oldest first; sort anyway, record ids are the order of issue.
  std::vector<std::pair<int64_t, size_t>> order;  // (record_id, index)
  for (size_t k = 0; k < collectives.size(); ++k) order.emplace_back(collectives[k].flight->record_id, k);
  std::sort(order.begin(), order.end());
  for (size_t k = 1; k < order.size(); ++k) {
    if (order[k].first == order[k - 1].first)
      top.Fail("entries", "record_id " + std::to_string(order[k].first) + " appears twice");
  }
  for (const std::string& pg : unknown_pgs) {
    out.diagnostics.push_back({name, 0,
                               "process group '" + pg +
                                   "' is not in pg_config; its members are unknown, so its collectives are "
                                   "checked on this rank only"});
  }
  if (!order.empty() && order.front().first > 0) {
    out.diagnostics.push_back({name, 0,
                               "the ring buffer wrapped: the oldest entry is record_id " +
                                   std::to_string(order.front().first) + "; older collectives of rank " +
                                   std::to_string(rank) + " are gone"});
  }
  out.trace.file = name;
  out.trace.header.rank = rank;
  out.trace.header.backend = "flight_recorder";
  out.trace.header.clock.name = "wall";
  out.trace.header.host = top.StrOr("hostname", "");
  for (const auto& [record_id, k] : order) out.trace.events.emplace_back(std::move(collectives[k]));
  return out;
}

struct DumpFile {
  int64_t rank = 0;
  fs::path path;
};

bool IsTraceFileName(const std::string& name) {
  return name.rfind("rank-", 0) == 0 && name.size() > 6 && name.substr(name.size() - 6) == ".jsonl";
}

// Whether the first bytes of a file look like a dump: a pickle's PROTO opcode, or a JSON object
// that is not a shardscope trace header.
bool FileLooksLikeDump(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char buf[256];
  size_t n = std::fread(buf, 1, sizeof(buf), f);
  std::fclose(f);
  std::string_view head(buf, n);
  if (n >= 2 && static_cast<uint8_t>(buf[0]) == 0x80) return true;
  if (!LooksLikeJson(head)) return false;
  return head.find("\"shardscope-trace\"") == std::string_view::npos &&
         head.find("\"type\": \"header\"") == std::string_view::npos &&
         head.find("\"type\":\"header\"") == std::string_view::npos;
}

std::vector<DumpFile> ListDumps(const std::vector<fs::path>& paths) {
  std::map<int64_t, fs::path> files;
  auto add = [&](int64_t rank, const fs::path& p) {
    auto [it, inserted] = files.emplace(rank, p);
    if (!inserted) {
      throw InvalidInput("flight recorder: two dumps for rank " + std::to_string(rank) + ": " +
                         it->second.string() + " and " + p.string());
    }
  };
  for (const fs::path& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      size_t found = 0;
      std::vector<fs::path> entries;
      for (const auto& entry : fs::directory_iterator(p, ec)) entries.push_back(entry.path());
      if (ec) throw InvalidInput("flight recorder: cannot list '" + p.string() + "': " + ec.message());
      std::sort(entries.begin(), entries.end());
      for (const fs::path& e : entries) {
        std::string name = e.filename().string();
        int64_t rank = FlightRecorderRankOfFileName(name);
        if (rank < 0 || name.front() == '.' || !fs::is_regular_file(e, ec)) continue;
        add(rank, e);
        ++found;
      }
      if (found == 0) {
        throw InvalidInput("flight recorder: no dump files in '" + p.string() +
                           "' (a dump's file name ends in its rank, e.g. nccl_trace_rank_0)");
      }
    } else if (fs::is_regular_file(p, ec)) {
      int64_t rank = FlightRecorderRankOfFileName(p.filename().string());
      if (rank < 0) {
        throw InvalidInput("flight recorder: cannot tell the rank of '" + p.string() +
                           "': a dump's file name ends in its rank, e.g. nccl_trace_rank_3");
      }
      add(rank, p);
    } else {
      throw InvalidInput(p.string() + ": no such file or directory");
    }
  }
  if (files.empty()) throw InvalidInput("flight recorder: no dump files given");
  std::vector<DumpFile> out;
  for (auto& [rank, path] : files) out.push_back({rank, path});
  return out;
}

}  // namespace

int64_t FlightRecorderRankOfFileName(const std::string& file_name) {
  std::string name = file_name;
  for (const char* ext : {".json", ".pkl", ".pickle"}) {
    std::string e = ext;
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
      name.resize(name.size() - e.size());
      break;
    }
  }
  size_t end = name.size(), begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
  if (begin == end || end - begin > 7) return -1;
  int64_t rank = std::stoll(name.substr(begin));
  return rank < kMaxRanks ? rank : -1;
}

bool IsFlightRecorderDump(const fs::path& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    return !IsTraceFileName(path.filename().string()) &&
           FlightRecorderRankOfFileName(path.filename().string()) >= 0 && FileLooksLikeDump(path);
  }
  if (!fs::is_directory(path, ec)) return false;
  bool dump = false;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    std::string name = entry.path().filename().string();
    if (IsTraceFileName(name)) return false;
    if (!dump && FlightRecorderRankOfFileName(name) >= 0 && entry.is_regular_file(ec))
      dump = FileLooksLikeDump(entry.path());
  }
  return dump;
}

Model ReadFlightRecorder(const std::vector<fs::path>& paths) {
  std::vector<DumpFile> files = ListDumps(paths);
  Model model;
  model.source = paths.size() == 1 ? paths.front() : fs::path();
  int64_t max_rank = 0;
  for (const DumpFile& f : files) {
    const std::string name = f.path.filename().string();
    RankDump dump = ConvertDump(ParseDump(ReadBounded(f.path, name), name), f.rank, name);
    max_rank = std::max(max_rank, dump.max_rank);
    for (Diagnostic& d : dump.diagnostics) model.diagnostics.push_back(std::move(d));
    model.ranks.push_back(std::move(dump.trace));
  }
  model.world = max_rank + 1;
  for (RankTrace& rt : model.ranks) {
    rt.header.world = model.world;
    rt.header.mesh_shape = {model.world};
    rt.header.mesh_dim_names = {""};
  }
  std::vector<int64_t> present;
  for (const DumpFile& f : files) present.push_back(f.rank);
  if (auto missing = detail::MissingRanks(present, model.world, "dump"))
    model.diagnostics.push_back(std::move(*missing));
  return model;
}

bool IsFlightRecorderModel(const Model& model) {
  return !model.ranks.empty() && std::all_of(model.ranks.begin(), model.ranks.end(), [](const RankTrace& r) {
    return r.header.backend == "flight_recorder";
  });
}

}  // namespace shardscope::trace
