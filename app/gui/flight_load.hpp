#pragma once
// What the flight view shows while Flight Recorder dumps are still being read (GL-free, so tests
// build it without a display): the ranks read so far, and for every process group where each of
// its read ranks stands, least advanced first. A rank's place in a group comes from its own dump
// alone: the first collective of the group it never completed ("started seq 142 (all_reduce)"),
// else the last one it completed ("done through seq 141"). Nothing here needs the other ranks, so
// the summary grows rank by rank as the reader hands dumps over (trace::ReadFlightRecorder's
// `each`), long before the model, the checker and triage have every rank.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/triage.hpp"

namespace shardscope::app::gui {

/// Where one rank stands in one process group (its collectives, send/recv not counted).
struct FlightPlace {
  int64_t seq = -1;  ///< first never-completed seq, else the last completed one (-1: none)
  int step = 2;      ///< 0 scheduled, 1 started (both: never completed), 2 done through `seq`
  std::string kind;  ///< the never-completed collective's kind ("" for done through)
  /// "scheduled seq 142 (all_reduce)", "started seq 142 (all_reduce)", "done through seq 141".
  std::string Text() const;
  /// Least advanced first: done through 141 < scheduled 142 < started 142 < done through 142.
  bool operator<(const FlightPlace& o) const {
    return seq != o.seq ? seq < o.seq : step != o.step ? step < o.step : kind < o.kind;
  }
  bool operator==(const FlightPlace& o) const = default;
};

/// The places of one rank in each process group its dump names (group name -> place).
std::map<std::string, FlightPlace> FlightPlacesOfRank(const trace::RankTrace& rank);

/// A process group as read so far.
struct FlightLoadGroup {
  std::string name, desc;
  int64_t size = 0;    ///< members (the group's rank list in the dumps)
  int64_t loaded = 0;  ///< members whose dump has been read
  struct State {
    FlightPlace place;
    std::string text;            ///< place.Text()
    std::vector<int64_t> ranks;  ///< sorted
    std::string ranks_text;      ///< ranks as ranges ("0-6, 8"), cut after about 160 characters
  };
  std::vector<State> states;  ///< one per distinct place, least advanced first
  /// The read members are not all at one place: some are behind the others.
  bool Behind() const { return states.size() > 1; }
  /// Some read member waits in a collective of the group it never completed.
  bool Stuck() const {
    for (const State& s : states)
      if (s.place.step < 2) return true;
    return false;
  }
};

/// The summary of the ranks read so far (an immutable copy: the GUI draws it while more load).
struct FlightLoadSnapshot {
  int64_t files_total = 0;   ///< dump files the reader listed (0 until listed)
  int64_t ranks_loaded = 0;  ///< dumps read
  int64_t world = 0;         ///< ranks named so far (files and groups' members), at least files_total
  int64_t entries = 0;       ///< entries read
  /// Per rank (< world): 0 not read yet, 1 read and every collective completed, 2 read with a
  /// collective it never completed, 3 read and behind: at the least advanced place of a group
  /// whose other read members got further (whatever its other collectives).
  std::vector<uint8_t> rank_status;
  int64_t stuck_ranks = 0;   ///< read ranks with a collective they never completed (any status)
  int64_t behind_ranks = 0;  ///< ranks with status 3
  /// Groups whose read members stand at different places first (least advanced place first), then
  /// those with a read member stuck in a collective it never completed, then the others; ties by
  /// size, then name.
  std::vector<FlightLoadGroup> groups;
  int64_t behind_groups = 0;  ///< groups with Behind()
  /// Once every dump is read and triage ran on the whole model: its result (else null).
  std::shared_ptr<const trace::TriageResult> triage;
  std::string stage;  ///< "reading dumps", "triage", "checking", "building the lanes"
};

/// Summaries of the dumps handed over so far; Add is called concurrently by the reader's threads.
class FlightLoadCollector {
 public:
  void Add(const trace::FlightRecorderDump& dump);  ///< thread-safe
  int64_t ranks() const;                            ///< dumps added; thread-safe
  /// A snapshot of what was added; thread-safe. `files_total`: the reader's count of files.
  FlightLoadSnapshot Snapshot(int64_t files_total) const;

 private:
  struct Rank {
    int64_t rank = 0, entries = 0, max_rank = 0;
    bool stuck = false;
    std::map<std::string, FlightPlace> places;
  };
  struct Group {
    std::string desc;
    std::vector<int64_t> members;
  };
  mutable std::mutex mutex_;
  std::vector<Rank> ranks_;
  std::map<std::string, Group> groups_;
};

}  // namespace shardscope::app::gui
