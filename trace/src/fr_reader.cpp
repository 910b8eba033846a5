// Flight Recorder dumps (torch/csrc/distributed/c10d/FlightRecorder*.hpp) into the trace Model.
// Field names and meanings: docs/pytorch-artifacts.md section 2 and
// docs/flight-recorder.md.
#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>

#include <simdjson.h>

#include "event_pools.hpp"
#include "missing_ranks.hpp"
#include "pickle_doc.hpp"
#include "shardscope/error.hpp"
#include "shardscope/files.hpp"
#include "shardscope/printable.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::trace {

namespace fs = std::filesystem;

namespace {

// FR timestamps are wall-clock nanoseconds since the epoch (about 2^60.6 in 2026); the trace
// format bounds times by 2^61, which they fit until 2043.
constexpr int64_t kMaxTimeNs = int64_t{1} << 61;
constexpr int64_t kMaxEntries = int64_t{1} << 22;  // TORCH_FR_BUFFER_SIZE is 2000 by default

// The whole file into `buffer` (kept by the reading thread from file to file, so that it is
// allocated and faulted in once), with simdjson's padding after it (a JSON dump is parsed in place).
std::string_view ReadBounded(const fs::path& path, const std::string& name, std::string& buffer) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) throw InvalidInput(name + ": cannot read: " + ec.message());
  if (size > static_cast<uintmax_t>(kMaxPickleBytes)) {
    throw InvalidInput(name + ": " + std::to_string(size) + " bytes, larger than the limit of " +
                       std::to_string(kMaxPickleBytes >> 20) + " MiB for one Flight Recorder dump");
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw InvalidInput(name + ": cannot open");
  const size_t need = static_cast<size_t>(size) + simdjson::SIMDJSON_PADDING;
  if (buffer.size() < need) buffer.resize(need);  // the padding's bytes may hold anything
  const size_t got = std::fread(buffer.data(), 1, static_cast<size_t>(size), f);
  // fread's short count is the end of the file or a read error alike: an error (EIO from a failing
  // disk) is this file's error, never a dump cut short.
  const int read_errno = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (read_errno != 0) {
    throw InvalidInput(name + ": read error after " + std::to_string(got) +
                       " bytes: " + std::strerror(read_errno));
  }
  return std::string_view(buffer.data(), got);
}

// n bytes equal, compared 8 at a time (inline, unlike memcmp: field names are short).
inline bool SameBytes(const char* a, const char* b, size_t n) {
  uint64_t x = 0, y = 0;
  for (; n >= 8; n -= 8, a += 8, b += 8) {
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    if (x != y) return false;
  }
  for (; n > 0; --n)
    if (*a++ != *b++) return false;
  return true;
}

bool LooksLikeJson(std::string_view data) {
  size_t i = data.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && data[i] == '{';
}

// The value types the converter tells apart, for pickle values and JSON values alike.
enum class VType { kNull, kBool, kInt, kBigUnsigned, kDouble, kString, kArray, kObject };

// Pickle values (pickle_doc.hpp) as the converter sees them: tuples are lists, bytes are strings,
// int dict keys their decimal text, as in the JSON form of ReadPickle.
struct PickleSource {
  using Value = detail::PValue;
  const detail::PickleDoc& doc;
  static constexpr bool kCheckUtf8 = true;  // pickle strings may hold any bytes

  VType Type(const Value& v) const {
    switch (v.kind) {
      case detail::PKind::kBool:
        return VType::kBool;
      case detail::PKind::kInt:
        return VType::kInt;
      case detail::PKind::kFloat:
        return VType::kDouble;
      case detail::PKind::kStr:
      case detail::PKind::kBytes:
        return VType::kString;
      case detail::PKind::kList:
      case detail::PKind::kTuple:
        return VType::kArray;
      case detail::PKind::kDict:
        return VType::kObject;
      default:
        return VType::kNull;
    }
  }
  int64_t Int(const Value& v) const { return v.i; }
  uint64_t Unsigned(const Value& v) const { return static_cast<uint64_t>(v.i); }
  double Double(const Value& v) const {
    return v.kind == detail::PKind::kInt ? static_cast<double>(v.i) : v.f;
  }
  bool Bool(const Value& v) const { return v.u != 0; }
  std::string_view Str(const Value& v) const { return doc.Text(v); }
  size_t Size(const Value& v) const { return doc.Count(v); }
  template <typename F>
  void ForArray(const Value& v, F&& f) const {
    doc.ForEach(v, f);
  }
  // f(key text, value); a key that is not a str, bytes, int or bool is refused as by ReadPickle.
  template <typename F>
  void ForObject(const Value& v, F&& f) const {
    doc.ForEachPair(v, [&](const Value& key, const Value& value) {
      if (key.kind == detail::PKind::kStr || key.kind == detail::PKind::kBytes) {
        f(doc.Text(key), value);
      } else if (key.kind == detail::PKind::kInt) {
        f(std::string_view(std::to_string(key.i)), value);
      } else if (key.kind == detail::PKind::kBool) {
        f(std::string_view(key.u != 0 ? "True" : "False"), value);
      } else {
        throw InvalidInput(doc.where() + ": pickle has a dict key that is not a str, bytes, int or bool");
      }
    });
  }
};

// JSON values of a simdjson DOM document.
struct JsonSource {
  using Value = simdjson::dom::element;
  static constexpr bool kCheckUtf8 = false;  // simdjson validated the whole document

  VType Type(const Value& v) const {
    switch (v.type()) {
      case simdjson::dom::element_type::BOOL:
        return VType::kBool;
      case simdjson::dom::element_type::INT64:
        return VType::kInt;
      case simdjson::dom::element_type::UINT64:
        return VType::kBigUnsigned;
      case simdjson::dom::element_type::DOUBLE:
        return VType::kDouble;
      case simdjson::dom::element_type::STRING:
        return VType::kString;
      case simdjson::dom::element_type::ARRAY:
        return VType::kArray;
      case simdjson::dom::element_type::OBJECT:
        return VType::kObject;
      default:
        return VType::kNull;
    }
  }
  int64_t Int(const Value& v) const { return v.get_int64().value_unsafe(); }
  uint64_t Unsigned(const Value& v) const { return v.get_uint64().value_unsafe(); }
  double Double(const Value& v) const {
    switch (v.type()) {
      case simdjson::dom::element_type::INT64:
        return static_cast<double>(v.get_int64().value_unsafe());
      case simdjson::dom::element_type::UINT64:
        return static_cast<double>(v.get_uint64().value_unsafe());
      default:
        return v.get_double().value_unsafe();
    }
  }
  bool Bool(const Value& v) const { return v.get_bool().value_unsafe(); }
  std::string_view Str(const Value& v) const { return v.get_string().value_unsafe(); }
  size_t Size(const Value& v) const {
    simdjson::dom::array a;
    return v.get_array().get(a) == simdjson::SUCCESS ? a.size() : 0;
  }
  template <typename F>
  void ForArray(const Value& v, F&& f) const {
    simdjson::dom::array a;
    if (v.get_array().get(a) != simdjson::SUCCESS) return;
    for (simdjson::dom::element x : a) f(x);
  }
  template <typename F>
  void ForObject(const Value& v, F&& f) const {
    simdjson::dom::object o;
    if (v.get_object().get(o) != simdjson::SUCCESS) return;
    for (simdjson::dom::key_value_pair kv : o) f(kv.key, kv.value);
  }
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

// What one reading thread keeps from file to file: the strings it interned (by their raw bytes)
// and what follows from a profiling name. What every file shares (a group's ranks, the entries'
// shapes) goes through `groups` and `shapes`, which the threads share.
struct ThreadCache {
  ThreadCache(detail::SharedListPool<int64_t>* g, detail::FlightShapePool* s) : groups(g), shapes(s) {}
  struct Profiling {
    IStr kind;
    int64_t peer = -1;
    bool p2p_by_name = false;
  };
  std::unordered_map<std::string, IStr> strings;
  std::unordered_map<const std::string*, Profiling> profiling;  // by IStr identity
  std::unordered_map<std::string, IStr> dtypes;                 // PyTorch name -> short name
  detail::SharedListPool<int64_t>* groups;
  detail::FlightShapePool* shapes;  // the entries' shapes, one buffer per distinct shape
  simdjson::dom::parser parser;
  detail::PickleDoc pickle;  // its buffers are kept from file to file
  std::string file;          // the bytes of the file being read
  // pg_config's rank strings already parsed, by their text: every dump repeats its groups' lists
  // (the default group's names every rank), so each distinct one is parsed once per thread.
  struct RankList {
    SharedVec<int64_t> ranks;
    int64_t max = 0;
  };
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view t) const { return std::hash<std::string_view>()(t); }
  };
  std::unordered_map<std::string, RankList, TextHash, std::equal_to<>> rank_lists;
  size_t rank_list_bytes = 0;  // their text, bounded by kMaxRankListBytes
  static constexpr size_t kMaxRankListBytes = size_t{64} << 20;
};

struct ProcessGroup {
  IStr name, desc;
  SharedVec<int64_t> ranks;
  bool has_rank = false;  // the dump's own rank is a member
};

using RankDump = FlightRecorderDump;

// Reads one dump (pickle or JSON, through Source) into a RankDump, field by field, with messages
// "file: entries[3].state: expected a string". Only the fields it uses are visited: stack frames
// and other fields are skipped without being walked.
template <typename Source>
class DumpReader {
 public:
  using Value = typename Source::Value;
  DumpReader(const Source& src, std::string file, int64_t rank, ThreadCache& cache)
      : src_(src), file_(std::move(file)), rank_(rank), cache_(cache) {}

  // The values of `names` in the object `obj`, copied into `slots` (nullptr where a name is absent
  // or null; a repeated key keeps its last value).
  template <size_t N>
  std::array<const Value*, N> Fields(const Value& obj, const std::array<std::string_view, N>& names,
                                     std::array<Value, N>& slots) const {
    std::array<const Value*, N> found{};
    src_.ForObject(obj, [&](std::string_view key, const Value& v) {
      for (size_t k = 0; k < N; ++k) {
        if (key != names[k]) continue;
        slots[k] = v;
        found[k] = src_.Type(v) == VType::kNull ? nullptr : &slots[k];
        break;
      }
    });
    return found;
  }

  RankDump Read(const Value& root) {
    if (src_.Type(root) != VType::kObject) Fail("", "", "expected a dict");
    std::array<Value, 4> slots;
    const auto [version, pg_config, entries, hostname] =
        Fields<4>(root, {"version", "pg_config", "entries", "hostname"}, slots);
    CheckVersion(version);
    RankDump out;
    out.max_rank = rank_;
    ProcessGroups(pg_config, out.max_rank);
    if (entries == nullptr) Fail("", "entries", "missing");
    if (src_.Type(*entries) != VType::kArray) Fail("", "entries", "expected a list");
    const size_t count = src_.Size(*entries);
    if (static_cast<int64_t>(count) > kMaxEntries) Fail("", "entries", "more than 2^22 entries");
    std::vector<Collective> collectives;
    collectives.reserve(count);
    size_t i = 0;
    src_.ForArray(*entries, [&](const Value& e) {
      entry_ = i++;
      collectives.push_back(Entry(e));
    });
    entry_ = kNoEntry;
    // A dump lists the ring buffer oldest first; sort anyway, record ids are the order of issue.
    std::vector<std::pair<int64_t, size_t>> order;  // (record_id, index)
    order.reserve(collectives.size());
    for (size_t k = 0; k < collectives.size(); ++k) order.emplace_back(collectives[k].flight.record_id, k);
    if (!std::is_sorted(order.begin(), order.end())) std::sort(order.begin(), order.end());
    for (size_t k = 1; k < order.size(); ++k) {
      if (order[k].first == order[k - 1].first)
        Fail("", "entries", "record_id " + std::to_string(order[k].first) + " appears twice");
    }
    for (const std::string& pg : unknown_pgs_) {
      out.diagnostics.push_back({file_, 0,
                                 "process group '" + pg +
                                     "' is not in pg_config; its members are unknown, so its collectives are "
                                     "checked on this rank only"});
    }
    if (!order.empty() && order.front().first > 0) {
      out.diagnostics.push_back({file_, 0,
                                 "the ring buffer wrapped: the oldest entry is record_id " +
                                     std::to_string(order.front().first) + "; older collectives of rank " +
                                     std::to_string(rank_) + " are gone"});
    }
    out.trace.file = file_;
    out.trace.header.rank = rank_;
    out.trace.header.backend = "flight_recorder";
    out.trace.header.clock.name = "wall";
    if (hostname != nullptr) {
      if (src_.Type(*hostname) != VType::kString) Fail("", "hostname", "expected a string");
      out.trace.header.host = Text(*hostname);
    }
    out.trace.events.ReserveOf<Collective>(order.size());
    for (const auto& [record_id, k] : order) out.trace.events.push_back(std::move(collectives[k]));
    out.trace.events.shrink_to_fit();  // one run of collectives: its order costs a few bytes in all
    return out;
  }

 private:
  [[noreturn]] void Fail(const std::string& path, const std::string& field, const std::string& what) const {
    std::string where = path.empty() ? field : field.empty() ? path : path + "." + field;
    throw InvalidInput(file_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }
  [[noreturn]] void FailField(const std::string& field, const std::string& what) const {
    Fail(entry_ == kNoEntry ? std::string() : "entries[" + std::to_string(entry_) + "]", field, what);
  }

  // The text of a string value, made safe (valid UTF-8, control characters escaped).
  std::string Text(const Value& v) const {
    std::string_view raw = src_.Str(v);
    if (Source::kCheckUtf8 && !detail::IsValidUtf8(raw)) return Printable(detail::ValidUtf8(raw));
    return Printable(raw);
  }
  // The same, interned once per thread by its raw bytes. Within one file the bytes of a string
  // value stay where they are, and a pickle stores a repeated string once (its memo), so most
  // values are found by their address first, without hashing their text.
  IStr Interned(const Value& v) {
    std::string_view raw = src_.Str(v);
    Seen& seen = seen_[(reinterpret_cast<uintptr_t>(raw.data()) >> 2 ^ raw.size()) % kSeenSlots];
    if (seen.data == raw.data() && seen.size == raw.size() && seen.data != nullptr) return seen.text;
    scratch_.assign(raw.data(), raw.size());
    auto it = cache_.strings.find(scratch_);
    IStr s;
    if (it != cache_.strings.end()) {
      s = it->second;
    } else {
      s = IStr(Text(v));
      cache_.strings.emplace(scratch_, s);
    }
    seen = {raw.data(), raw.size(), s};
    return s;
  }

  void CheckVersion(const Value* v) {
    if (v == nullptr) Fail("", "version", "missing");
    std::string version;
    switch (src_.Type(*v)) {
      case VType::kString:
        version = std::string(src_.Str(*v));
        break;
      case VType::kInt:
        version = std::to_string(src_.Int(*v));
        break;
      case VType::kBigUnsigned:
        version = std::to_string(src_.Unsigned(*v));
        break;
      case VType::kDouble: {
        char buf[64];
        auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), src_.Double(*v));
        version = ec == std::errc() ? std::string(buf, end) : "?";
        break;
      }
      default:
        version = src_.Type(*v) == VType::kBool    ? (src_.Bool(*v) ? "true" : "false")
                  : src_.Type(*v) == VType::kArray ? "[...]"
                                                   : "{...}";
        break;
    }
    if (version.rfind("2.", 0) != 0 || version.size() < 3 ||
        version.find_first_not_of("0123456789", 2) != std::string::npos) {
      throw Unsupported(file_ + ": Flight Recorder dump version '" + Printable(version) +
                        "' is not supported (this shardscope reads versions 2.x)");
    }
  }

  // pg_config by key; `max_rank` grows to the largest member named.
  void ProcessGroups(const Value* cfg, int64_t& max_rank) {
    if (cfg == nullptr) return;
    if (src_.Type(*cfg) != VType::kObject) Fail("", "pg_config", "expected a dict");
    src_.ForObject(*cfg, [&](std::string_view key_view, const Value& value) {
      const std::string key(key_view);
      const std::string path = "pg_config." + key;
      if (src_.Type(value) != VType::kObject) Fail(path, "", "expected a dict");
      std::array<Value, 3> slots;
      const auto [name, desc, ranks] = Fields<3>(value, {"name", "desc", "ranks"}, slots);
      ProcessGroup g;
      auto str_or = [&](const Value* v, const char* field, const std::string& fallback) {
        if (v == nullptr) return fallback;
        if (src_.Type(*v) != VType::kString) Fail(path, field, "expected a string");
        return Text(*v);
      };
      g.name = str_or(name, "name", key);
      g.desc = str_or(desc, "desc", "");
      if (ranks == nullptr) Fail(path, "ranks", "missing");
      const ThreadCache::RankList& members = Members(*ranks, path);
      max_rank = std::max(max_rank, members.max);
      g.has_rank = std::find(members.ranks.begin(), members.ranks.end(), rank_) != members.ranks.end();
      g.ranks = members.ranks;
      pgs_[key] = std::move(g);  // a repeated key keeps the last value
    });
  }

  // A group's ranks, shared by every file of this read (a string form parsed once per thread).
  const ThreadCache::RankList& Members(const Value& v, const std::string& path) {
    const bool text = src_.Type(v) == VType::kString;
    if (text) {
      auto it = cache_.rank_lists.find(src_.Str(v));
      if (it != cache_.rank_lists.end()) return it->second;
    }
    ThreadCache::RankList list;
    list.ranks = SharedVec<int64_t>(ParseRanks(v, path));
    cache_.groups->Intern(list.ranks);
    for (int64_t r : list.ranks) list.max = std::max(list.max, r);
    if (text && cache_.rank_list_bytes + src_.Str(v).size() <= ThreadCache::kMaxRankListBytes) {
      cache_.rank_list_bytes += src_.Str(v).size();
      return cache_.rank_lists.emplace(std::string(src_.Str(v)), std::move(list)).first->second;
    }
    scratch_list_ = std::move(list);
    return scratch_list_;
  }

  // "[0, 1, 2, 3]" (a string in pg_config) or a list of integers.
  std::vector<int64_t> ParseRanks(const Value& v, const std::string& path) {
    std::vector<int64_t> out;
    auto add = [&](int64_t r) {
      if (r < 0 || r >= kMaxRanks) Fail(path, "ranks", "rank " + std::to_string(r) + " is outside [0, 2^20)");
      if (static_cast<int64_t>(out.size()) >= kMaxRanks) Fail(path, "ranks", "more than 2^20 ranks");
      out.push_back(r);
    };
    if (src_.Type(v) == VType::kArray) {
      src_.ForArray(v, [&](const Value& x) {
        const VType t = src_.Type(x);
        if (t != VType::kInt && t != VType::kBigUnsigned) Fail(path, "ranks", "expected integers");
        add(t == VType::kBigUnsigned ? -1 : src_.Int(x));
      });
      return out;
    }
    if (src_.Type(v) != VType::kString)
      Fail(path, "ranks", "expected a string such as \"[0, 1, 2, 3]\" or a list");
    const std::string_view s = src_.Str(v);
    size_t i = 0;
    auto skip = [&] {
      while (i < s.size() && (s[i] == ' ' || s[i] == ',' || s[i] == '[' || s[i] == ']')) ++i;
    };
    for (skip(); i < s.size(); skip()) {
      if (!std::isdigit(static_cast<unsigned char>(s[i])))
        Fail(path, "ranks", "'" + Text(v) + "' is not a list of ranks");
      int64_t r = 0;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
        r = r * 10 + (s[i++] - '0');
        if (r >= kMaxRanks) Fail(path, "ranks", "'" + Text(v) + "' names a rank of 2^20 or more");
      }
      add(r);
    }
    return out;
  }

  // The fields of an entry that the reader uses, by index; -1 for the others.
  enum Field {
    kRecordId,
    kProcessGroup,
    kPgId,
    kSeqId,
    kP2pSeqId,
    kOpId,
    kProfilingName,
    kState,
    kInputSizes,
    kOutputSizes,
    kInputDtypes,
    kOutputDtypes,
    kTimeCreated,
    kDuration,
    kTimeout,
    kIsP2p,
    kStarted,
    kCompleted,
    kFieldCount
  };
  static constexpr const char* kFieldNames[kFieldCount] = {"record_id",
                                                           "process_group",
                                                           "pg_id",
                                                           "collective_seq_id",
                                                           "p2p_seq_id",
                                                           "op_id",
                                                           "profiling_name",
                                                           "state",
                                                           "input_sizes",
                                                           "output_sizes",
                                                           "input_dtypes",
                                                           "output_dtypes",
                                                           "time_created_ns",
                                                           "duration_ms",
                                                           "timeout_ms",
                                                           "is_p2p",
                                                           "time_discovered_started_ns",
                                                           "time_discovered_completed_ns"};
  static int FieldOf(std::string_view key) {
    // The names by length (at most three share one): a key is compared with those only.
    static constexpr size_t kLongest = 32;
    struct ByLength {
      int8_t fields[kLongest][4];
      std::string_view names[kFieldCount];
      ByLength() {
        for (auto& row : fields) std::fill(std::begin(row), std::end(row), int8_t{-1});
        for (int f = 0; f < kFieldCount; ++f) {
          names[f] = kFieldNames[f];
          int8_t* row = fields[names[f].size()];
          int k = 0;
          while (row[k] >= 0) ++k;
          row[k] = static_cast<int8_t>(f);  // row[3] stays -1: no length has four names
        }
      }
    };
    static const ByLength kByLength;
    if (key.size() >= kLongest) return -1;
    for (int8_t f : kByLength.fields[key.size()]) {
      if (f < 0) return -1;
      if (SameBytes(key.data(), kByLength.names[f].data(), key.size())) return f;
    }
    return -1;
  }

  // A field's value, or nullptr when absent or null (null and absent mean the same in a dump).
  const Value* Find(int f) const { return present_[f] ? &fields_[f] : nullptr; }
  const Value& Get(int f) const {
    if (!present_[f]) FailField(kFieldNames[f], "missing");
    return fields_[f];
  }
  int64_t IntOf(const Value& v, std::string_view name, int64_t min, int64_t max) const {
    if (src_.Type(v) == VType::kInt) {
      const int64_t x = src_.Int(v);
      if (x >= min && x <= max) return x;
    }
    BadInt(v, std::string(name), min, max);
  }
  [[noreturn]] void BadInt(const Value& v, const std::string& name, int64_t min, int64_t max) const {
    const VType t = src_.Type(v);
    if (t == VType::kBigUnsigned) {
      FailField(name, std::to_string(src_.Unsigned(v)) + " is larger than " + std::to_string(max));
    }
    if (t != VType::kInt) FailField(name, "expected an integer");
    const int64_t x = src_.Int(v);
    FailField(name,
              std::to_string(x) + " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  int64_t Int(int f, int64_t min, int64_t max) const { return IntOf(Get(f), kFieldNames[f], min, max); }
  int64_t IntOr(int f, int64_t fallback, int64_t min, int64_t max) const {
    const Value* v = Find(f);
    return v == nullptr ? fallback : IntOf(*v, kFieldNames[f], min, max);
  }
  IStr Str(int f) {
    const Value& v = Get(f);
    if (src_.Type(v) != VType::kString) FailField(kFieldNames[f], "expected a string");
    return Interned(v);
  }

  // A list of shapes, shared with the last equal list of this file.
  SharedVec<std::vector<int64_t>> Shapes(int f, std::vector<std::vector<int64_t>>& out) {
    const char* name = kFieldNames[f];
    const Value& v = Get(f);
    if (src_.Type(v) != VType::kArray || static_cast<int64_t>(src_.Size(v)) > kMaxOpOperands)
      FailField(name, "expected a list of at most " + std::to_string(kMaxOpOperands) + " shapes");
    size_t i = 0;
    src_.ForArray(v, [&](const Value& s) {
      if (src_.Type(s) != VType::kArray || static_cast<int64_t>(src_.Size(s)) > kMaxTensorDims) {
        FailField(std::string(name) + "[" + std::to_string(i) + "]",
                  "expected a list of at most " + std::to_string(kMaxTensorDims) + " sizes");
      }
      if (i == out.size()) out.emplace_back();
      std::vector<int64_t>& shape = out[i];  // its buffer kept from entry to entry
      shape.clear();
      src_.ForArray(s, [&](const Value& x) {
        const VType t = src_.Type(x);
        if (t == VType::kInt && src_.Int(x) >= 0 && src_.Int(x) <= kMaxExtent)
          shape.push_back(src_.Int(x));
        else
          shape.push_back(IntOf(x, std::string(name) + "[" + std::to_string(i) + "]", 0, kMaxExtent));
      });
      ++i;
    });
    out.resize(i);
    return Share(shapes_seen_, out);
  }

  SharedVec<std::string> Strs(int f, std::vector<std::string>& out) {
    const char* name = kFieldNames[f];
    const Value& v = Get(f);
    if (src_.Type(v) != VType::kArray || static_cast<int64_t>(src_.Size(v)) > kMaxOpOperands)
      FailField(name, "expected a list of at most " + std::to_string(kMaxOpOperands) + " strings");
    out.clear();
    src_.ForArray(v, [&](const Value& x) {
      if (src_.Type(x) != VType::kString) FailField(name, "expected a list of strings");
      out.push_back(Interned(x).str());
    });
    return Share(strs_seen_, out);
  }

  // The entry's shape: an equal one of the last few of this file (whose lists Shapes and Strs
  // shared, so comparing them compares addresses), else the one of every file that equals it.
  Shared<FlightShape> ShapeOf(FlightShape&& shape) {
    for (size_t k = 0; k < entry_shapes_.size(); ++k) {
      if (entry_shapes_[k].first == shape) {
        if (k > 0) std::swap(entry_shapes_[k], entry_shapes_[k - 1]);  // the common ones drift to the front
        return entry_shapes_[k > 0 ? k - 1 : 0].second;
      }
    }
    Shared<FlightShape> made(shape);
    cache_.shapes->Intern(made);
    if (entry_shapes_.size() == kSeen) entry_shapes_.pop_back();
    entry_shapes_.emplace_back(std::move(shape), made);
    return made;
  }

  // `v` as a SharedVec: an equal one of the last few made, or a new one.
  template <typename T>
  static SharedVec<T> Share(std::vector<SharedVec<T>>& seen, const std::vector<T>& v) {
    if (v.empty()) return {};
    for (size_t k = 0; k < seen.size(); ++k) {
      if (seen[k].get() == v) {
        if (k > 0) std::swap(seen[k], seen[k - 1]);  // the common lists drift to the front
        return seen[k > 0 ? k - 1 : 0];
      }
    }
    SharedVec<T> made(v);
    if (seen.size() == kSeen) seen.pop_back();
    seen.push_back(made);
    return made;
  }

  Collective Entry(const Value& e) {
    if (src_.Type(e) != VType::kObject) FailField("", "expected a dict");
    std::fill(std::begin(present_), std::end(present_), false);
    src_.ForObject(e, [&](std::string_view key, const Value& v) {
      const int f = FieldOf(key);
      if (f < 0) return;
      fields_[f] = v;  // a repeated key keeps the last value
      present_[f] = src_.Type(v) != VType::kNull;
    });
    FlightRecord f;
    FlightShape shape;
    f.record_id = Int(kRecordId, 0, INT64_MAX);
    if (const Value* pg = Find(kProcessGroup)) {
      Value parts[2];
      size_t n = 0;
      if (src_.Type(*pg) == VType::kArray && src_.Size(*pg) == 2)
        src_.ForArray(*pg, [&](const Value& x) { parts[n++] = x; });
      if (n != 2 || src_.Type(parts[0]) != VType::kString || src_.Type(parts[1]) != VType::kString)
        FailField("process_group", "expected [name, desc]");
      shape.pg_name = Interned(parts[0]);
      shape.pg_desc = Interned(parts[1]);
    } else {
      shape.pg_name = std::to_string(Int(kPgId, 0, INT64_MAX));
    }
    f.seq_id = Int(kSeqId, 0, INT64_MAX);
    f.p2p_seq_id = IntOr(kP2pSeqId, 0, 0, INT64_MAX);
    f.op_id = IntOr(kOpId, 0, 0, INT64_MAX);
    shape.profiling_name = Str(kProfilingName);
    shape.state = Str(kState);
    static const IStr kScheduledState("scheduled"), kStartedState("started"), kCompletedState("completed");
    if (shape.state != kScheduledState && shape.state != kStartedState &&
        shape.state != kCompletedState)  // by address
      FailField("state", "'" + shape.state.str() + "' is not scheduled, started or completed");
    shape.input_sizes = Shapes(kInputSizes, in_sizes_);
    shape.output_sizes = Shapes(kOutputSizes, out_sizes_);
    shape.input_dtypes = Strs(kInputDtypes, in_dtypes_);
    shape.output_dtypes = Strs(kOutputDtypes, out_dtypes_);
    f.created_ns = Int(kTimeCreated, 0, kMaxTimeNs);
    if (const Value* d = Find(kDuration)) {
      const VType t = src_.Type(*d);
      const bool number = t == VType::kInt || t == VType::kBigUnsigned || t == VType::kDouble;
      if (!number || !(src_.Double(*d) >= 0.0)) FailField("duration_ms", "expected a number >= 0");
      // PyTorch writes inf when it could not time the collective: an unknown duration.
      if (std::isfinite(src_.Double(*d))) f.duration_ms = src_.Double(*d);
    }
    shape.timeout_ms = IntOr(kTimeout, 0, 0, INT64_MAX);
    const ThreadCache::Profiling& prof = ProfilingOf(shape.profiling_name);
    if (const Value* p = Find(kIsP2p)) {
      if (src_.Type(*p) != VType::kBool) FailField("is_p2p", "expected a bool");
      shape.is_p2p = src_.Bool(*p);
    } else {  // versions before is_p2p: a send or recv by its profiling name
      shape.is_p2p = prof.p2p_by_name;
    }
    // Unknown discovered times are null in pickle and 0 in JSON.
    const int64_t started = IntOr(kStarted, 0, 0, kMaxTimeNs);
    const int64_t completed = IntOr(kCompleted, 0, 0, kMaxTimeNs);

    auto [pg_seen, pg_fresh] = pg_of_name_.try_emplace(&shape.pg_name.str(), nullptr);
    if (pg_fresh) {
      auto found = pgs_.find(shape.pg_name.str());
      if (found != pgs_.end()) pg_seen->second = &found->second;
    }
    const ProcessGroup* pg = pg_seen->second;
    if (pg != nullptr && shape.pg_desc.empty()) shape.pg_desc = pg->desc;
    SharedVec<int64_t> group;
    if (pg != nullptr) {
      if (!pg->has_rank) {
        FailField("process_group", "group '" + shape.pg_name.str() +
                                       "' (ranks from pg_config) does not contain this dump's rank " +
                                       std::to_string(rank_) + " (is the file name's rank right?)");
      }
      group = pg->ranks;
    } else {
      unknown_pgs_.insert(shape.pg_name.str());
      if (own_group_.empty()) own_group_ = SharedVec<int64_t>{rank_};
      group = own_group_;
    }
    Collective c;
    c.redistribute_id = -1;
    c.shape = Derived(ShapeOf(std::move(shape)), prof, group);
    c.start_ns = started > 0 ? started : f.created_ns;
    c.end_ns = completed > 0 ? completed
               : f.duration_ms && c.flight_shape().state == kCompletedState
                   ? c.start_ns + static_cast<int64_t>(std::min(*f.duration_ms, 1e12) * 1e6)
                   : c.start_ns;
    c.end_ns = std::max(c.end_ns, c.start_ns);
    c.flight = f;
    return c;
  }

  const ThreadCache::Profiling& ProfilingOf(const IStr& name) {
    auto [it, fresh] = cache_.profiling.try_emplace(&name.str());
    if (fresh) {
      const std::string kind = KindOf(name);
      it->second.kind = kind;
      it->second.p2p_by_name = kind == "send" || kind == "recv";
      it->second.peer = P2pPeer(name);
    }
    return it->second;
  }

  IStr DtypeOf(const std::string& name) {
    auto [it, fresh] = cache_.dtypes.try_emplace(name);
    if (fresh) it->second = ShortDtype(name);
    return it->second;
  }

  // A collective's shape follows from its flight shape (kind, sizes, dtypes, peer) and its group:
  // its dtype and bytes per peer are worked out once per (flight shape, group) of the file, looked
  // up by the two's addresses (alive while the shapes are, which the map holds), and entries alike
  // share the one shape.
  Shared<CollectiveShape> Derived(Shared<FlightShape> flight, const ThreadCache::Profiling& prof,
                                  const SharedVec<int64_t>& group) {
    const DerivedKey key{&*flight, &group.get()};
    auto [it, fresh] = derived_.try_emplace(key);
    if (fresh) {
      const FlightShape& f = *flight;
      CollectiveShape c;
      c.kind = prof.kind;
      c.group = group;
      const SharedVec<std::string>& dtypes = f.input_dtypes.empty() ? f.output_dtypes : f.input_dtypes;
      c.dtype = dtypes.empty() ? IStr() : DtypeOf(dtypes.front());
      PeerBytes(f, prof, c);
      c.flight = std::move(flight);
      it->second = Shared<CollectiveShape>(std::move(c));
    }
    return it->second;
  }

  // Bytes per peer follow from the sizes: an all_gather sends its input to every peer, a
  // reduce_scatter sends each peer its output-sized chunk, an all_reduce moves its tensor, a
  // send/recv moves its tensor to/from the one peer named in its profiling name. The lists depend
  // only on (group, kind, bytes in, bytes out, peer), so they are made once per file and shared.
  void PeerBytes(const FlightShape& f, const ThreadCache::Profiling& prof, CollectiveShape& c) {
    const int64_t in_bytes = TensorBytes(in_sizes_, in_dtypes_);
    const int64_t out_bytes = TensorBytes(out_sizes_, out_dtypes_);
    const int64_t peer = f.is_p2p ? prof.peer : -1;
    const BytesKey key{c.group.data(), &c.kind.str(), in_bytes, out_bytes, peer};
    auto [it, fresh] = bytes_.try_emplace(key);
    if (fresh) {
      const size_t n = c.group.size();
      std::vector<int64_t> sent(n, 0), recv(n, 0);
      // What every other member sends and receives, by kind (decided once, not per member).
      int64_t each_sent = 0, each_recv = 0;
      if (c.kind == "all_gather" || c.kind == "all_reduce") {
        each_sent = each_recv = in_bytes;
      } else if (c.kind == "reduce_scatter") {
        each_sent = each_recv = out_bytes;
      } else if (c.kind == "all_to_all" && n > 1) {
        each_sent = in_bytes / static_cast<int64_t>(n);
        each_recv = out_bytes / static_cast<int64_t>(n);
      }
      if (each_sent != 0 || each_recv != 0) {
        for (size_t k = 0; k < n; ++k) {
          if (c.group[k] == rank_) continue;
          sent[k] = each_sent;
          recv[k] = each_recv;
        }
      }
      if (peer >= 0 && peer < static_cast<int64_t>(n) && c.group[static_cast<size_t>(peer)] != rank_) {
        if (c.kind == "send")
          sent[static_cast<size_t>(peer)] = in_bytes;
        else if (c.kind == "recv")
          recv[static_cast<size_t>(peer)] = std::max(in_bytes, out_bytes);
      }
      it->second.first = SharedVec<int64_t>(std::move(sent));
      it->second.second =
          it->second.first.get() == recv ? it->second.first : SharedVec<int64_t>(std::move(recv));
    }
    c.bytes_sent = it->second.first;
    c.bytes_recv = it->second.second;
  }

  static constexpr size_t kSeen = 16;
  using BytesKey = std::tuple<const int64_t*, const std::string*, int64_t, int64_t, int64_t>;
  using DerivedKey = std::tuple<const void*, const void*>;
  struct DerivedHash {
    size_t operator()(const DerivedKey& k) const {
      size_t h = 0;
      std::apply([&](auto... x) { ((h = h * 1000003u ^ std::hash<decltype(x)>()(x)), ...); }, k);
      return h;
    }
  };

  const Source& src_;
  std::string file_;
  int64_t rank_;
  ThreadCache& cache_;
  static constexpr size_t kNoEntry = SIZE_MAX;
  // Interned strings of this file by the address of their bytes (Interned).
  struct Seen {
    const char* data = nullptr;
    size_t size = 0;
    IStr text;
  };
  static constexpr size_t kSeenSlots = 64;
  Seen seen_[kSeenSlots];
  size_t entry_ = kNoEntry;  // the index of the entry being read (messages say "entries[3]")
  std::string scratch_;
  std::map<std::string, ProcessGroup> pgs_;
  std::set<std::string> unknown_pgs_;
  SharedVec<int64_t> own_group_;
  ThreadCache::RankList scratch_list_;  // Members' result when it is not cached
  Value fields_[kFieldCount];
  bool present_[kFieldCount] = {};
  std::vector<std::vector<int64_t>> in_sizes_, out_sizes_;
  std::vector<std::string> in_dtypes_, out_dtypes_;
  std::vector<SharedVec<std::vector<int64_t>>> shapes_seen_;
  std::vector<SharedVec<std::string>> strs_seen_;
  std::vector<std::pair<FlightShape, Shared<FlightShape>>> entry_shapes_;  // as this file spells it, pooled
  std::map<BytesKey, std::pair<SharedVec<int64_t>, SharedVec<int64_t>>> bytes_;
  std::unordered_map<DerivedKey, Shared<CollectiveShape>, DerivedHash> derived_;
  std::unordered_map<const std::string*, const ProcessGroup*> pg_of_name_;  // by the IStr's address
};

// One dump file into a RankDump: pickle unless it starts like a JSON object.
RankDump ReadDump(const fs::path& path, int64_t rank, ThreadCache& cache) {
  const std::string name = path.filename().string();
  const std::string_view data = ReadBounded(path, name, cache.file);
  if (!LooksLikeJson(data)) {
    cache.pickle.Parse(data, name);
    PickleSource src{cache.pickle};
    return DumpReader<PickleSource>(src, name, rank, cache).Read(cache.pickle.root());
  }
  simdjson::dom::element root;
  if (auto error = cache.parser.parse(data.data(), data.size(), false).get(root)) {
    if (error == simdjson::DEPTH_ERROR)
      throw InvalidInput(name + ": JSON nested deeper than " + std::to_string(kMaxPickleDepth) + " levels");
    throw InvalidInput(name + ": not a valid JSON dump: " + simdjson::error_message(error));
  }
  JsonSource src;
  return DumpReader<JsonSource>(src, name, rank, cache).Read(root);
}

struct DumpFile {
  int64_t rank = 0;
  fs::path path;
};

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
      for (const auto& entry : ListDirectory(p, "flight recorder")) entries.push_back(entry.path());
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
  return RecognisesFiles(
      path,
      [](const std::string& name) {
        return !IsTraceFileName(name) && FlightRecorderRankOfFileName(name) >= 0;
      },
      FileLooksLikeDump);
}

namespace {

// Reads files[i] on `threads` threads (the calling one included), each keeping its parser buffers
// and interned strings from file to file, and hands each dump to `use(i, dump)`. Every failure of a
// file (std::bad_alloc and `use`'s own included) is kept for that file; files after a failed one
// need not be read, and the first failing file in rank order is the one reported, as if the files
// were read one after another. With `progress`, a file's `sizes[i]` bytes count once it is done.
void ReadDumps(const std::vector<DumpFile>& files, size_t threads, ReadProgress* progress,
               const std::vector<int64_t>& sizes, const std::function<void(size_t, RankDump&)>& use) {
  // simdjson picks its kernel on first use through a process-wide pointer: make that first use here.
  static const bool kSimdjsonReady = [] { return !simdjson::get_active_implementation()->name().empty(); }();
  (void)kSimdjsonReady;
  detail::SharedListPool<int64_t> groups;  // the groups' rank lists, one buffer per distinct list
  detail::FlightShapePool shapes;
  std::vector<std::exception_ptr> errors(files.size());
  std::atomic<size_t> next{0};
  std::atomic<size_t> first_error{files.size()};
  auto work = [&] {
    ThreadCache cache(&groups, &shapes);
    if (cache.parser.allocate(size_t{1} << 16, static_cast<size_t>(kMaxPickleDepth) + 1) !=
        simdjson::SUCCESS) {
      // No parser buffers: the JSON dumps fail one by one with simdjson's message.
    }
    for (size_t i = next.fetch_add(1); i < files.size() && i < first_error.load(); i = next.fetch_add(1)) {
      try {
        RankDump dump = ReadDump(files[i].path, files[i].rank, cache);
        use(i, dump);
      } catch (...) {
        errors[i] = std::current_exception();
        size_t seen = first_error.load();
        while (i < seen && !first_error.compare_exchange_weak(seen, i)) {
        }
      }
      if (progress != nullptr) {  // a dump is read whole, so its bytes count when it is done
        progress->bytes_done.fetch_add(sizes[i]);
        ++progress->files_done;
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// Each file's size (0 when it cannot be read: the reader then says why), and their sum.
int64_t DumpSizes(const std::vector<DumpFile>& files, std::vector<int64_t>& sizes) {
  sizes.assign(files.size(), 0);
  int64_t bytes = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    const auto size = fs::file_size(files[i].path, ec);
    if (!ec) sizes[i] = static_cast<int64_t>(size);
    bytes += sizes[i];
  }
  return bytes;
}

}  // namespace

Model ReadFlightRecorder(const std::vector<fs::path>& paths, const ReadOptions& options) {
  std::vector<DumpFile> files = ListDumps(paths);
  std::vector<std::optional<RankDump>> dumps(files.size());
  std::vector<int64_t> sizes;
  const int64_t bytes = DumpSizes(files, sizes);
  ReadProgress* const progress = options.progress;
  if (progress != nullptr) {
    progress->bytes_total = bytes;
    progress->files_total = static_cast<int64_t>(files.size());
  }
  // Files are read on up to one thread per core (one per MiB of input at most, so that a few small
  // dumps read on the calling thread alone).
  const size_t threads = std::min<size_t>({std::max(1u, std::thread::hardware_concurrency()), files.size(),
                                           static_cast<size_t>(bytes / (int64_t{1} << 20) + 1)});
  ReadDumps(files, threads, progress, sizes, [&](size_t i, RankDump& dump) { dumps[i] = std::move(dump); });
  std::vector<FlightRecorderDump> in_order;
  in_order.reserve(dumps.size());
  for (std::optional<RankDump>& dump : dumps) {
    in_order.push_back(std::move(*dump));
    dump.reset();
  }
  return AssembleFlightRecorderModel(paths, std::move(in_order));
}

Model AssembleFlightRecorderModel(const std::vector<fs::path>& paths, std::vector<FlightRecorderDump> dumps) {
  // The files' order: by rank, as ListDumps lists them (a rank has one file).
  std::stable_sort(dumps.begin(), dumps.end(), [](const FlightRecorderDump& a, const FlightRecorderDump& b) {
    return a.trace.header.rank < b.trace.header.rank;
  });
  Model model;
  model.source = paths.size() == 1 ? paths.front() : fs::path();
  int64_t max_rank = 0;
  std::vector<int64_t> present;
  for (FlightRecorderDump& dump : dumps) {
    max_rank = std::max(max_rank, dump.max_rank);
    present.push_back(dump.trace.header.rank);
    for (Diagnostic& d : dump.diagnostics) model.diagnostics.push_back(std::move(d));
    model.ranks.push_back(std::move(dump.trace));
  }
  dumps.clear();
  detail::SetDumpWorld(model, max_rank);
  if (auto missing = detail::MissingRanks(present, model.world, "dump"))
    model.diagnostics.push_back(std::move(*missing));
  return model;
}

void ReadFlightRecorderEach(const std::vector<fs::path>& paths, int jobs,
                            const std::function<void(FlightRecorderDump&)>& sink, ReadProgress* progress) {
  const std::vector<DumpFile> files = ListDumps(paths);
  std::vector<int64_t> sizes;
  if (progress != nullptr) {
    progress->bytes_total = DumpSizes(files, sizes);
    progress->files_total = static_cast<int64_t>(files.size());
  }
  const size_t threads = std::min<size_t>(
      jobs > 0 ? static_cast<size_t>(jobs) : std::max(1u, std::thread::hardware_concurrency()), files.size());
  ReadDumps(files, threads, progress, sizes, [&](size_t, RankDump& dump) { sink(dump); });
}

}  // namespace shardscope::trace
