#pragma once
// Per-redistribute summaries of a Model, for `shardscope show` (text and --json) and the GUI.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardscope/trace/model.hpp"

namespace shardscope::trace {

/// The collectives of one redistribute with the same (step, kind, mesh dims, negotiated), summed
/// over every rank that recorded one: `calls` rank-side events, bytes as recorded per peer.
struct CollectiveSummary {
  int64_t step = 0;
  std::string kind;
  std::vector<int64_t> mesh_dims;
  bool negotiated = false;
  int64_t calls = 0;
  int64_t bytes_sent = 0;
  int64_t bytes_recv = 0;
};

/// One rank's shard before the first and after the last executed step (empty when unknown).
struct RankLayout {
  int64_t rank = 0;
  std::optional<std::vector<int64_t>> shape_before, offset_before, shape_after, offset_after;
};

/// One redistribute id across all ranks. Descriptive fields come from the lowest rank.
struct RedistributeSummary {
  int64_t id = 0;
  std::string tensor, dtype, planner, planner_reason, notation;
  std::vector<int64_t> global_shape;
  std::vector<std::string> src_placements, dst_placements;
  double predicted_us = 0.0;
  int64_t plan_steps = 0, raw_plan_steps = 0, skipped_merges = 0;
  int64_t op_id = -1, op_input = -1;  ///< the op this implicit redistribute serves, -1 when explicit
  Rare<ImportedPlan> imported;        ///< the recorded plan of an imported redistribute
  std::vector<int64_t> ranks_ok, ranks_incomplete;
  std::vector<std::pair<int64_t, std::string>> ranks_failed;  ///< (rank, error message)
  std::optional<int64_t> min_ns, max_ns;                      ///< end - begin over ranks that finished
  int64_t max_rank = 0;                                       ///< the rank with max_ns
  std::vector<CollectiveSummary> collectives;                 ///< by step, then first appearance
  std::vector<RankLayout> layouts;                            ///< rank order
};

/// One op id across all ranks, as `show` prints it. Descriptive fields come from the lowest rank
/// that ran it (rank 0 normally); ranks whose view of the op differs are listed.
struct OpSummary {
  int64_t id = 0;
  const OpRecord* reference = nullptr;  ///< the lowest rank's record (points into the Model)
  std::vector<int64_t> ranks;           ///< ranks with an op event for this id
  std::vector<int64_t> ranks_missing;   ///< ranks with a trace file but no op event for this id
  std::vector<std::pair<int64_t, std::string>> ranks_failed;     ///< (rank, error)
  std::vector<std::pair<int64_t, std::string>> ranks_differing;  ///< (rank, its signature text)
  std::vector<CollectiveSummary> collectives;  ///< the op's own collectives (halo exchanges), all ranks
};

/// "S(0)S(1)": a placement list in PyTorch's notation (placements concatenated).
std::string PlacementsText(const std::vector<std::string>& placements);

/// "mm(x: S(0)R, w: S(0)R->RS(1)) -> y: S(0)S(1)": an op's call as show prints it (an input
/// that needed a redistribute shows src->required; an output not requested shows "-"). Pure.
std::string OpCallText(const Op& op);

/// Summaries of every op id in the model, ascending id. Pure.
std::vector<OpSummary> SummarizeOps(const Model& model);

/// Summaries of every redistribute id in the model, ascending id. Pure.
std::vector<RedistributeSummary> Summarize(const Model& model);

/// Human-readable `show` text: a run line, diagnostics, the program (one block per op, when the
/// trace has ops), then one block per redistribute. Pure;
/// deterministic (no paths, fixed number formats), so it can be golden-tested.
std::string FormatShowText(const Model& model);

/// FormatShowText's text handed to `write` in order, piece by piece (about a megabyte each), so
/// that memory need not hold it whole. The pieces are made on up to `threads` threads (0: one per
/// core); `write` runs on the calling thread. An exception of `write` passes through.
void WriteShowText(const Model& model, const std::function<void(std::string_view)>& write,
                   unsigned threads = 0);

/// The same content as JSON for tools (`show --json`). Pure.
nlohmann::json ShowJson(const Model& model);

/// The text of ShowJson(model) as --json prints it (dump with indent 2, bytes that are not UTF-8
/// replaced by U+FFFD), handed to `write` piece by piece like WriteShowText, never the whole
/// document in memory; made on up to `threads` threads (0: one per core).
void WriteShowJson(const Model& model, const std::function<void(std::string_view)>& write,
                   unsigned threads = 0);

}  // namespace shardscope::trace
