// Loading traces for the commands that read them (show, diff, check, export, import fr): one
// reader call with a progress line, and load warnings printed one way.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "shardscope/error.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/reader.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

void RunWithProgress(const std::string& path, bool progress,
                     const std::function<void(trace::ReadProgress&)>& read) {
  trace::ReadProgress counters;
  if (!progress || isatty(STDERR_FILENO) == 0) return read(counters);
  // The reader runs on its own thread while this one redraws the line; nothing is printed for a
  // load that ends within half a second.
  std::atomic<bool> done{false};
  std::exception_ptr failure;
  std::thread reader([&] {
    try {
      read(counters);
    } catch (...) {
      failure = std::current_exception();
    }
    done = true;
  });
  const auto start = std::chrono::steady_clock::now();
  bool shown = false;
  while (!done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (done || std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500)) continue;
    std::fprintf(stderr, "\rshardscope: loading %s: %lld/%lld rank files, %.0f/%.0f MB\x1b[K", path.c_str(),
                 static_cast<long long>(counters.files_done.load()),
                 static_cast<long long>(counters.files_total.load()),
                 static_cast<double>(counters.bytes_done.load()) / 1e6,
                 static_cast<double>(counters.bytes_total.load()) / 1e6);
    std::fflush(stderr);
    shown = true;
  }
  reader.join();
  if (shown) std::fprintf(stderr, "\r\x1b[K");
  if (failure) std::rethrow_exception(failure);
}

trace::Model ReadTraceWithProgress(const std::string& path, int jobs, bool progress) {
  std::error_code ec;
  if (path.empty()) throw InvalidInput("missing trace path");
  if (!std::filesystem::exists(path, ec)) throw InvalidInput(path + ": no such trace file or directory");
  trace::Model model;
  RunWithProgress(path, progress, [&](trace::ReadProgress& counters) {
    model = trace::ReadAnyTrace(path, trace::ReadOptions{.jobs = jobs, .progress = &counters});
  });
  return model;
}

std::string DiagnosticText(const trace::Diagnostic& d) {
  std::string message = d.message;
  if (message.rfind("warning: ", 0) == 0) message.erase(0, 9);  // the caller's prefix says it
  if (d.file.empty()) return message;
  return d.file + (d.line > 0 ? ":" + std::to_string(d.line) : "") + ": " + message;
}

void PrintLoadWarnings(const trace::Model& model, const std::string& source) {
  PrintLoadWarnings(model.diagnostics, source);
}

void PrintLoadWarnings(const std::vector<trace::Diagnostic>& diagnostics, const std::string& source) {
  for (const trace::Diagnostic& d : diagnostics)
    std::cerr << "shardscope: warning: " << (source.empty() ? "" : source + ": ") << DiagnosticText(d)
              << "\n";
}

trace::Model LoadTrace(const std::string& path, int jobs, bool progress, const std::string& role) {
  const std::string who = role.empty() ? "" : role + " ";
  if (path.empty()) throw InvalidInput(who + "missing trace path");
  trace::Model model = [&] {
    try {
      return ReadTraceWithProgress(path, jobs, progress);
    } catch (const Error& e) {
      if (role.empty()) throw;
      std::string message = e.what();  // diff: say which side is broken
      if (message.rfind(path, 0) != 0) message = path + ": " + message;
      throw Error(e.code(), who + message);
    }
  }();
  // One input: the diagnostics name their files. Two (diff): say which side each is about.
  PrintLoadWarnings(model, role.empty() ? "" : who + path);
  return model;
}

void KeepUntilExit(trace::Model&& model) {
  // Freeing a model of millions of events list by list takes a second that the user waits for
  // and the kernel would do at once when the process ends. Reachable from a static, so leak
  // checkers do not count it.
  static auto* kept = new std::vector<std::unique_ptr<trace::Model>>();  // NOLINT: immortal on purpose
  kept->push_back(std::make_unique<trace::Model>(std::move(model)));
}

}  // namespace shardscope::app
