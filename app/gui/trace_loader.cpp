#include "trace_loader.hpp"

#include <filesystem>
#include <system_error>

#include "shardscope/trace/importers.hpp"

namespace shardscope::app::gui {

TraceLoader::TraceLoader(std::string path)
    : path_(std::move(path)), start_(std::chrono::steady_clock::now()) {
  // The total is the reader's (the files it reads), not a sum over the directory: a dump
  // directory's README, a profiler trace beside the rank files or a core file would otherwise hold
  // the bar short of its end.
  thread_ = std::thread([this] {
    std::shared_ptr<const trace::Model> model;
    std::string error;
    try {
      std::error_code ec2;
      if (!std::filesystem::exists(path_, ec2)) {
        error = path_ + ": no such file or directory";
      } else {
        // Traces (a directory or one rank file) and Flight Recorder dump directories.
        model = std::make_shared<trace::Model>(trace::ReadAnyTrace(path_, {.progress = &progress_}));
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      model_ = std::move(model);
      error_ = std::move(error);
    }
    done_.store(true, std::memory_order_release);
  });
}

TraceLoader::~TraceLoader() {
  if (thread_.joinable()) thread_.join();
}

double TraceLoader::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::shared_ptr<const trace::Model> TraceLoader::model() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return model_;
}

std::string TraceLoader::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

}  // namespace shardscope::app::gui
