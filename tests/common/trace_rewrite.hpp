#pragma once
// Test helpers: write a read trace back out through trace::Writer in a chosen format version (the
// v1 -> model -> v2 round trips of tests/trace/format_v2_test.cpp and the fuzz seeds), or events
// through it as one rank file whose text the test then reads, under a header made for the test.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "shardscope/trace/model.hpp"
#include "shardscope/trace/writer.hpp"
#include "temp_dir.hpp"

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

/// The header of rank `rank` of a run on a mesh of `mesh_shape` (world: its size) with dims
/// `mesh_dim_names`, as format `version`; everything else default.
inline trace::Header MeshRankHeader(int version, int64_t rank, std::vector<int64_t> mesh_shape,
                                    std::vector<std::string> mesh_dim_names) {
  trace::Header h;
  h.version = version;
  h.rank = rank;
  h.world = 1;
  for (int64_t extent : mesh_shape) h.world *= extent;
  h.mesh_shape = std::move(mesh_shape);
  h.mesh_dim_names = std::move(mesh_dim_names);
  return h;
}

/// Writes `events` under `header` into `dir` through trace::Writer (closed before it returns) and
/// returns the text of the rank file it wrote.
inline std::string WriteRankText(const std::filesystem::path& dir, const trace::Header& header,
                                 const std::vector<trace::Event>& events) {
  {
    trace::Writer writer(dir, header);
    for (const trace::Event& e : events) writer.Emit(e);
  }
  return ReadFile(dir / trace::RankFileName(header.rank));
}

}  // namespace shardscope::testing
