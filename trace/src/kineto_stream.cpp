// Streaming a Kineto trace: a hand-written walk of the top-level object and of the traceEvents
// array finds value boundaries; simdjson parses each batch of events as one small array. Kineto
// writes one event per line, and a newline can never sit inside a JSON string (RFC 8259 forbids
// unescaped control characters there), so a line break followed by '{' after a ',' is a cheap
// candidate boundary; a candidate at the wrong depth leaves brackets unbalanced, simdjson refuses
// the batch, and the exact scanner takes over for it. Files written on one line use the exact
// scanner throughout.
#include "kineto_stream.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "shardscope/error.hpp"
#include "shardscope/trace/kineto.hpp"

namespace shardscope::trace::detail {

namespace fs = std::filesystem;

namespace {

constexpr size_t kReadBytes = size_t{2} << 20;  // bytes asked of the input per refill
constexpr size_t kNpos = static_cast<size_t>(-1);

z_stream* Z(void* p) { return static_cast<z_stream*>(p); }

bool IsWs(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// End (one past) of the string whose opening quote is at b[i], or kNpos when [i, hi) does not hold
// its closing quote.
size_t StringEnd(const char* b, size_t i, size_t hi) {
  size_t j = i + 1;
  while (j < hi) {
    const void* q = std::memchr(b + j, '"', hi - j);
    if (q == nullptr) return kNpos;
    size_t k = static_cast<size_t>(static_cast<const char*>(q) - b);
    size_t slashes = 0;
    while (k - slashes > i + 1 && b[k - slashes - 1] == '\\') ++slashes;
    if (slashes % 2 == 0) return k + 1;
    j = k + 1;
  }
  return kNpos;
}

// End (one past) of the JSON value starting at b[i] (no leading whitespace), or kNpos when it is not
// complete within [i, hi). Only bracket depth and strings are tracked; simdjson validates the rest.
// `at_eof`: hi is the end of the input, so a scalar may end there.
size_t ValueEnd(const char* b, size_t i, size_t hi, bool at_eof) {
  const char c = b[i];
  if (c == '"') return StringEnd(b, i, hi);
  if (c == '{' || c == '[') {
    int64_t depth = 0;
    for (size_t j = i; j < hi; ++j) {
      switch (b[j]) {
        case '"': {
          size_t e = StringEnd(b, j, hi);
          if (e == kNpos) return kNpos;
          j = e - 1;
          break;
        }
        case '{':
        case '[':
          ++depth;
          break;
        case '}':
        case ']':
          if (--depth == 0) return j + 1;
          break;
        default:
          break;
      }
    }
    return kNpos;
  }
  for (size_t j = i; j < hi; ++j) {
    const char d = b[j];
    if (d == ',' || d == ']' || d == '}' || IsWs(d)) return j;
  }
  return at_eof ? hi : kNpos;
}

// The one-line description of a simdjson error.
std::string What(simdjson::error_code e) { return simdjson::error_message(e); }

// Where parsed values go. Direct: one parser, each value visited as soon as it is parsed.
// Threaded: the streamer (on its own thread) parses into one of kParsers parsers and queues it; the
// consumer visits the queue in order and hands each parser back, so parsing batch n+1 overlaps
// visiting batch n. A simdjson document owns copies of its strings, so the streamer's buffer may be
// reused as soon as a value is parsed.
class Pipe {
 public:
  Pipe(KinetoVisitor& v, bool threaded) : v_(v), threaded_(threaded) {
    // Sized once for a batch: simdjson reallocates its document whenever one is longer than any
    // before, which batches of slightly growing length made it do often (fresh pages to fault in
    // each time). Parsing a batch-sized "[]" and blanks sizes both the parser and its document
    // (parser::allocate sizes only the former).
    std::string blank(kKinetoBatchBytes + 4096, ' ');
    blank[0] = '[';
    blank[1] = ']';
    for (auto& p : parsers_) {
      if (p.parse(blank).error()) throw InternalError("kineto: cannot allocate the JSON parser");
      free_.push_back(&p);
    }
  }

  // The parser to parse the next value into (threaded: waits for one to come back).
  simdjson::dom::parser& Current() {
    if (cur_ != nullptr) return *cur_;
    if (!threaded_) return *(cur_ = &parsers_[0]);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty() || abort_; });
    if (abort_) throw Aborted();
    cur_ = free_.front();
    free_.pop_front();
    return *cur_;
  }

  // Hands over Current()'s document: `root` is an array of trace events, or the value of top-level
  // key `key` when top_level.
  void Deliver(simdjson::dom::element root, bool top_level, std::string key) {
    if (!threaded_) {
      Visit(root, top_level, key);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({cur_, root, top_level, std::move(key)});
    }
    cur_ = nullptr;
    cv_.notify_all();
  }

  // Runs `produce` (the streamer) on a second thread and visits what it delivers; returns what it
  // returns. The first exception of either side is rethrown after both stopped.
  template <typename F>
  int64_t Run(F produce) {
    if (!threaded_) return produce();
    int64_t result = 0;
    std::exception_ptr produced_error;
    std::thread producer([&] {
      try {
        result = produce();
      } catch (const Aborted&) {
      } catch (...) {
        produced_error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      cv_.notify_all();
    });
    std::exception_ptr visit_error;
    try {
      while (true) {
        Item item;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return !queue_.empty() || done_; });
          if (queue_.empty()) break;
          item = std::move(queue_.front());
          queue_.pop_front();
        }
        Visit(item.root, item.top_level, item.key);
        {
          std::lock_guard<std::mutex> lock(mu_);
          free_.push_back(item.parser);
        }
        cv_.notify_all();
      }
    } catch (...) {
      visit_error = std::current_exception();
      std::lock_guard<std::mutex> lock(mu_);
      abort_ = true;
      cv_.notify_all();
    }
    producer.join();
    if (visit_error) std::rethrow_exception(visit_error);
    if (produced_error) std::rethrow_exception(produced_error);
    return result;
  }

 private:
  struct Aborted {};
  struct Item {
    simdjson::dom::parser* parser = nullptr;
    simdjson::dom::element root;
    bool top_level = false;
    std::string key;
  };
  static constexpr size_t kParsers = 3;  // one being filled, one queued, one being visited

  void Visit(simdjson::dom::element root, bool top_level, const std::string& key) {
    if (top_level) {
      v_.TopLevel(key, root);
      return;
    }
    simdjson::dom::array arr;
    if (root.get_array().get(arr)) return;
    for (simdjson::dom::element e : arr) v_.Event(e);
  }

  KinetoVisitor& v_;
  const bool threaded_;
  std::array<simdjson::dom::parser, kParsers> parsers_;
  simdjson::dom::parser* cur_ = nullptr;  // the streamer's side only
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<simdjson::dom::parser*> free_;
  std::deque<Item> queue_;
  bool done_ = false, abort_ = false;
};

class Streamer {
 public:
  Streamer(const fs::path& path, const std::string& name, Pipe& pipe)
      : in_(path, name), name_(name), pipe_(pipe) {
    buf_.resize(kReadBytes * 2 + simdjson::SIMDJSON_PADDING);
  }

  int64_t Run() {
    if (!SkipWs()) Fail(0, "the file is empty: expected a JSON object with traceEvents");
    if (buf_[lo_] != '{')
      Fail(Abs(lo_), std::string("expected '{' (a Kineto trace is one JSON object), found '") +
                         Printable(buf_[lo_]) + "'");
    ++lo_;
    bool first = true;
    while (true) {
      if (!SkipWs()) Fail(Abs(hi_), "the file ends inside the top-level object (truncated?)");
      if (buf_[lo_] == '}') {
        ++lo_;
        break;
      }
      if (!first) {
        if (buf_[lo_] != ',') Fail(Abs(lo_), "expected ',' or '}' after a top-level value");
        ++lo_;
        if (!SkipWs()) Fail(Abs(hi_), "the file ends inside the top-level object (truncated?)");
      }
      first = false;
      if (buf_[lo_] != '"') Fail(Abs(lo_), "expected a key string in the top-level object");
      size_t len = CompleteValue("a top-level key");
      std::string key(buf_.data() + lo_ + 1, len - 2);
      lo_ += len;
      if (!SkipWs() || buf_[lo_] != ':') Fail(Abs(lo_), "expected ':' after top-level key \"" + key + "\"");
      ++lo_;
      if (!SkipWs()) Fail(Abs(hi_), "the file ends before the value of \"" + key + "\" (truncated?)");
      if (key == "traceEvents" && buf_[lo_] == '[') {
        ++lo_;
        Events();
      } else {
        const int64_t at = Abs(lo_);
        size_t vlen = CompleteValue(("the value of \"" + key + "\"").c_str());
        simdjson::dom::element value;
        auto err = pipe_.Current().parse(buf_.data() + lo_, vlen, false).get(value);
        if (err) Fail(at, "malformed JSON in the value of \"" + key + "\": " + What(err));
        lo_ += vlen;
        pipe_.Deliver(value, true, std::move(key));
      }
    }
    if (SkipWs()) Fail(Abs(lo_), "unexpected text after the top-level object");
    return Abs(hi_);
  }

 private:
  static char Printable(char c) { return c >= 0x20 && c < 0x7f ? c : '?'; }

  int64_t Abs(size_t i) const { return base_ + static_cast<int64_t>(i); }

  [[noreturn]] void Fail(int64_t at, const std::string& what) const {
    throw InvalidInput(name_ + ": " + what + " at byte " + std::to_string(at));
  }

  // Moves the unread bytes to index 1 (index 0 stays free for the '[' of a batch) and appends more
  // input. False at the end of the input.
  bool Refill() {
    if (eof_) return false;
    if (lo_ > 1) {
      std::memmove(buf_.data() + 1, buf_.data() + lo_, hi_ - lo_);
      base_ += static_cast<int64_t>(lo_ - 1);
      hi_ -= lo_ - 1;
      lo_ = 1;
    }
    if (hi_ + kReadBytes + simdjson::SIMDJSON_PADDING > buf_.size()) {
      if (hi_ - lo_ > static_cast<size_t>(kMaxKinetoValueBytes) + kReadBytes)
        Fail(Abs(lo_), "a value longer than " + std::to_string(kMaxKinetoValueBytes >> 20) + " MiB");
      buf_.resize(std::max(buf_.size() * 2, hi_ + kReadBytes + simdjson::SIMDJSON_PADDING));
    }
    size_t n = in_.Read(buf_.data() + hi_, kReadBytes);
    if (n == 0) {
      eof_ = true;
      return false;
    }
    hi_ += n;
    return true;
  }

  // Skips whitespace; false when the input ends first.
  bool SkipWs() {
    while (true) {
      while (lo_ < hi_ && IsWs(buf_[lo_])) ++lo_;
      if (lo_ < hi_) return true;
      if (!Refill()) return false;
    }
  }

  // Length of the complete value at lo_, refilling as needed.
  size_t CompleteValue(const char* what) {
    while (true) {
      size_t end = ValueEnd(buf_.data(), lo_, hi_, eof_);
      if (end != kNpos) return end - lo_;
      if (hi_ - lo_ > static_cast<size_t>(kMaxKinetoValueBytes))
        Fail(Abs(lo_),
             std::string(what) + " is longer than " + std::to_string(kMaxKinetoValueBytes >> 20) + " MiB");
      if (!Refill())
        Fail(Abs(hi_), std::string("truncated JSON: ") + what + " that starts at byte " +
                           std::to_string(Abs(lo_)) + " is not closed when the file ends");
    }
  }

  // Parses buf_[begin, end) (elements and the commas between them) as one array and visits it.
  // False when simdjson refuses it; nothing is visited then.
  bool ParseBatch(size_t begin, size_t end) {
    const char saved_open = buf_[begin - 1], saved_close = buf_[end];
    buf_[begin - 1] = '[';
    buf_[end] = ']';
    simdjson::dom::element doc;
    auto err = pipe_.Current().parse(buf_.data() + begin - 1, end - begin + 2, false).get(doc);
    buf_[begin - 1] = saved_open;
    buf_[end] = saved_close;
    if (err || !doc.is_array()) return false;
    pipe_.Deliver(doc, false, std::string());
    return true;
  }

  // The last line break in (lo_, limit) that is followed by '{' and preceded by ',' (whitespace
  // aside): the position of that ','; kNpos when there is none.
  size_t CandidateCut(size_t limit) const {
    const char* b = buf_.data();
    size_t p = limit;
    while (p > lo_) {
      const void* nl = memrchr(b + lo_, '\n', p - lo_);
      if (nl == nullptr) return kNpos;
      p = static_cast<size_t>(static_cast<const char*>(nl) - b);
      size_t q = p + 1;
      while (q < limit && (b[q] == ' ' || b[q] == '\t' || b[q] == '\r')) ++q;
      if (q < limit && b[q] == '{') {
        size_t c = p;
        while (c > lo_ && IsWs(b[c - 1])) --c;
        if (c > lo_ && b[c - 1] == ',') return c - 1;
      }
    }
    return kNpos;
  }

  // The elements of traceEvents; lo_ is just past its '['.
  void Events() {
    while (true) {
      if (!SkipWs()) Fail(Abs(hi_), "the file ends inside traceEvents (truncated?)");
      if (buf_[lo_] == ']') {
        ++lo_;
        return;
      }
      if (hi_ - lo_ < kKinetoBatchBytes && !eof_) {
        Refill();
        continue;
      }
      // Fast path: cut at a line boundary between two events.
      const size_t limit = std::min(hi_, lo_ + kKinetoBatchBytes);
      const size_t cut = CandidateCut(limit);
      if (cut != kNpos && ParseBatch(lo_, cut)) {
        lo_ = cut + 1;
        continue;
      }
      ExactBatch();
    }
  }

  // One batch found by the exact scanner: whole elements from lo_ up to kKinetoBatchBytes or the
  // array's end; an element that fails to parse is reported with its offset.
  void ExactBatch() {
    const size_t begin = lo_;
    size_t end = kNpos;  // end of the last complete element
    size_t i = lo_;
    std::vector<std::pair<size_t, size_t>> spans;
    while (true) {
      size_t e = ValueEnd(buf_.data(), i, hi_, eof_);
      if (e == kNpos) {
        if (!spans.empty()) break;
        // The first element is incomplete: read more, then start over.
        if (hi_ - lo_ > static_cast<size_t>(kMaxKinetoValueBytes))
          Fail(Abs(lo_),
               "a traceEvents element longer than " + std::to_string(kMaxKinetoValueBytes >> 20) + " MiB");
        if (!Refill())
          Fail(Abs(hi_), "truncated JSON: the traceEvents element that starts at byte " +
                             std::to_string(Abs(lo_)) + " is not closed when the file ends");
        ExactBatch();
        return;
      }
      spans.emplace_back(i, e);
      end = e;
      size_t j = e;
      while (j < hi_ && IsWs(buf_[j])) ++j;
      if (j >= hi_ || buf_[j] == ']') break;
      if (buf_[j] != ',') Fail(Abs(j), "expected ',' or ']' after a traceEvents element");
      ++j;
      while (j < hi_ && IsWs(buf_[j])) ++j;
      if (j >= hi_ || end - begin >= kKinetoBatchBytes) break;
      i = j;
    }
    if (!ParseBatch(begin, end)) {
      // Find the element simdjson refuses, to name its offset.
      for (const auto& [s, e] : spans) {
        simdjson::dom::element one;
        auto err = pipe_.Current().parse(buf_.data() + s, e - s, true).get(one);
        if (err) Fail(Abs(s), "malformed traceEvents element: " + What(err));
      }
      Fail(Abs(begin), "malformed traceEvents elements");
    }
    lo_ = end;
    // Step over the separating comma, if this batch did not end the array.
    while (lo_ < hi_ && IsWs(buf_[lo_])) ++lo_;
    if (lo_ < hi_ && buf_[lo_] == ',') ++lo_;
  }

  KinetoInput in_;
  std::string name_;
  Pipe& pipe_;
  std::vector<char> buf_;
  size_t lo_ = 1, hi_ = 1;  // unread bytes are buf_[lo_, hi_); buf_[0] is spare
  int64_t base_ = -1;       // absolute offset of buf_[0]
  bool eof_ = false;
};

}  // namespace

KinetoInput::KinetoInput(const fs::path& path, std::string name) : name_(std::move(name)) {
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) throw InvalidInput(name_ + ": cannot open " + path.string());
  unsigned char magic[2] = {0, 0};
  size_t n = std::fread(magic, 1, 2, file_);
  gzip_ = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  std::rewind(file_);
  if (gzip_) {
    auto* zs = new z_stream{};
    if (inflateInit2(zs, 16 + MAX_WBITS) != Z_OK) {
      delete zs;
      std::fclose(file_);
      throw InternalError(name_ + ": zlib inflateInit2 failed");
    }
    zs_ = zs;
    in_.resize(size_t{1} << 20);
  }
}

KinetoInput::~KinetoInput() {
  if (zs_ != nullptr) {
    inflateEnd(Z(zs_));
    delete Z(zs_);
  }
  if (file_ != nullptr) std::fclose(file_);
}

size_t KinetoInput::Read(char* dst, size_t max) {
  if (!gzip_) {
    size_t n = std::fread(dst, 1, max, file_);
    if (n == 0 && std::ferror(file_)) throw InvalidInput(name_ + ": read error");
    return n;
  }
  z_stream* zs = Z(zs_);
  zs->next_out = reinterpret_cast<Bytef*>(dst);
  zs->avail_out = static_cast<uInt>(std::min<size_t>(max, UINT32_MAX));
  while (zs->avail_out > 0) {
    if (zs->avail_in == 0) {
      size_t got = std::fread(in_.data(), 1, in_.size(), file_);
      if (got == 0) {
        if (member_done_) break;  // the end of the last member: the end of the data
        throw InvalidInput(name_ + ": the gzip stream is truncated at compressed byte " +
                           std::to_string(zs->total_in + static_cast<uLong>(in_offset_)) + " (after " +
                           std::to_string(zs->total_out) + " uncompressed bytes)");
      }
      zs->next_in = in_.data();
      zs->avail_in = static_cast<uInt>(got);
    }
    if (member_done_) {
      // Another gzip member follows the previous one.
      in_offset_ += static_cast<int64_t>(zs->total_in);
      uLong out_so_far = zs->total_out;
      inflateReset(zs);
      zs->total_out = out_so_far;
      member_done_ = false;
    }
    int rc = inflate(zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      member_done_ = true;
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw InvalidInput(name_ + ": corrupt gzip data at compressed byte " +
                         std::to_string(zs->total_in + static_cast<uLong>(in_offset_)) + ": " +
                         (zs->msg != nullptr ? zs->msg : "inflate failed"));
    }
  }
  return max - zs->avail_out;
}

int64_t StreamKineto(const fs::path& path, const std::string& name, KinetoVisitor& visitor, bool pipelined) {
  Pipe pipe(visitor, pipelined);
  Streamer s(path, name, pipe);
  return pipe.Run([&] { return s.Run(); });
}

}  // namespace shardscope::trace::detail
