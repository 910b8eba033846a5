#include "trace_loader.hpp"

#include <filesystem>
#include <system_error>

#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/triage.hpp"

namespace shardscope::app::gui {
namespace {

std::atomic<int> g_dump_delay_ms{0};

}  // namespace

void TraceLoader::SetDumpDelayForTests(int milliseconds) { g_dump_delay_ms = milliseconds; }

TraceLoader::TraceLoader(std::string path)
    : path_(std::move(path)), start_(std::chrono::steady_clock::now()) {
  // The total is the reader's (the files it reads), not a sum over the directory: a dump
  // directory's README, a profiler trace beside the rank files or a core file would otherwise hold
  // the bar short of its end.
  thread_ = std::thread([this] {
    std::shared_ptr<const trace::Model> model;
    std::shared_ptr<const FlightAnalysis> analysis;
    std::string error;
    auto set_stage = [this](const char* stage) {
      std::lock_guard<std::mutex> lock(mutex_);
      stage_ = stage;
      stages_.push_back({stage, elapsed_s()});
    };
    try {
      std::error_code ec2;
      if (!std::filesystem::exists(path_, ec2)) {
        error = path_ + ": no such file or directory";
      } else if (trace::ImporterFor(path_) == "flight_recorder") {
        flight_ = true;
        const int delay_ms = g_dump_delay_ms.load();
        std::mutex kept_mutex;
        std::vector<trace::FlightRecorderDump> kept;
        auto each = [&](trace::FlightRecorderDump& dump) {
          collector_.Add(dump);
          {
            std::lock_guard<std::mutex> lock(kept_mutex);
            kept.push_back(std::move(dump));  // for the model: the dumps are read once
          }
          if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        };
        // What a user debugging a hang wants first is triage's verdict. Triage streams the dumps
        // (trace::TriagePaths, as `shardscope triage` does), on every core; each rank's dump is
        // also summarised for the ranks-read-so-far view and kept for the model as it goes by.
        set_stage("triage: reading dumps");
        auto triage = std::make_shared<const trace::TriageResult>(
            trace::TriagePaths({path_}, {}, 0, {}, &progress_, each));
        {
          std::lock_guard<std::mutex> lock(mutex_);
          triage_ = triage;
        }
        // Then the model for the lanes, as ReadAnyTrace reads it (the flight_recorder importer),
        // from the dumps triage's pass kept.
        set_stage("assembling the dumps for the lanes");
        model = std::make_shared<trace::Model>(trace::AssembleFlightRecorderModel({path_}, std::move(kept)));
        auto a = std::make_shared<FlightAnalysis>();
        a->triage = *triage;
        set_stage("checking");
        a->check = trace::CheckTrace(*model);
        set_stage("building the lanes");
        a->data = BuildFlightView(*model, a->check, a->triage);
        analysis = std::move(a);
      } else {
        // Traces (a directory or one rank file) and profiler traces.
        model = std::make_shared<trace::Model>(trace::ReadAnyTrace(path_, {.progress = &progress_}));
        if (trace::HasFlightRecords(*model))
          analysis = std::make_shared<FlightAnalysis>(AnalyzeFlight(*model));
      }
    } catch (const std::exception& e) {
      error = e.what();
      model.reset();
      analysis.reset();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      model_ = std::move(model);
      analysis_ = std::move(analysis);
      error_ = std::move(error);
      stage_ = "done";
      stages_.push_back({"done", elapsed_s()});
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

std::shared_ptr<const FlightAnalysis> TraceLoader::analysis() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return analysis_;
}

std::vector<std::pair<std::string, double>> TraceLoader::stages() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stages_;
}

std::string TraceLoader::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

std::shared_ptr<const FlightLoadSnapshot> TraceLoader::snapshot(double max_age_s) {
  if (!flight_.load()) return nullptr;
  std::string stage;
  std::shared_ptr<const trace::TriageResult> triage;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stage = stage_;
    triage = triage_;
  }
  const int64_t ranks = collector_.ranks();
  if (ranks == 0) return nullptr;
  const auto now = std::chrono::steady_clock::now();
  const bool fresh =
      snapshot_ && snapshot_->stage == stage && snapshot_->triage == triage &&
      (snapshot_ranks_ == ranks || std::chrono::duration<double>(now - snapshot_at_).count() < max_age_s);
  if (fresh) return snapshot_;
  auto s = std::make_shared<FlightLoadSnapshot>(collector_.Snapshot(progress_.files_total.load()));
  s->stage = stage;
  s->triage = triage;
  snapshot_ = std::move(s);
  snapshot_at_ = now;
  snapshot_ranks_ = snapshot_->ranks_loaded;
  return snapshot_;
}

}  // namespace shardscope::app::gui
