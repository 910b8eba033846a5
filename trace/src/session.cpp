#include "shardscope/trace/session.hpp"

#include <unistd.h>

#include <cstdlib>
#include <exception>

#include "shardscope/error.hpp"

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

TraceSession::TraceSession() : mutex_(std::make_unique<std::mutex>()) {}

TraceSession::TraceSession(std::filesystem::path dir)
    : enabled_(true), dir_(std::move(dir)), mutex_(std::make_unique<std::mutex>()) {}

TraceSession TraceSession::FromEnv() {
  const char* value = std::getenv(kTraceEnvVar);
  if (value == nullptr || *value == '\0') return TraceSession();
  return TraceSession(std::filesystem::path(value));
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
  std::unique_ptr<Writer>& slot = writers_[rank];
  if (!slot) {
    Header h = header;
    h.rank = rank;
    try {
      slot = std::make_unique<Writer>(dir_, std::move(h));
    } catch (...) {
      writers_.erase(rank);
      throw;
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
  if (first) std::rethrow_exception(first);
}

}  // namespace shardscope::trace
