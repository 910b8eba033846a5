#pragma once
// Private: reads one rank-<R>.jsonl file into its events and records (reader.cpp runs it on every
// file of a directory, on several threads).

#include <filesystem>

#include <simdjson.h>

#include "event_pools.hpp"
#include "record_assembler.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::trace::detail {

/// Reads and assembles one rank file: each line through the fast path when `fast` (and the
/// reference path where it declines), else the reference path. Throws Error naming file:line at
/// the first bad line. `shared`, when given, pools lists across the files of one load. A renamed
/// file (header rank != the rank in its name) is reported by ReadTraceDir's merge.
FileResult ReadRankFile(const std::filesystem::path& path, bool fast, ReadProgress* progress,
                        simdjson::dom::parser& parser, SharedPools* shared);

}  // namespace shardscope::trace::detail
