#pragma once
// Reading PyTorch NCCL Flight Recorder dumps (one file per rank, JSON or pickle) into the one trace
// Model, so that show, diff, check, export and the GUI work on them unchanged (docs/flight-recorder.md).
// Every collective of the result carries a FlightRecord; headers say backend "flight_recorder".

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardscope/trace/check.hpp"
#include "shardscope/trace/model.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::trace {

/// Largest dump file (pickle or JSON) the importer reads; a larger one is refused before reading.
inline constexpr int64_t kMaxPickleBytes = int64_t{256} << 20;
/// Deepest nesting of lists, tuples and dicts accepted in a pickle or JSON dump.
inline constexpr int kMaxPickleDepth = 64;

/// Parses a Python pickle (protocol 2 to 5) that holds only plain data: dict, list, tuple, str,
/// bytes, int (64-bit), float, bool, None, with memo references. Returns it as JSON (tuples become
/// arrays, bytes strings, int dict keys decimal strings; invalid UTF-8 becomes U+FFFD). Never
/// imports or calls anything: any other opcode (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ,
/// NEWOBJ, PERSID, ...) throws Error(kInvalidInput) naming it and its byte offset, as do truncation,
/// lengths past the end, more than kMaxPickleBytes of input, nesting deeper than kMaxPickleDepth
/// (cycles included) and expansions past fixed value and byte budgets. `where` prefixes messages.
nlohmann::json ReadPickle(std::string_view data, const std::string& where);

/// The rank a dump file name ends in ("nccl_trace_rank_3", "host-a.nccl_trace_rank_12.json",
/// "dump_7.pkl": a trailing run of digits, before an optional .json/.pkl/.pickle), or -1.
int64_t FlightRecorderRankOfFileName(const std::string& file_name);

/// True when `path` looks like Flight Recorder output rather than a shardscope trace: a file that
/// starts like a pickle or a JSON object that is not a trace header, or a directory with no
/// rank-<R>.jsonl but with at least one such file whose name ends in a rank. Reads at most a few
/// bytes per file; never throws.
bool IsFlightRecorderDump(const std::filesystem::path& path);

/// Reads the dumps named by `paths` (directories of dumps and/or dump files, one per rank, the rank
/// taken from the file name) into a Model: per rank, its entries in record_id order as Collective
/// events with `flight` set, the group's global ranks from pg_config, start/end from the discovered
/// times (time_created_ns and duration_ms when those are unknown). Diagnostics name wrapped ring
/// buffers and ranks with no dump. Throws Error(kInvalidInput) naming the file and field for a
/// malformed dump, two files of one rank or no dump at all, and Error(kUnsupported) for a dump
/// whose version is not 2.x. options.progress, when set, counts the dump files and their bytes
/// (a file's bytes when it has been read).
Model ReadFlightRecorder(const std::vector<std::filesystem::path>& paths, const ReadOptions& options = {});

/// One rank's dump as ReadFlightRecorderEach hands it over: the rank's trace as ReadFlightRecorder
/// holds it (except header.world and the mesh, which need every file), the diagnostics of this file,
/// and the largest rank the dump names (its own rank and its groups' members).
struct FlightRecorderDump {
  RankTrace trace;
  std::vector<Diagnostic> diagnostics;
  int64_t max_rank = 0;
};

/// Reads the dumps named by `paths` as ReadFlightRecorder does, on `jobs` threads (0: one per core;
/// never more than the files), each thread keeping its parser buffers and interned strings from file
/// to file, and hands every rank's dump to `sink` on the thread that read it, then drops it: memory
/// grows with what the sink keeps, not with the input. `sink` runs concurrently on several threads;
/// an exception it throws counts as a failure of that file. Throws what ReadFlightRecorder throws
/// (the first failing file in rank order); files after a failing one may be skipped.
/// `progress`, when set, counts the dump files and their bytes as ReadFlightRecorder's does.
void ReadFlightRecorderEach(const std::vector<std::filesystem::path>& paths, int jobs,
                            const std::function<void(FlightRecorderDump&)>& sink,
                            ReadProgress* progress = nullptr);

/// The model ReadFlightRecorder(paths) makes of its dumps, from the dumps ReadFlightRecorderEach
/// handed over for the same `paths` (in any order, every one of them): a reader that streams the
/// dumps for something else first (the GUI's triage) keeps them and needs no second read.
Model AssembleFlightRecorderModel(const std::vector<std::filesystem::path>& paths,
                                  std::vector<FlightRecorderDump> dumps);

/// `shardscope check` of the dumps named by `paths` without holding them: CheckTrace's result on
/// ReadFlightRecorder(paths, options), read through ReadFlightRecorderEach (options.jobs threads,
/// options.progress) with only 16 bytes kept per entry. Appends to `diagnostics` what that model's
/// diagnostics would be, in the same order. Throws what ReadFlightRecorder throws.
CheckResult CheckFlightRecorder(const std::vector<std::filesystem::path>& paths, const ReadOptions& options,
                                std::vector<Diagnostic>& diagnostics);

/// The Flight Recorder part of `show`: per process group, one line per collective_seq_id (the
/// lowest rank's profiling name, sizes and dtype; the ranks per state; the ranks whose buffer does
/// not hold it as "absent"), then the sends/recvs per rank. Pure, deterministic.
std::string FormatFlightText(const Model& model);

/// The same as JSON: {"process_groups": [{name, desc, ranks, collectives: [{seq_id,
/// profiling_name, input_sizes, output_sizes, input_dtypes, states: {rank: state}}], p2p: [...]}]}.
nlohmann::json FlightJson(const Model& model);

/// True when some collective of `model` carries a flight record (from any importer, or written by
/// hand): what show's flight section, the check's process group rules and the GUI's flight view
/// work on. Pure; stops at the first one found.
bool HasFlightRecords(const Model& model);

}  // namespace shardscope::trace
