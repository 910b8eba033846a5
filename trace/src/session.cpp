#include "shardscope/trace/session.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include "shardscope/error.hpp"
#include "shardscope/knobs.hpp"

namespace shardscope::trace {

Header MakeHeader(int64_t rank, int64_t world, std::vector<int64_t> mesh_shape,
                  std::vector<std::string> mesh_dim_names, std::string backend) {
  Header h;
  h.rank = rank;
  h.world = world;
  h.mesh_shape = std::move(mesh_shape);
  h.mesh_dim_names = std::move(mesh_dim_names);
  h.mesh_dim_names.resize(h.mesh_shape.size());
  h.backend = std::move(backend);
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) h.host = host;
  h.pid = static_cast<int64_t>(getpid());
  h.clock = Clock{"steady", 0};
  return h;
}

struct TraceSession::Warning {
  std::atomic<bool> printed{false};
  // One line on stderr however many ranks fail (ranks are threads of one process here).
  void Print(const std::string& message) {
    if (printed.exchange(true)) return;
    std::fprintf(stderr, "shardscope: warning: %s; tracing is off, the job goes on\n", message.c_str());
    std::fflush(stderr);
  }
};

TraceSession::TraceSession() : mutex_(std::make_unique<std::mutex>()) {}

TraceSession::TraceSession(std::filesystem::path dir, TraceFailure on_failure, Durability durability)
    : enabled_(true),
      dir_(std::move(dir)),
      on_failure_(on_failure),
      durability_(durability),
      warning_(std::make_shared<Warning>()),
      mutex_(std::make_unique<std::mutex>()) {}

TraceSession TraceSession::FromEnv() {
  const std::optional<std::string> dir = KnobValue(knobs::TraceDir());
  if (!dir) return TraceSession();
  return TraceSession(std::filesystem::path(*dir), TraceFailure::kWarnAndStop);
}

TraceSession::TraceSession(TraceSession&&) noexcept = default;
TraceSession& TraceSession::operator=(TraceSession&&) noexcept = default;

TraceSession::~TraceSession() {
  try {
    Close();
  } catch (const Error&) {
    // Destructors must not throw; Writer::ok() is false for the writer that failed.
  }
}

Writer* TraceSession::WriterFor(int64_t rank, const Header& header) {
  if (!enabled_) return nullptr;
  std::lock_guard<std::mutex> lock(*mutex_);
  if (failed_) return nullptr;  // kWarnAndStop after a failure: tracing is off
  if (!lock_) {
    try {
      lock_ = std::make_unique<TraceDirLock>(dir_);
    } catch (const std::exception& e) {
      if (on_failure_ == TraceFailure::kThrow) throw;
      warning_->Print(e.what());
      failed_ = true;
      return nullptr;
    }
  }
  std::unique_ptr<Writer>& slot = writers_[rank];
  if (!slot) {
    Header h = header;
    h.rank = rank;
    if (on_failure_ == TraceFailure::kThrow) {
      try {
        slot = std::make_unique<Writer>(dir_, std::move(h), nullptr, durability_);
      } catch (...) {
        writers_.erase(rank);
        throw;
      }
    } else {
      try {
        std::shared_ptr<Warning> warning = warning_;
        slot = std::make_unique<Writer>(
            dir_, std::move(h), [warning](const std::string& message) { warning->Print(message); },
            durability_);
      } catch (const std::exception& e) {  // Error from the file system, bad_alloc: never the job's end
        writers_.erase(rank);
        warning_->Print(e.what());
        failed_ = true;
        return nullptr;
      }
    }
  }
  return slot.get();
}

void TraceSession::Close() {
  if (!mutex_) return;  // moved-from
  std::lock_guard<std::mutex> lock(*mutex_);
  std::exception_ptr first;
  for (auto& [rank, writer] : writers_) {
    try {
      writer->Close();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  writers_.clear();
  lock_.reset();  // after the last rank file is closed
  if (first) std::rethrow_exception(first);
}

}  // namespace shardscope::trace

namespace shardscope::knobs {

// Registered on first use (a function-local static: thread-safe); here, beside the session that
// reads it, so the generic knob registry knows nothing of tracing.
const Knob& TraceDir() {
  static const Knob& knob =
      RegisterKnob(TextKnob(trace::kTraceEnvVar, "trace", "unset (no trace)",
                            "directory a TraceSession::FromEnv (and `shardscope run` without --trace) writes "
                            "rank-<R>.jsonl trace files into"));
  return knob;
}

}  // namespace shardscope::knobs
