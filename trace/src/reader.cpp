#include "shardscope/trace/reader.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <memory>
#include <system_error>
#include <thread>

#include "missing_ranks.hpp"
#include "rank_file.hpp"
#include "shardscope/error.hpp"
#include "shardscope/files.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::trace {

namespace {

using detail::FileResult;

void AddFile(Model& model, FileResult&& file) {
  model.world = file.trace.header.world;
  model.ranks.push_back(std::move(file.trace));
  for (RedistributeRecord& rec : file.records) model.redistributes.push_back(std::move(rec));
  for (OpRecord& rec : file.ops) model.ops.push_back(std::move(rec));
  for (Diagnostic& d : file.diagnostics) model.diagnostics.push_back(std::move(d));
}

void SortRedistributes(Model& model) {
  // Files are merged in rank order and writers number redistributes and ops in file order, so the
  // records are usually sorted already; moving a million records around costs more than checking.
  auto by_rank_id = [](const RedistributeRecord& a, const RedistributeRecord& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.begin->id < b.begin->id;
  };
  if (!std::is_sorted(model.redistributes.begin(), model.redistributes.end(), by_rank_id))
    std::stable_sort(model.redistributes.begin(), model.redistributes.end(), by_rank_id);
  auto op_by_rank_id = [](const OpRecord& a, const OpRecord& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.op->id < b.op->id;
  };
  if (!std::is_sorted(model.ops.begin(), model.ops.end(), op_by_rank_id))
    std::stable_sort(model.ops.begin(), model.ops.end(), op_by_rank_id);
  model.Reindex();
}

// Hands the memory that parsing freed (line buffers, parser state, the per-file results) back to
// the system, so that what stays resident after a load is the model.
void ReleaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// Runs work(0, parser, scratch) .. work(count - 1, parser, scratch) on `jobs` threads (at most max_threads,
// the caller's among them), each index once; every thread owns one DOM parser and one ReadScratch, which
// keep their buffers from file to file.
template <typename Work>
void ParallelFor(size_t count, int jobs, int64_t max_threads, Work work) {
  size_t threads = jobs > 0 ? static_cast<size_t>(jobs) : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min({threads, count, static_cast<size_t>(max_threads)});
  std::atomic<size_t> next{0};
  // simdjson picks its kernel (haswell, westmere, fallback) on first use through a process-wide
  // pointer; make that first use here, on one thread, before the workers parse concurrently.
  static const bool kSimdjsonReady = [] { return !simdjson::get_active_implementation()->name().empty(); }();
  (void)kSimdjsonReady;
  auto run = [&] {
    simdjson::dom::parser parser;
    detail::ReadScratch scratch;
    for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) work(i, parser, scratch);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(run);
  run();
  for (std::thread& t : pool) t.join();
}

// "rank-3.jsonl:12: what" -> line 12 and "what", for a diagnostic that names the file apart.
std::pair<int64_t, std::string> SplitLocation(const std::string& file, const std::string& message) {
  if (message.compare(0, file.size() + 1, file + ":") == 0) {
    size_t colon = message.find(": ", file.size() + 1);
    std::string digits = message.substr(file.size() + 1, colon - file.size() - 1);
    if (colon != std::string::npos && !digits.empty() && digits.size() < 12 &&
        digits.find_first_not_of("0123456789") == std::string::npos) {
      return {std::stoll(digits), message.substr(colon + 2)};
    }
  }
  if (message.compare(0, file.size() + 2, file + ": ") == 0) return {0, message.substr(file.size() + 2)};
  return {0, message};
}

// The rank files of `dir` by rank; throws when there is none, two for one rank, or a rank beyond
// the limit.
std::map<int64_t, std::filesystem::path> ListRankFiles(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw InvalidInput("trace: '" + dir.string() + "' is not a directory");
  }
  std::map<int64_t, std::filesystem::path> files;
  for (const auto& entry : ListDirectory(dir, "trace")) {
    std::string name = entry.path().filename().string();
    int64_t rank = RankOfFileName(name);
    if (rank < 0) continue;
    if (rank >= kMaxRanks) throw InvalidInput(name + ": rank " + std::to_string(rank) + " exceeds the limit");
    auto [it, inserted] = files.emplace(rank, entry.path());
    if (!inserted) {
      std::string a = it->second.filename().string(), b = name;
      if (b < a) std::swap(a, b);
      throw InvalidInput("trace: two files for rank " + std::to_string(rank) + " in '" + dir.string() +
                         "': " + a + " and " + b);
    }
  }
  if (files.empty()) throw InvalidInput("trace: no rank-<R>.jsonl files in '" + dir.string() + "'");
  return files;
}

using RankFiles = std::vector<std::pair<int64_t, std::filesystem::path>>;

// What reading every file gave: a result, or the error that cost that rank.
struct FileOutcomes {
  std::vector<std::optional<FileResult>> results;
  std::vector<std::optional<Error>> errors;
};

// Each file is parsed and assembled on its own, in parallel; only the merge is sequential.
FileOutcomes ReadAllFiles(const RankFiles& list, const ReadOptions& options) {
  std::error_code ec;
  int64_t bytes = 0;
  for (const auto& [rank, path] : list) {
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec) bytes += static_cast<int64_t>(size);
  }
  if (options.progress != nullptr) {
    options.progress->bytes_total = bytes;
    options.progress->files_total = static_cast<int64_t>(list.size());
  }
  // By default a thread is started per 4 MiB of input at most (a small trace reads on the calling
  // thread alone); an explicit --jobs is taken as asked.
  const int64_t worth = options.jobs > 0 ? options.jobs : bytes / (int64_t{4} << 20) + 1;
  FileOutcomes out{std::vector<std::optional<FileResult>>(list.size()),
                   std::vector<std::optional<Error>>(list.size())};
  std::vector<std::exception_ptr> crashes(list.size());
  // The ranks of a run repeat each other's lists (groups, plans, shapes): one buffer each.
  auto shared = std::make_unique<detail::SharedPools>();
  ParallelFor(list.size(), options.jobs, worth,
              [&](size_t i, simdjson::dom::parser& parser, detail::ReadScratch& scratch) {
                try {
                  out.results[i] = detail::ReadRankFile(list[i].second, options.fast, options.progress,
                                                        parser, shared.get(), &scratch);
                } catch (const Error& e) {
                  out.errors[i] = e;
                } catch (...) {
                  crashes[i] = std::current_exception();
                }
                if (options.progress != nullptr) ++options.progress->files_done;
              });
  shared.reset();
  // What the readers freed (line buffers, parser state, their id tables) goes back before the merge
  // allocates the model's record lists, so that it does not add to the peak.
  ReleaseFreedMemory();
  for (const std::exception_ptr& crash : crashes)
    if (crash) std::rethrow_exception(crash);
  return out;
}

// Throws when `file` does not belong with the first file merged (a renamed file, another run's).
void CheckSameRun(const FileResult& file, int64_t rank, const RankTrace* first) {
  const Header& h = file.trace.header;
  if (h.rank != rank) {
    throw InvalidInput(file.trace.file + ":1: header says rank " + std::to_string(h.rank) +
                       " but the file name says rank " + std::to_string(rank));
  }
  if (first == nullptr) return;
  const Header& f = first->header;
  if (h.world != f.world) {
    throw InvalidInput(file.trace.file + ":1: world " + std::to_string(h.world) + " differs from world " +
                       std::to_string(f.world) + " in " + first->file + "; files of different runs?");
  }
  if (h.mesh_shape != f.mesh_shape) {
    throw InvalidInput(file.trace.file + ":1: mesh shape differs from the one in " + first->file +
                       "; files of different runs?");
  }
}

void Reserve(Model& model, const std::vector<std::optional<FileResult>>& results) {
  size_t ranks = 0, records = 0, ops = 0;
  for (const std::optional<FileResult>& r : results) {
    if (!r) continue;
    ++ranks;
    records += r->records.size();
    ops += r->ops.size();
  }
  model.ranks.reserve(ranks);
  model.redistributes.reserve(records);
  model.ops.reserve(ops);
}

// Merges the files in rank order. A bad rank file costs that rank, not the trace (Perfetto's way);
// its error stays as precise as ReadTraceFile's, only moved into a diagnostic. When no file was
// readable, the first one's error is the answer, exactly as for one file.
void MergeFiles(Model& model, const RankFiles& list, FileOutcomes& read) {
  Reserve(model, read.results);
  const RankTrace* first = nullptr;
  std::vector<Diagnostic> skipped;
  std::string skipped_names;
  for (size_t i = 0; i < list.size(); ++i) {
    const int64_t rank = list[i].first;
    if (!read.results[i]) {
      std::string name = list[i].second.filename().string();
      auto [line, what] = SplitLocation(name, read.errors[i]->what());
      skipped.push_back({name, line, "skipped rank " + std::to_string(rank) + ": " + what});
      if (skipped.size() <= 8) skipped_names += (skipped.size() > 1 ? ", " : "") + name;
      continue;
    }
    CheckSameRun(*read.results[i], rank, first);
    AddFile(model, std::move(*read.results[i]));
    read.results[i].reset();
    first = &model.ranks.front();
  }
  if (first == nullptr) {
    for (const std::optional<Error>& e : read.errors)
      if (e) throw *e;
  }
  if (skipped.empty()) return;
  model.diagnostics.push_back({"", 0,
                               "warning: " + std::to_string(skipped.size()) + " of " +
                                   std::to_string(list.size()) +
                                   " rank files could not be read and were skipped (" + skipped_names +
                                   (skipped.size() > 8 ? ", ..." : "") + ")"});
  for (Diagnostic& d : skipped) model.diagnostics.push_back(std::move(d));
}

}  // namespace

Model ReadTraceDir(const std::filesystem::path& dir, const ReadOptions& options) {
  Model model;
  model.source = dir;
  {  // the file list and the per-file results are freed before the memory goes back
    const std::map<int64_t, std::filesystem::path> files = ListRankFiles(dir);
    const RankFiles list(files.begin(), files.end());
    FileOutcomes read = ReadAllFiles(list, options);
    MergeFiles(model, list, read);
    std::vector<int64_t> present;
    for (const auto& [rank, path] : list) present.push_back(rank);
    if (auto missing = detail::MissingRanks(present, model.world, "trace file"))
      model.diagnostics.push_back(std::move(*missing));
  }
  SortRedistributes(model);
  ReleaseFreedMemory();  // after the index's temporaries too
  return model;
}

Model ReadTraceFile(const std::filesystem::path& path, const ReadOptions& options) {
  if (options.progress != nullptr) {
    std::error_code ec;
    options.progress->files_total = 1;
    options.progress->bytes_total = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  }
  Model model;
  model.source = path;
  simdjson::dom::parser parser;
  AddFile(model, detail::ReadRankFile(path, options.fast, options.progress, parser, nullptr));
  if (options.progress != nullptr) ++options.progress->files_done;
  SortRedistributes(model);
  return model;
}

namespace {

// Positions of `records` in (id, position) order; returns true, leaving `positions` empty, when
// that is the records' own order. Records sorted by (rank, id) list each id's records in rank order.
template <typename Records, typename IdOf>
bool BuildIdIndex(const Records& records, IdOf id_of, std::vector<uint32_t>& positions) {
  std::vector<uint32_t>().swap(positions);
  bool in_order = true;
  for (size_t i = 1; i < records.size() && in_order; ++i)
    in_order = id_of(records[i - 1]) <= id_of(records[i]);
  if (in_order) return true;
  std::vector<std::pair<int64_t, uint32_t>> pairs;
  pairs.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) pairs.emplace_back(id_of(records[i]), static_cast<uint32_t>(i));
  std::sort(pairs.begin(), pairs.end());
  positions.reserve(pairs.size());
  for (const auto& p : pairs) positions.push_back(p.second);
  return false;
}

// The records with `id`: from the index when there is one, else by a scan.
template <typename Record, typename IdOf>
std::vector<const Record*> WithId(const std::vector<Record>& records, IdOf id_of,
                                  const std::optional<IdOrder<Record>>& order, int64_t id) {
  std::vector<const Record*> out;
  if (order) {
    size_t lo = 0, hi = order->size();
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (id_of(order->At(mid)) < id)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (size_t k = lo; k < order->size() && id_of(order->At(k)) == id; ++k) out.push_back(&order->At(k));
    return out;
  }
  for (const Record& rec : records) {
    if (id_of(rec) == id) out.push_back(&rec);
  }
  return out;
}

// The distinct ids of `records`, ascending: from the index when there is one, else by a scan.
template <typename Record, typename IdOf>
std::vector<int64_t> DistinctIds(const std::vector<Record>& records, IdOf id_of,
                                 const std::optional<IdOrder<Record>>& order) {
  std::vector<int64_t> ids;
  if (order) {
    for (size_t k = 0; k < order->size(); ++k) {
      const int64_t id = id_of(order->At(k));
      if (ids.empty() || ids.back() != id) ids.push_back(id);
    }
    return ids;
  }
  for (const Record& rec : records) ids.push_back(id_of(rec));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

int64_t RedistributeIdOf(const RedistributeRecord& r) { return r.begin->id; }
int64_t OpIdOf(const OpRecord& r) { return r.op->id; }

}  // namespace

void Model::Reindex() {
  index = ModelIndex();
  if (redistributes.size() > UINT32_MAX || ops.size() > UINT32_MAX) return;  // lookups scan
  index.redistributes_in_id_order = BuildIdIndex(redistributes, RedistributeIdOf, index.redistributes);
  index.ops_in_id_order = BuildIdIndex(ops, OpIdOf, index.ops);
  index.indexed_redistributes = redistributes.size();
  index.indexed_ops = ops.size();
  index.built = true;
}

std::optional<IdOrder<RedistributeRecord>> Model::RedistributesInIdOrder() const {
  if (!index.built || index.indexed_redistributes != redistributes.size()) return std::nullopt;
  return IdOrder<RedistributeRecord>(redistributes, index.redistributes, index.redistributes_in_id_order);
}

std::optional<IdOrder<OpRecord>> Model::OpsInIdOrder() const {
  if (!index.built || index.indexed_ops != ops.size()) return std::nullopt;
  return IdOrder<OpRecord>(ops, index.ops, index.ops_in_id_order);
}

std::vector<const RedistributeRecord*> Model::RedistributesWithId(int64_t id) const {
  return WithId(redistributes, RedistributeIdOf, RedistributesInIdOrder(), id);
}

std::vector<int64_t> Model::RedistributeIds() const {
  return DistinctIds(redistributes, RedistributeIdOf, RedistributesInIdOrder());
}

std::vector<const OpRecord*> Model::OpsWithId(int64_t id) const {
  return WithId(ops, OpIdOf, OpsInIdOrder(), id);
}

std::vector<int64_t> Model::OpIds() const { return DistinctIds(ops, OpIdOf, OpsInIdOrder()); }

const OpRecord* Model::FindOp(int64_t rank, int64_t id) const {
  auto it = std::lower_bound(ops.begin(), ops.end(), std::make_pair(rank, id),
                             [](const OpRecord& rec, const std::pair<int64_t, int64_t>& key) {
                               return std::make_pair(rec.rank, rec.op->id) < key;
                             });
  return it != ops.end() && it->rank == rank && it->op->id == id ? &*it : nullptr;
}

const RedistributeRecord* Model::FindRedistribute(int64_t rank, int64_t id) const {
  auto it = std::lower_bound(redistributes.begin(), redistributes.end(), std::make_pair(rank, id),
                             [](const RedistributeRecord& rec, const std::pair<int64_t, int64_t>& key) {
                               return std::make_pair(rec.rank, rec.begin->id) < key;
                             });
  return it != redistributes.end() && it->rank == rank && it->begin->id == id ? &*it : nullptr;
}

}  // namespace shardscope::trace
