// `shardscope import kineto`: PyTorch profiler traces -> the report of docs/kineto.md, and
// optionally a shardscope trace (trace/kineto.hpp).
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cli_output.hpp"
#include "import_commands.hpp"
#include "shardscope/trace/kineto.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

namespace {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

}  // namespace

int RunImportKineto(const ImportKinetoArgs& args, std::ostream& out) {
  std::vector<std::filesystem::path> paths(args.paths.begin(), args.paths.end());
  // Claimed before the traces are read, as for `import fr`.
  std::optional<StagedTraceDir> staged;
  if (!args.output.empty()) staged.emplace(args.output, "-o", args.force);
  trace::KinetoImport imported = trace::ReadKineto(paths);
  const trace::Model& model = imported.model;
  if (!args.json) PrintLoadWarnings(model, "");
  if (staged) {
    staged->Write([&](const std::filesystem::path& dir) { WriteRankFiles(model, dir); });
    staged->Commit();
  }
  const trace::KinetoAnalysis analysis = trace::AnalyzeKineto(model);
  if (args.json) {
    nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
    for (const trace::KinetoRankInfo& r : imported.ranks) {
      nlohmann::ordered_json unknown = nlohmann::ordered_json::object();
      for (const auto& [k, n] : r.unknown) unknown[k] = n;
      ranks.push_back({{"rank", r.rank},
                       {"world_size", r.world},
                       {"file", r.file},
                       {"collectives", r.collectives},
                       {"kernels", r.kernels},
                       {"ops", r.ops},
                       {"nccl_kernels", r.nccl_kernels},
                       {"cpu_records", r.cpu_records},
                       {"counted_from", r.counted_from_kernels ? "kernels" : "cpu_records"},
                       {"steps", r.steps},
                       {"events", r.events},
                       {"bytes", r.bytes},
                       {"rank_from_file_name", r.rank_from_file_name},
                       {"unknown_events", unknown}});
    }
    nlohmann::ordered_json warnings = nlohmann::ordered_json::array();
    for (const trace::Diagnostic& d : model.diagnostics)
      warnings.push_back(d.file.empty() ? d.message : d.file + ": " + d.message);
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const trace::KinetoStepStat& s : analysis.steps) {
      steps.push_back({{"step", s.step},
                       {"process_group", s.process_group},
                       {"group_size", s.group_size},
                       {"kind", s.kind},
                       {"count", s.count},
                       {"bytes", s.bytes},
                       {"time_us", static_cast<double>(s.time_ns) / 1e3},
                       {"algbw_gbps", s.algbw_gbps},
                       {"busbw_gbps", s.busbw_gbps},
                       {"wait_us", static_cast<double>(s.wait_ns) / 1e3}});
    }
    nlohmann::ordered_json last = nlohmann::ordered_json::object();
    for (const auto& [r, n] : analysis.last_arrivals) last[std::to_string(r)] = n;
    nlohmann::ordered_json colls = nlohmann::ordered_json::array();
    for (const trace::KinetoCollective& c : analysis.collectives) {
      nlohmann::ordered_json waits = nlohmann::ordered_json::object();
      for (const auto& [r, w] : c.wait_ns) waits[std::to_string(r)] = static_cast<double>(w) / 1e3;
      colls.push_back({{"process_group", c.process_group},
                       {"group", c.group},
                       {"seq", c.seq},
                       {"kind", c.kind},
                       {"step", c.step},
                       {"matched", c.matched},
                       {"ranks", c.start_ns.size()},
                       {"last_rank", c.last_rank},
                       {"wait_us", waits},
                       {"time_us", static_cast<double>(c.time_ns) / 1e3},
                       {"bytes", c.bytes}});
    }
    nlohmann::ordered_json j = {
        {"ranks", ranks},
        {"matched", analysis.matched},
        {"unmatched", analysis.unmatched},
        {"warnings", warnings},
        {"world_size", model.world},
        {"last_arrivals", last},
        {"steps", steps},
        {"collectives", colls},
        {"output", args.output.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(args.output)}};
    out << j.dump(2) << "\n";
    return 0;
  }
  out << "kineto: " << imported.ranks.size() << " trace(s), world " << model.world << "\n";
  for (const trace::KinetoRankInfo& r : imported.ranks) {
    std::string kinds;
    for (const auto& [k, n] : r.collectives)
      kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + k;
    out << "  rank " << r.rank << "  " << r.file << "  " << r.kernels << " kernels, " << r.ops
        << " ops; collectives (" << (r.counted_from_kernels ? "from kernels" : "from CPU records")
        << "): " << (kinds.empty() ? "none" : kinds) << "\n";
  }
  out << "collectives: " << analysis.matched << " matched, " << analysis.unmatched << " unmatched\n";
  if (!analysis.last_arrivals.empty()) {
    out << "arrived last:";
    for (const auto& [r, n] : analysis.last_arrivals) out << "  rank " << r << " " << n << "x";
    out << "\n";
  }
  out << "step  group  kind            count        bytes     time_us  algbw_GB/s  busbw_GB/s     wait_us\n";
  for (const trace::KinetoStepStat& s : analysis.steps) {
    char line[256];
    std::snprintf(line, sizeof(line), "%4lld  %5s  %-14s %6lld %12lld %11s %11s %11s %11s\n",
                  static_cast<long long>(s.step), s.process_group.c_str(), s.kind.c_str(),
                  static_cast<long long>(s.count), static_cast<long long>(s.bytes),
                  Fixed(static_cast<double>(s.time_ns) / 1e3, 1).c_str(), Fixed(s.algbw_gbps, 2).c_str(),
                  Fixed(s.busbw_gbps, 2).c_str(), Fixed(static_cast<double>(s.wait_ns) / 1e3, 1).c_str());
    out << line;
  }
  if (!args.output.empty())
    out << "wrote " << model.ranks.size() << " rank file(s) to " << args.output << "\n";
  return 0;
}

}  // namespace shardscope::app
