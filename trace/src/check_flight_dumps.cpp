// `check` of Flight Recorder dumps one dump at a time: each rank's entries become 16-byte records
// of the flight table (flight_groups.hpp) and the dump is dropped, so memory follows the entries
// kept and not the input; the check then runs CheckTrace's one checker over the table and a model
// of the dumps' headers alone.
#include <map>
#include <mutex>

#include "check_flight.hpp"
#include "missing_ranks.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::trace {

CheckResult CheckFlightRecorder(const std::vector<std::filesystem::path>& paths, const ReadOptions& options,
                                std::vector<Diagnostic>& diagnostics) {
  detail::FlightTable table;
  std::mutex mutex;
  std::map<int64_t, FlightRecorderDump> headers;  // by rank: the dump without its events
  ReadFlightRecorderEach(
      paths, options.jobs,
      [&](FlightRecorderDump& dump) {
        // A dump's place among the files is its rank (they are read in rank order, one per rank).
        table.AddRank(dump.trace.header.rank, dump.trace);
        dump.trace.events = EventList();
        std::lock_guard<std::mutex> lock(mutex);
        headers.emplace(dump.trace.header.rank, std::move(dump));
      },
      options.progress);
  // What ReadFlightRecorder makes of the same dumps, less their events.
  Model model;
  model.source = paths.size() == 1 ? paths.front() : std::filesystem::path();
  int64_t max_rank = 0;
  std::vector<int64_t> present;
  std::set<int64_t> with_file;
  for (auto& [rank, dump] : headers) {
    max_rank = std::max(max_rank, dump.max_rank);
    for (Diagnostic& d : dump.diagnostics) diagnostics.push_back(std::move(d));
    model.ranks.push_back(std::move(dump.trace));
    present.push_back(rank);
    with_file.insert(rank);
  }
  headers.clear();
  detail::SetDumpWorld(model, max_rank);
  if (auto missing = detail::MissingRanks(present, model.world, "dump"))
    diagnostics.push_back(std::move(*missing));
  table.Finish(with_file);
  return detail::CheckTraceWith(model, detail::FlightRules(std::move(table)));
}

}  // namespace shardscope::trace
