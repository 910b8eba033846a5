// Generated-input fuzzing of the two parsers of untrusted input: the trace reader and the scenario
// parser. Valid inputs are mutated (byte flips, truncations, huge and negative numbers, deep nesting,
// dropped/duplicated/swapped lines) many times within a time budget; every outcome must be a parsed
// result or a shardscope::Error, never another exception, a crash or a hang. Run under ASan/UBSan by
// scripts/sanitize.sh. SHARDSCOPE_FUZZ_ITERATIONS and SHARDSCOPE_FUZZ_SECONDS bound each case
// (defaults 2000 and 10 s); SHARDSCOPE_FUZZ_SEED changes the mutation stream.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../common/test_knobs.hpp"
#include "../common/trace_rewrite.hpp"
#include "shardscope/error.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"
#include "shardscope/trace/check.hpp"
#include "shardscope/trace/chrome_export.hpp"
#include "shardscope/trace/codec.hpp"
#include "shardscope/trace/diff.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/summary.hpp"

namespace fs = std::filesystem;
using namespace shardscope;

namespace {

const fs::path kSource = fs::path(SHARDSCOPE_SOURCE_DIR);

int64_t EnvInt(const shardscope::Knob& knob, int64_t fallback) {
  return shardscope::KnobInteger(knob).value_or(fallback);
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// Stops after `iterations` or `seconds`, whichever comes first (sanitizer builds are slow).
class Budget {
 public:
  Budget()
      : iterations_(EnvInt(shardscope::knobs::FuzzIterations(), 2000)),
        deadline_(std::chrono::steady_clock::now() +
                  std::chrono::seconds(EnvInt(shardscope::knobs::FuzzSeconds(), 10))) {}
  bool Next() { return done_++ < iterations_ && std::chrono::steady_clock::now() < deadline_; }
  int64_t Done() const { return done_ - 1; }

 private:
  int64_t iterations_;
  std::chrono::steady_clock::time_point deadline_;
  int64_t done_ = 0;
};

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  size_t Below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  std::string Mutate(std::string s) {
    const int rounds = 1 + static_cast<int>(Below(3));
    for (int i = 0; i < rounds; ++i) s = MutateOnce(std::move(s));
    return s;
  }

 private:
  static inline const std::vector<std::string> kNumbers = {"0",
                                                           "-1",
                                                           "-9223372036854775808",
                                                           "9223372036854775807",
                                                           "18446744073709551616",
                                                           "1e308",
                                                           "-1e308",
                                                           "1.5",
                                                           "281474976710657",
                                                           "1048577",
                                                           "4294967296",
                                                           "65537",
                                                           "NaN",
                                                           "1e-400",
                                                           "99999999999999999999999999"};
  static inline const std::vector<std::string> kTokens = {"{",
                                                          "}",
                                                          "[",
                                                          "]",
                                                          ",",
                                                          ":",
                                                          "\"",
                                                          "null",
                                                          "true",
                                                          "\\u0000",
                                                          "\xff",
                                                          "\xc3",
                                                          "\n",
                                                          "\"type\":\"collective\"",
                                                          "\"type\":\"op\"",
                                                          "\"op_id\":0,",
                                                          "\"redistribute_id\":-1,",
                                                          "\"\"",
                                                          "[]"};
  std::string ExtremeNumber(std::string s) {
    std::vector<size_t> starts;
    for (size_t i = 0; i < s.size(); ++i)
      if (std::isdigit(static_cast<unsigned char>(s[i])) &&
          (i == 0 || !std::isdigit(static_cast<unsigned char>(s[i - 1]))))
        starts.push_back(i);
    if (starts.empty()) return s;
    size_t b = starts[Below(starts.size())], e = b;
    while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
    return s.substr(0, b) + kNumbers[Below(kNumbers.size())] + s.substr(e);
  }

  std::string LineEdit(const std::string& s) {
    std::vector<std::string> lines;
    std::stringstream in(s);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    if (lines.empty()) return s;
    size_t i = Below(lines.size()), j = Below(lines.size());
    if (Below(3) == 0)
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i));
    else if (Below(2) == 0)
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), lines[j]);
    else
      std::swap(lines[i], lines[j]);
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out;
  }

  std::string MutateOnce(std::string s) {
    switch (Below(9)) {
      case 0:  // flip a byte
        if (!s.empty()) s[Below(s.size())] = static_cast<char>(Below(256));
        return s;
      case 1:  // truncate
        return s.substr(0, Below(s.size() + 1));
      case 2:  // replace a run of digits by an extreme number
        return ExtremeNumber(std::move(s));
      case 3: {  // deep nesting in place of a value
        size_t at = s.find(':', Below(s.size()));
        if (at == std::string::npos) return s;
        const size_t depth = 1 + Below(3000);
        return s.substr(0, at + 1) + std::string(depth, '[') + "1" + std::string(Below(2) ? depth : 0, ']') +
               s.substr(at + 1);
      }
      case 4: {  // insert a token
        size_t at = Below(s.size() + 1);
        return s.substr(0, at) + kTokens[Below(kTokens.size())] + s.substr(at);
      }
      case 5:
      case 6:
      case 7:  // line edits: drop, duplicate, swap
        return LineEdit(s);
      default: {  // copy a span over another place (mixes fields of different events)
        if (s.size() < 2) return s;
        size_t from = Below(s.size()), len = 1 + Below(std::min<size_t>(64, s.size() - from));
        size_t to = Below(s.size());
        return s.substr(0, to) + s.substr(from, len) + s.substr(std::min(s.size(), to + len));
      }
    }
  }

  std::mt19937_64 rng_;
};

// Each seed directory rewritten in trace format v2 under `work` (the reader's v2 rules get mutated
// input too).
std::vector<fs::path> AsV2(const std::vector<fs::path>& seeds, const fs::path& work) {
  std::vector<fs::path> out;
  for (const fs::path& seed : seeds)
    out.push_back(shardscope::testing::WriteTraceAs(trace::ReadTraceDir(seed), work / seed.filename(), 2));
  return out;
}

// Everything downstream of the reader must cope with whatever the reader accepted.
void Exercise(const trace::Model& model, const trace::Model& original) {
  (void)trace::FormatShowText(model);
  (void)trace::ShowJson(model).dump();
  trace::CheckResult check = trace::CheckTrace(model);
  (void)trace::FormatCheckText(check, 5);
  (void)trace::CheckJson(check, 5).dump();
  (void)trace::ChromeTraceJson(model).dump(-1, ' ', true);
  trace::DiffOptions options = trace::ParseFailOn("all,time:10%");
  (void)trace::FormatDiffText(trace::DiffTraces(original, model, options));
  (void)trace::DiffJson(trace::DiffTraces(model, original, options)).dump();
}

}  // namespace

TEST_CASE("fuzz: mutated trace files are read or rejected with shardscope::Error", "[trace][fuzz]") {
  std::vector<fs::path> seeds = {
      kSource / "tests/golden/trace/two_rank",        kSource / "tests/golden/check/clean",
      kSource / "tests/golden/check/missing_ranks",   kSource / "samples/ci/golden",
      kSource / "tests/golden/trace/program",          // ops, implicit redistributes, a halo exchange
      kSource / "tests/golden/trace/flight_recorder",  // imported Flight Recorder entries ("flight")
      kSource / "tests/golden/trace/repeat"};          // v2 redistribute_repeat lines
  const fs::path work = fs::temp_directory_path() / ("shardscope_fuzz_trace_" + std::to_string(::getpid()));
  const fs::path v2_seeds = work.string() + "_v2";
  for (const fs::path& v2 : AsV2(seeds, v2_seeds)) seeds.push_back(v2);
  Mutator mutator(static_cast<uint64_t>(EnvInt(shardscope::knobs::FuzzSeed(), 20240601)));
  std::vector<trace::Model> originals;
  for (const fs::path& seed : seeds) originals.push_back(trace::ReadTraceDir(seed));
  Budget budget;
  int64_t accepted = 0, rejected = 0;
  while (budget.Next()) {
    const size_t which = mutator.Below(seeds.size());
    const fs::path& seed = seeds[which];
    fs::remove_all(work);
    fs::create_directories(work);
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(seed)) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    const size_t victim = mutator.Below(files.size());
    std::string mutated;
    for (size_t i = 0; i < files.size(); ++i) {
      std::string text = ReadFile(files[i]);
      if (i == victim) text = mutated = mutator.Mutate(text);
      WriteFile(work / files[i].filename(), text);
    }
    try {
      trace::Model model = trace::ReadTraceDir(work);
      ++accepted;
      Exercise(model, originals[which]);
    } catch (const Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      const fs::path keep = fs::temp_directory_path() / "shardscope_fuzz_failure.jsonl";
      WriteFile(keep, mutated);
      FAIL("iteration " << budget.Done() << " (" << seed.filename().string() << ", file "
                        << files[victim].filename().string() << "): non-shardscope exception '" << e.what()
                        << "'; input saved to " << keep.string());
    }
  }
  fs::remove_all(work);
  fs::remove_all(v2_seeds);
  WARN("trace fuzz: " << accepted << " accepted, " << rejected << " rejected");
  CHECK(accepted + rejected > 0);
}

// A v2 trace of a few KB may claim a world of up to 2^20 ranks: one rank file (or a few), its
// collectives leaving the group to the mesh and the bytes uniform, then many redistribute_repeat
// lines. What a tool builds from it must follow the files, not the claim: the Chrome export lists
// at most kChromeListedPeers peers per collective slice and check reports at most 65 missing rank
// files (64 one by one and the rest in one), so both are bounded by a constant per event.
std::string AmplifiedTrace(int64_t rank, const std::vector<int64_t>& mesh, int64_t repeats) {
  int64_t world = 1;
  for (int64_t d : mesh) world *= d;
  std::string shape, names, ones;
  for (size_t i = 0; i < mesh.size(); ++i) {
    shape += (i ? "," : "") + std::to_string(mesh[i]);
    names += std::string(i ? "," : "") + "\"d" + std::to_string(i) + "\"";
    ones += std::string(i ? "," : "") + "\"S(0)\"";
  }
  const std::string dims = mesh.size() == 1 ? "[0]" : "[0,1]";
  std::string text =
      "{\"type\":\"header\",\"format\":\"shardscope-trace\",\"version\":2,\"rank\":" + std::to_string(rank) +
      ",\"world\":" + std::to_string(world) + ",\"mesh\":{\"shape\":[" + shape + "],\"dim_names\":[" + names +
      "]},\"backend\":\"local\",\"host\":\"h\",\"pid\":1,\"clock\":{\"name\":\"steady\",\"offset_ns\":0}}\n";
  text += "{\"type\":\"redistribute_begin\",\"id\":0,\"tensor\":\"x\",\"global_shape\":[" +
          std::to_string(world) + ",3],\"dtype\":\"f32\",\"src_placements\":[" + ones +
          "],\"dst_placements\":[" + (mesh.size() == 1 ? std::string("\"R\"") : std::string("\"R\",\"R\"")) +
          "],\"planner\":\"greedy\",\"planner_reason\":\"default\",\"notation\":\"n\",\"raw_plan\":[{\"mesh_"
          "dims\":" +
          dims + ",\"src\":\"S(0)\",\"dst\":\"R\",\"comm\":\"all_gather\",\"logical_shape\":[" +
          std::to_string(world) + ",3],\"cost_us\":4.5}],\"cost_us\":4.5,\"t_ns\":1000}\n";
  text +=
      "{\"type\":\"step_begin\",\"redistribute_id\":0,\"step\":0,\"local_shape_before\":[1,3],"
      "\"global_offset_before\":[0,0],\"t_ns\":1100}\n";
  text +=
      "{\"type\":\"collective\",\"redistribute_id\":0,\"step\":0,\"bytes_sent\":12,\"bytes_recv\":12,"
      "\"start_ns\":1200,\"end_ns\":3200}\n";
  text += "{\"type\":\"step_end\",\"redistribute_id\":0,\"step\":0,\"local_shape_after\":[" +
          std::to_string(world) + ",3],\"global_offset_after\":[0,0],\"t_ns\":3300}\n";
  text += "{\"type\":\"redistribute_end\",\"id\":0,\"t_ns\":3400}\n";
  for (int64_t i = 1; i <= repeats; ++i) {
    text += "{\"type\":\"redistribute_repeat\",\"id\":" + std::to_string(i) +
            ",\"like\":0,\"t_ns\":" + std::to_string(1000 + 10000 * i) +
            ",\"dt\":[100,200,2200,2300,2400]}\n";
  }
  return text;
}

TEST_CASE("fuzz: tiny v2 traces over a huge claimed world cost what their files hold",
          "[trace][fuzz][amplify]") {
  Mutator mutator(static_cast<uint64_t>(EnvInt(shardscope::knobs::FuzzSeed(), 20240601)) + 39);
  const fs::path work = fs::temp_directory_path() / ("shardscope_fuzz_amplify_" + std::to_string(::getpid()));
  // A big world costs about 16 MB per distinct expanded byte list: fewer cases than the other fuzzers.
  Budget budget;
  int64_t accepted = 0, rejected = 0, cases = 0;
  while (budget.Next() && cases < 40) {
    ++cases;
    std::vector<int64_t> mesh;
    const int64_t log_world = 10 + static_cast<int64_t>(mutator.Below(11));  // 2^10 .. 2^20 ranks
    if (mutator.Below(2) == 0) {
      mesh = {int64_t{1} << log_world};
    } else {
      const int64_t first = static_cast<int64_t>(mutator.Below(static_cast<size_t>(log_world) + 1));
      mesh = {int64_t{1} << first, int64_t{1} << (log_world - first)};
    }
    const int64_t world = int64_t{1} << log_world;
    fs::remove_all(work);
    fs::create_directories(work);
    const size_t files = 1 + mutator.Below(3);
    for (size_t f = 0; f < files; ++f) {
      const int64_t rank = f == 0 ? 0 : static_cast<int64_t>(mutator.Below(static_cast<size_t>(world)));
      std::string text = AmplifiedTrace(rank, mesh, 1 + static_cast<int64_t>(mutator.Below(200)));
      if (mutator.Below(3) == 0) text = mutator.Mutate(text);
      WriteFile(work / ("rank-" + std::to_string(rank) + ".jsonl"), text);
    }
    try {
      trace::Model model = trace::ReadTraceDir(work);
      ++accepted;
      int64_t events = 0;
      for (const trace::RankTrace& rt : model.ranks) events += static_cast<int64_t>(rt.events.size());
      trace::CheckResult check = trace::CheckTrace(model);
      // At most 65 reports of missing files, and a few per event (redistribute, call, op).
      CHECK(static_cast<int64_t>(check.mismatches.size()) <= 65 + 4 * events);
      const size_t chrome = trace::ChromeTraceJson(model).dump(-1, ' ', true).size();
      // A collective slice lists at most kChromeListedPeers ranks (about 9 bytes each) in its group
      // and byte lists; every other slice and the metadata are far below 4 KB.
      CHECK(chrome <=
            static_cast<size_t>(4096 + 27 * trace::kChromeListedPeers) * static_cast<size_t>(events + 8));
      (void)trace::FormatShowText(model);
      (void)trace::FormatCheckText(check, 5);
    } catch (const Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      FAIL("amplified trace over " << world << " ranks: non-shardscope exception '" << e.what() << "'");
    }
  }
  fs::remove_all(work);
  WARN("amplify fuzz: " << accepted << " accepted, " << rejected << " rejected");
  CHECK(accepted > 0);
}

// FIFOs, devices and directories where a trace, a rank file or a dump is expected: refused or
// skipped with a diagnostic at once, never waited on (a FIFO's open would block without a writer).
TEST_CASE("fuzz: special files as trace inputs are refused without blocking", "[trace][fuzz][special]") {
  const fs::path work = fs::temp_directory_path() / ("shardscope_fuzz_special_" + std::to_string(::getpid()));
  fs::remove_all(work);
  fs::create_directories(work);
  const fs::path good = kSource / "tests/golden/trace/two_rank";
  // Kinds of special file this machine lets us make; a character device needs CAP_MKNOD.
  auto make = [&](const fs::path& p, int kind) {
    switch (kind) {
      case 0:
        return ::mkfifo(p.c_str(), 0600) == 0;
      case 1:
        return ::mknod(p.c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0;  // a private null device
      default:
        return fs::create_directory(p);
    }
  };
  for (int kind = 0; kind < 3; ++kind) {
    INFO("kind " << kind << " (0 FIFO, 1 character device, 2 directory)");
    const fs::path dir = work / ("dir" + std::to_string(kind));
    fs::create_directories(dir);
    fs::copy_file(good / "rank-0.jsonl", dir / "rank-0.jsonl");
    if (!make(dir / "rank-1.jsonl", kind)) {
      WARN("cannot make special file kind " << kind << " here; skipped");
      continue;
    }
    // The directory: rank 1 is skipped with a diagnostic naming its file; rank 0 is read.
    trace::Model model = trace::ReadTraceDir(dir);
    CHECK(model.ranks.size() == 1);
    bool named = false;
    for (const trace::Diagnostic& d : model.diagnostics) named = named || d.file == "rank-1.jsonl";
    CHECK(named);
    // The special file itself as the trace: one shardscope::Error.
    if (kind != 2) CHECK_THROWS_AS(trace::ReadAnyTrace(dir / "rank-1.jsonl"), Error);
  }
  fs::remove_all(work);
}

// The reader's simdjson fast path declines what it does not fully understand and leaves it to the
// reference path, so both must agree on every mutated file: the same events and diagnostics, or
// the same error.
TEST_CASE("fuzz: the fast and the reference reader agree on mutated rank files", "[trace][fuzz][fast]") {
  std::vector<fs::path> dirs;
  for (const char* dir :
       {"tests/golden/trace/two_rank", "tests/golden/check/clean", "samples/ci/golden",
        "tests/golden/trace/program", "tests/golden/trace/torn", "tests/golden/trace/repeat"})
    dirs.push_back(kSource / dir);
  const fs::path work = fs::temp_directory_path() / ("shardscope_fuzz_fast_" + std::to_string(::getpid()));
  const fs::path v2_seeds = work.string() + "_v2";
  for (const fs::path& v2 : AsV2(dirs, v2_seeds)) dirs.push_back(v2);  // both readers' v2 rules
  std::vector<fs::path> files;
  for (const fs::path& dir : dirs)
    for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  fs::create_directories(work);
  const fs::path file = work / "rank-0.jsonl";
  Mutator mutator(static_cast<uint64_t>(EnvInt(shardscope::knobs::FuzzSeed(), 20240601)) + 2);
  auto outcome = [&](bool fast) {
    std::string out;
    try {
      trace::Model m = trace::ReadTraceFile(file, {.jobs = 1, .fast = fast});
      out = "ok " + std::to_string(m.ranks[0].events.size()) + " " +
            trace::ToLine(trace::ToJson(m.ranks[0].header));
      for (const trace::Event& e : m.ranks[0].events) out += "\n" + trace::ToLine(trace::ToJson(e));
      for (const trace::Diagnostic& d : m.diagnostics)
        out += "\n" + d.file + ":" + std::to_string(d.line) + d.message;
    } catch (const Error& e) {
      out = "error " + std::to_string(static_cast<int>(e.code())) + " " + e.what();
    }
    return out;
  };
  Budget budget;
  int64_t same = 0;
  while (budget.Next()) {
    std::string mutated = mutator.Mutate(ReadFile(files[mutator.Below(files.size())]));
    WriteFile(file, mutated);
    std::string fast = outcome(true), reference = outcome(false);
    if (fast != reference) {
      const fs::path keep = fs::temp_directory_path() / "shardscope_fuzz_fast_failure.jsonl";
      WriteFile(keep, mutated);
      FAIL("iteration " << budget.Done() << ": fast path gave\n"
                        << fast << "\nreference path gave\n"
                        << reference << "\ninput saved to " << keep.string());
    }
    ++same;
  }
  fs::remove_all(work);
  fs::remove_all(v2_seeds);
  CHECK(same > 0);
}

TEST_CASE("fuzz: mutated scenarios are parsed or rejected with shardscope::Error",
          "[engine][scenario][fuzz]") {
  std::vector<std::string> seeds;
  for (const auto& entry : fs::directory_iterator(kSource / "samples"))
    if (entry.path().extension() == ".json") seeds.push_back(ReadFile(entry.path()));
  REQUIRE_FALSE(seeds.empty());
  Mutator mutator(static_cast<uint64_t>(EnvInt(shardscope::knobs::FuzzSeed(), 20240601)) + 1);
  Budget budget;
  int64_t accepted = 0, rejected = 0;
  while (budget.Next()) {
    std::string text = mutator.Mutate(seeds[mutator.Below(seeds.size())]);
    try {
      program::Scenario s = program::ParseScenario(text, "fuzz.json");
      ++accepted;
    } catch (const Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      const fs::path keep = fs::temp_directory_path() / "shardscope_fuzz_failure.json";
      WriteFile(keep, text);
      FAIL("iteration " << budget.Done() << ": non-shardscope exception '" << e.what() << "'; input saved to "
                        << keep.string());
    }
  }
  WARN("scenario fuzz: " << accepted << " accepted, " << rejected << " rejected");
  CHECK(accepted + rejected > 0);
}

TEST_CASE("fuzz: scenarios and programs with duplicate keys or huge sizes are refused cleanly",
          "[engine][scenario][fuzz]") {
  std::vector<std::string> seeds;
  for (const fs::path& dir : {kSource / "samples", kSource / "samples/programs"}) {
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".json") seeds.push_back(ReadFile(entry.path()));
  }
  REQUIRE(seeds.size() >= 8);
  std::mt19937_64 rng(static_cast<uint64_t>(EnvInt(shardscope::knobs::FuzzSeed(), 20240601)) + 2);
  auto below = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  Budget budget;
  int64_t duplicates = 0, huge_refused = 0, huge_rejected = 0;
  while (budget.Next()) {
    std::string text = seeds[below(seeds.size())];
    std::string expect;
    if (rng() % 2 == 0) {
      // Duplicate key: before a member `"k": ...` (after '{' or ','), insert `"k": null, ` in
      // the same object.
      std::vector<std::pair<size_t, std::string>> members;
      for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '"') continue;
        size_t k = i;
        while (k > 0 && std::isspace(static_cast<unsigned char>(text[k - 1]))) --k;
        const size_t close = text.find('"', i + 1);
        if (close == std::string::npos) break;
        size_t colon = close + 1;
        while (colon < text.size() && std::isspace(static_cast<unsigned char>(text[colon]))) ++colon;
        if (k > 0 && (text[k - 1] == '{' || text[k - 1] == ',') && colon < text.size() && text[colon] == ':')
          members.emplace_back(i, text.substr(i + 1, close - i - 1));
        i = close;
      }
      REQUIRE_FALSE(members.empty());
      const auto& [at, key] = members[below(members.size())];
      text.insert(at, "\"" + key + "\": null, ");
      expect = "duplicate key '" + key + "'";
      ++duplicates;
    } else {
      // Huge size: one extent of a "shape" becomes 2^36..2^50 (past 2^48 the parser refuses it;
      // below, the run's memory estimate must refuse it before allocating).
      size_t shape = text.find("\"shape\"");
      std::vector<size_t> shapes;
      for (; shape != std::string::npos; shape = text.find("\"shape\"", shape + 1)) shapes.push_back(shape);
      REQUIRE_FALSE(shapes.empty());
      size_t digit = text.find_first_of("0123456789", text.find('[', shapes[below(shapes.size())]));
      size_t end = text.find_first_not_of("0123456789", digit);
      text.replace(digit, end - digit, std::to_string(int64_t{1} << (36 + below(15))));
    }
    try {
      program::Scenario s = program::ParseScenario(text, "fuzz.json");
      if (!expect.empty()) FAIL("a duplicate key was accepted: " << expect << "\n" << text);
      program::RunOptions options;
      options.verify = true;
      CHECK_THROWS_WITH(program::RunScenario(s, options), Catch::Contains("needs up to"));
      ++huge_refused;
    } catch (const Error& e) {
      if (!expect.empty()) {
        CHECK_THAT(e.what(), Catch::Contains(expect));
      } else {
        ++huge_rejected;
      }
    } catch (const std::exception& e) {
      const fs::path keep = fs::temp_directory_path() / "shardscope_fuzz_failure.json";
      WriteFile(keep, text);
      FAIL("non-shardscope exception '" << e.what() << "'; input saved to " << keep.string());
    }
  }
  WARN("duplicate/huge fuzz: " << duplicates << " duplicates refused, " << huge_rejected
                               << " huge sizes rejected by the parser, " << huge_refused
                               << " refused by the memory estimate");
  CHECK(duplicates > 0);
}
