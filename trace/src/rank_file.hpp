#pragma once
// Private: reads one rank-<R>.jsonl file into its events and records (reader.cpp runs it on every
// file of a directory, on several threads).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include <simdjson.h>

#include "event_pools.hpp"
#include "record_assembler.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::trace::detail {

/// What a reading thread keeps from file to file: the lists a file is read into, with the capacity
/// that earlier files made them grow to. Each file's events are then moved into lists of their exact
/// size (EventList::TakeExact), and the growth leaves no holes between the lists the model keeps.
struct ReadScratch {
  EventList events;
  std::vector<int64_t> lines;
  std::unique_ptr<char[]> line_buffer;  ///< the line reader's buffer (line_capacity bytes plus padding)
  size_t line_capacity = 0;
};

/// Reads and assembles one rank file: each line through the fast path when `fast` (and the
/// reference path where it declines), else the reference path. Throws Error naming file:line at
/// the first bad line. `shared`, when given, pools lists across the files of one load. A renamed
/// file (header rank != the rank in its name) is reported by ReadTraceDir's merge.
/// `scratch`, when given, is the calling thread's (see ReadScratch).
FileResult ReadRankFile(const std::filesystem::path& path, bool fast, ReadProgress* progress,
                        simdjson::dom::parser& parser, SharedPools* shared, ReadScratch* scratch = nullptr);

}  // namespace shardscope::trace::detail
