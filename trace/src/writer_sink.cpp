#include "writer_sink.hpp"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <variant>

#include "encode_v2.hpp"
#include "fast_encode.hpp"
#include "shardscope/trace/codec.hpp"

namespace shardscope::trace::detail {

Sink::Sink() = default;

Sink::~Sink() {
  if (file != nullptr) std::fclose(file);
}

std::string Sink::Partial() const {
  // What stays is every whole line written before (a reader skips the torn last one), so the
  // directory reads like a run that stopped or hung there: the message says it is not one.
  return ", leaving a partial trace in '" + path.parent_path().string() + "': ";
}

void Sink::Fail(const std::string& message) {
  if (on_write_error) {
    if (ok.exchange(false)) on_write_error(message);  // reported once
    return;
  }
  // The message is stored before ok turns false: an owner that sees !ok finds it.
  std::lock_guard<std::mutex> lock(queue_mu);
  if (!ok.load()) return;
  error = message;
  ok.store(false);
}

void Sink::WriteBuffer() {
  if (buffer.empty()) return;
  // Whole lines only reach the file, so a kill leaves at most the last line torn.
  const size_t written = std::fwrite(buffer.data(), 1, buffer.size(), file);
  const bool failed = written != buffer.size() || std::fflush(file) != 0;
  const int err = errno;  // before the message allocates
  buffer.clear();
  if (failed) Fail("trace: write to '" + path.string() + "' failed" + Partial() + std::strerror(err));
}

void Sink::WriteNow(const std::string& text) {
  std::lock_guard<std::mutex> lock(write_mu);
  if (file == nullptr || !ok) return;
  buffer += text;
  WriteBuffer();
}

void Batch::Append(Batch& other) {
  const size_t offset = full.size();
  for (Captured& c : other.records) {
    if (c.tmpl == nullptr) c.index += offset;
  }
  records.insert(records.end(), other.records.begin(), other.records.end());
  full.insert(full.end(), std::make_move_iterator(other.full.begin()),
              std::make_move_iterator(other.full.end()));
  pins.insert(pins.end(), std::make_move_iterator(other.pins.begin()),
              std::make_move_iterator(other.pins.end()));
  other.clear();
}

namespace {

// Appends the line of `e` (without '\n'): the common events straight into the buffer
// (encode_v2.cpp, or fast_encode.cpp for v1); one the v1 fast path declines (a string to escape, a
// non-finite number) goes through the JSON tree of codec_encode.cpp.
// `repeated`: e is a copy of a template (EncoderV2::Encode).
template <typename E>
void EncodeLine(const E& e, EncoderV2* v2, std::string& buffer, bool repeated = false) {
  if (v2) {
    if constexpr (requires { v2->Encode(e, buffer, repeated); })
      v2->Encode(e, buffer, repeated);
    else
      v2->Encode(e, buffer);
  } else if (!FastEncode(e, buffer))
    buffer += ToLine(ToJson(Event(e)));
  buffer += '\n';
}

// The number of template captures from records[begin] (a redistribute_begin's) to its end: its
// steps and collectives (same id) and then its redistribute_end; 0 when something else comes
// first or the redistribute goes on past the batch (or past EncoderV2::kMaxRepeatEvents).
size_t WholeRedistribute(const std::vector<Captured>& records, size_t begin) {
  const int64_t id = records[begin].fields.id;
  const size_t stop = std::min(records.size(), begin + EncoderV2::kMaxRepeatEvents);
  for (size_t i = begin + 1; i < stop; ++i) {
    const Captured& c = records[i];
    if (c.tmpl == nullptr || c.fields.id != id) return 0;
    if (std::holds_alternative<RedistributeEnd>(*c.tmpl)) return i - begin + 1;
    if (!std::holds_alternative<StepBegin>(*c.tmpl) && !std::holds_alternative<StepEnd>(*c.tmpl) &&
        !std::holds_alternative<Collective>(*c.tmpl))
      return 0;
  }
  return 0;
}

// The same for whole events (an importer's): the events of the redistribute whose begin is
// records[begin], into `run`; empty when it is not whole in the batch.
void WholeRedistribute(const std::vector<Captured>& records, const std::vector<Event>& full, size_t begin,
                       std::vector<const Event*>& run) {
  run.clear();
  const int64_t id = std::get<RedistributeBegin>(full[records[begin].index]).id;
  run.push_back(&full[records[begin].index]);
  const size_t stop = std::min(records.size(), begin + EncoderV2::kMaxRepeatEvents);
  for (size_t i = begin + 1; i < stop; ++i) {
    const Captured& c = records[i];
    if (c.tmpl != nullptr) break;
    const Event& e = full[c.index];
    run.push_back(&e);
    if (const auto* end = std::get_if<RedistributeEnd>(&e); end != nullptr && end->id == id) return;
    const auto* s = std::get_if<StepBegin>(&e);
    const auto* t = std::get_if<StepEnd>(&e);
    const auto* k = std::get_if<Collective>(&e);
    if (!(s && s->redistribute_id == id) && !(t && t->redistribute_id == id) &&
        !(k && k->redistribute_id == id))
      break;
  }
  run.clear();
}

}  // namespace

void Sink::Drain() {
  std::lock_guard<std::mutex> lock(write_mu);
  {
    std::lock_guard<std::mutex> queue_lock(queue_mu);
    if (queue.empty()) return;
    std::swap(queue, draining);
  }
  if (file != nullptr && ok) {
    // A template's line is encoded from a copy of it with the capture's fields set. The copy is
    // kept per event kind and made again only when another template of that kind comes: a job
    // repeating one redistribute copies nothing. `copied_from` is only compared within this drain,
    // whose batch keeps every template it refers to alive (Batch::pins), so an address it holds is
    // never that of another template.
    std::tuple<RedistributeBegin, RedistributeEnd, StepBegin, StepEnd, Collective, Op> copies;
    std::array<const Event*, std::variant_size_v<Event>> copied_from{};
    const std::vector<Captured>& records = draining.records;
    for (size_t i = 0; i < records.size(); ++i) {
      const Captured& c = records[i];
      // A whole redistribute of templates that one before it repeats is one line (v2).
      if (v2 && c.tmpl != nullptr && std::holds_alternative<RedistributeBegin>(*c.tmpl)) {
        const size_t n = WholeRedistribute(records, i);
        if (n > 0 && v2->EncodeRepeat(&records[i], n, buffer)) {
          buffer += '\n';
          i += n - 1;
          continue;
        }
      }
      if (c.tmpl == nullptr) {
        if (v2 && std::holds_alternative<RedistributeBegin>(draining.full[c.index])) {
          WholeRedistribute(records, draining.full, i, whole_run);
          if (!whole_run.empty() && v2->EncodeRepeat(whole_run.data(), whole_run.size(), buffer)) {
            buffer += '\n';
            i += whole_run.size() - 1;
            continue;
          }
        }
        std::visit([&](const auto& e) { EncodeLine(e, v2.get(), buffer); }, draining.full[c.index]);
        continue;
      }
      std::visit(
          [&](const auto& tmpl) {
            auto& copy = std::get<std::decay_t<decltype(tmpl)>>(copies);
            if (copied_from[c.tmpl->index()] != c.tmpl) {
              copy = tmpl;
              copied_from[c.tmpl->index()] = c.tmpl;
            }
            ApplyTemplateFields(copy, c.fields);
            EncodeLine(copy, v2.get(), buffer, true);
          },
          *c.tmpl);
    }
    WriteBuffer();
  }
  draining.clear();  // keeps its capacity: the batches cycle between writer, queue and drain
}

void Sink::CloseFile() {
  Drain();
  std::lock_guard<std::mutex> lock(write_mu);
  if (file == nullptr) return;
  std::FILE* f = file;
  file = nullptr;
  if (std::fclose(f) != 0 && ok) {
    const int err = errno;
    Fail("trace: closing '" + path.string() + "' failed" + Partial() + std::strerror(err));
  }
}

namespace {

// The registry of the process's flusher. Immortal, so the exit and fork handlers below can use it
// at any point of the process's life.
std::mutex& RegistryMutex() {
  static std::mutex* mu = new std::mutex();  // NOLINT: immortal on purpose
  return *mu;
}
std::weak_ptr<Flusher>& Current() {
  static auto* current = new std::weak_ptr<Flusher>();  // NOLINT: immortal on purpose
  return *current;
}
// The flusher a fork() in progress holds locked (set by the prepare handler).
std::shared_ptr<Flusher>& Forking() {
  static auto* forking = new std::shared_ptr<Flusher>();  // NOLINT: immortal on purpose
  return *forking;
}

void StopAtExit() {
  std::shared_ptr<Flusher> flusher;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    flusher = Current().lock();
  }
  if (flusher) flusher->Stop();
}

void PrepareFork() {
  RegistryMutex().lock();
  Forking() = Current().lock();
  if (Forking()) Forking()->LockForFork();
}

void AfterFork(bool child) {
  std::shared_ptr<Flusher> flusher = std::move(Forking());
  Forking().reset();
  if (flusher) flusher->UnlockAfterFork(child);
  if (child) {
    Current().reset();  // a writer the child opens gets a thread of its own
    // The inherited flusher is never destroyed in the child: its condition variable may count the
    // parent's thread as a waiter, and pthread_cond_destroy would wait for it forever.
    static auto* kept = new std::vector<std::shared_ptr<Flusher>>();  // NOLINT: immortal on purpose
    if (flusher) kept->push_back(flusher);
  }
  RegistryMutex().unlock();
  // `flusher` may be the last reference: its destructor runs here, with no lock held.
}

void ParentAfterFork() { AfterFork(false); }
void ChildAfterFork() { AfterFork(true); }

}  // namespace

std::shared_ptr<Flusher> Flusher::Get() {
  static std::once_flag handlers;
  std::call_once(handlers, [] {
    std::atexit(StopAtExit);
    pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork);
  });
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::shared_ptr<Flusher> flusher = Current().lock();
  if (!flusher) {
    flusher = std::make_shared<Flusher>();
    Current() = flusher;
  }
  return flusher;
}

Flusher::Flusher() {
  running_.store(true, std::memory_order_release);
  try {
    thread_ = std::make_unique<std::thread>([this] { Loop(); });
  } catch (...) {
    running_.store(false, std::memory_order_release);
    throw;
  }
}

Flusher::~Flusher() { Stop(); }

void Flusher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_ && thread_->joinable()) {
    if (thread_->get_id() == std::this_thread::get_id())
      thread_->detach();  // exit() called from a write-error callback on the thread itself
    else
      thread_->join();  // the thread drains every sink a last time before it returns
  }
  running_.store(false, std::memory_order_release);
}

void Flusher::LockForFork() {
  drain_mu_.lock();  // waits for a drain in progress: no sink lock is held by the thread now
  mu_.lock();
}

void Flusher::UnlockAfterFork(bool child) {
  if (child) {
    // The thread is the parent's: never join it or destroy its handle here (it would wait forever
    // or terminate); writers of the child drain on their own thread.
    running_.store(false, std::memory_order_release);
    stop_ = true;
    (void)thread_.release();  // NOLINT: the handle of a thread this process does not have
  }
  mu_.unlock();
  drain_mu_.unlock();
}

void Flusher::Add(std::shared_ptr<Sink> sink) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    sinks_.push_back(std::move(sink));
  }
  cv_.notify_one();  // from the no-sink sleep to the periodic one
}

void Flusher::Remove(const Sink* sink) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(sinks_, [sink](const std::shared_ptr<Sink>& s) { return s.get() == sink; });
}

void Flusher::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_one();
}

void Flusher::Loop() {
  std::vector<std::shared_ptr<Sink>> batch;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (sinks_.empty() && !stop_) {
      cv_.wait(lock, [this] { return stop_ || !sinks_.empty(); });
    } else if (!stop_) {
      cv_.wait_for(lock, kPeriod, [this] { return stop_ || wake_; });
    }
    wake_ = false;
    const bool last = stop_;
    batch = sinks_;
    lock.unlock();
    {
      std::lock_guard<std::mutex> drain_lock(drain_mu_);
      for (const std::shared_ptr<Sink>& sink : batch) sink->Drain();
    }
    batch.clear();
    lock.lock();
    if (last) return;
  }
}

}  // namespace shardscope::trace::detail
