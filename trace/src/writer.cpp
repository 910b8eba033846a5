#include "shardscope/trace/writer.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <type_traits>
#include <variant>

#include "encode_v2.hpp"
#include "shardscope/error.hpp"
#include "shardscope/files.hpp"
#include "shardscope/trace/codec.hpp"
#include "writer_sink.hpp"

namespace shardscope::trace {

int64_t NowNs() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string RankFileName(int64_t rank) { return "rank-" + std::to_string(rank) + ".jsonl"; }

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

std::vector<std::filesystem::path> RankFilesIn(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  const auto status = std::filesystem::status(dir, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return out;
  if (status.type() != std::filesystem::file_type::directory) {
    throw InvalidInput("trace: '" + dir.string() + "' exists and is not a directory");
  }
  for (const auto& entry : ListDirectory(dir, "trace")) {
    if (RankOfFileName(entry.path().filename().string()) >= 0) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Writer::Writer(const std::filesystem::path& dir, Header header,
               std::function<void(const std::string&)> on_write_error, Durability durability)
    : header_(std::move(header)),
      durability_(durability),
      captured_(std::make_unique<detail::Batch>()),
      sink_(std::make_shared<detail::Sink>()) {
  header_.format = std::string(kFormatName);
  // The header's version picks the format: v1 for interchange with older readers, v2 (the
  // default), or this library's newest (v3, which adds the compact forms of imported DebugMode
  // logs) for any higher value.
  if (header_.version >= kCurrentVersion)
    header_.version = kCurrentVersion;
  else if (header_.version != 1)
    header_.version = kDefaultVersion;
  if (header_.version >= 2)
    sink_->v2 = std::make_unique<detail::EncoderV2>(header_.rank, header_.mesh_shape,
                                                    header_.version >= kCompactImportVersion);
  sink_->on_write_error = std::move(on_write_error);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InvalidInput("trace: cannot create directory '" + dir.string() + "': " + ec.message());
  path_ = dir / RankFileName(header_.rank);
  sink_->path = path_;
  sink_->file = std::fopen(path_.c_str(), "wb");
  if (sink_->file == nullptr) {
    throw InvalidInput("trace: cannot open '" + path_.string() + "' for writing: " + std::strerror(errno));
  }
  sink_->WriteNow(ToLine(ToJson(header_)) + '\n');
  ThrowPendingError();
  if (durability_ == Durability::kBackground) {
    try {
      flusher_ = detail::Flusher::Get();
      flusher_->Add(sink_);
    } catch (const std::system_error&) {  // no thread to be had: write on the caller's
      flusher_.reset();
      durability_ = Durability::kEveryEnd;
    }
  }
}

Writer::~Writer() {
  try {
    Close();
  } catch (const Error&) {
    // A destructor must not throw; ok() already reports the failed write.
  }
}

bool Writer::ok() const { return sink_->ok.load(std::memory_order_relaxed); }

bool Writer::Capturing() {
  if (closed_) return false;
  if (!sink_->ok.load(std::memory_order_relaxed)) {   // after a failure nothing more is captured
    if (!sink_->on_write_error) ThrowPendingError();  // a background write's error, thrown once
    return false;
  }
  return true;
}

template <typename E>
void Writer::Capture(E&& event, bool handoff) {
  if (!Capturing()) return;
  detail::Batch& batch = *captured_;
  batch.records.push_back({nullptr, batch.full.size(), {}});
  batch.full.emplace_back(std::forward<E>(event));
  if (handoff || batch.size() >= kHandoffEvents) Handoff();
}

void Writer::Pin(const EventTemplate& tmpl) {
  // The same few templates come back at every redistribute: most captures find theirs here.
  for (auto it = pins_.rbegin(); it != pins_.rend(); ++it) {
    if (it->get() == tmpl.get()) return;
  }
  if (pins_.size() == kPins) {
    // Lines captured so far may still refer to the oldest: it is released with them.
    captured_->pins.push_back(std::move(pins_.front()));
    pins_.erase(pins_.begin());
  }
  pins_.push_back(tmpl);
}

void Writer::Emit(const EventTemplate& tmpl, const TemplateFields& fields) {
  if (tmpl == nullptr || !Capturing()) return;
  Pin(tmpl);
  detail::Batch& batch = *captured_;
  batch.records.push_back({tmpl.get(), 0, fields});
  const bool handoff = std::holds_alternative<RedistributeEnd>(*tmpl) || std::holds_alternative<Op>(*tmpl);
  if (handoff || batch.size() >= kHandoffEvents) Handoff();
}

Event Materialize(const Event& tmpl, const TemplateFields& f) {
  Event event = tmpl;
  std::visit([&f](auto& e) { detail::ApplyTemplateFields(e, f); }, event);
  return event;
}

// Moves the captured lines behind the handed-off ones; returns how many wait in the queue.
size_t Writer::Enqueue() {
  std::lock_guard<std::mutex> lock(sink_->queue_mu);
  detail::Batch& queue = sink_->queue;
  // Copied, never swapped in when the queue is empty: the queue and the drain's batch then keep
  // the capacity of a whole period's lines (they trade vectors at each drain), and captured_ that
  // of one redistribute's. A swap would leave the queue with a redistribute's capacity, regrown
  // through every power of two (fresh pages faulted in) on the emitting thread at every period.
  queue.Append(*captured_);
  return queue.size();
}

void Writer::Handoff() {
  const size_t queued = Enqueue();
  if (durability_ == Durability::kDeferred && queued < kMaxQueuedEvents) return;
  if (!flusher_ || !flusher_->running() || queued >= kMaxQueuedEvents) {
    // kEveryEnd, no background thread (stopped at exit, or a forked child), or it is behind: write
    // on this thread.
    sink_->Drain();
    ThrowPendingError();
  } else if (queued >= kMaxQueuedEvents / 2) {
    flusher_->Wake();
  }
  if (!sink_->on_write_error && !sink_->ok.load(std::memory_order_relaxed)) ThrowPendingError();
}

void Writer::ThrowPendingError() {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(sink_->queue_mu);
    message.swap(sink_->error);
  }
  if (!message.empty()) throw InvalidInput(message);
}

void Writer::Emit(const RedistributeBegin& event) { Capture(event, false); }
void Writer::Emit(const RedistributeEnd& event) { Capture(event, true); }
void Writer::Emit(const StepBegin& event) { Capture(event, false); }
void Writer::Emit(const StepEnd& event) { Capture(event, false); }
void Writer::Emit(const Collective& event) { Capture(event, false); }
void Writer::Emit(const Op& event) { Capture(event, true); }
void Writer::Emit(RedistributeBegin&& event) { Capture(std::move(event), false); }
void Writer::Emit(RedistributeEnd&& event) { Capture(std::move(event), true); }
void Writer::Emit(StepBegin&& event) { Capture(std::move(event), false); }
void Writer::Emit(StepEnd&& event) { Capture(std::move(event), false); }
void Writer::Emit(Collective&& event) { Capture(std::move(event), false); }
void Writer::Emit(Op&& event) { Capture(std::move(event), true); }
void Writer::Emit(const Event& event) {
  const bool handoff = std::holds_alternative<RedistributeEnd>(event) || std::holds_alternative<Op>(event);
  Capture(event, handoff);
}
void Writer::Emit(Event&& event) {
  const bool handoff = std::holds_alternative<RedistributeEnd>(event) || std::holds_alternative<Op>(event);
  Capture(std::move(event), handoff);
}

void Writer::Flush() {
  if (closed_) return;
  if (!captured_->empty()) Enqueue();
  sink_->Drain();
  ThrowPendingError();
}

void Writer::Close() {
  if (closed_) return;
  closed_ = true;
  if (flusher_) flusher_->Remove(sink_.get());
  flusher_.reset();  // the last writer of the process stops the background thread
  for (EventTemplate& pin : pins_) captured_->pins.push_back(std::move(pin));
  pins_.clear();
  if (!captured_->empty()) Enqueue();
  sink_->CloseFile();
  ThrowPendingError();
}

}  // namespace shardscope::trace
