#include "shardscope/trace/reader.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <memory>
#include <set>
#include <system_error>
#include <thread>

#include "codec.hpp"
#include "event_pools.hpp"
#include "fast_decode.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

using detail::LineRef;
using detail::ThrowAt;

// Reads a file line by line into one growing buffer that keeps simdjson's padding after its
// bytes, so a line can be parsed where it lies. A line longer than kMaxLineBytes is refused before
// more of it is read, so a corrupt file cannot make the reader allocate without bound.
class LineReader {
 public:
  LineReader(const std::filesystem::path& path, std::string name, ReadProgress* progress)
      : name_(std::move(name)), progress_(progress) {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr)
      throw InvalidInput("trace: cannot open '" + path.string() + "': " + std::strerror(errno));
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    // Small files are read in one go; big ones through a few MiB that grow only for a long line.
    capacity_ = std::clamp<size_t>(ec ? 0 : static_cast<size_t>(size) + 1, size_t{1} << 16, size_t{4} << 20);
    buffer_.reset(new char[capacity_ + simdjson::SIMDJSON_PADDING]);
  }
  ~LineReader() { std::fclose(file_); }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Next line without its '\n' (valid until the next call, padded); false at the end of the file.
  bool Next(std::string_view& line) {
    ++number_;
    size_t scan = begin_;
    for (;;) {
      const void* nl = std::memchr(buffer_.get() + scan, '\n', end_ - scan);
      if (nl != nullptr || eof_) {
        size_t stop = nl ? static_cast<size_t>(static_cast<const char*>(nl) - buffer_.get()) : end_;
        if (stop == begin_ && !nl) return false;
        CheckLength(stop - begin_);
        line = std::string_view(buffer_.get() + begin_, stop - begin_);
        begin_ = nl ? stop + 1 : stop;
        return true;
      }
      CheckLength(end_ - begin_);
      if (begin_ > 0) {  // keep only the unfinished line
        std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      }
      scan = end_;
      if (end_ == capacity_) Grow();
      size_t got = std::fread(buffer_.get() + end_, 1, capacity_ - end_, file_);
      if (progress_ != nullptr) progress_->bytes_done.fetch_add(static_cast<int64_t>(got));
      eof_ = got == 0;
      end_ += got;
    }
  }

  int64_t number() const { return number_; }

 private:
  void CheckLength(size_t length) const {
    if (static_cast<int64_t>(length) > kMaxLineBytes) {
      ThrowAt({name_, number_}, "line is longer than " + std::to_string(kMaxLineBytes >> 20) + " MiB");
    }
  }

  void Grow() {
    size_t capacity = capacity_ * 2;
    std::unique_ptr<char[]> bigger(new char[capacity + simdjson::SIMDJSON_PADDING]);
    std::memcpy(bigger.get(), buffer_.get(), end_);
    buffer_ = std::move(bigger);
    capacity_ = capacity;
  }

  std::string name_;
  ReadProgress* progress_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t begin_ = 0;  // start of the next line
  size_t end_ = 0;    // bytes read into the buffer
  bool eof_ = false;
  int64_t number_ = 0;
};

bool IsBlank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

// Nesting depth of a JSON text, ignoring brackets inside strings; checked before parsing so a
// hostile line cannot exhaust the stack or memory with deep nesting.
int JsonDepth(std::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

// Parses one line; on failure returns false and a message saying what was expected.
bool ParseJsonLine(std::string_view text, json& out, std::string& why) {
  if (JsonDepth(text) > kMaxJsonDepth) {
    why = "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    return false;
  }
  try {
    out = json::parse(text.data(), text.data() + text.size());
    return true;
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    std::string what = e.what();
    // nlohmann quotes the bytes it last read, which may be invalid UTF-8 (a line torn inside a
    // multi-byte character); keep the message ASCII so it can go into JSON (show --json).
    for (char& ch : what)
      if (static_cast<unsigned char>(ch) >= 0x80) ch = '?';
    size_t colon = what.find("] ");
    why = "expected one JSON object: " + (colon == std::string::npos ? what : what.substr(colon + 2));
    return false;
  }
}

struct FileResult {
  RankTrace trace;
  std::vector<RedistributeRecord> records;
  std::vector<OpRecord> ops;
  std::vector<Diagnostic> diagnostics;
};

// Attaches events to their redistribute and checks references against the header; line numbers
// are those of the event being added.
class Assembler {
 public:
  Assembler(FileResult& result) : r_(result) {}

  /// Adds events [0, count) of the rank's list; lines[i] is the line of event i. The records refer
  /// to the stored events, so the list must not change afterwards.
  void AddStored(size_t count, const std::vector<int64_t>& lines) {
    LineRef at{r_.trace.file, 0};
    for (size_t i = 0; i < count; ++i) {
      at.line = lines[i];
      r_.trace.events.Visit(i, [&](const auto& e) { AddOne(e, at); });
    }
  }

  void Finish() {
    for (const RedistributeRecord& rec : r_.records) {
      if (!rec.end) {
        r_.diagnostics.push_back({r_.trace.file, begin_line_.at(rec.begin->id),
                                  "redistribute " + std::to_string(rec.begin->id) +
                                      " has no redistribute_end (the rank stopped before finishing it)"});
      }
      int64_t op_id = rec.begin->op_id;
      if (op_id < 0) continue;
      auto it = op_index_.find(op_id);
      if (it != op_index_.end()) {
        OpRecord& op = r_.ops[it->second];
        if (rec.begin->op_input >= static_cast<int64_t>(op.op.inputs.size())) {
          ThrowAt({r_.trace.file, begin_line_.at(rec.begin->id)},
                  "field 'op_input' is " + std::to_string(rec.begin->op_input) + " but op " +
                      std::to_string(op_id) + " has " + std::to_string(op.op.inputs.size()) + " inputs");
        }
        op.redistribute_ids.push_back(rec.begin->id);
      } else if (!unfinished_ops_.count(op_id)) {
        unfinished_ops_[op_id] = begin_line_.at(rec.begin->id);
      }
    }
    for (const auto& [op_id, halo] : pending_halo_) {
      if (!unfinished_ops_.count(op_id)) unfinished_ops_[op_id] = halo.first;
    }
    // An op event is written when the op finished, so events of an op without one are those of a
    // rank that stopped inside the op.
    for (const auto& [op_id, line] : unfinished_ops_) {
      r_.diagnostics.push_back(
          {r_.trace.file, line,
           "op " + std::to_string(op_id) + " has no op event (the rank stopped before finishing it)"});
    }
    for (OpRecord& rec : r_.ops) std::sort(rec.redistribute_ids.begin(), rec.redistribute_ids.end());
  }

 private:
  const Header& header() const { return r_.trace.header; }

  void CheckMeshDims(const std::vector<int64_t>& dims, const std::string& field, const LineRef& at) {
    int64_t ndim = static_cast<int64_t>(header().mesh_shape.size());
    for (int64_t d : dims) {
      if (d >= ndim) {
        ThrowAt(at, "field '" + field + "' names mesh dim " + std::to_string(d) + " but the mesh has " +
                        std::to_string(ndim) + " dims");
      }
    }
  }

  void CheckPlacements(const std::vector<std::string>& placements, const char* field, const LineRef& at) {
    size_t ndim = header().mesh_shape.size();
    if (placements.size() != ndim) {
      ThrowAt(at, "field '" + std::string(field) + "' must have one placement per mesh dim (" +
                      std::to_string(ndim) + ")");
    }
  }

  RedistributeRecord& Record(int64_t id, const char* type, const LineRef& at) {
    auto it = index_.find(id);
    if (it == index_.end()) {
      ThrowAt(at, std::string(type) + " refers to redistribute " + std::to_string(id) +
                      ", which has no earlier redistribute_begin");
    }
    return r_.records[it->second];
  }

  void CheckStep(const RedistributeRecord& rec, int64_t step, const LineRef& at) {
    int64_t n = static_cast<int64_t>(rec.begin->optimized_plan.size());
    if (step >= n) {
      ThrowAt(at, "field 'step' is " + std::to_string(step) + " but redistribute " +
                      std::to_string(rec.begin->id) + " has " + std::to_string(n) + " optimized plan steps");
    }
  }

  void AddOne(const RedistributeBegin& e, const LineRef& at) {
    if (index_.count(e.id)) {
      ThrowAt(at, "redistribute " + std::to_string(e.id) + " begins twice (first at line " +
                      std::to_string(begin_line_[e.id]) + ")");
    }
    CheckPlacements(e.src_placements, "src_placements", at);
    CheckPlacements(e.dst_placements, "dst_placements", at);
    for (size_t i = 0; i < e.raw_plan.size(); ++i) {
      CheckMeshDims(e.raw_plan[i].mesh_dims, "raw_plan[" + std::to_string(i) + "].mesh_dims", at);
    }
    for (size_t i = 0; i < e.optimized_plan.size(); ++i) {
      CheckMeshDims(e.optimized_plan[i].mesh_dims, "optimized_plan[" + std::to_string(i) + "].mesh_dims", at);
    }
    index_[e.id] = r_.records.size();
    begin_line_[e.id] = at.line;
    RedistributeRecord rec;
    rec.rank = header().rank;
    rec.begin = EventRef<RedistributeBegin>::To(&e);
    r_.records.push_back(std::move(rec));
  }

  void AddOne(const RedistributeEnd& e, const LineRef& at) {
    RedistributeRecord& rec = Record(e.id, "redistribute_end", at);
    if (rec.end) ThrowAt(at, "redistribute " + std::to_string(e.id) + " ends twice");
    rec.end = EventRef<RedistributeEnd>::To(&e);
  }

  void AddOne(const StepBegin& e, const LineRef& at) {
    RedistributeRecord& rec = Record(e.redistribute_id, "step_begin", at);
    CheckStep(rec, e.step, at);
    CheckMeshDims(e.mesh_dims, "mesh_dims", at);
    for (const StepRecord& s : rec.steps) {
      if (s.begin->step == e.step) ThrowAt(at, "step " + std::to_string(e.step) + " begins twice");
    }
    rec.steps.push_back({EventRef<StepBegin>::To(&e), std::nullopt});
  }

  void AddOne(const StepEnd& e, const LineRef& at) {
    RedistributeRecord& rec = Record(e.redistribute_id, "step_end", at);
    for (StepRecord& s : rec.steps) {
      if (s.begin->step != e.step) continue;
      if (s.end) ThrowAt(at, "step " + std::to_string(e.step) + " ends twice");
      s.end = EventRef<StepEnd>::To(&e);
      return;
    }
    ThrowAt(at, "step_end for step " + std::to_string(e.step) + " has no earlier step_begin");
  }

  void AddOne(const Collective& e, const LineRef& at) {
    // A collective without a redistribute is an op's own (a halo exchange); `step` then is not
    // an index into a plan.
    RedistributeRecord* rec = e.redistribute_id >= 0 ? &Record(e.redistribute_id, "collective", at) : nullptr;
    if (rec != nullptr) CheckStep(*rec, e.step, at);
    CheckMeshDims(e.mesh_dims, "mesh_dims", at);
    bool has_self = false;
    for (int64_t g : e.group) {
      if (g >= header().world) {
        ThrowAt(at, "field 'group' names rank " + std::to_string(g) + " but the world has " +
                        std::to_string(header().world) + " ranks");
      }
      has_self = has_self || g == header().rank;
    }
    if (!has_self)
      ThrowAt(at, "field 'group' must contain this file's rank " + std::to_string(header().rank));
    if (rec != nullptr) {
      rec->collectives.push_back(EventRef<Collective>::To(&e));
      return;
    }
    if (e.op_id < 0) return;  // an imported Flight Recorder entry: neither a redistribute's nor an op's
    auto it = op_index_.find(e.op_id);
    if (it != op_index_.end()) {
      r_.ops[it->second].collectives.push_back(e);
      return;
    }
    auto [pending, inserted] = pending_halo_.try_emplace(e.op_id, at.line, std::vector<Collective>{});
    pending->second.second.push_back(e);
  }

  void AddOne(const Op& e, const LineRef& at) {
    auto dup = op_index_.find(e.id);
    if (dup != op_index_.end()) {
      ThrowAt(at, "op " + std::to_string(e.id) + " appears twice (first at line " +
                      std::to_string(op_line_[e.id]) + ")");
    }
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      const OpInput& in = e.inputs[i];
      std::string path = "inputs[" + std::to_string(i) + "]";
      // An absent optional input (layer_norm_backward without weight) has no name and no placements.
      if (in.tensor.empty() && in.placements.empty() && in.required.empty() && in.redistribute_id < 0)
        continue;
      CheckPlacements(in.placements, (path + ".placements").c_str(), at);
      CheckPlacements(in.required, (path + ".required").c_str(), at);
      if (in.redistribute_id < 0) continue;
      const RedistributeRecord& rec = Record(in.redistribute_id, "op input", at);
      if (rec.begin->op_id != e.id || rec.begin->op_input != static_cast<int64_t>(i)) {
        ThrowAt(at, "field '" + path + ".redistribute_id' is " + std::to_string(in.redistribute_id) +
                        " but that redistribute_begin (line " +
                        std::to_string(begin_line_[in.redistribute_id]) + ") does not carry op_id " +
                        std::to_string(e.id) + " and op_input " + std::to_string(i));
      }
    }
    for (size_t i = 0; i < e.outputs.size(); ++i) {
      const OpOutput& out = e.outputs[i];
      if (!out.requested) continue;
      CheckPlacements(out.placements, ("outputs[" + std::to_string(i) + "].placements").c_str(), at);
      if (out.local_shape.size() != out.global_shape.size()) {
        ThrowAt(at, "field 'outputs[" + std::to_string(i) +
                        "].local_shape' must have one entry per dim of "
                        "'global_shape' (" +
                        std::to_string(out.global_shape.size()) + ")");
      }
    }
    size_t ndim = header().mesh_shape.size();
    for (size_t c = 0; c < e.candidates.size(); ++c) {
      const OpStrategy& s = e.candidates[c];
      for (size_t i = 0; i < s.inputs.size() + s.outputs.size(); ++i) {
        bool is_input = i < s.inputs.size();
        const auto& list = is_input ? s.inputs[i] : s.outputs[i - s.inputs.size()];
        if (list.empty() || list.size() == ndim) continue;
        ThrowAt(at, "field 'candidates[" + std::to_string(c) + "]." + (is_input ? "inputs[" : "outputs[") +
                        std::to_string(is_input ? i : i - s.inputs.size()) +
                        "]' must be empty or have one placement per mesh dim (" + std::to_string(ndim) + ")");
      }
    }
    op_index_[e.id] = r_.ops.size();
    op_line_[e.id] = at.line;
    OpRecord rec;
    rec.rank = header().rank;
    rec.op = e;
    auto pending = pending_halo_.find(e.id);
    if (pending != pending_halo_.end()) {
      rec.collectives = std::move(pending->second.second);
      pending_halo_.erase(pending);
    }
    r_.ops.push_back(std::move(rec));
  }

  FileResult& r_;
  std::map<int64_t, size_t> index_;
  std::map<int64_t, int64_t> begin_line_;
  std::map<int64_t, size_t> op_index_;
  std::map<int64_t, int64_t> op_line_;
  std::map<int64_t, std::pair<int64_t, std::vector<Collective>>>
      pending_halo_;                           // op id -> (first line, halos)
  std::map<int64_t, int64_t> unfinished_ops_;  // op id -> first line that referred to it
};

// A renamed file (header rank != the rank in its name) is reported by ReadTraceDir's merge, which
// checks every header against its file name before it looks at any event.
FileResult ReadRankFile(const std::filesystem::path& path, bool fast, ReadProgress* progress,
                        simdjson::dom::parser& parser, detail::SharedPools* shared) {
  FileResult result;
  std::string name = path.filename().string();
  result.trace.file = name;
  std::error_code dir_ec;
  if (std::filesystem::is_directory(path, dir_ec))
    throw InvalidInput(name + ": is a directory, not a rank file");
  LineReader source(path, name, progress);
  Assembler assembler(result);

  std::string_view text;
  bool have_header = false;
  // A line that failed to parse is only an error if another line follows it: the last line of
  // a file whose writer was killed may be torn.
  std::optional<std::pair<int64_t, std::string>> pending_torn;
  std::map<std::string, std::pair<int64_t, int64_t>> unknown;  // type -> (count, first line)
  LineRef at{name, 0};
  Event event;
  detail::EventPools pools(shared);
  detail::FileContext context;  // what v2 lines may refer to (set from the header)
  int64_t lines_fast = 0, lines_reference = 0;
  // Events are stored first and grouped into records once the list is complete (the records refer
  // to the stored events). An error that stops the reading is thrown after the events before it
  // are assembled, so the error reported is still the first one in file order.
  std::vector<int64_t> event_lines;
  std::exception_ptr stopped;
  try {
    while (source.Next(text)) {
      at.line = source.number();
      if (IsBlank(text)) continue;
      if (pending_torn) ThrowAt({name, pending_torn->first}, pending_torn->second);
      if (fast && have_header) {
        // The line lies in LineReader's padded buffer, so simdjson may parse it in place.
        simdjson::dom::element element;
        if (parser.parse(text.data(), text.size(), false).get(element) == simdjson::SUCCESS &&
            detail::FastDecodeEvent(element, text, context, event)) {
          pools.Intern(event);
          context.Remember(event);
          result.trace.events.push_back(std::move(event));
          event_lines.push_back(at.line);
          ++lines_fast;
          continue;
        }
      }
      // The reference path: every line the fast path declined, and every line when !fast.
      ++lines_reference;
      json line;
      std::string why;
      if (!ParseJsonLine(text, line, why)) {
        if (!have_header) ThrowAt(at, "header line: " + why);
        pending_torn.emplace(at.line, why);
        continue;
      }
      if (!have_header) {
        result.trace.header = detail::ParseHeader(line, at);
        context = detail::FileContext(result.trace.header.version, result.trace.header.rank,
                                      result.trace.header.mesh_shape);
        have_header = true;
        continue;
      }
      std::optional<Event> parsed = detail::ParseEvent(line, at, context);
      if (!parsed) {
        auto [it, inserted] = unknown.try_emplace(detail::LineType(line, at), 0, at.line);
        ++it->second.first;
        continue;
      }
      pools.Intern(*parsed);
      context.Remember(*parsed);
      result.trace.events.push_back(std::move(*parsed));
      event_lines.push_back(at.line);
    }
  } catch (...) {
    stopped = std::current_exception();
  }
  result.trace.events.shrink_to_fit();
  assembler.AddStored(event_lines.size(), event_lines);
  if (stopped) std::rethrow_exception(stopped);
  if (progress != nullptr) {
    progress->lines_fast += lines_fast;
    progress->lines_reference += lines_reference;
  }
  if (!have_header) ThrowAt({name, 1}, "missing header line (the file is empty)");
  if (pending_torn) {
    result.diagnostics.push_back(
        {name, pending_torn->first, "warning: torn last line skipped (" + pending_torn->second + ")"});
  }
  for (const auto& [type, info] : unknown) {
    result.diagnostics.push_back({name, info.second,
                                  "skipped " + std::to_string(info.first) + " event(s) of unknown type '" +
                                      type + "' (written by a newer shardscope?)"});
  }
  assembler.Finish();
  std::sort(result.diagnostics.begin(), result.diagnostics.end(),
            [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
  return result;
}

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
    return a.rank != b.rank ? a.rank < b.rank : a.op.id < b.op.id;
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

// Runs work(0, parser) .. work(count - 1, parser) on `jobs` threads (at most max_threads, the caller's among
// them), each index once; every thread owns one DOM parser, which keeps its buffers from file to file.
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
    for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) work(i, parser);
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

}  // namespace

Model ReadTraceFile(const std::filesystem::path& path, const ReadOptions& options) {
  if (options.progress != nullptr) {
    std::error_code ec;
    options.progress->files_total = 1;
    options.progress->bytes_total = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  }
  Model model;
  model.source = path;
  simdjson::dom::parser parser;
  AddFile(model, ReadRankFile(path, options.fast, options.progress, parser, nullptr));
  if (options.progress != nullptr) ++options.progress->files_done;
  SortRedistributes(model);
  return model;
}

Model ReadTraceDir(const std::filesystem::path& dir, const ReadOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw InvalidInput("trace: '" + dir.string() + "' is not a directory");
  }
  std::map<int64_t, std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
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
  if (ec) throw InvalidInput("trace: cannot list '" + dir.string() + "': " + ec.message());
  if (files.empty()) throw InvalidInput("trace: no rank-<R>.jsonl files in '" + dir.string() + "'");

  std::vector<std::pair<int64_t, std::filesystem::path>> list(files.begin(), files.end());
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
  // Each file is parsed and assembled on its own; only the merge below is sequential.
  std::vector<std::optional<FileResult>> results(list.size());
  std::vector<std::optional<Error>> errors(list.size());
  std::vector<std::exception_ptr> crashes(list.size());
  // The ranks of a run repeat each other's lists (groups, plans, shapes): one buffer each.
  auto shared = std::make_unique<detail::SharedPools>();
  ParallelFor(list.size(), options.jobs, worth, [&](size_t i, simdjson::dom::parser& parser) {
    try {
      results[i] = ReadRankFile(list[i].second, options.fast, options.progress, parser, shared.get());
    } catch (const Error& e) {
      errors[i] = e;
    } catch (...) {
      crashes[i] = std::current_exception();
    }
    if (options.progress != nullptr) ++options.progress->files_done;
  });
  shared.reset();
  for (const std::exception_ptr& crash : crashes)
    if (crash) std::rethrow_exception(crash);

  Model model;
  model.source = dir;
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
  const RankTrace* first = nullptr;
  std::vector<Diagnostic> skipped;
  std::string skipped_names;
  for (size_t i = 0; i < list.size(); ++i) {
    const int64_t rank = list[i].first;
    if (!results[i]) {
      // A bad rank file costs that rank, not the trace (Perfetto's way); the error stays as precise
      // as ReadTraceFile's, only moved into a diagnostic.
      std::string name = list[i].second.filename().string();
      auto [line, what] = SplitLocation(name, errors[i]->what());
      skipped.push_back({name, line, "skipped rank " + std::to_string(rank) + ": " + what});
      if (skipped.size() <= 8) skipped_names += (skipped.size() > 1 ? ", " : "") + name;
      continue;
    }
    FileResult& file = *results[i];
    const Header& h = file.trace.header;
    if (h.rank != rank) {
      throw InvalidInput(file.trace.file + ":1: header says rank " + std::to_string(h.rank) +
                         " but the file name says rank " + std::to_string(rank));
    }
    if (first != nullptr) {
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
    AddFile(model, std::move(file));
    results[i].reset();
    first = &model.ranks.front();
  }
  if (first == nullptr) {
    // No rank file was readable: the first one's error is the answer, exactly as for one file.
    for (const std::optional<Error>& e : errors)
      if (e) throw *e;
  }
  if (!skipped.empty()) {
    model.diagnostics.push_back({"", 0,
                                 "warning: " + std::to_string(skipped.size()) + " of " +
                                     std::to_string(list.size()) +
                                     " rank files could not be read and were skipped (" + skipped_names +
                                     (skipped.size() > 8 ? ", ..." : "") + ")"});
    for (Diagnostic& d : skipped) model.diagnostics.push_back(std::move(d));
  }
  ReleaseFreedMemory();
  if (static_cast<int64_t>(files.size()) < model.world) {
    std::string missing;
    int listed = 0;
    for (int64_t r = 0; r < model.world && listed <= 8; ++r) {
      if (files.count(r)) continue;
      missing += (listed ? ", " : "") + (listed == 8 ? std::string("...") : std::to_string(r));
      ++listed;
    }
    model.diagnostics.push_back(
        {"", 0,
         "warning: " + std::to_string(model.world - static_cast<int64_t>(files.size())) + " of " +
             std::to_string(model.world) + " ranks have no trace file (" + missing + ")"});
  }
  SortRedistributes(model);
  return model;
}

namespace {

// The (id, position) pairs of `records` sorted by id; positions ascend within an id, and records
// are sorted by (rank, id), so each id's entries come in rank order.
template <typename Records, typename IdOf>
void BuildIdIndex(const Records& records, IdOf id_of, std::vector<std::pair<int64_t, size_t>>& pairs,
                  std::vector<int64_t>& ids) {
  pairs.clear();
  pairs.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) pairs.emplace_back(id_of(records[i]), i);
  std::sort(pairs.begin(), pairs.end());
  ids.clear();
  for (const auto& [id, pos] : pairs)
    if (ids.empty() || ids.back() != id) ids.push_back(id);
}

template <typename Record>
std::vector<const Record*> WithId(const std::vector<Record>& records,
                                  const std::vector<std::pair<int64_t, size_t>>& pairs, int64_t id) {
  auto lo = std::lower_bound(pairs.begin(), pairs.end(), std::make_pair(id, size_t{0}));
  std::vector<const Record*> out;
  for (auto it = lo; it != pairs.end() && it->first == id; ++it) out.push_back(&records[it->second]);
  return out;
}

}  // namespace

void Model::Reindex() {
  BuildIdIndex(
      redistributes, [](const RedistributeRecord& r) { return r.begin->id; }, index.redistributes,
      index.redistribute_ids);
  BuildIdIndex(
      ops, [](const OpRecord& r) { return r.op.id; }, index.ops, index.op_ids);
  index.indexed_redistributes = redistributes.size();
  index.indexed_ops = ops.size();
  index.built = true;
}

std::vector<const RedistributeRecord*> Model::RedistributesWithId(int64_t id) const {
  if (index.built && index.indexed_redistributes == redistributes.size())
    return WithId(redistributes, index.redistributes, id);
  std::vector<const RedistributeRecord*> out;
  for (const RedistributeRecord& rec : redistributes) {
    if (rec.begin->id == id) out.push_back(&rec);
  }
  return out;
}

std::vector<int64_t> Model::RedistributeIds() const {
  if (index.built && index.indexed_redistributes == redistributes.size()) return index.redistribute_ids;
  std::set<int64_t> ids;
  for (const RedistributeRecord& rec : redistributes) ids.insert(rec.begin->id);
  return {ids.begin(), ids.end()};
}

std::vector<const OpRecord*> Model::OpsWithId(int64_t id) const {
  if (index.built && index.indexed_ops == ops.size()) return WithId(ops, index.ops, id);
  std::vector<const OpRecord*> out;
  for (const OpRecord& rec : ops) {
    if (rec.op.id == id) out.push_back(&rec);
  }
  return out;
}

std::vector<int64_t> Model::OpIds() const {
  if (index.built && index.indexed_ops == ops.size()) return index.op_ids;
  std::set<int64_t> ids;
  for (const OpRecord& rec : ops) ids.insert(rec.op.id);
  return {ids.begin(), ids.end()};
}

const OpRecord* Model::FindOp(int64_t rank, int64_t id) const {
  auto it = std::lower_bound(ops.begin(), ops.end(), std::make_pair(rank, id),
                             [](const OpRecord& rec, const std::pair<int64_t, int64_t>& key) {
                               return std::make_pair(rec.rank, rec.op.id) < key;
                             });
  return it != ops.end() && it->rank == rank && it->op.id == id ? &*it : nullptr;
}

const RedistributeRecord* Model::FindRedistribute(int64_t rank, int64_t id) const {
  auto it = std::lower_bound(redistributes.begin(), redistributes.end(), std::make_pair(rank, id),
                             [](const RedistributeRecord& rec, const std::pair<int64_t, int64_t>& key) {
                               return std::make_pair(rec.rank, rec.begin->id) < key;
                             });
  return it != redistributes.end() && it->rank == rank && it->begin->id == id ? &*it : nullptr;
}

}  // namespace shardscope::trace
