#pragma once
// The `shardscope` subcommands as plain functions over plain option structs. main.cpp (the only
// file that includes CLI11) fills the structs and calls Run*; a new subcommand is one new
// cmd_<name>.cpp plus a few lines in main.cpp.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/core/mesh.hpp"
#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/plan/plan.hpp"

namespace shardscope::app {

/// Mesh flags shared by every command that builds a spec.
struct MeshArgs {
  std::string mesh;              ///< "2x2x2" (--mesh)
  std::string mesh_names;        ///< "dp,tp" (--mesh-names); empty for unnamed dims
  std::string flatten = "none";  ///< "none", "all" or "0,1;1,2" (--flatten), names allowed
};

/// Tensor flags shared by every command that builds a spec.
struct TensorArgs {
  std::string shape;               ///< "8x8x8" (--shape)
  std::string dtype = "f32";       ///< --dtype
  std::string chunking = "torch";  ///< --chunking torch|physicsnemo
};

/// `shardscope plan`.
struct PlanArgs {
  MeshArgs mesh;
  TensorArgs tensor;
  std::string from;              ///< --from placements
  std::string to;                ///< --to placements
  std::string src_order;         ///< --src-order; empty for the default order
  std::string dst_order;         ///< --dst-order
  std::string planner = "auto";  ///< auto|greedy|graph
  int devices_per_host = 8;
  bool no_optimize = false;
  bool backward = false;
  bool allow_partial_target = false;  ///< --allow-partial-target: PyTorch's internal R -> P path
  int64_t rank = 0;
  std::string ranks = "auto";  ///< --ranks: whose layouts to print ("auto", "all" or "0-3,8")
  bool json = false;
};

/// `shardscope layout`.
struct LayoutArgs {
  MeshArgs mesh;
  TensorArgs tensor;
  std::string placements;      ///< --placements
  std::string order;           ///< --order; empty for the default order
  std::string ranks = "auto";  ///< --ranks: whose layouts to print ("auto", "all" or "0-3,8")
  bool json = false;
};

/// `shardscope bench plan`.
struct BenchPlanArgs {
  int repetitions = 31;  ///< timed batches per case; the median batch is reported
};

/// `shardscope env`.
struct EnvArgs {
  bool json = false;
};

/// Each Run* writes its report to `out` and returns the exit code (0). Bad input throws
/// shardscope::Error naming the flag and token; main maps it to one stderr line and exit 2/3.
int RunPlan(const PlanArgs& args, std::ostream& out);
int RunLayout(const LayoutArgs& args, std::ostream& out);
/// Progress goes to stderr only when stderr is a terminal.
int RunBenchPlan(const BenchPlanArgs& args, std::ostream& out);
/// Lists every environment knob; throws Error(kInvalidInput) after the list when one is set to a
/// bad value.
int RunEnv(const EnvArgs& args, std::ostream& out);

// ---- helpers shared by the commands (cli_common.cpp) ----

/// Builds the mesh from --mesh, --mesh-names and --flatten; throws Error naming the flag.
engine::Mesh BuildMesh(const MeshArgs& args);
/// Builds and validates a spec; `what` names the placements flag ("--from") and `order_flag`
/// the order flag ("--src-order").
engine::TensorSpec BuildSpec(const engine::Mesh& mesh, const TensorArgs& tensor,
                             const std::string& placements, const std::string& what, const std::string& order,
                             const std::string& order_flag);

/// Meshes up to this many ranks print every rank's layout by default (--ranks auto); larger ones
/// print the first kAutoRankHead ranks and the last one, and say so.
inline constexpr int64_t kAutoRankLimit = 1024;
inline constexpr int64_t kAutoRankHead = 8;

/// The ranks of a --ranks list: "auto" (every rank up to kAutoRankLimit, else ranks
/// 0..kAutoRankHead-1 and the last), "all" (every rank of the mesh) or comma-separated ranks and
/// inclusive ranges ("0-3,8"), ascending and without repeats; `flag` names the option in errors.
/// Costs O(listed ranks), never O(mesh size) unless "all". Throws Error(kInvalidInput).
std::vector<int64_t> ParseRankList(const std::string& text, int64_t mesh_size, const std::string& flag);
/// The line text output ends with when --ranks auto left ranks out ("" when it did not).
std::string AutoRanksNote(const std::string& text, size_t shown, int64_t mesh_size);

/// "0,1" (or "dp,tp" when the mesh has names) for a list of mesh dims.
std::string FormatMeshDims(const engine::Mesh& mesh, const std::vector<int>& mesh_dims);
/// "(0,1,0)".
std::string FormatCoord(const std::vector<int64_t>& coord);
/// Column header for mesh coordinates: "coord", or "coord (dp,tp)" when the mesh has names.
std::string CoordHeader(const engine::Mesh& mesh);
/// "(0,4,0)" for a global offset or local shape given as a tuple.
std::string FormatTuple(const std::vector<int64_t>& values);
/// One tensor dim's index set: "[0,3)", "[0,1)+[4,5)" (strided), "{}" when empty.
using engine::FormatIndexSet;  // engine/core/layout.hpp
/// All dims: "[0,3) x [0,2)"; "()" for a 0-d tensor.
using engine::FormatIndices;

/// A left-aligned text table: column width = widest cell, two spaces between columns, no
/// trailing spaces. Each line is prefixed by `indent`.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out, const std::string& indent) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace shardscope::app
