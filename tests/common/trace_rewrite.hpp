#pragma once
// Test helper: writes a read trace back out through trace::Writer in a chosen format version (the
// v1 -> model -> v2 round trips of tests/trace/format_v2_test.cpp and the fuzz seeds).

#include <filesystem>

#include "shardscope/trace/model.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::testing {

/// Writes every rank of `model` into `dir` (rank-<R>.jsonl) as format `version`; returns `dir`.
inline std::filesystem::path WriteTraceAs(const trace::Model& model, const std::filesystem::path& dir,
                                          int version) {
  std::filesystem::remove_all(dir);
  for (const trace::RankTrace& rank : model.ranks) {
    trace::Header header = rank.header;
    header.version = version;
    trace::Writer writer(dir, header);
    for (const trace::Event& e : rank.events) writer.Emit(e);
  }
  return dir;
}

}  // namespace shardscope::testing
