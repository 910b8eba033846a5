#pragma once
// Private: the one description of every event kind's fields (docs/trace-format.md). Each line of a
// table below is one field: its name on the line, the member it holds, its codec (JSON type and
// range) and its rule (required, optional, or what a version 2 line may leave out and how a
// reader rebuilds it). Both readers (codec.cpp, fast_decode.cpp), every writer (codec_encode.cpp,
// fast_encode.cpp, encode_v2.cpp) and the v2 rules (format_v2.cpp) walk these tables; a v2 line's
// presence bits are the fields' indexes here. Adding a field is one line here (its member in
// events.hpp, its schema entry in docs/trace-schema.json, which tests/trace/event_fields_test.cpp
// compares with these tables). A new codec needs one function in each reader and writer.

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "shardscope/trace/events.hpp"

namespace shardscope::trace::detail {

// Times (*_ns, clock offsets) within +-2^61 ns (73 years) and byte counts up to 2^42 (4 TiB per
// peer and collective): differences of two times, a time plus an offset, and a group's bytes
// (at most kMaxRanks = 2^20 entries) all fit an int64, so the tools' arithmetic cannot overflow
// on any trace the reader accepts.
inline constexpr int64_t kMaxTimeNs = int64_t{1} << 61;
inline constexpr int64_t kMaxBytes = int64_t{1} << 42;
inline constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

/// How a value is spelled in JSON, and the range a reader accepts.
namespace codec {
template <int64_t Min, int64_t Max>
struct Int {};  ///< an integer in [Min, Max]
using Id = Int<0, kI64Max>;
using Time = Int<-kMaxTimeNs, kMaxTimeNs>;
using StepIndex = Int<0, kMaxPlanSteps - 1>;
template <int64_t MaxLen, int64_t Min, int64_t Max>
struct Ints {};  ///< an array of at most MaxLen integers in [Min, Max]
using Shape = Ints<kMaxTensorDims, 0, kMaxExtent>;
using MeshDims = Ints<kMaxMeshDims, 0, kMaxMeshDims - 1>;
using Ranks = Ints<kMaxRanks, 0, kMaxRanks - 1>;
struct Text {};          ///< a string
struct NonEmptyText {};  ///< a string that is not empty
template <int64_t MaxLen>
struct Texts {};  ///< an array of at most MaxLen strings
using Placements = Texts<kMaxMeshDims>;
struct Flag {};      ///< a boolean
struct Real {};      ///< a number
struct Checksum {};  ///< a non-negative integer up to 2^64-1 (std::optional<uint64_t>)
template <int64_t MaxLen>
struct Objects {};  ///< an array of at most MaxLen objects, each described by DescFor<element>
struct Object {};   ///< one object (a Rare<T> payload), described by DescFor<T>
/// A Flight Recorder record (a collective's flight shape and own fields, the field's value being the
/// whole collective): one flat object, described by DescFor<FlightFields>.
struct Flight {};
/// A per-peer byte list aligned with the collective's group; in v2 also one integer, the count
/// for every other member (a "uniform" list, expanded once the group is known).
struct PeerBytes {};
struct ShapeList {};       ///< an array of at most kMaxOpOperands shapes (Flight Recorder sizes)
struct PlacementLists {};  ///< an array of at most kMaxOpOperands placement lists
struct StrategyCost {};    ///< a number >= 0, or -1 for +inf
struct Millis {};          ///< a number, or null for unknown (std::optional<double>)
}  // namespace codec

/// When a field is on a line, and what a reader makes of its absence.
namespace rule {
struct Required {};  ///< on every line of either version
struct WhenSet {};   ///< written when set (non-empty, has a value, >= 0); absent: the member's default
template <auto Written>
struct When {};       ///< written when Written(event); absent: the member's default
struct Defaulted {};  ///< v1: required; v2: left out when equal to the member's default
template <auto From>
struct SameAs {};  ///< v1: required; v2: left out when equal to member From of the same event
template <auto From>
struct SameAsV3 {};  ///< v1, v2: required; v3: left out when equal to member From of the same event
template <auto StepMember>
struct FromStep {};  ///< v1: required; v2: left out when equal to the redistribute's optimized_plan[step]
struct FromBeginDtype {};  ///< v1: required; v2: left out when equal to the redistribute's dtype
struct FromMeshGroup {};   ///< v1: required; v2: left out when equal to MeshGroup over mesh_dims
/// v1: required; v2: a line with `like` leaves it out and the reader copies it from the event
/// `like` names; without `like`, Inner decides.
template <typename Inner>
struct Like {};
/// Required; a v2 op line with `like` gives it for every input in its `redistribute_ids`.
struct Relinked {};
/// A field of the line, not of the event (`like`, `redistribute_ids`; v3: `rule_number`, `linked`):
/// v2 and later only, read and written by the code of its event kind.
struct LineOnly {};
}  // namespace rule

/// One field: its name, the member it holds (nullptr for rule::LineOnly), its codec and rule.
template <auto M, typename C, typename R = rule::Required>
struct Field {
  std::string_view name;
  static constexpr auto kMember = M;
  using Codec = C;
  using Rule = R;
};
template <typename C>
using LineField = Field<nullptr, C, rule::LineOnly>;

/// A field's member reached through a Shared<> member of its struct (a collective's kind is
/// `shape->kind`): Field<Via<&Collective::shape, &CollectiveShape::kind>{}, ...>.
template <auto Outer, auto Inner>
struct Via {};
template <auto Outer, auto Inner>
constexpr bool ViaParts(Via<Outer, Inner>) {
  return true;
}
template <typename T, auto Outer, auto Inner>
const auto& ViaGet(const T& e, Via<Outer, Inner>) {
  // A Shared member holds a default value when unset; a Rare one (absent) reads as a default one.
  using M = std::remove_cvref_t<decltype(e.*Outer)>;
  if constexpr (requires(const M& m) { m.shared(); }) {
    using V = std::remove_cvref_t<decltype(*(e.*Outer))>;
    static const V kDefault{};
    if (!(e.*Outer)) return kDefault.*Inner;
    return (*(e.*Outer)).*Inner;
  } else {
    return (*(e.*Outer)).*Inner;
  }
}
template <typename T, auto Outer, auto Inner>
auto& ViaRef(T& e, Via<Outer, Inner>) {
  using M = std::remove_cvref_t<decltype(e.*Outer)>;
  if constexpr (requires(M & m) { m.shared(); }) {
    M& rare = e.*Outer;
    if (!rare) rare.emplace();  // a field written makes the payload present
    return (*rare).*Inner;
  } else {
    return (e.*Outer).Mutable().*Inner;
  }
}
/// A field whose value is the whole struct (a collective's Flight Recorder record, spread over its
/// shape and its own fields): the codec reads and writes both.
struct Whole {};

/// Member M of `e` (a member pointer or a Via) for reading: what a rule's argument names.
template <auto M, typename T>
const auto& GetMember(const T& e) {
  if constexpr (requires { ViaParts(M); })
    return ViaGet(e, M);
  else
    return e.*M;
}

/// Field F of `e` for reading.
template <typename F, typename T>
const auto& Get(const T& e) {
  using M = std::remove_cvref_t<decltype(F::kMember)>;
  if constexpr (std::is_same_v<M, Whole>) {
    return e;
  } else if constexpr (requires { ViaParts(F::kMember); }) {
    return ViaGet(e, F::kMember);
  } else {
    return e.*F::kMember;
  }
}
/// Field F of `e` for writing (a field through a shared member copies that member first when it is
/// shared: Shared::Mutable).
template <typename F, typename T>
auto& Ref(T& e) {
  using M = std::remove_cvref_t<decltype(F::kMember)>;
  if constexpr (std::is_same_v<M, Whole>) {
    return e;
  } else if constexpr (requires { ViaParts(F::kMember); }) {
    return ViaRef(e, F::kMember);
  } else {
    return e.*F::kMember;
  }
}

/// A struct's fields in line order; `name` is the line's "type" for an event, else the noun that
/// messages use for an array of these objects.
template <typename T, typename... F>
struct Desc {
  using Struct = T;
  static constexpr size_t kSize = sizeof...(F);
  std::string_view name;
  std::tuple<F...> fields;
};
template <typename T, typename... F>
constexpr Desc<T, F...> Describe(std::string_view name, F... fields) {
  return {name, {fields...}};
}

// ---- Rule traits ----
template <typename R>
struct IsLike : std::false_type {
  using Inner = R;
};
template <typename I>
struct IsLike<rule::Like<I>> : std::true_type {
  using Inner = I;
};
template <typename R>
using Unliked = typename IsLike<R>::Inner;
/// Whether rule R is Rule<A> for some A (When, SameAs, FromStep), and that A (kArg).
template <template <auto> class Rule, typename R>
struct IsRule : std::false_type {};
template <template <auto> class Rule, auto A>
struct IsRule<Rule, Rule<A>> : std::true_type {
  static constexpr auto kArg = A;
};
template <typename R>
using IsWhen = IsRule<rule::When, R>;  ///< kArg: the predicate
/// Whether rule R is SameAs or SameAsV3, and the member it equals (kArg).
template <typename R>
struct IsSameAs : IsRule<rule::SameAs, R> {};
template <auto A>
struct IsSameAs<rule::SameAsV3<A>> : std::true_type {
  static constexpr auto kArg = A;
};
/// Whether rule R lets a line leave its field out only in a version-3 file.
template <typename R>
inline constexpr bool kV3Only = IsRule<rule::SameAsV3, R>::value;
template <typename R>
using IsFromStep = IsRule<rule::FromStep, R>;  ///< kArg: the plan step's member
template <typename R>
inline constexpr bool kLineOnly = std::is_same_v<R, rule::LineOnly>;
/// Written only when set, in either version (absent: the member's default).
template <typename R>
inline constexpr bool kOptional = std::is_same_v<R, rule::WhenSet> || IsWhen<R>::value;
template <typename R>
inline constexpr bool kV1Required = !kOptional<R> && !kLineOnly<R>;
template <typename R>
inline constexpr bool kV2Required = std::is_same_v<R, rule::Required> || std::is_same_v<R, rule::Relinked>;

/// Calls fn(std::integral_constant<size_t, I>{}, field) for each field of `d` in order.
template <typename D, typename Fn>
constexpr void ForEachField(const D& d, Fn&& fn) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    (fn(std::integral_constant<size_t, I>{}, std::get<I>(d.fields)), ...);
  }
  (std::make_index_sequence<D::kSize>{});
}

/// The same, stopping at the first field for which fn returns false; returns whether none did.
template <typename D, typename Fn>
constexpr bool AllFields(const D& d, Fn&& fn) {
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return (fn(std::integral_constant<size_t, I>{}, std::get<I>(d.fields)) && ...);
  }
  (std::make_index_sequence<D::kSize>{});
}

/// Index of field `name` in `d` (d's size when it has none).
template <typename D>
constexpr size_t IndexOf(const D& d, std::string_view name) {
  size_t at = D::kSize;
  ForEachField(d, [&](auto i, const auto& f) {
    if (f.name == name && at == D::kSize) at = i;
  });
  return at;
}
/// Bit mask of the fields named.
template <typename D>
constexpr uint64_t MaskOf(const D& d, std::initializer_list<std::string_view> names) {
  uint64_t mask = 0;
  for (std::string_view n : names) mask |= uint64_t{1} << IndexOf(d, n);
  return mask;
}
/// Bit mask of the fields a line of this version must have.
template <typename D>
constexpr uint64_t RequiredMask(const D& d, bool v2) {
  uint64_t mask = 0;
  ForEachField(d, [&](auto i, const auto& f) {
    using R = typename std::remove_cvref_t<decltype(f)>::Rule;
    if (v2 ? kV2Required<R> : kV1Required<R>) mask |= uint64_t{1} << i;
  });
  return mask;
}
/// Bit mask of the fields a v2 `like` copies (rule::Like), which are one run of the table.
template <typename D>
constexpr uint64_t LikeMask(const D& d) {
  uint64_t mask = 0;
  ForEachField(d, [&](auto i, const auto& f) {
    if (IsLike<typename std::remove_cvref_t<decltype(f)>::Rule>::value) mask |= uint64_t{1} << i;
  });
  return mask;
}
template <typename D>
constexpr size_t LikeFirst(const D& d) {
  return static_cast<size_t>(std::countr_zero(LikeMask(d)));
}
template <typename D>
constexpr size_t LikeEnd(const D& d) {
  return 64 - static_cast<size_t>(std::countl_zero(LikeMask(d)));
}

/// The value type of field F in struct T.
template <typename T, typename F>
using ValueOf = std::remove_cvref_t<decltype(Get<F>(std::declval<const T&>()))>;

/// The element type of a list member (std::vector<T> or SharedVec<T>).
template <typename V>
struct ElementOf;
template <typename T>
struct ElementOf<std::vector<T>> {
  using type = T;
};
template <typename T>
struct ElementOf<SharedVec<T>> {
  using type = T;
};

/// A struct's default values (what rule::Defaulted and absent optional fields stand for).
template <typename T>
inline const T kDefaults{};

/// Whether a field of rule::WhenSet is set: not empty, holding a value, an id >= 0.
inline bool IsSet(const IStr& v) { return !v.empty(); }
inline bool IsSet(const std::string& v) { return !v.empty(); }
inline bool IsSet(int64_t v) { return v >= 0; }
template <typename T>
bool IsSet(const std::optional<T>& v) {
  return v.has_value();
}
template <typename T>
bool IsSet(const Rare<T>& v) {
  return v.has_value();
}

/// Whether a field of rule R of `e`, value `v`, is set where its rule makes it optional (WhenSet,
/// When); fields of every other rule are always set. A line of either version leaves out an
/// optional field that is not set.
template <typename R, typename E, typename V>
bool Present(const E& e, const V& v) {
  if constexpr (std::is_same_v<R, rule::WhenSet>) {
    return IsSet(v);
  } else if constexpr (IsWhen<R>::value) {
    return IsWhen<R>::kArg(e);
  } else {
    return true;
  }
}

// ---- Predicates of rule::When ----
inline bool HasOpLink(const RedistributeBegin& e) { return e.op_id >= 0; }
inline bool KnownDuration(const std::optional<double>& ms) { return ms && std::isfinite(*ms); }

/// A flight record as its line spells it: one flat object, the shape's fields among the entry's
/// own (docs/trace-format.md, "flight"). The readers decode a record into this and make it a
/// collective's flight shape and record (SetFlight); the writers write FlightFieldsOf's. Its table is
/// kFlightRecordDesc.
struct FlightFields {
  IStr pg_name;
  IStr pg_desc;
  int64_t seq_id = 0;
  int64_t p2p_seq_id = 0;
  int64_t record_id = 0;
  int64_t op_id = 0;
  IStr profiling_name;
  IStr state;
  SharedVec<std::vector<int64_t>> input_sizes;
  SharedVec<std::vector<int64_t>> output_sizes;
  SharedVec<std::string> input_dtypes;
  SharedVec<std::string> output_dtypes;
  int64_t created_ns = 0;
  std::optional<double> duration_ms;
  int64_t timeout_ms = 0;
  bool is_p2p = false;
};
inline bool KnownFlightDuration(const FlightFields& f) { return KnownDuration(f.duration_ms); }

/// Makes `c` an imported collective with the record of `f`: its flight shape one of its own (the
/// reader's pools make equal shapes one), its own fields `f`'s.
inline void SetFlight(Collective& c, FlightFields&& f) {
  c.Mutable().flight = Shared<FlightShape>(FlightShape{
      f.pg_name, f.pg_desc, f.profiling_name, f.state, std::move(f.input_sizes), std::move(f.output_sizes),
      std::move(f.input_dtypes), std::move(f.output_dtypes), f.timeout_ms, f.is_p2p});
  c.flight = FlightRecord{f.seq_id, f.p2p_seq_id, f.record_id, f.op_id, f.created_ns, f.duration_ms};
}
/// The record of `c` (HasFlight()) as its line spells it.
inline FlightFields FlightFieldsOf(const Collective& c) {
  const FlightShape& s = c.flight_shape();
  const FlightRecord& r = c.flight;
  return {s.pg_name,        s.pg_desc,     r.seq_id,      r.p2p_seq_id,   r.record_id,    r.op_id,
          s.profiling_name, s.state,       s.input_sizes, s.output_sizes, s.input_dtypes, s.output_dtypes,
          r.created_ns,     r.duration_ms, s.timeout_ms,  s.is_p2p};
}
/// rule::When of a collective's `flight`: written for an imported collective.
inline bool HasFlightRecord(const Collective& c) { return c.HasFlight(); }
// A member added to FlightRecord or FlightShape needs its place in FlightFields, SetFlight and
// FlightFieldsOf (and, for the record's own, in what a collective_repeat line gives: format_v2.hpp,
// encode_v2.cpp): the sizes below change with any member.
static_assert(sizeof(FlightRecord) == 48 && sizeof(FlightShape) == 64,
              "FlightRecord changed: update FlightFields and its table here, and the fields a "
              "collective_repeat line gives (format_v2.hpp, encode_v2.cpp)");

/// Largest v2 `rule_number` of an op line: 18 decimal digits.
inline constexpr int64_t kMaxRuleNumber = 999'999'999'999'999'999;

// ---- The tables ----
template <typename T>
struct DescFor;  ///< DescFor<T>::kDesc: the description of struct T

namespace tables {  // (short names for the structs, local to the tables)
using PS = PlanStep;
inline constexpr auto kPlanStepDesc = Describe<PlanStep>(
    "plan steps", Field<&PS::mesh_dims, codec::MeshDims>{"mesh_dims"}, Field<&PS::src, codec::Text>{"src"},
    Field<&PS::dst, codec::Text>{"dst"}, Field<&PS::comm, codec::Text>{"comm"},
    Field<&PS::logical_shape, codec::Shape>{"logical_shape"},
    Field<&PS::flattened, codec::Flag, rule::Defaulted>{"flattened"},
    Field<&PS::avg_scale, codec::Real, rule::Defaulted>{"avg_scale"},
    Field<&PS::cost_us, codec::Real>{"cost_us"});

using SM = SkippedMerge;
inline constexpr auto kSkippedMergeDesc =
    Describe<SkippedMerge>("skipped merges", Field<&SM::mesh_dims, codec::MeshDims>{"mesh_dims"},
                           Field<&SM::comm, codec::Text>{"comm"}, Field<&SM::reason, codec::Text>{"reason"},
                           Field<&SM::hint, codec::Text>{"hint"});

using IC = ImportedCollective;
inline constexpr auto kImportedCollectiveDesc =
    Describe<ImportedCollective>("collectives", Field<&IC::kind, codec::Text>{"kind"},
                                 Field<&IC::group_size, codec::Int<-1, kMaxRanks>>{"group_size"},
                                 Field<&IC::group_name, codec::Text>{"group_name"});

using IP = ImportedPlan;
inline constexpr auto kImportedPlanDesc = Describe<ImportedPlan>(
    "imported plan", Field<&IP::source, codec::Text>{"source"}, Field<&IP::line, codec::Id>{"line"},
    Field<&IP::notation, codec::Text>{"notation"},
    Field<&IP::collectives, codec::Objects<kMaxPlanSteps>>{"collectives"},
    Field<&IP::verdict, codec::Text>{"verdict"}, Field<&IP::reason, codec::Text>{"reason"});

using RB = RedistributeBegin;
template <typename R>
using L = rule::Like<R>;
using RS = RedistributeShape;
template <auto M>
inline constexpr Via<&RB::shape, M> kRs{};  // a field of the shape
inline constexpr auto kRedistributeBeginDesc = Describe<RedistributeBegin>(
    "redistribute_begin", Field<&RB::id, codec::Id>{"id"},
    Field<kRs<&RS::tensor>, codec::Text, L<rule::Required>>{"tensor"},
    Field<kRs<&RS::global_shape>, codec::Shape, L<rule::Required>>{"global_shape"},
    Field<kRs<&RS::dtype>, codec::Text, L<rule::Required>>{"dtype"},
    Field<kRs<&RS::src_placements>, codec::Placements, L<rule::Required>>{"src_placements"},
    Field<kRs<&RS::dst_placements>, codec::Placements, L<rule::Required>>{"dst_placements"},
    Field<kRs<&RS::src_order>, codec::Text, L<rule::Defaulted>>{"src_order"},
    Field<kRs<&RS::dst_order>, codec::Text, L<rule::Defaulted>>{"dst_order"},
    Field<kRs<&RS::planner>, codec::Text, L<rule::Required>>{"planner"},
    Field<kRs<&RS::planner_reason>, codec::Text, L<rule::Required>>{"planner_reason"},
    Field<kRs<&RS::notation>, codec::Text, L<rule::Required>>{"notation"},
    Field<kRs<&RS::notation_unoptimized>, codec::Text, L<rule::SameAs<kRs<&RS::notation>>>>{
        "notation_unoptimized"},
    Field<kRs<&RS::raw_plan>, codec::Objects<kMaxPlanSteps>, L<rule::Required>>{"raw_plan"},
    Field<kRs<&RS::optimized_plan>, codec::Objects<kMaxPlanSteps>, L<rule::SameAs<kRs<&RS::raw_plan>>>>{
        "optimized_plan"},
    Field<kRs<&RS::skipped_merges>, codec::Objects<kMaxPlanSteps>, L<rule::Defaulted>>{"skipped_merges"},
    Field<kRs<&RS::cost_us>, codec::Real, L<rule::Required>>{"cost_us"},
    Field<&RB::t_ns, codec::Time>{"t_ns"}, Field<&RB::op_id, codec::Id, rule::When<&HasOpLink>>{"op_id"},
    Field<&RB::op_input, codec::Int<0, kMaxOpOperands - 1>, rule::When<&HasOpLink>>{"op_input"},
    Field<&RB::imported, codec::Object, rule::WhenSet>{"imported"}, LineField<codec::Id>{"like"});

using RE = RedistributeEnd;
inline constexpr auto kRedistributeEndDesc = Describe<RedistributeEnd>(
    "redistribute_end", Field<&RE::id, codec::Id>{"id"}, Field<&RE::t_ns, codec::Time>{"t_ns"},
    Field<&RE::ok, codec::Flag, rule::Defaulted>{"ok"},
    Field<&RE::error, codec::Text, rule::WhenSet>{"error"},
    Field<Via<&RE::checksums, &RE::Checksums::before>{}, codec::Checksum, rule::WhenSet>{"checksum_before"},
    Field<Via<&RE::checksums, &RE::Checksums::after>{}, codec::Checksum, rule::WhenSet>{"checksum_after"});

using SB = StepBegin;
inline constexpr auto kStepBeginDesc = Describe<StepBegin>(
    "step_begin", Field<&SB::redistribute_id, codec::Id>{"redistribute_id"},
    Field<&SB::step, codec::StepIndex>{"step"},
    Field<&SB::mesh_dims, codec::MeshDims, rule::FromStep<&PS::mesh_dims>>{"mesh_dims"},
    Field<&SB::src, codec::Text, rule::FromStep<&PS::src>>{"src"},
    Field<&SB::dst, codec::Text, rule::FromStep<&PS::dst>>{"dst"},
    Field<&SB::comm, codec::Text, rule::FromStep<&PS::comm>>{"comm"},
    Field<&SB::logical_shape, codec::Shape, rule::FromStep<&PS::logical_shape>>{"logical_shape"},
    Field<&SB::local_shape_before, codec::Shape>{"local_shape_before"},
    Field<&SB::global_offset_before, codec::Shape>{"global_offset_before"},
    Field<&SB::t_ns, codec::Time>{"t_ns"});

using SE = StepEnd;
inline constexpr auto kStepEndDesc =
    Describe<StepEnd>("step_end", Field<&SE::redistribute_id, codec::Id>{"redistribute_id"},
                      Field<&SE::step, codec::StepIndex>{"step"},
                      Field<&SE::local_shape_after, codec::Shape>{"local_shape_after"},
                      Field<&SE::global_offset_after, codec::Shape>{"global_offset_after"},
                      Field<&SE::t_ns, codec::Time>{"t_ns"});

using FR = FlightFields;
inline constexpr auto kFlightRecordDesc = Describe<FlightFields>(
    "flight record", Field<&FR::pg_name, codec::Text>{"pg_name"}, Field<&FR::pg_desc, codec::Text>{"pg_desc"},
    Field<&FR::seq_id, codec::Id>{"seq_id"}, Field<&FR::p2p_seq_id, codec::Id>{"p2p_seq_id"},
    Field<&FR::record_id, codec::Id>{"record_id"}, Field<&FR::op_id, codec::Id>{"op_id"},
    Field<&FR::profiling_name, codec::Text>{"profiling_name"}, Field<&FR::state, codec::Text>{"state"},
    Field<&FR::input_sizes, codec::ShapeList>{"input_sizes"},
    Field<&FR::output_sizes, codec::ShapeList>{"output_sizes"},
    Field<&FR::input_dtypes, codec::Texts<kMaxOpOperands>>{"input_dtypes"},
    Field<&FR::output_dtypes, codec::Texts<kMaxOpOperands>>{"output_dtypes"},
    Field<&FR::created_ns, codec::Time>{"created_ns"},
    Field<&FR::duration_ms, codec::Millis, rule::When<&KnownFlightDuration>>{"duration_ms"},
    Field<&FR::timeout_ms, codec::Id>{"timeout_ms"}, Field<&FR::is_p2p, codec::Flag>{"is_p2p"});

using C = Collective;
using CS = CollectiveShape;
inline constexpr auto kCollectiveDesc = Describe<Collective>(
    "collective", Field<&C::redistribute_id, codec::Int<-1, kI64Max>>{"redistribute_id"},
    Field<Via<&C::shape, &CS::step>{}, codec::StepIndex>{"step"},
    Field<Via<&C::shape, &CS::kind>{}, codec::NonEmptyText, rule::FromStep<&PS::comm>>{"kind"},
    Field<Via<&C::shape, &CS::mesh_dims>{}, codec::MeshDims, rule::FromStep<&PS::mesh_dims>>{"mesh_dims"},
    Field<Via<&C::shape, &CS::group>{}, codec::Ranks, rule::FromMeshGroup>{"group"},
    Field<Via<&C::shape, &CS::dtype>{}, codec::Text, rule::FromBeginDtype>{"dtype"},
    Field<Via<&C::shape, &CS::bytes_sent>{}, codec::PeerBytes>{"bytes_sent"},
    Field<Via<&C::shape, &CS::bytes_recv>{}, codec::PeerBytes>{"bytes_recv"},
    Field<Via<&C::shape, &CS::negotiated>{}, codec::Flag, rule::Defaulted>{"negotiated"},
    Field<&C::start_ns, codec::Time>{"start_ns"}, Field<&C::end_ns, codec::Time>{"end_ns"},
    Field<&C::op_id, codec::Id, rule::WhenSet>{"op_id"},
    Field<Whole{}, codec::Flight, rule::When<&HasFlightRecord>>{"flight"});

inline constexpr auto kOpInputDesc = Describe<OpInput>(
    "op inputs", Field<&OpInput::tensor, codec::Text>{"tensor"},
    Field<&OpInput::placements, codec::Placements>{"placements"},
    Field<&OpInput::required, codec::Placements>{"required"},
    Field<&OpInput::redistribute_id, codec::Int<-1, kI64Max>, rule::Relinked>{"redistribute_id"});

inline constexpr auto kOpOutputDesc =
    Describe<OpOutput>("op outputs", Field<&OpOutput::tensor, codec::Text>{"tensor"},
                       Field<&OpOutput::requested, codec::Flag>{"requested"},
                       Field<&OpOutput::placements, codec::Placements>{"placements"},
                       Field<&OpOutput::global_shape, codec::Shape>{"global_shape"},
                       Field<&OpOutput::local_shape, codec::Shape>{"local_shape"});

inline constexpr auto kOpStrategyDesc =
    Describe<OpStrategy>("strategies", Field<&OpStrategy::inputs, codec::PlacementLists>{"inputs"},
                         Field<&OpStrategy::outputs, codec::PlacementLists>{"outputs"},
                         Field<&OpStrategy::cost_us, codec::StrategyCost>{"cost_us"});

using OS = OpShape;
inline constexpr auto kOpDesc = Describe<Op>(
    "op", Field<&Op::id, codec::Id>{"id"}, Field<&Op::step, codec::Id, rule::SameAsV3<&Op::id>>{"step"},
    Field<Via<&Op::shape, &OS::name>{}, codec::NonEmptyText, L<rule::Required>>{"name"},
    Field<Via<&Op::shape, &OS::args>{}, codec::Text, L<rule::Required>>{"args"},
    Field<Via<&Op::shape, &OS::inputs>{}, codec::Objects<kMaxOpOperands>, L<rule::Required>>{"inputs"},
    Field<Via<&Op::shape, &OS::outputs>{}, codec::Objects<kMaxOpOperands>, L<rule::Required>>{"outputs"},
    Field<Via<&Op::shape, &OS::candidates>{}, codec::Objects<kMaxOpCandidates>, L<rule::Required>>{
        "candidates"},
    Field<Via<&Op::shape, &OS::chosen>{}, codec::Int<-1, kMaxOpCandidates - 1>, L<rule::Required>>{"chosen"},
    Field<Via<&Op::shape, &OS::rule>{}, codec::Text, L<rule::Required>>{"rule"},
    Field<Via<&Op::shape, &OS::note>{}, codec::Text, L<rule::Required>>{"note"},
    Field<&Op::t_ns, codec::Time>{"t_ns"},
    Field<&Op::end_ns, codec::Time, rule::SameAsV3<&Op::t_ns>>{"end_ns"},
    Field<Via<&Op::shape, &OS::ok>{}, codec::Flag, rule::Defaulted>{"ok"},
    Field<Via<&Op::shape, &OS::error>{}, codec::Text, rule::WhenSet>{"error"}, LineField<codec::Id>{"like"},
    LineField<codec::Ints<kMaxOpOperands, -1, kI64Max>>{"redistribute_ids"},
    LineField<codec::Int<0, kMaxRuleNumber>>{"rule_number"}, LineField<codec::Flag>{"linked"});

}  // namespace tables

template <>
struct DescFor<PlanStep> {
  static constexpr const auto& kDesc = tables::kPlanStepDesc;
};
template <>
struct DescFor<SkippedMerge> {
  static constexpr const auto& kDesc = tables::kSkippedMergeDesc;
};
template <>
struct DescFor<ImportedCollective> {
  static constexpr const auto& kDesc = tables::kImportedCollectiveDesc;
};
template <>
struct DescFor<ImportedPlan> {
  static constexpr const auto& kDesc = tables::kImportedPlanDesc;
};
template <>
struct DescFor<RedistributeBegin> {
  static constexpr const auto& kDesc = tables::kRedistributeBeginDesc;
};
template <>
struct DescFor<RedistributeEnd> {
  static constexpr const auto& kDesc = tables::kRedistributeEndDesc;
};
template <>
struct DescFor<StepBegin> {
  static constexpr const auto& kDesc = tables::kStepBeginDesc;
};
template <>
struct DescFor<StepEnd> {
  static constexpr const auto& kDesc = tables::kStepEndDesc;
};
template <>
struct DescFor<FlightFields> {
  static constexpr const auto& kDesc = tables::kFlightRecordDesc;
};
template <>
struct DescFor<Collective> {
  static constexpr const auto& kDesc = tables::kCollectiveDesc;
};
template <>
struct DescFor<OpInput> {
  static constexpr const auto& kDesc = tables::kOpInputDesc;
};
template <>
struct DescFor<OpOutput> {
  static constexpr const auto& kDesc = tables::kOpOutputDesc;
};
template <>
struct DescFor<OpStrategy> {
  static constexpr const auto& kDesc = tables::kOpStrategyDesc;
};
template <>
struct DescFor<Op> {
  static constexpr const auto& kDesc = tables::kOpDesc;
};

template <typename T>
inline constexpr const auto& kDescOf = DescFor<T>::kDesc;

// The table's promises, checked here so a reordered or mistyped line fails the build.
static_assert(LikeMask(tables::kRedistributeBeginDesc) ==
                  ((uint64_t{1} << LikeEnd(tables::kRedistributeBeginDesc)) -
                   (uint64_t{1} << LikeFirst(tables::kRedistributeBeginDesc))),
              "the fields a redistribute_begin's `like` copies are one run of the table");
static_assert(LikeMask(tables::kOpDesc) ==
                  ((uint64_t{1} << LikeEnd(tables::kOpDesc)) - (uint64_t{1} << LikeFirst(tables::kOpDesc))),
              "the fields an op's `like` copies are one run of the table");
static_assert(IndexOf(tables::kCollectiveDesc, "mesh_dims") < IndexOf(tables::kCollectiveDesc, "group") &&
                  IndexOf(tables::kCollectiveDesc, "group") < IndexOf(tables::kCollectiveDesc, "bytes_sent"),
              "a v2 reader rebuilds group from mesh_dims, and uniform byte counts from group");

// A member added to one of these structs needs its line in the table above (or the build stays
// here until someone has looked): the sizes below change with any member.
static_assert(sizeof(Collective) == 88 && sizeof(CollectiveShape) == 56,
              "Collective changed: update its table in event_fields.hpp");
static_assert(sizeof(RedistributeBegin) == 48 && sizeof(RedistributeShape) == 88,
              "RedistributeBegin changed: update event_fields.hpp");
static_assert(sizeof(RedistributeEnd) == 32, "RedistributeEnd changed: update event_fields.hpp");
static_assert(sizeof(StepBegin) == 64, "StepBegin changed: update event_fields.hpp");
static_assert(sizeof(StepEnd) == 40, "StepEnd changed: update event_fields.hpp");
static_assert(sizeof(Op) == 40 && sizeof(OpShape) == 56 && sizeof(OpInput) == 32 && sizeof(OpOutput) == 32 &&
                  sizeof(OpStrategy) == 56,
              "Op changed: update event_fields.hpp");

}  // namespace shardscope::trace::detail
