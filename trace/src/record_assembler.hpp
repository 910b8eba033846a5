#pragma once
// Private: groups one rank file's events into redistribute and op records, and checks their
// references against the header (reader.cpp's second stage, after the lines are decoded).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codec.hpp"
#include "id_index.hpp"
#include "page_allocator.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::trace::detail {

/// One rank file read: its events, the records over them, and its diagnostics. The records are
/// copied into the Model and freed once every file is read, so they live on whole pages
/// (page_allocator.hpp): freed, they go back to the system instead of staying holes in the heap.
struct FileResult {
  RankTrace trace;
  std::vector<RedistributeRecord, PageAllocator<RedistributeRecord>> records;
  std::vector<OpRecord, PageAllocator<OpRecord>> ops;
  std::vector<Diagnostic> diagnostics;
};

/// Attaches events to their redistribute and checks references against the header; line numbers
/// are those of the event being added.
class Assembler {
 public:
  explicit Assembler(FileResult& result) : r_(result) {}

  /// Adds events [0, count) of the rank's list; lines[i] is the line of event i. The records refer
  /// to the stored events, so the list must not change afterwards.
  void AddStored(size_t count, const std::vector<int64_t>& lines);
  /// Notes what the file left unfinished (redistributes without an end, ops without an op event)
  /// and links redistributes to their ops.
  void Finish();

 private:
  const Header& header() const { return r_.trace.header; }
  // A field's name in a message, "HEAD" or "HEAD[INDEX]TAIL", built only when there is an error
  // (building it for every checked list cost as much as the checks).
  struct FieldName {
    FieldName(std::string_view name) : head(name) {}  // NOLINT(google-explicit-constructor)
    FieldName(std::string_view list, int64_t i, std::string_view member)
        : head(list), index(i), tail(member) {}
    std::string Text() const;
    std::string_view head;
    int64_t index = -1;
    std::string_view tail;
  };
  void CheckMeshDims(const std::vector<int64_t>& dims, const FieldName& field, const LineRef& at);
  void CheckPlacements(const std::vector<std::string>& placements, const FieldName& field, const LineRef& at);
  RedistributeRecord& Record(int64_t id, const char* type, const LineRef& at);
  void CheckStep(const RedistributeRecord& rec, int64_t step, const LineRef& at);
  void AddOne(const RedistributeBegin& e, const LineRef& at);
  void AddOne(const RedistributeEnd& e, const LineRef& at);
  void AddOne(const StepBegin& e, const LineRef& at);
  void AddOne(const StepEnd& e, const LineRef& at);
  void AddOne(const Collective& e, const LineRef& at);
  void AddOne(const Op& e, const LineRef& at);

  FileResult& r_;
  IdIndex index_;       // redistribute id -> its record in r_.records
  IdIndex begin_line_;  // redistribute id -> the line of its begin
  IdIndex op_index_;    // op id -> its record in r_.ops
  IdIndex op_line_;     // op id -> the line of its op event
  std::map<int64_t, std::pair<int64_t, EventRefs<Collective>>> pending_halo_;  // op id -> (first line, halos)
  std::map<int64_t, int64_t> unfinished_ops_;  // op id -> first line that referred to it
  SharedVec<int64_t> checked_group_;           // the last collective group found valid
};

}  // namespace shardscope::trace::detail
