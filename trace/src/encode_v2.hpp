#pragma once
// Private: the writer's encoder of trace format version 2 (docs/trace-format.md, "Version 2").
// It leaves a field out only where format_v2.cpp's rules rebuild it exactly from earlier lines of
// the same file: a redistribute_begin whose plan fields equal an earlier one's refers to it
// (`like`), steps and collectives take their plan step's fields, a per-peer byte list that gives
// every peer the same amount is one number. Lines the line builder declines (strings to escape,
// non-finite numbers, rare payloads) are written in their v1 form, which v2 readers accept.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "shardscope/trace/events.hpp"

namespace shardscope::trace::detail {

/// One rank file's v2 encoder; it remembers what earlier lines wrote. Not thread-safe.
class EncoderV2 {
 public:
  EncoderV2(int64_t rank, std::vector<int64_t> mesh_shape)
      : rank_(rank), mesh_shape_(std::move(mesh_shape)) {}

  /// Each appends one line without its '\n' to `out`.
  void Encode(const RedistributeBegin& e, std::string& out);
  void Encode(const RedistributeEnd& e, std::string& out);
  void Encode(const StepBegin& e, std::string& out);
  void Encode(const StepEnd& e, std::string& out);
  void Encode(const Collective& e, std::string& out);
  void Encode(const Op& e, std::string& out);

  /// At most this many distinct plans are remembered for `like` (bounds memory on long runs).
  static constexpr size_t kMaxLikeTargets = 1024;

 private:
  // What the reader will know of a redistribute begun and not yet ended.
  struct Open {
    int64_t id = 0;
    SharedVec<PlanStep> plan;
    std::string dtype;
  };
  static constexpr size_t kMaxOpen = 1024;  // begins without an end beyond this are forgotten
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  const PlanStep* StepOf(int64_t redistribute_id, int64_t step, const Open** open) const;

  // An op written in full, which later ops with the same fields refer to by `like`.
  std::vector<Op> recent_ops_;  // at most kRecentOps, oldest first
  static constexpr size_t kRecentOps = 16;

  // The group a reader derives for these mesh dims (format_v2.hpp's MeshGroup), cached.
  const std::vector<int64_t>& MeshGroupOf(const std::vector<int64_t>& mesh_dims);

  int64_t rank_;
  std::vector<int64_t> mesh_shape_;
  std::map<std::vector<int64_t>, std::vector<int64_t>> groups_;
  std::vector<Open> open_;  // a handful at a time: searched linearly, no allocation per redistribute
  // The plan fields of a written redistribute_begin (their text) -> its id.
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> like_;

  // Recent begins whose plan fields have a `like` target, and that target: a begin that shares
  // their lists (SharedVec::SharesWith) and equals their strings and numbers has the same fields
  // text, so it is written as `like` without formatting and hashing that text again. The engine's
  // template captures repeat exactly these buffers on every redistribute. Each entry holds its
  // event, so the buffers it compares with stay alive: an address is never reused for other
  // contents while it is remembered.
  struct LikeMemo {
    RedistributeBegin fields;
    int64_t like = 0;
  };
  std::vector<LikeMemo> like_memo_;  // at most kLikeMemo, searched newest first
  size_t like_memo_next_ = 0;        // the entry replaced next once full
  static constexpr size_t kLikeMemo = 8;
  const LikeMemo* FindLikeMemo(const RedistributeBegin& e) const;
  void RememberLike(const RedistributeBegin& e, int64_t like);
};

}  // namespace shardscope::trace::detail
