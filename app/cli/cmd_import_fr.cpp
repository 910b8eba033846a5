// `shardscope import fr`: Flight Recorder dumps -> a shardscope trace (trace/flight_recorder.hpp).
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cli_output.hpp"
#include "shardscope/error.hpp"
#include "shardscope/files.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

int RunImportFr(const ImportFrArgs& args, std::ostream& out) {
  std::vector<std::filesystem::path> paths(args.paths.begin(), args.paths.end());
  for (const std::string& p : args.paths) {
    // A FIFO or device is refused here with what it is (the reader would call it missing).
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
      throw InvalidInput("import fr: '" + p + "' is " + FileKindName(st.st_mode) +
                         ", not a dump file or directory");
  }
  // The trace directory is claimed before the dumps are read: a second job or an old trace there
  // is refused before any work is done, and nothing is written over a dump.
  std::optional<StagedTraceDir> staged;
  if (!args.output.empty()) {
    for (const std::string& p : args.paths) {
      std::error_code ec;
      if (std::filesystem::exists(args.output, ec) && std::filesystem::equivalent(args.output, p, ec))
        throw InvalidInput("-o: '" + args.output + "' is the dump input '" + p +
                           "'; the trace needs a directory of its own");
    }
    staged.emplace(args.output, "-o", args.force);
  }
  trace::Model model = trace::ReadFlightRecorder(paths);
  PrintLoadWarnings(model, "");
  if (staged) {
    staged->Write([&](const std::filesystem::path& dir) { WriteRankFiles(model, dir); });
    staged->Commit();
  }
  // Per rank: entries, record id range, states; process groups by name with their ranks.
  struct Group {
    std::string desc;
    std::vector<int64_t> ranks;
    int64_t entries = 0;
  };
  std::map<std::string, Group> groups;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  std::string text;
  for (const trace::RankTrace& rt : model.ranks) {
    int64_t entries = 0, first = -1, last = -1;
    std::map<std::string, int64_t> states;
    for (const trace::Event& e : rt.events) {
      const auto* c = std::get_if<trace::Collective>(&e);
      if (c == nullptr || !c->HasFlight()) continue;
      ++entries;
      if (first < 0) first = c->flight.record_id;
      last = c->flight.record_id;
      ++states[c->flight_shape().state];
      Group& g = groups[c->flight_shape().pg_name];
      g.desc = c->flight_shape().pg_desc;
      g.ranks = c->group();
      ++g.entries;
    }
    std::string state_text;
    for (const auto& [s, n] : states)
      state_text += (state_text.empty() ? "" : ", ") + std::to_string(n) + " " + s;
    text += "  rank " + std::to_string(rt.header.rank) + "  " + rt.file + "  " + std::to_string(entries) +
            " entries" +
            (entries > 0 ? ", record_id " + std::to_string(first) + ".." + std::to_string(last) : "") +
            (first > 0 ? " (buffer wrapped)" : "") + (state_text.empty() ? "" : "; " + state_text) + "\n";
    ranks.push_back({{"rank", rt.header.rank},
                     {"file", rt.file},
                     {"entries", entries},
                     {"first_record_id", first},
                     {"last_record_id", last},
                     {"wrapped", first > 0},
                     {"states", states}});
  }
  nlohmann::ordered_json pgs = nlohmann::ordered_json::array();
  std::string pg_text;
  for (const auto& [name, g] : groups) {
    std::string list;
    for (size_t i = 0; i < g.ranks.size(); ++i) list += (i ? ", " : "") + std::to_string(g.ranks[i]);
    pg_text += "  " + name + (g.desc.empty() ? "" : " (" + g.desc + ")") + "  ranks [" + list + "]  " +
               std::to_string(g.entries) + " entries\n";
    pgs.push_back({{"name", name}, {"desc", g.desc}, {"ranks", g.ranks}, {"entries", g.entries}});
  }
  if (args.json) {
    nlohmann::ordered_json j = {
        {"world", model.world},
        {"dumps", model.ranks.size()},
        {"ranks", ranks},
        {"process_groups", pgs},
        {"output", args.output.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(args.output)}};
    out << DumpJson(j) << "\n";
    return 0;
  }
  out << "flight recorder: " << model.ranks.size() << " dump(s), world " << model.world << "\n"
      << "ranks:\n"
      << text << "process groups:\n"
      << pg_text;
  if (!args.output.empty())
    out << "wrote " << model.ranks.size() << " rank file(s) to " << args.output << "\n";
  return 0;
}

}  // namespace shardscope::app
