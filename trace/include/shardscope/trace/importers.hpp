#pragma once
// The one way into the trace model, as Perfetto's trace reader registry: each importer recognises
// its input (a file or directory, by names and first bytes) and reads it into the one Model, so no
// tool or view asks where data came from (docs/architecture.md, "Importers").

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "shardscope/trace/model.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::trace {

/// One kind of input the tools open directly.
struct Importer {
  std::string name;         ///< short id: "flight_recorder", "shardscope", ...
  std::string description;  ///< one line for help and error texts
  /// True when `path` (a file or directory) is this importer's input. Reads at most a few bytes per
  /// file; never throws, never blocks on special files.
  std::function<bool(const std::filesystem::path&)> recognises;
  /// Reads `path` into a Model. Throws Error(kInvalidInput) naming the file for bad input.
  std::function<Model(const std::filesystem::path&, const ReadOptions&)> read;
};

/// True for a shardscope rank file name: rank-<R>.jsonl.
bool IsTraceFileName(const std::string& name);

/// How an importer of files recognises its input: `path` is a regular file whose name `name_ok`
/// accepts and whose first bytes `looks_ok` accepts, or a directory holding at least one such file
/// and no shardscope rank file. Never throws: a listing that fails part way answers from what it
/// listed (the reader that then lists the directory reports the error).
bool RecognisesFiles(const std::filesystem::path& path,
                     const std::function<bool(const std::string&)>& name_ok,
                     const std::function<bool(const std::filesystem::path&)>& looks_ok);

/// Adds `importer`, asked before every importer registered earlier and before the built-in ones
/// (Flight Recorder dumps, then shardscope traces, which take whatever no other importer claims).
/// Thread-safe; meant for start-up (a layer above trace registers its readers once).
void RegisterImporter(Importer importer);

/// The importers in the order they are asked: the registered ones (newest first), then the
/// built-in ones. Thread-safe; returns a copy.
std::vector<Importer> Importers();

/// The name of the importer that claims `path` ("shardscope" when no other one does). Never throws.
std::string ImporterFor(const std::filesystem::path& path);

/// Any input the tools accept, read by the first importer that recognises it; a path no importer
/// recognises is read as a shardscope trace directory (ReadTraceDir) or rank file (ReadTraceFile),
/// whose errors say what was expected. Throws Error(kInvalidInput) for a missing path.
Model ReadAnyTrace(const std::filesystem::path& path, const ReadOptions& options = {});

}  // namespace shardscope::trace
