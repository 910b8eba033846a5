// The field tables of trace/src/event_fields.hpp (what every reader and writer of the format walks)
// against docs/trace-schema.json (the published definition of a line, which tests/cli/schema_test.sh
// checks the writers' output against): every field of every table is a property of its object in
// the schema with the JSON type of its codec; a field is required there exactly when the table
// says a v2 line must have it; a field that v1 requires and v2 may leave out says so ("v2:" in
// its description); and the schema has no property that a table lacks. So the tables and the
// schema cannot drift apart silently.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "../../trace/src/event_fields.hpp"

namespace {

using nlohmann::json;
using namespace shardscope::trace;
using namespace shardscope::trace::detail;

const json& Schema() {
  static const json schema = [] {
    std::ifstream in(std::string(SHARDSCOPE_SOURCE_DIR) + "/docs/trace-schema.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return schema;
}

// A schema node with its "$ref" (to "#/$defs/NAME") followed.
const json& Resolve(const json& node) {
  if (!node.contains("$ref")) return node;
  const std::string ref = node["$ref"];
  REQUIRE(ref.rfind("#/$defs/", 0) == 0);
  return Schema()["$defs"][ref.substr(8)];
}

// The JSON type a codec reads and writes ("" where the schema spells it otherwise).
template <int64_t A, int64_t B>
std::string JsonType(codec::Int<A, B>) {
  return "integer";
}
template <int64_t N, int64_t A, int64_t B>
std::string JsonType(codec::Ints<N, A, B>) {
  return "array";
}
template <int64_t N>
std::string JsonType(codec::Texts<N>) {
  return "array";
}
template <int64_t N>
std::string JsonType(codec::Objects<N>) {
  return "array";
}
std::string JsonType(codec::Text) { return "string"; }
std::string JsonType(codec::NonEmptyText) { return "string"; }
std::string JsonType(codec::Flag) { return "boolean"; }
std::string JsonType(codec::Real) { return "number"; }
std::string JsonType(codec::StrategyCost) { return "number"; }
std::string JsonType(codec::Checksum) { return "integer"; }
std::string JsonType(codec::Object) { return "object"; }
std::string JsonType(codec::Flight) { return "object"; }
std::string JsonType(codec::ShapeList) { return "array"; }
std::string JsonType(codec::PlacementLists) { return "array"; }
std::string JsonType(codec::PeerBytes) { return ""; }  // an array, or in v2 one integer
std::string JsonType(codec::Millis) { return ""; }     // a number, or null

template <typename T>
void CheckObject(const json& node, const std::string& where);

// Field F (of struct T) against its schema property `p`, and nested objects against theirs.
template <typename T, typename F>
void CheckField(const F& f, const json& p, const std::string& where) {
  using R = typename F::Rule;
  const std::string name(f.name);
  INFO(where << "." << name);
  const std::string type = JsonType(typename F::Codec{});
  if (!type.empty() && Resolve(p).contains("type")) CHECK(Resolve(p)["type"] == type);
  if constexpr (kV1Required<R> && !kV2Required<Unliked<R>>) {
    // v1 requires it, v2 (v3 for rule::SameAsV3) may leave it out even without `like` (whose own
    // description covers the rest): the schema (of v3 lines) says so in its description.
    REQUIRE(p.contains("description"));
    CHECK(p["description"].template get<std::string>().rfind(kV3Only<Unliked<R>> ? "v3" : "v2", 0) == 0);
  }
  if constexpr (kLineOnly<R>) {
    // `like`, `redistribute_ids` (v2); `rule_number`, `linked` (v3).
    const std::string d = p["description"].template get<std::string>();
    CHECK((d.rfind("v2", 0) == 0 || d.rfind("v3", 0) == 0));
  } else {
    using V = ValueOf<T, F>;
    if constexpr (std::is_same_v<typename F::Codec, codec::Object>) {
      CheckObject<typename std::remove_cvref_t<decltype(*std::declval<V&>())>>(Resolve(p),
                                                                               where + "." + name);
    } else if constexpr (std::is_same_v<typename F::Codec, codec::Flight>) {
      CheckObject<FlightFields>(Resolve(p), where + "." + name);
    } else if constexpr (requires { typename ElementOf<V>::type; }) {
      using E = typename ElementOf<V>::type;
      if constexpr (requires { DescFor<E>::kDesc; }) {
        REQUIRE(Resolve(p).contains("items"));
        CheckObject<E>(Resolve(Resolve(p)["items"]), where + "." + name + "[]");
      }
    }
  }
}

// T's table against the schema object `node`: the same fields, required alike.
template <typename T>
void CheckObject(const json& node, const std::string& where) {
  INFO(where);
  REQUIRE(node.contains("properties"));
  std::set<std::string> required;
  if (node.contains("required"))
    for (const json& r : node["required"]) required.insert(r.get<std::string>());
  std::set<std::string> in_table;
  ForEachField(kDescOf<T>, [&](auto, const auto& f) {
    using F = std::remove_cvref_t<decltype(f)>;
    const std::string name(f.name);
    in_table.insert(name);
    INFO(where << "." << name);
    REQUIRE(node["properties"].contains(name));
    CHECK(required.count(name) == (kV2Required<typename F::Rule> ? 1u : 0u));
    CheckField<T>(f, node["properties"][name], where);
  });
  for (const auto& [name, p] : node["properties"].items()) {
    if (name == "type") continue;  // every line's first field, not a member
    INFO(where << ": the schema's property '" << name << "'");
    CHECK(in_table.count(name) == 1);
  }
}

}  // namespace

TEST_CASE("the event field tables and docs/trace-schema.json describe the same fields alike",
          "[trace][schema]") {
  const json& defs = Schema()["$defs"];
  CheckObject<RedistributeBegin>(defs["redistribute_begin"], "redistribute_begin");
  CheckObject<RedistributeEnd>(defs["redistribute_end"], "redistribute_end");
  CheckObject<StepBegin>(defs["step_begin"], "step_begin");
  CheckObject<StepEnd>(defs["step_end"], "step_end");
  CheckObject<Collective>(defs["collective"], "collective");
  CheckObject<Op>(defs["op"], "op");
  // Each event's table is named by its line's "type", which the schema fixes.
  CHECK(defs["redistribute_begin"]["properties"]["type"]["const"] == kDescOf<RedistributeBegin>.name);
  CHECK(defs["redistribute_end"]["properties"]["type"]["const"] == kDescOf<RedistributeEnd>.name);
  CHECK(defs["step_begin"]["properties"]["type"]["const"] == kDescOf<StepBegin>.name);
  CHECK(defs["step_end"]["properties"]["type"]["const"] == kDescOf<StepEnd>.name);
  CHECK(defs["collective"]["properties"]["type"]["const"] == kDescOf<Collective>.name);
  CHECK(defs["op"]["properties"]["type"]["const"] == kDescOf<Op>.name);
}

TEST_CASE("a v2 line's presence bits are its fields' places in the table", "[trace][schema]") {
  // The masks readers and writers use are computed from the tables, not spelled as numbers.
  const auto& begin = kDescOf<RedistributeBegin>;
  CHECK(IndexOf(begin, "id") == 0);
  CHECK(LikeFirst(begin) == 1);
  CHECK(LikeEnd(begin) == IndexOf(begin, "t_ns"));
  CHECK(RequiredMask(begin, true) == MaskOf(begin, {"id", "t_ns"}));
  CHECK(RequiredMask(kDescOf<RedistributeEnd>, true) == MaskOf(kDescOf<RedistributeEnd>, {"id", "t_ns"}));
  CHECK(RequiredMask(kDescOf<RedistributeEnd>, false) ==
        MaskOf(kDescOf<RedistributeEnd>, {"id", "t_ns", "ok"}));
  CHECK(RequiredMask(kDescOf<Collective>, true) ==
        MaskOf(kDescOf<Collective>,
               {"redistribute_id", "step", "bytes_sent", "bytes_recv", "start_ns", "end_ns"}));
  CHECK(IndexOf(begin, "no such field") == std::remove_cvref_t<decltype(begin)>::kSize);
}
