// The importer registry: recognisers asked in order, the shardscope reader as the fallback.
#include "shardscope/trace/importers.hpp"

#include <mutex>
#include <utility>

#include "shardscope/error.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/kineto.hpp"

namespace shardscope::trace {
namespace {

namespace fs = std::filesystem;

Model ReadShardscopeTrace(const fs::path& path, const ReadOptions& options) {
  std::error_code ec;
  return fs::is_directory(path, ec) ? ReadTraceDir(path, options) : ReadTraceFile(path, options);
}

std::vector<Importer> BuiltInImporters() {
  return {
      {.name = "flight_recorder",
       .description = "PyTorch NCCL Flight Recorder dumps (pickle or JSON, one file per rank)",
       .recognises = [](const fs::path& p) { return IsFlightRecorderDump(p); },
       .read = [](const fs::path& p, const ReadOptions& o) { return ReadFlightRecorder({p}, o); }},
      {.name = "kineto",
       .description = "PyTorch profiler (Kineto) Chrome traces (.json or .json.gz, one file per rank)",
       .recognises = [](const fs::path& p) { return IsKinetoTrace(p); },
       .read = [](const fs::path& p, const ReadOptions& o) { return ReadKinetoModel({p}, o); }},
      {.name = "shardscope",
       .description = "shardscope traces (rank-<R>.jsonl, format v1 or v2)",
       .recognises = [](const fs::path&) { return true; },
       .read = ReadShardscopeTrace},
  };
}

struct Registry {
  std::mutex mutex;
  std::vector<Importer> registered;  // newest last; asked newest first
};

Registry& TheRegistry() {
  static Registry registry;
  return registry;
}

}  // namespace

void RegisterImporter(Importer importer) {
  Registry& r = TheRegistry();
  std::lock_guard lock(r.mutex);
  r.registered.push_back(std::move(importer));
}

bool IsTraceFileName(const std::string& name) {
  return name.rfind("rank-", 0) == 0 && name.size() > 6 && name.substr(name.size() - 6) == ".jsonl";
}

bool RecognisesFiles(const fs::path& path, const std::function<bool(const std::string&)>& name_ok,
                     const std::function<bool(const fs::path&)>& looks_ok) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return name_ok(path.filename().string()) && looks_ok(path);
  if (!fs::is_directory(path, ec)) return false;
  bool found = false;
  // A range-for would throw from the failing increment.
  std::error_code list_ec;
  for (fs::directory_iterator it(path, list_ec), end; !list_ec && it != end; it.increment(list_ec)) {
    const fs::directory_entry& entry = *it;
    std::string name = entry.path().filename().string();
    if (IsTraceFileName(name)) return false;
    if (!found && name_ok(name) && entry.is_regular_file(ec)) found = looks_ok(entry.path());
  }
  return found;
}

std::vector<Importer> Importers() {
  Registry& r = TheRegistry();
  std::vector<Importer> all;
  {
    std::lock_guard lock(r.mutex);
    all.assign(r.registered.rbegin(), r.registered.rend());
  }
  for (Importer& builtin : BuiltInImporters()) all.push_back(std::move(builtin));
  return all;
}

std::string ImporterFor(const fs::path& path) {
  for (const Importer& importer : Importers())
    if (importer.recognises(path)) return importer.name;
  return "shardscope";
}

Model ReadAnyTrace(const fs::path& path, const ReadOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InvalidInput(path.string() + ": no such trace file or directory");
  for (const Importer& importer : Importers())
    if (importer.recognises(path)) return importer.read(path, options);
  return ReadShardscopeTrace(path, options);
}

}  // namespace shardscope::trace
