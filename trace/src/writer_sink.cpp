#include "writer_sink.hpp"

#include <cerrno>
#include <cstring>
#include <variant>

#include "encode_v2.hpp"
#include "fast_encode.hpp"
#include "shardscope/trace/codec.hpp"

namespace shardscope::trace::detail {

Sink::Sink() = default;

Sink::~Sink() {
  if (file != nullptr) std::fclose(file);
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
  buffer.clear();
  if (failed) Fail("trace: write to '" + path.string() + "' failed: " + std::strerror(errno));
}

void Sink::WriteNow(const std::string& text) {
  std::lock_guard<std::mutex> lock(write_mu);
  if (file == nullptr || !ok) return;
  buffer += text;
  WriteBuffer();
}

// The common events are written straight into the buffer (encode_v2.cpp, or fast_encode.cpp for
// v1); one the v1 fast path declines (a string to escape, a non-finite number) goes through the
// JSON tree of codec.cpp.
void Sink::Drain() {
  std::lock_guard<std::mutex> lock(write_mu);
  {
    std::lock_guard<std::mutex> queue_lock(queue_mu);
    if (queue.empty()) return;
    std::swap(queue, draining);
  }
  if (file != nullptr && ok) {
    for (const Event& event : draining) {
      std::visit(
          [this](const auto& e) {
            if (v2)
              v2->Encode(e, buffer);
            else if (!FastEncode(e, buffer))
              buffer += ToLine(ToJson(Event(e)));
          },
          event);
      buffer += '\n';
    }
    WriteBuffer();
  }
  draining.clear();  // keeps its capacity: the vectors cycle between writer, queue and drain
}

void Sink::CloseFile() {
  Drain();
  std::lock_guard<std::mutex> lock(write_mu);
  if (file == nullptr) return;
  std::FILE* f = file;
  file = nullptr;
  if (std::fclose(f) != 0 && ok)
    Fail("trace: closing '" + path.string() + "' failed: " + std::strerror(errno));
}

std::shared_ptr<Flusher> Flusher::Get() {
  static std::mutex mu;
  static std::weak_ptr<Flusher> current;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<Flusher> flusher = current.lock();
  if (!flusher) {
    flusher = std::make_shared<Flusher>();
    current = flusher;
  }
  return flusher;
}

Flusher::Flusher() : thread_([this] { Loop(); }) {}

Flusher::~Flusher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
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
    for (const std::shared_ptr<Sink>& sink : batch) sink->Drain();
    batch.clear();
    lock.lock();
    if (last) return;
  }
}

}  // namespace shardscope::trace::detail
