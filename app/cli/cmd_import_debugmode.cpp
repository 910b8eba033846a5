// `shardscope import debugmode`: a PyTorch DebugMode dump in, a verdict per redistribute out
// (and, with -o, a replayed shardscope trace). Schema of --json: docs/import.md.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli_output.hpp"
#include "import_commands.hpp"
#include "shardscope/error.hpp"
#include "shardscope/files.hpp"
#include "shardscope/program/debugmode_import.hpp"
#include "shardscope/text.hpp"

namespace shardscope::app {
namespace {

// A dump larger than this is refused before it is read into memory.
constexpr int64_t kMaxDumpBytes = int64_t{1} << 30;

using trace::ImportVerdict;

std::string Name(ImportVerdict verdict) { return std::string(trace::ImportVerdictName(verdict)); }

// `value` as JSON when `present`, else null.
template <class T>
nlohmann::ordered_json OrNull(bool present, const T& value) {
  return present ? nlohmann::ordered_json(value) : nlohmann::ordered_json();
}
template <class T>
nlohmann::ordered_json OrNull(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json();
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string s = Join(parts, ", ");
  return s.empty() ? "-" : s;
}

nlohmann::ordered_json OpsJson(const program::ImportResult& result) {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (size_t j = 0; j < result.dump.ops.size(); ++j) {
    const auto& op = result.dump.ops[j];
    const auto& v = result.ops[j];
    ops.push_back({
        {"line", op.line},
        {"op", op.name},
        {"shardscope_op", OrNull(!v.shardscope_op.empty(), v.shardscope_op)},
        {"inputs", v.inputs},
        {"recorded_outputs", v.recorded_outputs},
        {"shardscope_outputs", v.shardscope_outputs},
        {"verdict", Name(v.verdict)},
        {"reason", v.reason},
        {"computed", v.computed},
        {"trace_id", OrNull(v.trace_id >= 0, v.trace_id)},
    });
  }
  return ops;
}

std::string Shape(const program::DumpRedistribute& r) {
  return r.has_global_shape ? engine::FormatShape(r.global_shape) : "?";
}

std::vector<std::string> Strings(const engine::Placements& placements) {
  std::vector<std::string> out;
  for (const auto& p : placements) out.push_back(p.ToString());
  return out;
}

std::string RecordedText(const program::DumpRedistribute& r) {
  std::map<std::string, int> counts;
  for (const auto& c : r.collectives) ++counts[c.kind];
  std::string s;
  for (const auto& [kind, n] : counts) s += (s.empty() ? "" : " ") + kind + "x" + std::to_string(n);
  return s.empty() ? "-" : s;
}

std::string CountsText(const std::map<std::string, int>& counts) {
  std::string s;
  for (const auto& [kind, n] : counts) s += (s.empty() ? "" : " ") + kind + "x" + std::to_string(n);
  return s.empty() ? "-" : s;
}

nlohmann::ordered_json ToJson(const program::ImportResult& result, const engine::Mesh& mesh) {
  nlohmann::ordered_json redistributes = nlohmann::ordered_json::array();
  for (size_t i = 0; i < result.dump.redistributes.size(); ++i) {
    const auto& r = result.dump.redistributes[i];
    const auto& v = result.redistributes[i];
    nlohmann::ordered_json collectives = nlohmann::ordered_json::array();
    for (const auto& c : r.collectives) {
      collectives.push_back({{"kind", c.kind},
                             {"group_size", OrNull(c.group_size >= 0, c.group_size)},
                             {"group_name", c.group_name}});
    }
    const program::DumpOp* op = r.op >= 0 ? &result.dump.ops[static_cast<size_t>(r.op)] : nullptr;
    redistributes.push_back({
        {"line", r.line},
        {"op", op ? nlohmann::ordered_json(op->name) : nlohmann::ordered_json()},
        {"arg_index", OrNull(r.arg_index >= 0, r.arg_index)},
        {"explicit", r.explicit_call},
        {"global_shape", OrNull(r.has_global_shape, r.global_shape)},
        {"global_shape_inferred", r.global_shape_inferred},
        {"dtype", r.dtype},
        {"src", Strings(r.src)},
        {"src_text", r.src_text},
        {"dst", Strings(r.dst)},
        {"dst_text", r.dst_text},
        {"pytorch_trace", OrNull(r.pytorch_trace)},
        {"recorded_collectives", collectives},
        {"local_shape", OrNull(r.has_local_shape, r.local_shape)},
        {"module", r.module},
        {"shardscope_notation", v.shardscope_notation},
        {"shardscope_collectives", v.shardscope_collectives},
        {"verdict", Name(v.verdict)},
        {"reason", v.reason},
        {"replayed", v.replayed},
        {"trace_id", OrNull(v.trace_id >= 0, v.trace_id)},
    });
  }
  nlohmann::ordered_json warnings = nlohmann::ordered_json::array();
  for (const auto& w : result.warnings) warnings.push_back({{"line", w.line}, {"message", w.message}});
  return {{"format", result.dump.format},  {"mesh", mesh.shape()},
          {"ops", result.dump.ops.size()}, {"redistributes", std::move(redistributes)},
          {"replays", result.replays},     {"op_results", OpsJson(result)},
          {"op_runs", result.op_runs},     {"warnings", std::move(warnings)}};
}

// The ops shardscope implements: its placements beside PyTorch's (opaque ops are only counted).
void PrintOps(const program::ImportResult& result, std::ostream& out) {
  TextTable table(
      {"line", "op", "shardscope", "inputs", "PyTorch out", "shardscope out", "computed", "verdict"});
  int rows = 0;
  for (size_t j = 0; j < result.dump.ops.size(); ++j) {
    const auto& v = result.ops[j];
    if (v.shardscope_op.empty()) continue;
    table.AddRow({std::to_string(result.dump.ops[j].line), result.dump.ops[j].name, v.shardscope_op,
                  Joined(v.inputs), Joined(v.recorded_outputs), Joined(v.shardscope_outputs),
                  v.computed ? "yes" : "no", Name(v.verdict)});
    ++rows;
  }
  if (rows == 0) return;
  out << "ops shardscope implements (propagated from the inputs as PyTorch placed them):\n";
  table.Print(out, "  ");
}

void PrintText(const ImportDebugModeArgs& args, const program::ImportResult& result, const engine::Mesh& mesh,
               std::ostream& out) {
  const auto& dump = result.dump;
  out << "import debugmode: " << args.dump << " (" << dump.format << ", " << dump.lines
      << (dump.format == "text" ? " lines" : " calls") << ") on mesh " << mesh.ToString() << "\n";
  out << "ops on DTensors: " << dump.ops.size() << "; redistributes: " << dump.redistributes.size() << "\n";
  if (!dump.redistributes.empty()) {
    TextTable table({"line", "op", "arg", "global", "src -> dst", "PyTorch", "recorded", "shardscope",
                     "planned", "verdict"});
    for (size_t i = 0; i < dump.redistributes.size(); ++i) {
      const auto& r = dump.redistributes[i];
      const auto& v = result.redistributes[i];
      std::string op = r.op >= 0 ? dump.ops[static_cast<size_t>(r.op)].name : "(explicit)";
      table.AddRow({std::to_string(r.line), op, r.arg_index >= 0 ? std::to_string(r.arg_index) : "-",
                    Shape(r) + " " + r.dtype, r.src_text + " -> " + r.dst_text, r.pytorch_trace.value_or("-"),
                    RecordedText(r), v.shardscope_notation.empty() ? "-" : v.shardscope_notation,
                    CountsText(v.shardscope_collectives), Name(v.verdict)});
    }
    table.Print(out, "  ");
  }
  PrintOps(result, out);
  bool any_reason = false;
  auto why = [&](int64_t line, const std::string& verdict, const std::string& reason) {
    if (reason.empty()) return;
    if (!any_reason) out << "why:\n";
    any_reason = true;
    out << "  line " << line << " (" << verdict << "): " << reason << "\n";
  };
  for (size_t i = 0; i < dump.redistributes.size(); ++i)
    why(dump.redistributes[i].line, Name(result.redistributes[i].verdict), result.redistributes[i].reason);
  for (size_t j = 0; j < dump.ops.size(); ++j) {
    const auto& v = result.ops[j];
    if (v.verdict != ImportVerdict::kOpaque) why(dump.ops[j].line, "op " + Name(v.verdict), v.reason);
  }
  if (!result.warnings.empty()) {
    out << "warnings: " << result.warnings.size() << "\n";
    for (const auto& w : result.warnings) out << "  line " << w.line << ": " << w.message << "\n";
  }
  if (!args.trace_dir.empty()) {
    out << "replay: " << result.replays << " distinct redistributes and " << result.op_runs
        << " distinct ops on " << mesh.size()
        << " local ranks, every result verified against the definition\n";
    out << "trace: " << args.trace_dir << " (shardscope show " << args.trace_dir << "; shardscope-gui "
        << args.trace_dir << ")\n";
  } else {
    out << "replay: none (no -o TRACE_DIR given)\n";
  }
  std::map<ImportVerdict, int> by_verdict, by_op_verdict;
  for (const auto& v : result.redistributes) ++by_verdict[v.verdict];
  for (const auto& v : result.ops) ++by_op_verdict[v.verdict];
  out << "verdicts:\n";
  TextTable verdicts({"verdict", "redistributes", "ops"});
  // The table's order: redistributes' verdicts (ops share same and differs), then the ops' own.
  for (const auto& [verdict, name] : trace::kImportVerdicts) {
    const bool redistribute = verdict != ImportVerdict::kNotComputed && verdict != ImportVerdict::kOpaque;
    const bool op = verdict != ImportVerdict::kCorruptingMerge && verdict != ImportVerdict::kNotReplayable;
    verdicts.AddRow({std::string(name), redistribute ? std::to_string(by_verdict[verdict]) : "-",
                     op ? std::to_string(by_op_verdict[verdict]) : "-"});
  }
  verdicts.Print(out, "  ");
}

}  // namespace

std::string ReadDebugModeText(const std::string& path, const std::string& command) {
  // Opened without blocking: a FIFO or a device named as the dump is refused, not waited on.
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(
      [&] {
        try {
          return OpenRegularFileForReading(path, "dump");
        } catch (const Error& e) {
          throw Error(e.code(), command + ": " + e.what());
        }
      }(),
      &std::fclose);
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), file.get())) > 0) {
    if (static_cast<int64_t>(text.size() + n) > kMaxDumpBytes)
      throw InvalidInput(command + ": '" + path + "' has more than the 1 GiB limit of bytes");
    text.append(buf, n);
  }
  if (std::ferror(file.get()))
    throw InvalidInput("import debugmode: cannot read '" + path + "': " + std::strerror(errno));
  return text;
}

int RunImportDebugMode(const ImportDebugModeArgs& args, std::ostream& out) {
  engine::Mesh mesh = BuildMesh(args.mesh);
  if (args.max_replay_elements < 0) {
    throw InvalidInput("--max-replay-elements: must be >= 0, got " +
                       std::to_string(args.max_replay_elements));
  }
  std::string text = ReadDebugModeText(args.dump, "import debugmode");
  // Claimed before the replay writes anything: a second job or an old trace there is refused.
  std::optional<StagedTraceDir> staged;
  if (!args.trace_dir.empty()) staged.emplace(args.trace_dir, "-o", args.force);
  program::ImportOptions options;
  options.mesh = mesh;
  options.max_replay_elements = args.max_replay_elements;
  std::optional<program::ImportResult> imported;
  auto import = [&] {
    try {
      imported = program::ImportDebugMode(text, options);
    } catch (const Error& e) {
      throw Error(e.code(), args.dump + ": " + e.what());
    }
  };
  if (staged) {
    staged->Write([&](const std::filesystem::path& dir) {
      options.trace_dir = dir;
      import();
    });
    staged->Commit();
  } else {
    import();
  }
  const program::ImportResult& result = *imported;
  if (args.json) {
    out << DumpJson(ToJson(result, mesh)) << "\n";
  } else {
    PrintText(args, result, mesh, out);
  }
  if (args.strict) {  // every verdict: redistributes, and ops shardscope implements
    for (const auto& v : result.redistributes) {
      if (v.verdict != ImportVerdict::kSame) return 1;
    }
    for (const auto& v : result.ops) {
      if (v.verdict != ImportVerdict::kSame && v.verdict != ImportVerdict::kOpaque) return 1;
    }
  }
  return 0;
}

}  // namespace shardscope::app
