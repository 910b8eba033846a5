// Search over a trace (issue 18 item 8). Expected hits are read by hand off the events of
// tests/golden/trace/two_rank and tests/golden/trace/program:
//   two_rank: redistribute 0 "x" S(0) -> R by all_gather; redistribute 1 "y" S(0) -> S(1) by
//             all_to_all, with a recorded shape_exchange collective.
//   program:  redistribute 0 "w" S(0),R -> R,S(1) (all_gather, local); 1 "z" S(0),S(1) -> S(0),R
//             (all_gather); 2 "gx" S(0),R -> R,R (all_gather); op 0 mm(x, w) -> y S(0),S(1);
//             op 1 conv2d(y) -> z S(0),S(1) running a halo_exchange; op 2 layer_norm_backward(z)
//             -> gx S(0),R, gb P(sum),R.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "search_model.hpp"
#include "shardscope/trace/reader.hpp"

namespace {

namespace trace = shardscope::trace;
using shardscope::app::gui::BuildSearchIndex;
using shardscope::app::gui::Search;
using shardscope::app::gui::SearchEntry;

using Hit = std::pair<char, int64_t>;  // 'r' redistribute or 'o' op, and its id

std::vector<Hit> Hits(const std::vector<SearchEntry>& entries, const std::string& query) {
  std::vector<Hit> out;
  for (size_t i : Search(entries, query))
    out.push_back({entries[i].kind == SearchEntry::Kind::kOp ? 'o' : 'r', entries[i].id});
  return out;
}

}  // namespace

TEST_CASE("search: tensors, placements and collective kinds of redistributes", "[gui][search]") {
  const auto entries =
      BuildSearchIndex(trace::ReadTraceDir(SHARDSCOPE_SOURCE_DIR "/tests/golden/trace/two_rank"));
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].text == "#0  x  S(0) -> R  1 step");
  CHECK(Hits(entries, "") == std::vector<Hit>{{'r', 0}, {'r', 1}});
  CHECK(Hits(entries, "y") == std::vector<Hit>{{'r', 1}});
  CHECK(Hits(entries, "all_gather") == std::vector<Hit>{{'r', 0}});
  CHECK(Hits(entries, "ALL_TO_ALL") == std::vector<Hit>{{'r', 1}});      // case ignored
  CHECK(Hits(entries, "shape_exchange") == std::vector<Hit>{{'r', 1}});  // a recorded collective
  CHECK(Hits(entries, "s(1)") == std::vector<Hit>{{'r', 1}});
  CHECK(Hits(entries, "S(0) R") == std::vector<Hit>{{'r', 0}});  // every term must match
  CHECK(Hits(entries, "broadcast").empty());                     // the "no matches" case
  CHECK(Hits(entries, "#0 all_to_all").empty());
}

TEST_CASE("search: ops by name, tensors, placements and the collectives they run", "[gui][search]") {
  const auto entries =
      BuildSearchIndex(trace::ReadTraceDir(SHARDSCOPE_SOURCE_DIR "/tests/golden/trace/program"));
  REQUIRE(entries.size() == 6);
  CHECK(Hits(entries, "mm") == std::vector<Hit>{{'o', 0}});
  CHECK(Hits(entries, "conv2d") == std::vector<Hit>{{'o', 1}});
  CHECK(Hits(entries, "halo_exchange") == std::vector<Hit>{{'o', 1}});
  CHECK(Hits(entries, "P(sum)") == std::vector<Hit>{{'o', 2}});
  CHECK(Hits(entries, "gx") == std::vector<Hit>{{'r', 2}, {'o', 2}});
  CHECK(Hits(entries, "S(0),S(1)") == std::vector<Hit>{{'r', 1}, {'o', 0}, {'o', 1}, {'o', 2}});
  CHECK(Hits(entries, "R,S(1)") == std::vector<Hit>{{'r', 0}, {'o', 0}});  // w's target, mm's requirement
  CHECK(Hits(entries, "local") == std::vector<Hit>{{'r', 0}});
  CHECK(Hits(entries, "all_gather z") == std::vector<Hit>{{'r', 1}});
  CHECK(Hits(entries, "softmax").empty());
}
