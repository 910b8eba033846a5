#pragma once
// Private: what trace format version 2 adds to version 1 (docs/trace-format.md, "Version 2"). A v2
// line may leave out fields the reader rebuilds from earlier lines of the same rank file or from a
// default, and may write a per-peer byte list as one number. event_fields.hpp says which field may
// be left out and what it is rebuilt from; both decoders (codec.cpp's reference path and
// fast_decode.cpp) parse the fields a line has, note which it left out, and call Complete here,
// which applies those rules. The v2 writer (encode_v2.cpp) leaves a field out only when these
// rules rebuild it exactly.

#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "event_fields.hpp"
#include "id_index.hpp"
#include "shardscope/trace/event_list.hpp"
#include "shardscope/trace/events.hpp"

namespace shardscope::trace::detail {

/// What the lines of one rank file may refer to: the header's version and rank, and the first
/// redistribute_begin of each id read so far (as decoded, so a `like` chain resolves).
class FileContext {
 public:
  FileContext() = default;
  FileContext(int version, int64_t rank, std::vector<int64_t> mesh_shape)
      : version_(version), rank_(rank), mesh_shape_(std::move(mesh_shape)) {}

  bool v2() const { return version_ >= 2; }
  /// Version 3: v2 and the compact forms of imported DebugMode logs (docs/trace-format.md).
  bool v3() const { return version_ >= 3; }
  int64_t rank() const { return rank_; }
  /// The first redistribute_begin with this id read so far, or nullptr (see OpWithId).
  const RedistributeBegin* Begin(int64_t id) const;
  /// The first op with this id read so far, or nullptr (an op line's `like`). The begin and the
  /// op are looked up in the file's event list (SetEvents): the pointer holds until the next
  /// event of its type is stored.
  const Op* OpWithId(int64_t id) const;
  /// The list the file's events go into (Remember's indexes), for OpWithId; must outlive this.
  void SetEvents(const EventList* events) { events_ = events; }
  /// Call with every event the reader accepted, in file order, and its index in the file's event
  /// list, just before it is stored there (v1 files keep nothing).
  void Remember(const Event& event, size_t index);
  /// The first and last index of redistribute `id`'s events when they were read as one run of
  /// lines (its begin, steps and collectives, its end, nothing between), else nullptr: what a
  /// redistribute_repeat line may copy.
  const std::pair<size_t, size_t>* Run(int64_t id) const;
  /// The index of the `back`-th last collective with a flight record read so far (1: the last),
  /// or nullptr when fewer were read or back is outside [1, kMaxFlightBack].
  const size_t* Flight(int64_t back) const;
  int64_t FlightsSeen() const { return static_cast<int64_t>(flights_seen_); }
  /// An op line's v2 `linked`: for each of op `op_id`'s `inputs` inputs, the id of the last
  /// redistribute_begin read so far whose op_id is op_id and op_input that input's index, else -1.
  std::vector<int64_t> LinkedIds(int64_t op_id, size_t inputs) const;
  /// MeshGroup of this file's rank over `mesh_dims` (cached); empty when it has none.
  const SharedVec<int64_t>& Group(const std::vector<int64_t>& mesh_dims) const;

 private:
  int version_ = 1;
  int64_t rank_ = 0;
  std::vector<int64_t> mesh_shape_;
  // Indexes into the columns of *events_ (EventList::Of), not copies: a copy of every begin cost
  // a third of the reading time of an imported trace, to make and to free.
  IdIndex begins_;  // redistribute id -> its begin's index in Of<RedistributeBegin>()
  IdIndex ops_;     // op id -> its index in Of<Op>()
  // op id -> (op_input, redistribute id) of the begins linked to it, until the op is read
  std::unordered_map<int64_t, std::vector<std::pair<int64_t, int64_t>>> links_;
  const EventList* events_ = nullptr;
  IdIndex runs_from_, runs_to_;            // redistribute id -> the first and last index of its run
  mutable std::pair<size_t, size_t> run_;  // what Run returned last
  std::vector<size_t> flights_;            // the last kMaxFlightBack flight collectives' indexes (a ring)
  size_t flights_seen_ = 0;
  // The redistribute whose run of lines is being read: its id, first index, next index expected.
  int64_t run_id_ = -1;
  size_t run_first_ = 0, run_next_ = 0;
  mutable std::map<std::vector<int64_t>, SharedVec<int64_t>> groups_;
};

/// The ranks of a row-major mesh of `mesh_shape` that share `rank`'s coordinate on every mesh dim
/// not in `mesh_dims`, ascending: the group of a collective over those dims (the engine's
/// Mesh::Group). Empty when the mesh is empty, `rank` is outside it or a dim is not in it.
std::vector<int64_t> MeshGroup(const std::vector<int64_t>& mesh_shape, int64_t rank,
                               const std::vector<int64_t>& mesh_dims);

/// Rebuilds what a v2 line of event kind E left out, field by field as its table in
/// event_fields.hpp says: `present` has bit i set when the line had field i of kDescOf<E>,
/// `abbreviated` when that field (a per-peer byte list) was one uniform count, which expands to
/// the count for every member of the group but this rank and 0 for this rank; `like` is the id a
/// v2 `like` field named (-1 without), whose event gives every field of the `like` run the line
/// left out. Returns "" when the event is complete, else the message (without "file:line: ")
/// saying what is missing or wrong. Defined for every event kind.
template <typename E>
std::string Complete(E& e, uint64_t present, uint64_t abbreviated, int64_t like, const FileContext& ctx);

/// A redistribute_repeat line: redistribute `id` is redistribute `like` again (every event of it,
/// in order), with new ids and times: the begin at `t_ns`, each later time field (step_begin and
/// step_end t_ns, collective start_ns and end_ns, redistribute_end t_ns, in line order) at
/// t_ns + dt[i]. The begin takes `op_id`/`op_input` from this line (-1 when absent) and its tensor
/// from `tensor` when present. `imported` (when the line has it) gives the begin's imported plan in
/// part: each field of it whose bit is set in `imported_present` (kDescOf<ImportedPlan>'s order)
/// replaces the copied plan's; the others stay as copied (all must be given when `like` has none).
struct RepeatLine {
  int64_t id = 0, like = 0, t_ns = 0;
  std::vector<int64_t> dt;
  bool has_dt = false;  ///< without `dt`: the times of `like`'s run, moved by t_ns - its begin's
  std::optional<std::string> tensor;
  int64_t op_id = -1, op_input = -1;
  Rare<ImportedPlan> imported;
  uint64_t imported_present = 0;
};
/// Most `dt` entries a line may hold (checked before they are read): 4 times per plan step.
inline constexpr int64_t kMaxRepeatTimes = int64_t{1} << 18;

/// The events `r` stands for, appended to `out`; `events` is what the file's lines gave so far
/// (FileContext's indexes point into it). Returns "" or what is wrong (without "file:line: ").
std::string ExpandRepeat(const RepeatLine& r, const FileContext& ctx, const EventList& events,
                         std::vector<Event>& out);

/// A collective_repeat line: the collective with a flight record `back` such collectives before
/// it in this file, again, with its times and ids moved by the differences given: start_ns,
/// end_ns and flight.created_ns by dt[0..2], flight.seq_id, p2p_seq_id, record_id and op_id by
/// did[0..3]; `state` and `duration_ms` replace the earlier one's when present.
struct CollectiveRepeatLine {
  int64_t back = 0;
  std::vector<int64_t> dt, did;
  std::optional<std::string> state;
  std::optional<double> duration_ms;
};
/// How far back a collective_repeat line may refer (flight collectives a reader keeps).
inline constexpr int64_t kMaxFlightBack = 64;

/// The collective `r` stands for, into `out`. Returns "" or what is wrong (without "file:line: ").
std::string ExpandCollectiveRepeat(const CollectiveRepeatLine& r, const FileContext& ctx,
                                   const EventList& events, Collective& out);

/// An op line's v2 `rule_number`: `rule` (the `like` op's) with its first run of decimal digits
/// replaced by `number`'s decimal digits, into `out`. False when `rule` has no digit.
bool RenumberRule(std::string_view rule, int64_t number, std::string& out);
/// The inverse: whether `rule` is `like_rule` with its first run of digits replaced by the
/// decimal digits (no leading zero) of a number in [0, kMaxRuleNumber], and that number.
bool RuleNumber(std::string_view like_rule, std::string_view rule, int64_t& number);

/// Whether `bytes` is what a uniform count expands to for `group` seen from `rank`, and that count.
bool UniformBytes(const std::vector<int64_t>& group, const std::vector<int64_t>& bytes, int64_t rank,
                  int64_t& count);

}  // namespace shardscope::trace::detail
