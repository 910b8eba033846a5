#include "shardscope/trace/reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <system_error>

#include "codec.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

using detail::LineRef;
using detail::ThrowAt;

// Reads a file line by line through a fixed buffer; a line longer than kMaxLineBytes is refused
// before it is accumulated, so a corrupt file cannot make the reader allocate without bound.
class LineSource {
 public:
  LineSource(const std::filesystem::path& path, std::string name) : name_(std::move(name)) {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr)
      throw InvalidInput("trace: cannot open '" + path.string() + "': " + std::strerror(errno));
  }
  ~LineSource() { std::fclose(file_); }
  LineSource(const LineSource&) = delete;
  LineSource& operator=(const LineSource&) = delete;

  // Next line into `line` without its '\n'; `terminated` says whether a '\n' ended it.
  bool Next(std::string& line, bool& terminated) {
    line.clear();
    ++number_;
    for (;;) {
      if (pos_ == end_) {
        end_ = std::fread(buffer_, 1, sizeof(buffer_), file_);
        pos_ = 0;
        if (end_ == 0) {
          terminated = false;
          return !line.empty();
        }
      }
      const char* start = buffer_ + pos_;
      const void* nl = std::memchr(start, '\n', end_ - pos_);
      size_t take = nl ? static_cast<size_t>(static_cast<const char*>(nl) - start) : end_ - pos_;
      if (static_cast<int64_t>(line.size() + take) > kMaxLineBytes) {
        ThrowAt({name_, number_}, "line is longer than " + std::to_string(kMaxLineBytes >> 20) + " MiB");
      }
      line.append(start, take);
      pos_ += take;
      if (nl) {
        ++pos_;
        terminated = true;
        return true;
      }
    }
  }

  int64_t number() const { return number_; }

 private:
  std::string name_;
  std::FILE* file_ = nullptr;
  char buffer_[1 << 16];
  size_t pos_ = 0;
  size_t end_ = 0;
  int64_t number_ = 0;
};

bool IsBlank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

// Nesting depth of a JSON text, ignoring brackets inside strings; checked before parsing so a
// hostile line cannot exhaust the stack or memory with deep nesting.
int JsonDepth(const std::string& text) {
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
bool ParseJsonLine(const std::string& text, json& out, std::string& why) {
  if (JsonDepth(text) > kMaxJsonDepth) {
    why = "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    return false;
  }
  try {
    out = json::parse(text);
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

  void Add(const Event& event, const LineRef& at) {
    std::visit([&](const auto& e) { AddOne(e, at); }, event);
  }

  void Finish() {
    for (const RedistributeRecord& rec : r_.records) {
      if (!rec.end) {
        r_.diagnostics.push_back({r_.trace.file, begin_line_.at(rec.begin.id),
                                  "redistribute " + std::to_string(rec.begin.id) +
                                      " has no redistribute_end (the rank stopped before finishing it)"});
      }
      int64_t op_id = rec.begin.op_id;
      if (op_id < 0) continue;
      auto it = op_index_.find(op_id);
      if (it != op_index_.end()) {
        OpRecord& op = r_.ops[it->second];
        if (rec.begin.op_input >= static_cast<int64_t>(op.op.inputs.size())) {
          ThrowAt({r_.trace.file, begin_line_.at(rec.begin.id)},
                  "field 'op_input' is " + std::to_string(rec.begin.op_input) + " but op " +
                      std::to_string(op_id) + " has " + std::to_string(op.op.inputs.size()) + " inputs");
        }
        op.redistribute_ids.push_back(rec.begin.id);
      } else if (!unfinished_ops_.count(op_id)) {
        unfinished_ops_[op_id] = begin_line_.at(rec.begin.id);
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
    int64_t n = static_cast<int64_t>(rec.begin.optimized_plan.size());
    if (step >= n) {
      ThrowAt(at, "field 'step' is " + std::to_string(step) + " but redistribute " +
                      std::to_string(rec.begin.id) + " has " + std::to_string(n) + " optimized plan steps");
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
    rec.begin = e;
    r_.records.push_back(std::move(rec));
  }

  void AddOne(const RedistributeEnd& e, const LineRef& at) {
    RedistributeRecord& rec = Record(e.id, "redistribute_end", at);
    if (rec.end) ThrowAt(at, "redistribute " + std::to_string(e.id) + " ends twice");
    rec.end = e;
  }

  void AddOne(const StepBegin& e, const LineRef& at) {
    RedistributeRecord& rec = Record(e.redistribute_id, "step_begin", at);
    CheckStep(rec, e.step, at);
    CheckMeshDims(e.mesh_dims, "mesh_dims", at);
    for (const StepRecord& s : rec.steps) {
      if (s.begin.step == e.step) ThrowAt(at, "step " + std::to_string(e.step) + " begins twice");
    }
    rec.steps.push_back({e, std::nullopt});
  }

  void AddOne(const StepEnd& e, const LineRef& at) {
    RedistributeRecord& rec = Record(e.redistribute_id, "step_end", at);
    for (StepRecord& s : rec.steps) {
      if (s.begin.step != e.step) continue;
      if (s.end) ThrowAt(at, "step " + std::to_string(e.step) + " ends twice");
      s.end = e;
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
      rec->collectives.push_back(e);
      return;
    }
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
      if (rec.begin.op_id != e.id || rec.begin.op_input != static_cast<int64_t>(i)) {
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

// `expected_rank` (>= 0): the rank the file name gives, checked against the header before any
// event, so a renamed file is reported as such and not as a broken group on a later line.
FileResult ReadRankFile(const std::filesystem::path& path, int64_t expected_rank = -1) {
  FileResult result;
  std::string name = path.filename().string();
  result.trace.file = name;
  std::error_code dir_ec;
  if (std::filesystem::is_directory(path, dir_ec))
    throw InvalidInput(name + ": is a directory, not a rank file");
  LineSource source(path, name);
  Assembler assembler(result);

  std::string text;
  bool terminated = false;
  bool have_header = false;
  // A line that failed to parse is only an error if another line follows it: the last line of
  // a file whose writer was killed may be torn.
  std::optional<std::pair<int64_t, std::string>> pending_torn;
  std::map<std::string, std::pair<int64_t, int64_t>> unknown;  // type -> (count, first line)

  while (source.Next(text, terminated)) {
    LineRef at{name, source.number()};
    if (IsBlank(text)) continue;
    if (pending_torn) ThrowAt({name, pending_torn->first}, pending_torn->second);
    json line;
    std::string why;
    if (!ParseJsonLine(text, line, why)) {
      if (!have_header) ThrowAt(at, "header line: " + why);
      pending_torn.emplace(at.line, why);
      continue;
    }
    if (!have_header) {
      result.trace.header = detail::ParseHeader(line, at);
      have_header = true;
      if (expected_rank >= 0 && result.trace.header.rank != expected_rank) {
        ThrowAt(at, "header says rank " + std::to_string(result.trace.header.rank) +
                        " but the file name says rank " + std::to_string(expected_rank));
      }
      continue;
    }
    std::optional<Event> event = detail::ParseEvent(line, at);
    if (!event) {
      auto [it, inserted] = unknown.try_emplace(detail::LineType(line, at), 0, at.line);
      ++it->second.first;
      continue;
    }
    assembler.Add(*event, at);
    result.trace.events.push_back(std::move(*event));
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
  std::stable_sort(model.redistributes.begin(), model.redistributes.end(),
                   [](const RedistributeRecord& a, const RedistributeRecord& b) {
                     return a.rank != b.rank ? a.rank < b.rank : a.begin.id < b.begin.id;
                   });
  std::stable_sort(model.ops.begin(), model.ops.end(), [](const OpRecord& a, const OpRecord& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.op.id < b.op.id;
  });
}

// The rank number of a "rank-<R>.jsonl" name, or -1 when the name has another form.
int64_t RankOfFileName(const std::string& name) {
  constexpr std::string_view kPrefix = "rank-", kSuffix = ".jsonl";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return -1;
  }
  std::string digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

}  // namespace

Model ReadTraceFile(const std::filesystem::path& path) {
  Model model;
  model.source = path;
  AddFile(model, ReadRankFile(path));
  SortRedistributes(model);
  return model;
}

Model ReadTraceDir(const std::filesystem::path& dir) {
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

  Model model;
  model.source = dir;
  const RankTrace* first = nullptr;
  for (auto& [rank, path] : files) {
    FileResult file = ReadRankFile(path, rank);
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
    first = &model.ranks.front();
  }
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

std::vector<const RedistributeRecord*> Model::RedistributesWithId(int64_t id) const {
  std::vector<const RedistributeRecord*> out;
  for (const RedistributeRecord& rec : redistributes) {
    if (rec.begin.id == id) out.push_back(&rec);
  }
  return out;
}

std::vector<int64_t> Model::RedistributeIds() const {
  std::set<int64_t> ids;
  for (const RedistributeRecord& rec : redistributes) ids.insert(rec.begin.id);
  return {ids.begin(), ids.end()};
}

std::vector<const OpRecord*> Model::OpsWithId(int64_t id) const {
  std::vector<const OpRecord*> out;
  for (const OpRecord& rec : ops) {
    if (rec.op.id == id) out.push_back(&rec);
  }
  return out;
}

std::vector<int64_t> Model::OpIds() const {
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
                               return std::make_pair(rec.rank, rec.begin.id) < key;
                             });
  return it != redistributes.end() && it->rank == rank && it->begin.id == id ? &*it : nullptr;
}

}  // namespace shardscope::trace
