#pragma once
// Chrome Trace Event JSON export (`shardscope export --format chrome`) that Perfetto, chrome://tracing
// and Tracy's importer open. Field choices follow Perfetto's JSON parser; see docs/trace-tools.md.

#include <cstddef>
#include <functional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "shardscope/trace/model.hpp"

namespace shardscope::trace {

/// Lanes (tid) of every rank's process in the export.
inline constexpr int kChromeRedistributeTid = 0;  ///< one "X" slice per op and per redistribute
inline constexpr int kChromeStepTid = 1;          ///< one "X" slice per executed plan step
inline constexpr int kChromeCollectiveTid = 2;    ///< one "X" slice per collective call
/// Members up to which a collective slice lists its group and per-peer bytes in full; a larger
/// group gives its first members, "group_size" and "bytes_sent_per_peer"/"bytes_recv_per_peer"
/// when every peer gets one count (else the first counts; the totals are always there).
inline constexpr size_t kChromeListedPeers = 64;

/// The whole trace as one object {"traceEvents": [...], "metadata": {...}}: pid = rank with
/// process_name/thread_name metadata, "X" slices (ts/dur in microseconds relative to the earliest
/// event, after each file's clock offset) for ops (t_ns..end_ns, with the implicit redistributes
/// nested inside on the same lane), redistributes, steps and collectives (halo exchanges included)
/// with their fields in args, and "s"/"f" flow pairs from the lowest rank of each collective call
/// to every other member. Pure; deterministic.
nlohmann::ordered_json ChromeTraceJson(const Model& model);

/// The same document streamed: hands `write` the bytes of ChromeTraceJson(model) dumped compact and
/// ASCII (dump(-1, ' ', true, replace)), byte for byte, in chunks of about 1 MiB, making one event
/// at a time, so memory beyond the model is a chunk and one event however many there are. Returns
/// the number of trace events. Exceptions of `write` pass through.
size_t WriteChromeTrace(const Model& model, const std::function<void(std::string_view)>& write);

}  // namespace shardscope::trace
