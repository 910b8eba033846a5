#pragma once
// Private: the writer's encoder of trace format version 2 (docs/trace-format.md, "Version 2").
// It leaves a field out only where format_v2.cpp's rules rebuild it exactly from earlier lines of
// the same file: a redistribute_begin whose plan fields equal an earlier one's refers to it
// (`like`), steps and collectives take their plan step's fields, a per-peer byte list that gives
// every peer the same amount is one number. Lines the line builder declines (strings to escape,
// non-finite numbers, rare payloads) are written in their v1 form, which v2 readers accept.

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "shardscope/trace/events.hpp"

namespace shardscope::trace::detail {

struct Captured;  // writer_sink.hpp

/// One rank file's v2 encoder; it remembers what earlier lines wrote. Not thread-safe.
class EncoderV2 {
 public:
  /// `v3`: the file is format version 3, so the encoder may also use version 3's compact forms
  /// of imported DebugMode logs (a redistribute_repeat of whole events, op lines without step or
  /// end_ns, `rule_number`, `linked`); without it every line is one a version-2 reader reads.
  EncoderV2(int64_t rank, std::vector<int64_t> mesh_shape, bool v3 = false)
      : rank_(rank), mesh_shape_(std::move(mesh_shape)), v3_(v3) {}

  /// Each appends one line without its '\n' to `out`. `repeated`: the event is a copy of a
  /// template (Writer::Emit(EventTemplate, TemplateFields)), whose lists the engine repeats on
  /// every redistribute: its line is remembered with the redistribute id and the times cut out,
  /// and a later copy of the same template is written from that text (LineMemo).
  void Encode(const RedistributeBegin& e, std::string& out);
  void Encode(const RedistributeEnd& e, std::string& out);
  void Encode(const StepBegin& e, std::string& out, bool repeated = false);
  void Encode(const StepEnd& e, std::string& out, bool repeated = false);
  void Encode(const Collective& e, std::string& out, bool repeated = false);
  void Encode(const Op& e, std::string& out);

  /// `run`: the n template captures of one whole redistribute, its begin first and its end last
  /// with only its steps and collectives between (Sink::Drain finds them). When an earlier
  /// redistribute of this file was written in full from templates equal to these (every list
  /// shared, every string and number equal), appends the redistribute_repeat line that stands
  /// for this one (without '\n') and returns true. Otherwise returns false and remembers `run` as
  /// that earlier redistribute for later ones: the caller must then write its n lines in full,
  /// right away and in order (a reader copies them only from one unbroken run of lines).
  bool EncodeRepeat(const Captured* run, size_t n, std::string& out);
  /// The same (version 3 only: false otherwise) for a whole imported redistribute of whole events (not
  /// templates: an importer's replay, its begin with an imported plan), `run` pointing at its n events: a
  /// repeat line when an earlier one of this file written in full has events equal to these in every field
  /// but ids, times, the begin's tensor, op_id/op_input and imported plan (the line gives those; the plan as
  /// the fields that differ). Otherwise false, remembering the run when it is imported, and the caller writes
  /// its lines in full.
  bool EncodeRepeat(const Event* const* run, size_t n, std::string& out);
  /// Longest redistribute (in events) written as a repeat.
  static constexpr size_t kMaxRepeatEvents = 64;

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

  // The begins written with an op link, by op id: (op_input, id), what a reader's LinkedIds gives
  // an op line with `linked`; dropped when the op is written. Past kMaxLinkedOps ops the writer
  // stops remembering and writes `redistribute_ids` (its list would no longer be the reader's).
  void RememberLink(int64_t op_id, int64_t op_input, int64_t id);
  std::unordered_map<int64_t, std::vector<std::pair<int64_t, int64_t>>> links_;
  bool links_complete_ = true;
  static constexpr size_t kMaxLinkedOps = 4096;

  // An op written in full, which later ops with the same fields refer to by `like`.
  std::vector<Op> recent_ops_;  // at most kRecentOps, oldest first
  static constexpr size_t kRecentOps = 16;

  // The group a reader derives for these mesh dims (format_v2.hpp's MeshGroup), cached.
  const std::vector<int64_t>& MeshGroupOf(const std::vector<int64_t>& mesh_dims);

  int64_t rank_;
  std::vector<int64_t> mesh_shape_;
  bool v3_;  ///< format version 3: its compact forms allowed
  std::map<std::vector<int64_t>, std::vector<int64_t>> groups_;
  std::vector<Open> open_;  // a handful at a time: searched linearly, no allocation per redistribute
  // The plan fields of a written redistribute_begin (their text) -> its id.
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> like_;
  // The same fields but the tensor (what follows it in the run) -> the id of a begin written with
  // all of them: a begin differing only in its tensor writes that and `like`.
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> like_rest_;

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

  // Recent step_begin, step_end and collective lines of templates, cut around what a template
  // capture sets: text[0] + redistribute id + text[1] + time [+ text[2] + end time] + text.back().
  // A line is written from here when its event shares every list of the remembered one (SharesWith),
  // equals it in every string (IStr) and number, and was written against the same plan step (the
  // same PlanStep object, held alive by `plan`) and, for a collective, the same dtype of its
  // redistribute: everything the line builder reads. Each entry holds its event, so the buffers it
  // compares with are never reused for other contents while remembered.
  struct LineMemo {
    Event event;
    SharedVec<PlanStep> plan;  ///< holds `step` alive (empty when step is null)
    const PlanStep* step = nullptr;
    bool has_dtype = false;  ///< a collective written with its redistribute's dtype known
    std::string dtype;
    std::vector<std::string> text;
  };
  std::vector<LineMemo> line_memo_;  // at most kLineMemo, searched newest first
  size_t line_memo_next_ = 0;
  static constexpr size_t kLineMemo = 16;
  template <typename E>
  const LineMemo* FindLineMemo(const E& e, const PlanStep* step, const std::string* dtype) const;
  void RememberLine(Event e, const Open* open, const PlanStep* step, const std::string* dtype,
                    std::string_view line, std::string_view head, std::string_view key,
                    std::initializer_list<int64_t> values, std::string_view sep = {});
  static void WriteLine(const LineMemo& m, std::initializer_list<int64_t> values, std::string& out);

  // Recent redistributes written in full from templates (EncodeRepeat): copies of the templates
  // (holding their lists alive, so shared addresses keep meaning the same contents), the id the
  // lines were written with and its tensor.
  struct RepeatMemo {
    std::vector<Event> events;
    int64_t like = 0;
    IStr tensor;
  };
  std::vector<RepeatMemo> repeat_memo_;  // at most kRepeatMemo, searched newest first
  size_t repeat_memo_next_ = 0;
  static constexpr size_t kRepeatMemo = 8;
  std::vector<int64_t> dt_;  // a repeat line's time offsets (kept for its capacity)
  // Recent redistributes of whole events written in full: copies of their events.
  std::vector<std::vector<Event>> full_memo_;  // at most kRepeatMemo, a ring
  size_t full_memo_next_ = 0;

  // Recent collectives with a flight record (imported Flight Recorder entries, profiler
  // collectives), with their number among this file's flight collectives: a later one that
  // differs from one of them only in its times, ids, state and duration is written as a
  // collective_repeat line naming it (`back`).
  struct FlightMemo {
    Collective event;
    uint64_t number = 0;
  };
  std::vector<FlightMemo> flights_;  // at most kFlightMemo (<= kMaxFlightBack), a ring
  uint64_t flights_written_ = 0;
  static constexpr size_t kFlightMemo = 16;
  bool EncodeFlightRepeat(const Collective& e, std::string& out) const;
  void RememberFlight(const Collective& e);
};

}  // namespace shardscope::trace::detail
