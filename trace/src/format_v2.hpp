#pragma once
// Private: what trace format version 2 adds to version 1 (docs/trace-format.md, "Version 2"). A v2
// line may leave out fields the reader rebuilds from earlier lines of the same rank file or from a
// default, and may write a per-peer byte list as one number. Both decoders (codec.cpp's reference
// path and fast_decode.cpp) parse the fields a line has, note which it left out, and call the
// Complete* functions here: the one home of those rules. The v2 writer (encode_v2.cpp) leaves a
// field out only when these rules rebuild it exactly.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

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
  int64_t rank() const { return rank_; }
  /// The first redistribute_begin with this id read so far, or nullptr.
  const RedistributeBegin* Begin(int64_t id) const;
  /// The first op with this id read so far, or nullptr (an op line's `like`).
  const Op* OpWithId(int64_t id) const;
  /// Call with every event the reader accepted, in file order, and its index in the file's event
  /// list (v1 files keep nothing).
  void Remember(const Event& event, size_t index);
  /// The first and last index of redistribute `id`'s events when they were read as one run of
  /// lines (its begin, steps and collectives, its end, nothing between), else nullptr: what a
  /// redistribute_repeat line may copy.
  const std::pair<size_t, size_t>* Run(int64_t id) const;
  /// MeshGroup of this file's rank over `mesh_dims` (cached); empty when it has none.
  const SharedVec<int64_t>& Group(const std::vector<int64_t>& mesh_dims) const;

 private:
  int version_ = 1;
  int64_t rank_ = 0;
  std::vector<int64_t> mesh_shape_;
  std::unordered_map<int64_t, RedistributeBegin> begins_;
  std::unordered_map<int64_t, Op> ops_;
  std::unordered_map<int64_t, std::pair<size_t, size_t>> runs_;
  // The redistribute whose run of lines is being read: its id, first index, next index expected.
  int64_t run_id_ = -1;
  size_t run_first_ = 0, run_next_ = 0;
  mutable std::map<std::vector<int64_t>, SharedVec<int64_t>> groups_;
};

/// The redistribute_begin fields a v2 line may leave out, in this order (bit i = kBeginFields[i]).
inline constexpr std::string_view kBeginFields[] = {"tensor",
                                                    "global_shape",
                                                    "dtype",
                                                    "src_placements",
                                                    "dst_placements",
                                                    "src_order",
                                                    "dst_order",
                                                    "planner",
                                                    "planner_reason",
                                                    "notation",
                                                    "notation_unoptimized",
                                                    "raw_plan",
                                                    "optimized_plan",
                                                    "skipped_merges",
                                                    "cost_us"};
inline constexpr int kBeginFieldCount = static_cast<int>(std::size(kBeginFields));

/// step_begin fields a v2 line may leave out (taken from the redistribute's optimized_plan[step]).
enum StepBeginField : uint32_t {
  kStepMeshDims = 1u << 0,
  kStepSrc = 1u << 1,
  kStepDst = 1u << 2,
  kStepComm = 1u << 3,
  kStepLogicalShape = 1u << 4,
};
inline constexpr uint32_t kStepAll = 0x1f;

/// collective fields a v2 line may leave out or abbreviate.
enum CollectiveField : uint32_t {
  kCollKind = 1u << 0,         ///< absent: the plan step's comm
  kCollMeshDims = 1u << 1,     ///< absent: the plan step's mesh_dims
  kCollDtype = 1u << 2,        ///< absent: the redistribute's dtype
  kCollNegotiated = 1u << 3,   ///< absent: false
  kCollUniformSent = 1u << 4,  ///< bytes_sent is one number (held in bytes_sent[0])
  kCollUniformRecv = 1u << 5,  ///< bytes_recv is one number (held in bytes_recv[0])
  kCollGroup = 1u << 6,        ///< absent: MeshGroup over the collective's mesh_dims
};

/// The ranks of a row-major mesh of `mesh_shape` that share `rank`'s coordinate on every mesh dim
/// not in `mesh_dims`, ascending: the group of a collective over those dims (the engine's
/// Mesh::Group). Empty when the mesh is empty, `rank` is outside it or a dim is not in it.
std::vector<int64_t> MeshGroup(const std::vector<int64_t>& mesh_shape, int64_t rank,
                               const std::vector<int64_t>& mesh_dims);

// Each returns "" when the event is complete, else the message (without "file:line: ") saying
// what is missing or wrong; `present` has a bit set for each field the line wrote.

/// redistribute_begin: `like` >= 0 copies every absent field from that earlier redistribute;
/// without it, absent src_order/dst_order are "", skipped_merges [], optimized_plan the raw_plan,
/// notation_unoptimized the notation, and any other absent field is missing.
std::string CompleteBegin(RedistributeBegin& e, uint32_t present, int64_t like, const FileContext& ctx);
/// step_begin: absent fields come from optimized_plan[step] of the redistribute.
std::string CompleteStepBegin(StepBegin& e, uint32_t present, const FileContext& ctx);
/// collective: see CollectiveField; a uniform byte count N expands to N for every member of
/// `group` but this rank, and 0 for this rank.
std::string CompleteCollective(Collective& e, uint32_t present, const FileContext& ctx);

/// A redistribute_repeat line: redistribute `id` is redistribute `like` again (every event of it,
/// in order), with new ids and times: the begin at `t_ns`, each later time field (step_begin and
/// step_end t_ns, collective start_ns and end_ns, redistribute_end t_ns, in line order) at
/// t_ns + dt[i]. The begin takes `op_id`/`op_input` from this line (-1 when absent) and its tensor
/// from `tensor` when present.
struct RepeatLine {
  int64_t id = 0, like = 0, t_ns = 0;
  std::vector<int64_t> dt;
  std::optional<std::string> tensor;
  int64_t op_id = -1, op_input = -1;
};
/// Most `dt` entries a line may hold (checked before they are read): 4 times per plan step.
inline constexpr int64_t kMaxRepeatTimes = int64_t{1} << 18;

/// The events `r` stands for, appended to `out`; `events` is what the file's lines gave so far
/// (FileContext's indexes point into it). Returns "" or what is wrong (without "file:line: ").
std::string ExpandRepeat(const RepeatLine& r, const FileContext& ctx, const EventList& events,
                         std::vector<Event>& out);

/// Whether `bytes` is what a uniform count expands to for `group` seen from `rank`, and that count.
bool UniformBytes(const std::vector<int64_t>& group, const std::vector<int64_t>& bytes, int64_t rank,
                  int64_t& count);

}  // namespace shardscope::trace::detail
