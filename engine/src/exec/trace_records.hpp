#pragma once
// Private to the engine: the trace records the executor and the op executor write (redistribute
// begin/end, plan steps, collectives), and the placement and mesh-dim lists as the trace stores
// them.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shardscope/engine/comm/communicator.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/trace/events.hpp"

namespace shardscope::engine::detail {

inline std::vector<int64_t> ToInt64(const std::vector<int>& dims) { return {dims.begin(), dims.end()}; }

/// "S(0)", "R", ... one string per mesh dim.
std::vector<std::string> PlacementStrings(const Placements& placements);

// The fields a transform shows in every trace record of it (plan steps, step begins).
template <class Record>
void DescribeTransform(const Transform& t, Record& r) {
  r.mesh_dims = ToInt64(t.mesh_dims);
  r.src = t.src.ToString();
  r.dst = t.dst.ToString();
  r.comm = std::string(CommKindName(t.comm));
  r.logical_shape = t.logical_shape;
}

/// The trace records of one traced redistribute. Every event is copied from a template this
/// thread built the first time it traced the same (src, dst, plan) and rank layout: a job runs the
/// same redistributes over and over, and copying an event whose vectors and strings are shared
/// (SharedVec, IStr) allocates and formats nothing, where building it formats placements, interns
/// strings and allocates every vector again. Copies share the template's vectors, so the trace
/// writer's encoder also recognises them (by identity) and reuses their encoded text.
/// A template is checked against what the redistribute has (this rank's layouts, the collective's
/// group and byte counts) before it is used, and rebuilt when they differ, so what is written is
/// always what the redistribute did. Emit* do nothing when options.trace is null.
class RedistributeRecords {
 public:
  /// Records for one redistribute of (src, dst, plan) with `options`; the templates are this
  /// thread's for its last few distinct (src, dst, plan) (compared by value).
  RedistributeRecords(const TensorSpec& src, const TensorSpec& dst, const Plan& plan,
                      const ExecuteOptions& options);
  ~RedistributeRecords();
  RedistributeRecords(const RedistributeRecords&) = delete;
  RedistributeRecords& operator=(const RedistributeRecords&) = delete;

  /// The begin event (placements, orders, both plans, skipped merges, cost).
  void Begin();
  /// Step k of the optimized plan starts / ends with this rank holding `mine`.
  void StepBegin(int64_t k, const Transform& t, const RankLayout& mine);
  void StepEnd(int64_t k, const RankLayout& mine);
  /// A collective step k ran over `group` (mesh_dims, global ranks) in `dtype`.
  void Collective(int64_t k, const std::vector<int>& mesh_dims, const std::vector<int64_t>& group,
                  DType dtype, const CollectiveStats& stats, bool negotiated);
  /// The end event (with checksums when options.checksums).
  void End(bool ok, const std::string& error, const LocalTensor& in, const LocalTensor* out);

  struct Templates;  // private to trace_records.cpp

 private:
  const ExecuteOptions& options_;
  std::shared_ptr<Templates> templates_;
};

}  // namespace shardscope::engine::detail
