// Decoding of trace lines with file:line messages (the reference reader); encoding lives in
// codec_encode.cpp.
#include "codec.hpp"

#include "format_v2.hpp"

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "shardscope/error.hpp"
#include "shardscope/trace/codec.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace detail {

void ThrowAt(const LineRef& at, const std::string& what) {
  throw InvalidInput(at.file + ":" + std::to_string(at.line) + ": " + what);
}

namespace {

// Typed access to the fields of one JSON object; every failure names the field by its full path
// ("raw_plan[2].mesh_dims") and what was expected.
class Fields {
 public:
  Fields(const json& obj, const LineRef& at, std::string prefix)
      : obj_(obj), at_(at), prefix_(std::move(prefix)) {
    if (!obj_.is_object())
      ThrowAt(at_, (prefix_.empty() ? "line" : "'" + prefix_ + "'") + " must be a JSON object");
  }

  // Has remembers the field it found, so that reading it right after looks it up once (the
  // tables' names are string literals: the same name is the same pointer).
  bool Has(const char* name) const {
    auto it = obj_.find(name);
    if (it == obj_.end()) return false;
    last_name_ = name;
    last_ = &*it;
    return true;
  }

  const json& Get(const char* name) const {
    if (name == last_name_) return *last_;
    auto it = obj_.find(name);
    if (it == obj_.end()) Fail("missing field '" + Path(name) + "'");
    return *it;
  }

  int64_t Int(const char* name, int64_t min, int64_t max) const {
    return CheckedInt(Get(name), Path(name), min, max);
  }

  uint64_t Uint(const char* name) const {
    const json& v = Get(name);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      Fail("field '" + Path(name) + "' must be a non-negative integer");
    }
    return v.get<uint64_t>();
  }

  double Number(const char* name) const {
    const json& v = Get(name);
    if (!v.is_number()) Fail("field '" + Path(name) + "' must be a number");
    return v.get<double>();
  }

  bool Bool(const char* name) const {
    const json& v = Get(name);
    if (!v.is_boolean()) Fail("field '" + Path(name) + "' must be a boolean");
    return v.get<bool>();
  }

  std::string Str(const char* name) const {
    const json& v = Get(name);
    if (!v.is_string()) Fail("field '" + Path(name) + "' must be a string");
    return v.get<std::string>();
  }

  std::vector<int64_t> Ints(const char* name, int64_t max_len, int64_t min, int64_t max) const {
    const json& v = Array(name, max_len, "integers");
    std::vector<int64_t> out;
    out.reserve(v.size());
    for (const json& x : v) {
      if (!IsInt(x)) Fail("field '" + Path(name) + "' must be an array of integers");
      out.push_back(CheckedInt(x, Path(name) + "[" + std::to_string(out.size()) + "]", min, max));
    }
    return out;
  }

  std::vector<std::string> Strs(const char* name, int64_t max_len) const {
    const json& v = Array(name, max_len, "strings");
    std::vector<std::string> out;
    out.reserve(v.size());
    for (const json& x : v) {
      if (!x.is_string()) Fail("field '" + Path(name) + "' must be an array of strings");
      out.push_back(x.get<std::string>());
    }
    return out;
  }

  // An array whose length is checked against max_len before anything is built from it.
  const json& Array(const char* name, int64_t max_len, const char* of) const {
    const json& v = Get(name);
    if (!v.is_array()) Fail("field '" + Path(name) + "' must be an array of " + of);
    if (static_cast<int64_t>(v.size()) > max_len) {
      Fail("field '" + Path(name) + "' has " + std::to_string(v.size()) + " entries, more than the limit " +
           std::to_string(max_len));
    }
    return v;
  }

  Fields Object(const char* name) const { return Fields(Get(name), at_, Path(name)); }

  std::string Path(const std::string& name) const { return prefix_.empty() ? name : prefix_ + "." + name; }
  [[noreturn]] void Fail(const std::string& what) const { ThrowAt(at_, what); }
  const LineRef& at() const { return at_; }

 private:
  static bool IsInt(const json& v) { return v.is_number_integer() || v.is_number_unsigned(); }

  int64_t CheckedInt(const json& v, const std::string& path, int64_t min, int64_t max) const {
    if (!IsInt(v)) Fail("field '" + path + "' must be an integer");
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      Fail("field '" + path + "' is out of range");
    }
    int64_t x = v.get<int64_t>();
    if (x < min || x > max) {
      Fail("field '" + path + "' is " + std::to_string(x) + ", outside [" + std::to_string(min) + ", " +
           std::to_string(max) + "]");
    }
    return x;
  }

  const json& obj_;
  const LineRef& at_;
  std::string prefix_;
  mutable const char* last_name_ = nullptr;
  mutable const json* last_ = nullptr;
};

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

// What reading one line carries from field to field: the file's version, the field being read
// (its bit in the table) and which per-peer byte lists were one uniform count.
struct ReadState {
  bool v2 = false;
  uint64_t bit = 0;
  uint64_t abbreviated = 0;
  bool partial = false;  ///< the next object read may leave out any of its own fields
};

template <typename T>
uint64_t ReadFields(const Fields& f, T& e, ReadState& s);

// One reader per codec (event_fields.hpp): the value of field `name` of `f` into `v`.
template <int64_t Min, int64_t Max>
void Read(codec::Int<Min, Max>, const Fields& f, const char* name, int64_t& v, ReadState&) {
  v = f.Int(name, Min, Max);
}
template <int64_t Min, int64_t Max>
void Read(codec::Int<Min, Max>, const Fields& f, const char* name, int32_t& v, ReadState&) {
  static_assert(Min >= INT32_MIN && Max <= INT32_MAX);  // a field narrowed to 4 bytes
  v = static_cast<int32_t>(f.Int(name, Min, Max));
}
template <int64_t Len, int64_t Min, int64_t Max, typename V>
void Read(codec::Ints<Len, Min, Max>, const Fields& f, const char* name, V& v, ReadState&) {
  v = f.Ints(name, Len, Min, Max);
}
template <typename V>
void Read(codec::Text, const Fields& f, const char* name, V& v, ReadState&) {
  v = f.Str(name);
}
template <typename V>
void Read(codec::NonEmptyText, const Fields& f, const char* name, V& v, ReadState&) {
  v = f.Str(name);
  if (v.empty()) f.Fail("field '" + f.Path(name) + "' must be a non-empty string");
}
template <int64_t Len, typename V>
void Read(codec::Texts<Len>, const Fields& f, const char* name, V& v, ReadState&) {
  v = f.Strs(name, Len);
}
void Read(codec::Flag, const Fields& f, const char* name, bool& v, ReadState&) { v = f.Bool(name); }
void Read(codec::Real, const Fields& f, const char* name, double& v, ReadState&) { v = f.Number(name); }
void Read(codec::Checksum, const Fields& f, const char* name, std::optional<uint64_t>& v, ReadState&) {
  v = f.Uint(name);
}

// Checks of one nested object that involve several of its fields (none but for op outputs).
template <typename T>
void CheckObject(const Fields&, const T&, size_t) {}
void CheckObject(const Fields& s, const OpOutput& out, size_t i) {
  if (!out.requested && !(out.tensor.empty() && out.placements.empty() && out.global_shape.empty() &&
                          out.local_shape.empty())) {
    s.Fail(
        "output " + std::to_string(i) +
        " is not requested, so its 'tensor', 'placements', 'global_shape' and 'local_shape' must be empty");
  }
}

template <int64_t Len, typename V>
void Read(codec::Objects<Len>, const Fields& f, const char* name, V& v, ReadState& s) {
  using T = typename ElementOf<V>::type;
  const json& arr = f.Array(name, Len, kDescOf<T>.name.data());
  std::vector<T> items;
  items.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    Fields sub(arr[i], f.at(), f.Path(name) + "[" + std::to_string(i) + "]");
    T& item = items.emplace_back();
    ReadFields(sub, item, s);
    CheckObject(sub, item, i);
  }
  v = std::move(items);
}

template <typename T>
void Read(codec::Object, const Fields& f, const char* name, Rare<T>& v, ReadState& s) {
  ReadFields(f.Object(name), v.emplace(), s);
}

void Read(codec::Flight, const Fields& f, const char* name, Collective& c, ReadState& s) {
  FlightFields fields;
  ReadFields(f.Object(name), fields, s);
  SetFlight(c, std::move(fields));
}

// v2: one per-peer byte list written as one integer (the uniform count); held in a one-entry list
// until Complete (format_v2.cpp) expands it.
void Read(codec::PeerBytes, const Fields& f, const char* name, SharedVec<int64_t>& v, ReadState& s) {
  const json& x = f.Get(name);
  if (!s.v2 || x.is_array()) {
    v = f.Ints(name, kMaxRanks, 0, kMaxBytes);
    return;
  }
  if (!x.is_number_integer() && !x.is_number_unsigned()) {
    f.Fail("field '" + f.Path(name) +
           "' must be an array of integers (one per rank of 'group') or one integer (the amount for every "
           "other rank of 'group', 0 for this rank)");
  }
  s.abbreviated |= s.bit;
  v = SharedVec<int64_t>{f.Int(name, 0, kMaxBytes)};
}

// Shapes of the tensors of one Flight Recorder entry: at most kMaxOpOperands tensors of at most
// kMaxTensorDims dims, checked before anything is built.
void Read(codec::ShapeList, const Fields& f, const char* name, SharedVec<std::vector<int64_t>>& v,
          ReadState&) {
  const json& arr = f.Array(name, kMaxOpOperands, "shapes");
  std::vector<std::vector<int64_t>> out;
  out.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string path = f.Path(name) + "[" + std::to_string(i) + "]";
    if (!arr[i].is_array() || static_cast<int64_t>(arr[i].size()) > kMaxTensorDims)
      f.Fail("field '" + path + "' must be an array of at most " + std::to_string(kMaxTensorDims) +
             " integers");
    std::vector<int64_t> shape;
    for (const json& x : arr[i]) {
      if (!(x.is_number_integer() || x.is_number_unsigned()) || x.get<int64_t>() < 0 ||
          (x.is_number_unsigned() && x.get<uint64_t>() > static_cast<uint64_t>(kMaxExtent)) ||
          x.get<int64_t>() > kMaxExtent)
        f.Fail("field '" + path + "' must hold integers in [0, " + std::to_string(kMaxExtent) + "]");
      shape.push_back(x.get<int64_t>());
    }
    out.push_back(std::move(shape));
  }
  v = std::move(out);
}

// A list of placement lists (one per operand); each inner list is checked against kMaxMeshDims.
void Read(codec::PlacementLists, const Fields& f, const char* name,
          std::vector<std::vector<std::string>>& out, ReadState&) {
  const json& arr = f.Array(name, kMaxOpOperands, "arrays of strings");
  out.clear();
  out.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string path = f.Path(name) + "[" + std::to_string(i) + "]";
    if (!arr[i].is_array()) f.Fail("field '" + path + "' must be an array of strings");
    if (static_cast<int64_t>(arr[i].size()) > kMaxMeshDims) {
      f.Fail("field '" + path + "' has " + std::to_string(arr[i].size()) + " entries, more than the limit " +
             std::to_string(kMaxMeshDims));
    }
    std::vector<std::string> placements;
    for (const json& x : arr[i]) {
      if (!x.is_string()) f.Fail("field '" + path + "' must be an array of strings");
      placements.push_back(x.get<std::string>());
    }
    out.push_back(std::move(placements));
  }
}

void Read(codec::StrategyCost, const Fields& f, const char* name, double& v, ReadState&) {
  v = f.Number(name);
  if (v == -1.0) {
    v = std::numeric_limits<double>::infinity();  // the format's spelling of +inf
  } else if (!(v >= 0.0)) {
    f.Fail("field '" + f.Path(name) + "' must be >= 0, or -1 for an infinite cost");
  }
}

// null: an unknown (non-finite) duration as older writers wrote it (JSON has no infinity).
void Read(codec::Millis, const Fields& f, const char* name, std::optional<double>& v, ReadState&) {
  if (!f.Get(name).is_null()) v = f.Number(name);
}

// Reads every field of T's table that `f` has, in table order, and fails on a field this version
// requires; returns the fields present (bit i: field i of the table). Line fields (`like`) are
// the caller's.
template <typename T>
uint64_t ReadFields(const Fields& f, T& e, ReadState& s) {
  const bool partial = std::exchange(s.partial, false);  // not for the objects inside
  uint64_t present = 0;
  ForEachField(kDescOf<T>, [&](auto i, const auto& field) {
    using F = std::remove_cvref_t<decltype(field)>;
    using R = typename F::Rule;
    if constexpr (!kLineOnly<R>) {
      const char* name = field.name.data();  // the tables' names are string literals
      if (f.Has(name)) {
        present |= uint64_t{1} << i;
        s.bit = uint64_t{1} << i;
        Read(typename F::Codec{}, f, name, Ref<F>(e), s);
      } else if (!partial && (s.v2 ? kV2Required<R> : kV1Required<R>)) {
        f.Fail("missing field '" + f.Path(name) + "'");
      }
    }
  });
  return present;
}

// Checks of one event that involve several fields: before v2's Complete (Linked) and after it
// (Finish), where the event is whole.
template <typename E>
void Linked(const Fields&, const E&, uint64_t) {}
template <typename E>
void Finish(const Fields&, E&, const FileContext&) {}

// The optional op_id/op_input pair of an implicit redistribute: both present or both absent.
void Linked(const Fields& f, const RedistributeBegin&, uint64_t present) {
  constexpr uint64_t kLink = MaskOf(kDescOf<RedistributeBegin>, {"op_id", "op_input"});
  if ((present & kLink) != 0 && (present & kLink) != kLink)
    f.Fail("fields 'op_id' and 'op_input' must appear together");
}

void Linked(const Fields& f, const Collective& e, uint64_t) {
  if (e.redistribute_id < 0 && e.op_id < 0 && !e.HasFlight()) {
    f.Fail(
        "field 'redistribute_id' is -1 but 'op_id' is absent: only an op's own collective (a halo "
        "exchange, with 'op_id' >= 0) has no redistribute (or an imported Flight Recorder entry, with "
        "'flight')");
  }
}

void Finish(const Fields& f, Collective& e, const FileContext&) {
  if (e.kind().empty()) f.Fail("field 'kind' must be a non-empty string");
  if (e.bytes_sent().size() != e.group().size() || e.bytes_recv().size() != e.group().size()) {
    f.Fail("fields 'bytes_sent' and 'bytes_recv' must have one entry per rank of 'group' (" +
           std::to_string(e.group().size()) + ")");
  }
}

// v2: `rule_number` renumbers the rule taken from `like` (format_v2.hpp's RenumberRule);
// `redistribute_ids` (one per input) replaces the inputs' redistribute ids; then the chosen
// strategy must be one of the candidates, each with one placement list per operand.
void Finish(const Fields& f, Op& e, const FileContext& ctx) {
  if (ctx.v2() && !ctx.v3()) {
    for (const char* name : {"rule_number", "linked"})
      if (f.Has(name)) f.Fail(std::string("field '") + name + "' needs trace format version 3");
  }
  if (ctx.v2() && f.Has("rule_number")) {
    const int64_t number = f.Int("rule_number", 0, kMaxRuleNumber);
    if (!f.Has("like"))
      f.Fail("field 'rule_number' needs 'like' (it renumbers the rule of the op 'like' names)");
    if (f.Has("rule")) f.Fail("fields 'rule' and 'rule_number' must not appear together");
    std::string rule;
    if (!RenumberRule(e.rule(), number, rule))
      f.Fail("field 'rule_number' is " + std::to_string(number) + " but the rule of op " +
             std::to_string(f.Int("like", 0, kI64Max)) + " ('like') has no number to replace");
    e.Mutable().rule = rule;
  }
  if (ctx.v2() && f.Has("linked")) {
    if (!f.Bool("linked")) f.Fail("field 'linked' must be true when present");
    if (f.Has("redistribute_ids")) f.Fail("fields 'linked' and 'redistribute_ids' must not appear together");
    const std::vector<int64_t> ids = ctx.LinkedIds(e.id, e.inputs().size());
    std::vector<OpInput>& inputs = e.Mutable().inputs.Mutable();  // copied first when shared with a `like` op
    for (size_t i = 0; i < ids.size(); ++i) inputs[i].redistribute_id = ids[i];
  }
  if (ctx.v2() && f.Has("redistribute_ids")) {
    const std::vector<int64_t> ids = f.Ints("redistribute_ids", kMaxOpOperands, -1, kI64Max);
    if (ids.size() != e.inputs().size())
      f.Fail("field 'redistribute_ids' must have one entry per input (" + std::to_string(e.inputs().size()) +
             ")");
    if (!ids.empty()) {
      std::vector<OpInput>& inputs =
          e.Mutable().inputs.Mutable();  // copied first when shared with a `like` op
      for (size_t i = 0; i < ids.size(); ++i) inputs[i].redistribute_id = ids[i];
    }
  }
  for (size_t i = 0; i < e.candidates().size(); ++i) {
    const OpStrategy& c = e.candidates()[i];
    if (c.inputs.size() != e.inputs().size() || c.outputs.size() != e.outputs().size()) {
      f.Fail("strategy " + std::to_string(i) + " must have one placement list per input (" +
             std::to_string(e.inputs().size()) + ") and per output (" + std::to_string(e.outputs().size()) +
             ")");
    }
  }
  // -1 ("no strategy") only for an op that failed; otherwise chosen indexes candidates, or is 0
  // for an op that records no candidates (a profiler's CPU op, `import kineto`).
  if ((e.chosen() >= static_cast<int64_t>(e.candidates().size()) &&
       !(e.chosen() == 0 && e.candidates().empty())) ||
      (e.chosen() < 0 && e.ok())) {
    f.Fail("field 'chosen' is " + std::to_string(e.chosen()) + " but the op has " +
           std::to_string(e.candidates().size()) + " candidate strategies" +
           (e.chosen() < 0 ? " (-1 is allowed only when 'ok' is false)" : ""));
  }
}

// One event line: its table's fields, then (v2) what the line left out rebuilt by format_v2.cpp.
template <typename E>
E ParseKind(const Fields& f, const FileContext& ctx) {
  E e;
  ReadState s{ctx.v2()};
  const uint64_t present = ReadFields(f, e, s);
  Linked(f, e, present);
  if (s.v2) {
    int64_t like = -1;
    if constexpr (LikeMask(kDescOf<E>) != 0) {
      if (f.Has("like")) like = f.Int("like", 0, kI64Max);
    }
    if (std::string why = Complete(e, present, s.abbreviated, like, ctx); !why.empty()) f.Fail(why);
  }
  Finish(f, e, ctx);
  return e;
}

// The optional op_id/op_input pair of a redistribute_repeat line: both present or both absent.
void ParseOpLink(const Fields& f, int64_t& op_id, int64_t& op_input) {
  if (!f.Has("op_id") && !f.Has("op_input")) return;
  if (!f.Has("op_id") || !f.Has("op_input")) f.Fail("fields 'op_id' and 'op_input' must appear together");
  op_id = f.Int("op_id", 0, kI64Max);
  op_input = f.Int("op_input", 0, kMaxOpOperands - 1);
}

}  // namespace

std::string LineType(const json& line, const LineRef& at) {
  if (!line.is_object()) ThrowAt(at, "line must be a JSON object");
  auto it = line.find("type");
  if (it == line.end() || !it->is_string()) ThrowAt(at, "field 'type' must be a string");
  return it->get<std::string>();
}

Header ParseHeader(const json& line, const LineRef& at) {
  if (LineType(line, at) != kTypeHeader) ThrowAt(at, "first line must be the header (\"type\": \"header\")");
  Fields f(line, at, "");
  Header h;
  h.format = f.Str("format");
  if (h.format != kFormatName) {
    f.Fail("field 'format' is '" + h.format + "', not '" + std::string(kFormatName) +
           "': not a shardscope trace");
  }
  // The version is checked before any other field: a newer version may have changed them.
  int64_t version = f.Int("version", kI64Min, kI64Max);
  if (version > kCurrentVersion) {
    throw Unsupported(at.file + ":" + std::to_string(at.line) + ": trace format version " +
                      std::to_string(version) + " is newer than this shardscope reads (" +
                      std::to_string(kCurrentVersion) + "); upgrade shardscope");
  }
  if (version < kMinVersion) {
    f.Fail("trace format version " + std::to_string(version) + " is not valid (this shardscope reads " +
           std::to_string(kMinVersion) + " to " + std::to_string(kCurrentVersion) + ")");
  }
  h.version = static_cast<int>(version);
  h.world = f.Int("world", 1, kMaxRanks);
  h.rank = f.Int("rank", 0, h.world - 1);
  Fields mesh = f.Object("mesh");
  h.mesh_shape = mesh.Ints("shape", kMaxMeshDims, 1, kMaxRanks);
  h.mesh_dim_names = mesh.Strs("dim_names", kMaxMeshDims);
  if (h.mesh_dim_names.size() != h.mesh_shape.size()) {
    f.Fail("field 'mesh.dim_names' must have one entry per mesh dim (" + std::to_string(h.mesh_shape.size()) +
           ")");
  }
  int64_t mesh_size = 1;
  for (int64_t extent : h.mesh_shape) {
    mesh_size *= extent;  // cannot overflow: each extent <= 2^20 and the product is checked as it grows
    if (mesh_size > kMaxRanks)
      f.Fail("field 'mesh.shape' describes more than " + std::to_string(kMaxRanks) + " ranks");
  }
  if (!h.mesh_shape.empty() && mesh_size != h.world) {
    f.Fail("field 'mesh.shape' has " + std::to_string(mesh_size) + " ranks but 'world' is " +
           std::to_string(h.world));
  }
  h.backend = f.Str("backend");
  h.host = f.Str("host");
  h.pid = f.Int("pid", kI64Min, kI64Max);
  Fields clock = f.Object("clock");
  h.clock.name = clock.Str("name");
  h.clock.offset_ns = clock.Int("offset_ns", -kMaxTimeNs, kMaxTimeNs);
  return h;
}

RepeatLine ParseRepeatLine(const json& line, const LineRef& at, const FileContext& ctx) {
  Fields f(line, at, "");
  RepeatLine r;
  r.id = f.Int("id", 0, kI64Max);
  r.like = f.Int("like", 0, kI64Max);
  r.t_ns = f.Int("t_ns", -kMaxTimeNs, kMaxTimeNs);
  // Version 3's forms (a repeat of an imported redistribute): `dt` left out, `imported` given.
  if (!ctx.v3()) {
    if (!f.Has("dt")) f.Fail("missing field 'dt' (only trace format version 3 may leave it out)");
    if (f.Has("imported")) f.Fail("field 'imported' needs trace format version 3");
  }
  r.has_dt = f.Has("dt");
  if (r.has_dt) r.dt = f.Ints("dt", kMaxRepeatTimes, -2 * kMaxTimeNs, 2 * kMaxTimeNs);
  if (f.Has("tensor")) r.tensor = f.Str("tensor");
  ParseOpLink(f, r.op_id, r.op_input);
  if (f.Has("imported")) {
    // In part: each field given replaces the copied plan's (ExpandRepeat checks the rest).
    ReadState s{true};
    s.partial = true;
    r.imported_present = ReadFields(f.Object("imported"), r.imported.emplace(), s);
  }
  return r;
}

CollectiveRepeatLine ParseCollectiveRepeatLine(const json& line, const LineRef& at) {
  Fields f(line, at, "");
  CollectiveRepeatLine r;
  r.back = f.Int("back", 1, kMaxFlightBack);
  r.dt = f.Ints("dt", 3, -2 * kMaxTimeNs, 2 * kMaxTimeNs);
  if (r.dt.size() != 3) f.Fail("field 'dt' must have 3 entries (start_ns, end_ns, flight.created_ns)");
  r.did = f.Ints("did", 4, kI64Min + 1, kI64Max);
  if (r.did.size() != 4)
    f.Fail("field 'did' must have 4 entries (flight.seq_id, p2p_seq_id, record_id, op_id)");
  if (f.Has("state")) r.state = f.Str("state");
  if (f.Has("duration_ms")) r.duration_ms = f.Number("duration_ms");
  return r;
}

std::optional<Event> ParseEvent(const json& line, const LineRef& at, const FileContext& ctx) {
  std::string type = LineType(line, at);
  Fields f(line, at, "");
  if (type == kTypeRedistributeBegin) return ParseKind<RedistributeBegin>(f, ctx);
  if (type == kTypeRedistributeEnd) return ParseKind<RedistributeEnd>(f, ctx);
  if (type == kTypeStepBegin) return ParseKind<StepBegin>(f, ctx);
  if (type == kTypeStepEnd) return ParseKind<StepEnd>(f, ctx);
  if (type == kTypeCollective) return ParseKind<Collective>(f, ctx);
  if (type == kTypeOp) return ParseKind<Op>(f, ctx);
  if (type == kTypeHeader) ThrowAt(at, "a second header line; each file holds one rank's trace");
  return std::nullopt;
}

}  // namespace detail
}  // namespace shardscope::trace
