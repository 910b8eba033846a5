#pragma once
// The trace data model: one header and a stream of events per rank, as plain structs. These are
// exactly what a rank-<R>.jsonl line holds (docs/trace-format.md). The trace library knows nothing
// of engine types: placements travel as strings ("S(0)", "_S(0, 2)", "R", "P(sum)") and shapes
// as int64 arrays.

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "shardscope/trace/istr.hpp"
#include "shardscope/trace/shared_value.hpp"
#include "shardscope/trace/shared_vec.hpp"

namespace shardscope::trace {

/// Format name written in every header; a file with another name is not a shardscope trace.
inline constexpr std::string_view kFormatName = "shardscope-trace";
/// Newest version this library reads and writes; readers accept [kMinVersion, kCurrentVersion].
inline constexpr int kCurrentVersion = 3;
/// Version a writer writes unless its header asks for another (Writer): every trace but an
/// imported DebugMode log's.
inline constexpr int kDefaultVersion = 2;
/// Version 2 plus the compact forms of imported DebugMode logs (docs/trace-format.md, "Version
/// 3"): a writer uses them only under a header of this version, so no version-2 reader takes a
/// file that has them.
inline constexpr int kCompactImportVersion = 3;
/// Oldest version this library still reads.
inline constexpr int kMinVersion = 1;

/// Sanity limits the reader enforces before allocating anything sized by file content.
inline constexpr int64_t kMaxRanks = int64_t{1} << 20;         ///< world size and group size
inline constexpr int64_t kMaxMeshDims = 16;                    ///< mesh rank
inline constexpr int64_t kMaxTensorDims = 64;                  ///< tensor rank
inline constexpr int64_t kMaxExtent = int64_t{1} << 48;        ///< one shape extent or offset
inline constexpr int64_t kMaxPlanSteps = int64_t{1} << 16;     ///< transforms in one plan
inline constexpr int64_t kMaxLineBytes = int64_t{64} << 20;    ///< one JSON line
inline constexpr int kMaxJsonDepth = 16;                       ///< nesting of one JSON line
inline constexpr int64_t kMaxOpOperands = int64_t{1} << 12;    ///< inputs or outputs of one op
inline constexpr int64_t kMaxOpCandidates = int64_t{1} << 16;  ///< candidate strategies of one op

/// The clock that produced every *_ns timestamp of one file.
struct Clock {
  std::string name = "steady";  ///< "steady" = std::chrono::steady_clock of the writing process
  int64_t offset_ns = 0;        ///< add to this file's timestamps to get the run's reference clock
  bool operator==(const Clock&) const = default;
};

/// First line of every rank file: who wrote it and on which mesh.
struct Header {
  std::string format{kFormatName};          ///< always kFormatName
  int version = kDefaultVersion;            ///< format version of the file
  int64_t rank = 0;                         ///< global rank of the writer, in [0, world)
  int64_t world = 1;                        ///< number of ranks of the run, in [1, kMaxRanks]
  std::vector<int64_t> mesh_shape;          ///< device mesh extents, row-major rank <-> coordinate
  std::vector<std::string> mesh_dim_names;  ///< one per mesh dim ("" when unnamed)
  std::string backend;                      ///< "local", "mpi", "nccl", ...
  std::string host;                         ///< host name of the writing process
  int64_t pid = 0;                          ///< process id of the writing process
  Clock clock;                              ///< timestamp source of this file
  bool operator==(const Header&) const = default;
};

/// An optional payload that almost every event lacks (an imported plan), held on the heap so that
/// events without it cost one pointer instead of the payload's bytes, and shared by copies (the
/// same imported plan on every rank of a run: the readers make equal payloads one buffer).
/// Used like std::optional with value semantics: == compares payloads, and a write through a
/// non-const *, -> or emplace() copies the payload first when it is shared (Shared::Mutable), so
/// read through a const reference.
template <typename T>
class Rare {
 public:
  Rare() = default;
  Rare(std::nullopt_t) {}                             // NOLINT(google-explicit-constructor)
  Rare(T value) : s_(Shared<T>(std::move(value))) {}  // NOLINT(google-explicit-constructor)
  explicit operator bool() const { return s_.HasBuffer(); }
  bool has_value() const { return s_.HasBuffer(); }
  T& operator*() { return s_.Mutable(); }
  const T& operator*() const { return s_.get(); }
  T* operator->() { return &s_.Mutable(); }
  const T* operator->() const { return &s_.get(); }
  T& emplace() {
    s_ = Shared<T>(T{});
    return s_.Mutable();
  }
  void reset() { s_ = Shared<T>(); }
  /// The shared payload (no buffer when absent): for the readers' pools.
  Shared<T>& shared() { return s_; }
  const Shared<T>& shared() const { return s_; }
  friend bool operator==(const Rare& a, const Rare& b) {
    return !a || !b ? !a == !b : a.s_.SharesWith(b.s_) || *a.s_ == *b.s_;
  }

 private:
  Shared<T> s_;
};

/// An optional double in 8 bytes, used like std::optional<double>: NaN stands for "none", so a NaN
/// value reads back as none (Flight Recorder durations, which are finite or unknown).
class OptionalDouble {
 public:
  OptionalDouble() = default;
  OptionalDouble(std::nullopt_t) {}                   // NOLINT(google-explicit-constructor)
  OptionalDouble(double value) : v_(value) {}         // NOLINT(google-explicit-constructor)
  OptionalDouble(const std::optional<double>& value)  // NOLINT(google-explicit-constructor)
      : v_(value.value_or(kNone)) {}
  operator std::optional<double>() const {  // NOLINT(google-explicit-constructor)
    return has_value() ? std::optional<double>(v_) : std::nullopt;
  }
  bool has_value() const { return !std::isnan(v_); }
  explicit operator bool() const { return has_value(); }
  const double& operator*() const { return v_; }
  double value_or(double other) const { return has_value() ? v_ : other; }
  void reset() { v_ = kNone; }
  friend bool operator==(const OptionalDouble& a, const OptionalDouble& b) {
    return a.has_value() == b.has_value() && (!a.has_value() || a.v_ == b.v_);
  }

 private:
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  double v_ = kNone;
};

/// One transform of a plan (PyTorch's _TransformInfo plus comm kind and predicted cost).
struct PlanStep {
  std::vector<int64_t> mesh_dims;      ///< mesh dims it acts on; several when flattened
  IStr src;                            ///< placement before, e.g. "S(0)"
  IStr dst;                            ///< placement after, e.g. "R"
  IStr comm;                           ///< collective kind ("all_gather", ...) or "local"
  std::vector<int64_t> logical_shape;  ///< tensor shape seen by this transform
  bool flattened = false;              ///< true when the optimizer merged mesh dims into one group
  double avg_scale = 1.0;              ///< divisor applied for P(avg) on a merged group, else 1
  double cost_us = 0.0;                ///< predicted cost in microseconds
  bool operator==(const PlanStep&) const = default;
};

/// A merge the flattening optimizer considered and did not make, with why.
struct SkippedMerge {
  std::vector<int64_t> mesh_dims;  ///< mesh dims that would have been merged
  std::string comm;                ///< collective kind of the would-be merge
  std::string reason;              ///< why not, e.g. "no flattened sub-mesh registered for dims [0, 1]"
  std::string hint;                ///< what would allow it ("" when nothing would)
  bool operator==(const SkippedMerge&) const = default;
};

/// One collective another tool recorded for an imported redistribute (PyTorch DebugMode's
/// functional collective lines).
struct ImportedCollective {
  IStr kind;                ///< "all_gather", "reduce_scatter", "all_reduce", "all_to_all"
  int64_t group_size = -1;  ///< as recorded; -1 when the record does not say (all_reduce, all_to_all)
  IStr group_name;          ///< the process group's name as recorded ("0", "3", ...), not a mesh dim
  bool operator==(const ImportedCollective&) const = default;
};

/// The plan another tool recorded for a redistribute that shardscope re-planned and replayed
/// (`shardscope import debugmode`), kept beside shardscope's own plan.
struct ImportedPlan {
  IStr source;       ///< "debugmode"
  int64_t line = 0;  ///< 1-based line of the record in the imported file (save_logs: call number)
  IStr notation;     ///< the tool's plan notation (PyTorch's "trace:" text), "" when not recorded
  SharedVec<ImportedCollective> collectives;  ///< in recorded order
  /// "same", "differs", "corrupting_merge" or "not_replayable" (docs/trace-format.md).
  IStr verdict;
  IStr reason;  ///< why, one line ("" for same)
  bool operator==(const ImportedPlan&) const = default;
};

/// What a redistribute shares with the redistributes like it (the same tensor, layouts and plan):
/// one immutable value that equal redistributes share (RedistributeBegin::shape; the readers make
/// equal shapes one buffer: a training loop's iterations, the ranks of a run), so that a
/// redistribute_begin costs its ids and time (docs/performance.md, "Resident model").
struct RedistributeShape {
  IStr tensor;  ///< tensor name ("" when anonymous)
  IStr dtype;   ///< "f32", "f64", "f16", "bf16", "i32", "i64"
  SharedVec<int64_t> global_shape;
  SharedVec<std::string> src_placements;  ///< one per mesh dim
  SharedVec<std::string> dst_placements;  ///< one per mesh dim
  IStr src_order;                         ///< shard order notation, "" for the default order
  IStr dst_order;
  IStr planner;                        ///< "greedy" or "graph"
  IStr planner_reason;                 ///< why this planner was chosen
  IStr notation;                       ///< optimized plan as text
  IStr notation_unoptimized;           ///< raw plan as text
  SharedVec<PlanStep> raw_plan;        ///< planner output
  SharedVec<PlanStep> optimized_plan;  ///< after the flattening optimizer; this is executed
  SharedVec<SkippedMerge> skipped_merges;
  double cost_us = 0.0;  ///< predicted cost of optimized_plan
  bool operator==(const RedistributeShape&) const = default;
};

/// A redistribute started on this rank; `id` is this rank's sequence number (0, 1, ...), and
/// the same logical redistribute has the same id on every rank of the run. What it shares with
/// redistributes like it is its shape, read through the accessors below and written through
/// Mutable().
struct RedistributeBegin {
  int64_t id = 0;
  Shared<RedistributeShape> shape;  ///< tensor, layouts, plans: shared, written through Mutable()
  int64_t t_ns = 0;                 ///< NowNs() at begin
  /// The op whose input this implicit redistribute placed (Op::id), -1 for an explicit
  /// redistribute step. Written only when >= 0.
  int64_t op_id = -1;
  int64_t op_input = -1;  ///< which input of that op (index into Op::inputs), -1 when op_id is -1
  /// The plan an imported record says ran, when this redistribute was imported. Written only
  /// when present, as one nested object "imported".
  Rare<ImportedPlan> imported;

  const IStr& tensor() const { return shape->tensor; }
  const IStr& dtype() const { return shape->dtype; }
  const SharedVec<int64_t>& global_shape() const { return shape->global_shape; }
  const SharedVec<std::string>& src_placements() const { return shape->src_placements; }
  const SharedVec<std::string>& dst_placements() const { return shape->dst_placements; }
  const IStr& src_order() const { return shape->src_order; }
  const IStr& dst_order() const { return shape->dst_order; }
  const IStr& planner() const { return shape->planner; }
  const IStr& planner_reason() const { return shape->planner_reason; }
  const IStr& notation() const { return shape->notation; }
  const IStr& notation_unoptimized() const { return shape->notation_unoptimized; }
  const SharedVec<PlanStep>& raw_plan() const { return shape->raw_plan; }
  const SharedVec<PlanStep>& optimized_plan() const { return shape->optimized_plan; }
  const SharedVec<SkippedMerge>& skipped_merges() const { return shape->skipped_merges; }
  double cost_us() const { return shape->cost_us; }
  /// The shape for writing: copied first when other redistributes share it.
  RedistributeShape& Mutable() { return shape.Mutable(); }
  bool operator==(const RedistributeBegin&) const = default;
};

/// A redistribute finished on this rank (successfully or not). The writer flushes after it.
struct RedistributeEnd {
  int64_t id = 0;
  int64_t t_ns = 0;
  bool ok = true;
  IStr error;  ///< error message when !ok, else ""
  /// The checksums of the local shard, when the run computed them (most runs do not: one pointer).
  struct Checksums {
    std::optional<uint64_t> before;  ///< checksum of the local shard before, if computed
    std::optional<uint64_t> after;   ///< checksum of the local shard after, if computed
    bool operator==(const Checksums&) const = default;
  };
  Rare<Checksums> checksums;
  const std::optional<uint64_t>& checksum_before() const {
    if (!checksums) return kNone;
    return checksums->before;
  }
  const std::optional<uint64_t>& checksum_after() const {
    if (!checksums) return kNone;
    return checksums->after;
  }
  void set_checksum_before(std::optional<uint64_t> v) { Sums().before = v; }
  void set_checksum_after(std::optional<uint64_t> v) { Sums().after = v; }
  bool operator==(const RedistributeEnd&) const = default;

 private:
  static constexpr std::optional<uint64_t> kNone{};
  Checksums& Sums() {
    if (!checksums) checksums.emplace();
    return *checksums;
  }
};

/// One transform of the executed plan started on this rank.
struct StepBegin {
  int64_t redistribute_id = 0;
  int32_t step = 0;  ///< index into optimized_plan (< kMaxPlanSteps: 4 bytes, beside src)
  IStr src;
  IStr dst;
  IStr comm;
  SharedVec<int64_t> mesh_dims;
  SharedVec<int64_t> logical_shape;
  SharedVec<int64_t> local_shape_before;    ///< this rank's shard shape before the step
  SharedVec<int64_t> global_offset_before;  ///< global index of its first element per dim
  int64_t t_ns = 0;
  bool operator==(const StepBegin&) const = default;
};

/// One transform of the executed plan finished on this rank.
struct StepEnd {
  int64_t redistribute_id = 0;
  int64_t step = 0;
  SharedVec<int64_t> local_shape_after;
  SharedVec<int64_t> global_offset_after;
  int64_t t_ns = 0;
  bool operator==(const StepEnd&) const = default;
};

/// The part of a PyTorch NCCL Flight Recorder entry that the other entries of its process group
/// and call site repeat (docs/trace-format.md, "flight"): one immutable value that equal entries
/// share (CollectiveShape::flight; the readers make equal shapes one buffer). Sizes are per tensor,
/// dtypes are PyTorch's names ("Float", "BFloat16").
struct FlightShape {
  IStr pg_name;         ///< process group name, e.g. "0" (a key of the dump's pg_config)
  IStr pg_desc;         ///< process group description, e.g. "default_pg"
  IStr profiling_name;  ///< e.g. "nccl:all_reduce", "nccl:send 1->2"
  IStr state;           ///< "scheduled", "started" or "completed" (with the call: entries share it)
  /// One shape per input / output tensor.
  SharedVec<std::vector<int64_t>> input_sizes;
  SharedVec<std::vector<int64_t>> output_sizes;
  SharedVec<std::string> input_dtypes;
  SharedVec<std::string> output_dtypes;
  int64_t timeout_ms = 0;  ///< timeout_ms of the collective
  bool is_p2p = false;     ///< a send or recv (matched by p2p_seq_id, not seq_id)
  bool operator==(const FlightShape&) const = default;
};

/// What a PyTorch NCCL Flight Recorder entry says about a collective beyond the common fields and
/// its shape (docs/trace-format.md, "flight"): its own ids and times. Held in every Collective and
/// meaningful only where the collective has a flight shape (Collective::HasFlight): on collectives
/// imported from Flight Recorder dumps (`shardscope import fr`) or profiler traces; shardscope's own
/// runs never set it.
struct FlightRecord {
  int64_t seq_id = 0;          ///< collective_seq_id: matches one collective across the group's ranks
  int64_t p2p_seq_id = 0;      ///< p2p_seq_id of a send/recv
  int64_t record_id = 0;       ///< this rank's ring-buffer record id (one counter over all groups)
  int64_t op_id = 0;           ///< op_id of the entry (coalesced ops share one)
  int64_t created_ns = 0;      ///< time_created_ns (the dumping rank's wall clock)
  OptionalDouble duration_ms;  ///< duration_ms, present only when timing was enabled
  bool operator==(const FlightRecord&) const = default;
};

/// What a collective shares with the collectives like it (the same step of the same plan, the same
/// process group and call): one immutable value that equal collectives share (Collective::shape; the
/// readers make equal shapes one buffer), so that a collective costs its ids and times, not its
/// group's lists (docs/performance.md, "Resident model").
struct CollectiveShape {
  int32_t step = 0;               ///< index into optimized_plan (< kMaxPlanSteps)
  IStr kind;                      ///< "all_gather", "reduce_scatter", "all_reduce", "all_to_all",
                                  ///< "broadcast", "barrier", "shape_exchange", ... (open set)
  IStr dtype;                     ///< "f32", ... (an imported entry: its first input's)
  bool negotiated = false;        ///< true for a shape-negotiation collective
  SharedVec<int64_t> mesh_dims;   ///< mesh dims of the group; several when flattened
  SharedVec<int64_t> group;       ///< global ranks of the group, in group order
  SharedVec<int64_t> bytes_sent;  ///< aligned with group
  SharedVec<int64_t> bytes_recv;  ///< aligned with group
  /// The Flight Recorder shape of an imported collective; no buffer (HasBuffer() false) otherwise.
  Shared<FlightShape> flight;
  friend bool operator==(const CollectiveShape& a, const CollectiveShape& b) {
    return a.step == b.step && a.kind == b.kind && a.dtype == b.dtype && a.negotiated == b.negotiated &&
           a.mesh_dims == b.mesh_dims && a.group == b.group && a.bytes_sent == b.bytes_sent &&
           a.bytes_recv == b.bytes_recv && a.flight.HasBuffer() == b.flight.HasBuffer() &&
           a.flight == b.flight;
  }
};

/// One collective this rank took part in. bytes_sent()[i] / bytes_recv()[i] are to / from group()[i]
/// (the entry for this rank itself counts a local copy, usually 0). What it shares with collectives
/// like it is its shape, read through the accessors below and written through Mutable().
struct Collective {
  /// The redistribute it belongs to; -1 for a collective an op ran itself (a halo exchange),
  /// which then has op_id >= 0, and for an imported Flight Recorder entry (HasFlight()).
  int64_t redistribute_id = 0;
  Shared<CollectiveShape> shape;  ///< step, kind, dtype, group, bytes: shared, written through Mutable()
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t op_id = -1;   ///< the op that ran it (redistribute_id is then -1); written only when >= 0
  FlightRecord flight;  ///< Flight Recorder ids and times; meaningful only when HasFlight()

  int32_t step() const { return shape->step; }
  const IStr& kind() const { return shape->kind; }
  const IStr& dtype() const { return shape->dtype; }
  bool negotiated() const { return shape->negotiated; }
  const SharedVec<int64_t>& mesh_dims() const { return shape->mesh_dims; }
  const SharedVec<int64_t>& group() const { return shape->group; }
  const SharedVec<int64_t>& bytes_sent() const { return shape->bytes_sent; }
  const SharedVec<int64_t>& bytes_recv() const { return shape->bytes_recv; }
  /// Whether this collective was imported from a Flight Recorder entry or profiler trace (it has a
  /// flight shape; `flight` holds its own fields).
  bool HasFlight() const { return shape->flight.HasBuffer(); }
  /// The Flight Recorder shape (all defaults when !HasFlight()).
  const FlightShape& flight_shape() const { return *shape->flight; }
  /// The shape for writing: copied first when other collectives share it.
  CollectiveShape& Mutable() { return shape.Mutable(); }
  bool operator==(const Collective&) const = default;
};

/// One input of an op as the op saw it on this rank.
struct OpInput {
  IStr tensor;                        ///< tensor name
  SharedVec<std::string> placements;  ///< placements it had when the op was called
  SharedVec<std::string> required;    ///< placements the chosen strategy needs
  int64_t redistribute_id = -1;       ///< the implicit redistribute it caused, -1 if none
  bool operator==(const OpInput&) const = default;
};

/// One output of an op. An output the caller did not request (layer_norm_backward's
/// output_mask) has requested == false, an empty tensor name and no placements or shapes.
struct OpOutput {
  IStr tensor;
  bool requested = true;
  SharedVec<std::string> placements;
  SharedVec<int64_t> global_shape;
  SharedVec<int64_t> local_shape;  ///< this rank's shard
  bool operator==(const OpOutput&) const = default;
};

/// One candidate sharding strategy of an op: the placements it needs for every input and gives
/// every output (empty for an output not requested), and its cost: the sum of the inputs'
/// redistribute costs (PyTorch redistribute_cost, microseconds; +inf is written as -1).
struct OpStrategy {
  std::vector<std::vector<std::string>> inputs;
  std::vector<std::vector<std::string>> outputs;
  double cost_us = 0.0;
  bool operator==(const OpStrategy&) const = default;
};

/// What an op shares with the calls like it: its name, arguments, operands, candidate strategies,
/// choice and outcome. One immutable value that equal ops share (Op::shape; the readers make equal
/// shapes one buffer: the same op on every rank, a profiler trace's calls of one kernel name), so
/// that an op costs its ids and times (docs/performance.md, "Resident model").
struct OpShape {
  IStr name;  ///< "mm", "layer_norm_backward", ...
  IStr args;  ///< non-tensor arguments as text, e.g. "dim=-1" ("" when none)
  /// The lists are shared between ops that repeat them (the reader makes equal candidate lists of
  /// ops of one kind one buffer; shared_vec.hpp).
  SharedVec<OpInput> inputs;
  SharedVec<OpOutput> outputs;
  SharedVec<OpStrategy> candidates;  ///< in enumeration order
  IStr rule;                         ///< how the strategy was chosen, e.g. "least redistribute cost"
  IStr note;                         ///< where shardscope differs from PyTorch here, "" when it does not
  int64_t chosen = 0;                ///< index into candidates
  bool ok = true;
  IStr error;  ///< error message when !ok
  bool operator==(const OpShape&) const = default;
};

/// An op on sharded tensors ran on this rank (written once it finished). `id` is the op's
/// sequence number, the same on every rank; its implicit redistributes and halo exchanges point
/// back to it through op_id. What it shares with calls like it is its shape, read through the
/// accessors below and written through Mutable().
struct Op {
  int64_t id = 0;
  int64_t step = 0;       ///< index of the program step that called it
  Shared<OpShape> shape;  ///< name, operands, strategies, outcome: shared, written through Mutable()
  int64_t t_ns = 0;       ///< NowNs() when the op was called
  int64_t end_ns = 0;     ///< NowNs() when its outputs were ready

  const IStr& name() const { return shape->name; }
  const IStr& args() const { return shape->args; }
  const SharedVec<OpInput>& inputs() const { return shape->inputs; }
  const SharedVec<OpOutput>& outputs() const { return shape->outputs; }
  const SharedVec<OpStrategy>& candidates() const { return shape->candidates; }
  int64_t chosen() const { return shape->chosen; }
  const IStr& rule() const { return shape->rule; }
  const IStr& note() const { return shape->note; }
  bool ok() const { return shape->ok; }
  const IStr& error() const { return shape->error; }
  /// The shape for writing: copied first when other ops share it.
  OpShape& Mutable() { return shape.Mutable(); }
  bool operator==(const Op&) const = default;
};

/// Any event line after the header. New types may appear in later versions (e.g. "kernel");
/// readers count and skip types they do not know.
using Event = std::variant<RedistributeBegin, RedistributeEnd, StepBegin, StepEnd, Collective, Op>;

/// The "type" field value of an event line, e.g. "redistribute_begin".
std::string_view EventTypeName(const Event& event);

}  // namespace shardscope::trace
