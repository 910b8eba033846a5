// The memory a run needs (EstimateMemory), what the machine has (AvailableMemoryBytes,
// SHARDSCOPE_MEMORY_LIMIT) and the check RunScenario makes before allocating.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "schedule.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/error.hpp"
#include "shardscope/program/knobs.hpp"
#include "shardscope/program/runner.hpp"

namespace shardscope::program {

using namespace shardscope::engine;  // NOLINT(google-build-using-namespace)

namespace {

double Bytes(const Shape& shape, DType dtype) {
  double n = DTypeSize(dtype);
  for (int64_t e : shape) n *= static_cast<double>(e);  // double: a product past 2^63 must not wrap
  return n;
}

double LocalBytes(const TensorSpec& spec, int64_t rank) {
  return Bytes(ComputeRankLayout(spec, rank).local_shape, spec.dtype);
}

bool ReadNumber(const char* path, double& value) {
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  char buf[64] = {};
  const bool ok = std::fgets(buf, sizeof(buf), f) != nullptr;
  std::fclose(f);
  char* end = nullptr;
  value = ok ? std::strtod(buf, &end) : 0;
  return ok && end != buf;
}

std::string HumanBytes(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f GiB (%.0f bytes)", bytes / (1024.0 * 1024 * 1024), bytes);
  return buf;
}

}  // namespace

MemoryEstimate EstimateMemory(const Scenario& scenario, const RunOptions& options) {
  // Two repetitions hold every spec of any number of them: from the second on, each step starts
  // from the placement the previous repetition left, which is the same every time.
  const std::vector<Planned> schedule = BuildSchedule(scenario, std::min(options.repeat, 2));
  const Mesh& mesh = scenario.mesh;
  const int64_t world = mesh.size();
  const size_t n = scenario.tensors.size();
  std::vector<std::vector<const TensorSpec*>> specs_of(n);
  MemoryEstimate est;
  double globals = 0, gather = 0;
  for (size_t t = 0; t < n; ++t) {
    const ScenarioTensor& st = scenario.tensors[t];
    globals += Bytes(st.spec.shape, st.spec.dtype);
    if (st.produced_by < 0) specs_of[t].push_back(&st.spec);
  }
  for (const Planned& item : schedule) {
    if (item.op != nullptr) {
      for (size_t o = 0; o < item.outputs.size(); ++o) {
        if (item.outputs[o] == kNone) continue;
        const TensorSpec& out = *item.decision.outputs[o];
        specs_of[item.outputs[o]].push_back(&out);
        if (options.verify) gather = std::max(gather, 2 * Bytes(out.shape, out.dtype));
      }
    } else if (!item.backward) {
      specs_of[item.tensor].push_back(&item.dst);
    }
    if (item.op == nullptr && options.verify && HasPartial(item.dst))
      gather = std::max(gather, 2 * Bytes(item.dst.shape, item.dst.dtype));
  }
  double ranks_total = 0, largest_rank = 0;
  for (int64_t r = 0; r < world; ++r) {
    double live = 0;
    for (size_t t = 0; t < n; ++t) {
      double most = 0;
      for (const TensorSpec* spec : specs_of[t]) most = std::max(most, LocalBytes(*spec, r));
      live += most;
      if (most > est.largest_tensor_bytes_per_rank) {
        est.largest_tensor_bytes_per_rank = most;
        est.largest_tensor = scenario.tensors[t].name;
        est.largest_tensor_where = scenario.tensors[t].where;
        est.largest_tensor_global_bytes =
            Bytes(scenario.tensors[t].spec.shape, scenario.tensors[t].spec.dtype);
      }
    }
    double staging = 0;
    for (const Planned& item : schedule) {
      double step = 0;
      if (item.op != nullptr) {
        for (size_t i = 0; i < item.inputs.size(); ++i) {
          if (item.inputs[i] == kNone) continue;
          step += LocalBytes(item.input_specs[i], r);
          if (item.decision.inputs[i]) step += LocalBytes(*item.decision.inputs[i], r);
        }
        for (size_t o = 0; o < item.outputs.size(); ++o)
          if (item.decision.outputs[o]) step += LocalBytes(*item.decision.outputs[o], r);
        step *= 2;
      } else {
        const double dst = LocalBytes(item.dst, r);
        step = LocalBytes(item.src, r) + dst + (options.verify ? dst : 0);
      }
      staging = std::max(staging, step);
    }
    ranks_total += live + staging;
    largest_rank = std::max(largest_rank, live + staging);
  }
  const bool one_rank_per_process = options.backend == "mpi" || options.backend == "nccl";
  est.process_bytes = globals + (one_rank_per_process ? largest_rank : ranks_total) + gather;
  return est;
}

double AvailableMemoryBytes() {
  if (const std::optional<double> limit = KnobNumber(knobs::MemoryLimit())) return *limit;
  double available = 0;
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      double kb = 0;
      if (std::sscanf(line, "MemAvailable: %lf kB", &kb) == 1) available = kb * 1024;
    }
    std::fclose(f);
  }
  // A container's limit (cgroup v2, then v1) is what the kernel enforces; "max" reads as no number.
  double limit = 0, used = 0;
  if ((ReadNumber("/sys/fs/cgroup/memory.max", limit) && ReadNumber("/sys/fs/cgroup/memory.current", used)) ||
      (ReadNumber("/sys/fs/cgroup/memory/memory.limit_in_bytes", limit) &&
       ReadNumber("/sys/fs/cgroup/memory/memory.usage_in_bytes", used))) {
    if (limit > used && limit < 1e18)
      available = available > 0 ? std::min(available, limit - used) : limit - used;
  }
  return available;
}

void detail::RefuseWhatCannotFit(const Scenario& scenario, const RunOptions& options) {
  const double available = AvailableMemoryBytes();
  if (available <= 0) return;
  const MemoryEstimate est = EstimateMemory(scenario, options);
  if (est.process_bytes <= available) return;
  throw InvalidInput(est.largest_tensor_where + ": tensor '" + est.largest_tensor + "' needs up to " +
                     HumanBytes(est.largest_tensor_bytes_per_rank) + " per rank (" +
                     HumanBytes(est.largest_tensor_global_bytes) + " global); the run would need about " +
                     HumanBytes(est.process_bytes) + " in this process but " + HumanBytes(available) +
                     " is available: shrink the tensor or run more ranks under --backend mpi");
}

}  // namespace shardscope::program
