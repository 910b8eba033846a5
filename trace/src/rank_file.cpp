#include "rank_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

#include "codec.hpp"
#include "fast_decode.hpp"
#include "shardscope/error.hpp"
#include "shardscope/files.hpp"

namespace shardscope::trace::detail {

using nlohmann::json;

namespace {

// Reads a file line by line into one growing buffer that keeps simdjson's padding after its
// bytes, so a line can be parsed where it lies. A line longer than kMaxLineBytes is refused before
// more of it is read, so a corrupt file cannot make the reader allocate without bound.
class LineReader {
 public:
  LineReader(const std::filesystem::path& path, std::string name, ReadProgress* progress,
             ReadScratch* scratch)
      : name_(std::move(name)), progress_(progress), scratch_(scratch) {
    try {
      file_ = OpenRegularFileForReading(path, "trace file");  // a FIFO would block fopen forever
    } catch (const Error& e) {
      throw Error(e.code(), std::string("trace: ") + e.what());
    }
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    // Small files are read in one go; big ones through a few MiB that grow only for a long line.
    capacity_ = std::clamp<size_t>(ec ? 0 : static_cast<size_t>(size) + 1, size_t{1} << 16, size_t{4} << 20);
    if (scratch_ != nullptr && scratch_->line_capacity >= capacity_) {  // an earlier file's, big enough
      buffer_ = std::move(scratch_->line_buffer);
      capacity_ = std::exchange(scratch_->line_capacity, 0);
    } else {
      buffer_.reset(new char[capacity_ + simdjson::SIMDJSON_PADDING]);
    }
  }
  ~LineReader() {
    std::fclose(file_);
    if (scratch_ != nullptr && capacity_ > scratch_->line_capacity) {  // kept for the next file
      scratch_->line_buffer = std::move(buffer_);
      scratch_->line_capacity = capacity_;
    }
  }
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
      // fread returns 0 at the end of the file and on a read error alike: an error (EIO from a
      // failing disk or network file system) must not pass for the end, or the rest of the rank
      // would be dropped behind an "empty file" or "torn last line" diagnostic.
      if (got == 0 && std::ferror(file_)) {
        const int err = errno;
        throw InvalidInput(name_ + ": read error after " + std::to_string(read_) +
                           " bytes: " + std::strerror(err));
      }
      read_ += got;
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
  ReadScratch* scratch_;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t begin_ = 0;  // start of the next line
  size_t end_ = 0;    // bytes read into the buffer
  bool eof_ = false;
  int64_t number_ = 0;
  uint64_t read_ = 0;  // bytes read from the file so far
};

// How the writer starts a redistribute_repeat line (the fast path takes only those).
constexpr std::string_view kRepeatHead = R"({"type":"redistribute_repeat",)";
constexpr std::string_view kCollectiveRepeatHead = R"({"type":"collective_repeat",)";

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

// One rank file's reading state: lines go through the fast path or the reference path into the
// event list; what is left over (a torn last line, unknown types) becomes diagnostics.
// The most a reading thread keeps of a file's event lists for the next file (ReadScratch), and the
// largest file read through the scratch at all.
constexpr size_t kKeptScratchBytes = size_t{1} << 20;
constexpr uintmax_t kScratchFileBytes = uintmax_t{4} << 20;

class RankFileReader {
 public:
  RankFileReader(const std::filesystem::path& path, std::string name, bool fast, ReadProgress* progress,
                 simdjson::dom::parser& parser, SharedPools* shared, ReadScratch* scratch)
      : name_(std::move(name)),
        source_(path, name_, progress, scratch),
        fast_(fast),
        progress_(progress),
        parser_(parser),
        pools_(shared),
        scratch_(scratch) {
    result_.trace.file = name_;
  }

  FileResult Read();

 private:
  void ReadLines();
  bool TakeFast(std::string_view text);
  void TakeReference(std::string_view text);
  void TakeRepeat(const RepeatLine& r);
  void Store(Event&& event);
  void AddDiagnostics();

  std::string name_;
  LineReader source_;
  bool fast_;
  ReadProgress* progress_;
  simdjson::dom::parser& parser_;
  EventPools pools_;
  ReadScratch* scratch_;
  FileResult result_;
  Assembler assembler_{result_};
  LineRef at_{name_, 0};
  bool have_header_ = false;
  // A line that failed to parse is only an error if another line follows it: the last line of
  // a file whose writer was killed may be torn.
  std::optional<std::pair<int64_t, std::string>> pending_torn_;
  std::map<std::string, std::pair<int64_t, int64_t>> unknown_;  // type -> (count, first line)
  Event event_;
  FileContext context_;  // what v2 lines may refer to (set from the header)
  int64_t lines_fast_ = 0, lines_reference_ = 0;
  std::vector<int64_t> event_lines_;
  std::vector<Event> expanded_;  // a redistribute_repeat line's events
  RepeatLine repeat_;
  CollectiveRepeatLine collective_repeat_;
};

FileResult RankFileReader::Read() {
  // Events are stored first and grouped into records once the list is complete (the records refer
  // to the stored events). An error that stops the reading is thrown after the events before it
  // are assembled, so the error reported is still the first one in file order.
  if (scratch_ != nullptr) {  // empty lists with the capacity of the files before
    std::swap(result_.trace.events, scratch_->events);
    std::swap(event_lines_, scratch_->lines);
    event_lines_.clear();
  }
  std::exception_ptr stopped;
  try {
    ReadLines();
  } catch (...) {
    stopped = std::current_exception();
  }
  if (scratch_ != nullptr) {
    EventList exact = result_.trace.events.TakeExact();
    // Kept for the next file while small: big columns are blocks of their own that go back to the
    // system when freed (no holes), and keeping them would add a big file's columns to the peak.
    if (result_.trace.events.CapacityBytes() <= kKeptScratchBytes)
      scratch_->events = std::move(result_.trace.events);
    result_.trace.events = std::move(exact);
  } else {
    result_.trace.events.shrink_to_fit();
  }
  assembler_.AddStored(event_lines_.size(), event_lines_);
  if (scratch_ != nullptr) std::swap(event_lines_, scratch_->lines);
  if (stopped) std::rethrow_exception(stopped);
  if (progress_ != nullptr) {
    progress_->lines_fast += lines_fast_;
    progress_->lines_reference += lines_reference_;
  }
  if (!have_header_) ThrowAt({name_, 1}, "missing header line (the file is empty)");
  AddDiagnostics();
  assembler_.Finish();
  std::sort(result_.diagnostics.begin(), result_.diagnostics.end(),
            [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
  return std::move(result_);
}

void RankFileReader::ReadLines() {
  std::string_view text;
  while (source_.Next(text)) {
    at_.line = source_.number();
    if (IsBlank(text)) continue;
    if (pending_torn_) ThrowAt({name_, pending_torn_->first}, pending_torn_->second);
    if (fast_ && have_header_ && TakeFast(text)) {
      ++lines_fast_;
      continue;
    }
    // The reference path: every line the fast path declined, and every line when !fast.
    ++lines_reference_;
    TakeReference(text);
  }
}

bool RankFileReader::TakeFast(std::string_view text) {
  // The line lies in LineReader's padded buffer, so simdjson may parse it in place.
  simdjson::dom::element element;
  if (parser_.parse(text.data(), text.size(), false).get(element) != simdjson::SUCCESS) return false;
  if (context_.v2() && text.starts_with(kRepeatHead)) {
    // One line, a whole redistribute; any fault is the reference path's to name.
    if (!FastDecodeRepeat(element, text, context_, repeat_)) return false;
    expanded_.clear();
    if (!ExpandRepeat(repeat_, context_, result_.trace.events, expanded_).empty()) return false;
    for (Event& e : expanded_) Store(std::move(e));
    return true;
  }
  if (context_.v2() && text.starts_with(kCollectiveRepeatHead)) {
    if (!FastDecodeCollectiveRepeat(element, text, collective_repeat_)) return false;
    Collective& c = event_.emplace<Collective>();
    if (!ExpandCollectiveRepeat(collective_repeat_, context_, result_.trace.events, c).empty()) return false;
    Store(std::move(event_));
    return true;
  }
  if (!FastDecodeEvent(element, text, context_, event_)) return false;
  Store(std::move(event_));
  return true;
}

void RankFileReader::TakeReference(std::string_view text) {
  json line;
  std::string why;
  if (!ParseJsonLine(text, line, why)) {
    if (!have_header_) ThrowAt(at_, "header line: " + why);
    pending_torn_.emplace(at_.line, why);
    return;
  }
  if (!have_header_) {
    const Header& h = result_.trace.header = ParseHeader(line, at_);
    context_ = FileContext(h.version, h.rank, h.mesh_shape);
    context_.SetEvents(&result_.trace.events);
    have_header_ = true;
    return;
  }
  if (context_.v2() && LineType(line, at_) == kTypeRedistributeRepeat) {
    TakeRepeat(ParseRepeatLine(line, at_, context_));
    return;
  }
  if (context_.v2() && LineType(line, at_) == kTypeCollectiveRepeat) {
    Collective c;
    if (std::string why =
            ExpandCollectiveRepeat(ParseCollectiveRepeatLine(line, at_), context_, result_.trace.events, c);
        !why.empty())
      ThrowAt(at_, why);
    Store(Event(std::move(c)));
    return;
  }
  std::optional<Event> parsed = ParseEvent(line, at_, context_);
  if (!parsed) {
    auto [it, inserted] = unknown_.try_emplace(LineType(line, at_), 0, at_.line);
    ++it->second.first;
    return;
  }
  Store(std::move(*parsed));
}

void RankFileReader::TakeRepeat(const RepeatLine& r) {
  expanded_.clear();
  if (std::string why = ExpandRepeat(r, context_, result_.trace.events, expanded_); !why.empty())
    ThrowAt(at_, why);
  for (Event& e : expanded_) Store(std::move(e));
}

void RankFileReader::Store(Event&& event) {
  pools_.Intern(event);
  context_.Remember(event, result_.trace.events.size());
  result_.trace.events.push_back(std::move(event));
  event_lines_.push_back(at_.line);
}

void RankFileReader::AddDiagnostics() {
  if (pending_torn_) {
    result_.diagnostics.push_back(
        {name_, pending_torn_->first, "warning: torn last line skipped (" + pending_torn_->second + ")"});
  }
  for (const auto& [type, info] : unknown_) {
    result_.diagnostics.push_back({name_, info.second,
                                   "skipped " + std::to_string(info.first) + " event(s) of unknown type '" +
                                       type + "' (written by a newer shardscope?)"});
  }
}

}  // namespace

FileResult ReadRankFile(const std::filesystem::path& path, bool fast, ReadProgress* progress,
                        simdjson::dom::parser& parser, SharedPools* shared, ReadScratch* scratch) {
  std::string name = path.filename().string();
  std::error_code dir_ec;
  if (std::filesystem::is_directory(path, dir_ec))
    throw InvalidInput(name + ": is a directory, not a rank file");
  // A big file's lists are blocks of their own (mapped, given back when freed): the scratch is for
  // the many small files whose growing lists would leave holes between the ones the model keeps.
  const auto size = std::filesystem::file_size(path, dir_ec);
  if (dir_ec || size > kScratchFileBytes) scratch = nullptr;
  return RankFileReader(path, std::move(name), fast, progress, parser, shared, scratch).Read();
}

}  // namespace shardscope::trace::detail
