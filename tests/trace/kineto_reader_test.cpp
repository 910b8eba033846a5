// The Kineto reader against traces of tests/trace/make_kineto_traces.py: every expectation follows
// from the generator's parameters (its docstring) and nccl-tests' definitions (docs/kineto.md).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include <unistd.h>

#include "../../trace/src/kineto_names.hpp"  // the reader's private name tables
#include "shardscope/error.hpp"
#include "shardscope/trace/check.hpp"
#include "shardscope/trace/kineto.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using namespace shardscope::trace;

namespace {

// A fresh directory of generator output for `args`.
fs::path Generate(const std::string& args) {
  static int n = 0;
  fs::path dir =
      fs::temp_directory_path() / ("kineto_test_" + std::to_string(getpid()) + "_" + std::to_string(n++));
  fs::remove_all(dir);
  std::string cmd =
      "python3 " SHARDSCOPE_SOURCE_DIR "/tests/trace/make_kineto_traces.py " + dir.string() + " " + args;
  REQUIRE(std::system(cmd.c_str()) == 0);
  return dir;
}

}  // namespace

TEST_CASE("NCCL kernel names of old and new NCCL give the collective's kind", "[trace][kineto]") {
  using detail::KindOfNcclKernel;
  CHECK(KindOfNcclKernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") ==
        "all_reduce");
  CHECK(KindOfNcclKernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)") ==
        "all_gather");
  CHECK(KindOfNcclKernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(x)") == "reduce_scatter");
  CHECK(KindOfNcclKernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)") == "send_recv");
  CHECK(KindOfNcclKernel("ncclKernel_Broadcast_RING_LL_Sum_int8_t(a)") == "broadcast");
  CHECK(KindOfNcclKernel("sm90_xmma_gemm_f32f32") == "");
  using detail::KindOfCollectiveName;
  CHECK(KindOfCollectiveName("allreduce") == "all_reduce");
  CHECK(KindOfCollectiveName("_allgather_base") == "all_gather");
  CHECK(KindOfCollectiveName("_reduce_scatter_base") == "reduce_scatter");
  CHECK(KindOfCollectiveName("alltoall_base") == "all_to_all");
  CHECK(KindOfCollectiveName("nccl:all_to_all") == "all_to_all");
  CHECK(KindOfCollectiveName("wait") == "");
  CHECK(KindOfCollectiveName("barrier") == "barrier");
}

TEST_CASE("the rank of a Kineto file name", "[trace][kineto]") {
  CHECK(KinetoRankOfFileName("rank-3.20260101.1003.pt.trace.json") == 3);
  CHECK(KinetoRankOfFileName("worker_rank12.json.gz") == 12);
  CHECK(KinetoRankOfFileName("host.7.pt.trace.json") == 7);
  CHECK(KinetoRankOfFileName("host_1234.7.pt.trace.json") == -1);  // two runs of digits, no "rank"
  CHECK(KinetoRankOfFileName("trace.json") == -1);
}

TEST_CASE("nccl-tests' bus bandwidth factors", "[trace][kineto]") {
  // doc/PERFORMANCE.md of nccl-tests.
  for (int64_t n = 1; n <= 64; ++n) {
    const double d = static_cast<double>(n);
    CHECK(BusBandwidthFactor("all_reduce", n) == Approx(2 * (d - 1) / d));
    CHECK(BusBandwidthFactor("all_gather", n) == Approx((d - 1) / d));
    CHECK(BusBandwidthFactor("reduce_scatter", n) == Approx((d - 1) / d));
    CHECK(BusBandwidthFactor("all_to_all", n) == Approx((d - 1) / d));
    CHECK(BusBandwidthFactor("broadcast", n) == 1.0);
    CHECK(BusBandwidthFactor("send_recv", n) == 1.0);
  }
}

TEST_CASE("a straggler is the last to arrive and everyone else waits its delay", "[trace][kineto]") {
  const int ranks = GENERATE(2, 4, 8);
  const int steps = GENERATE(1, 3);
  const int straggler = ranks - 1;
  const double delay_us = 40, transfer_us = 80;
  const int64_t elems = 4096;
  fs::path dir =
      Generate("--ranks " + std::to_string(ranks) + " --steps " + std::to_string(steps) + " --straggler " +
               std::to_string(straggler) + " --delay-us 40 --transfer-us 80 --elems 4096 " +
               "--kinds all_reduce,all_gather,reduce_scatter --gzip");
  KinetoImport imp = ReadKineto({dir});
  REQUIRE(imp.ranks.size() == static_cast<size_t>(ranks));
  for (const KinetoRankInfo& r : imp.ranks) {
    CHECK(r.world == ranks);
    CHECK(r.counted_from_kernels);
    CHECK(r.collectives == std::map<std::string, int64_t>{
                               {"all_gather", steps}, {"all_reduce", steps}, {"reduce_scatter", steps}});
    CHECK(r.kernels == steps * (2 + 3));
    CHECK(r.ops == steps * 4);
    CHECK(r.steps == steps);
  }
  // One op record per op event (a ProfilerStep#N and 4 cpu_ops a step), by rank then id (each
  // rank's ops numbered from 0), as the trace reader gives of the trace `import kineto -o` writes.
  const size_t per_rank = static_cast<size_t>(steps) * (1 + 4);
  REQUIRE(imp.model.ops.size() == static_cast<size_t>(ranks) * per_rank);
  for (size_t i = 0; i < imp.model.ops.size(); ++i) {
    CHECK(imp.model.ops[i].rank == static_cast<int64_t>(i / per_rank));
    CHECK(imp.model.ops[i].op->id == static_cast<int64_t>(i % per_rank));
  }
  CHECK(imp.model.OpsWithId(0).size() == static_cast<size_t>(ranks));
  KinetoAnalysis a = AnalyzeKineto(imp.model);
  CHECK(a.matched == 3 * steps);
  CHECK(a.unmatched == 0);
  CHECK(a.last_arrivals == std::map<int64_t, int64_t>{{straggler, 3 * steps}});
  for (const KinetoCollective& c : a.collectives) {
    CHECK(c.last_rank == straggler);
    CHECK(c.time_ns == static_cast<int64_t>(transfer_us * 1000));
    for (const auto& [r, w] : c.wait_ns)
      CHECK(w == (r == straggler ? 0 : static_cast<int64_t>(delay_us * 1000)));
  }
  REQUIRE(a.steps.size() == static_cast<size_t>(3 * steps));
  for (const KinetoStepStat& s : a.steps) {
    const int64_t in_bytes = elems * 4;
    const int64_t S = s.kind == "all_reduce" ? in_bytes : in_bytes * ranks;  // nccl-tests' S
    CHECK(s.count == 1);
    CHECK(s.bytes == S);
    CHECK(s.algbw_gbps == Approx(static_cast<double>(S) / (transfer_us * 1000)));
    CHECK(s.busbw_gbps == Approx(s.algbw_gbps * BusBandwidthFactor(s.kind, ranks)));
    CHECK(s.wait_ns == static_cast<int64_t>((ranks - 1) * delay_us * 1000));
  }
  CHECK(CheckTrace(imp.model).Clean());
  fs::remove_all(dir);
}

TEST_CASE("every variant of the reference reads to the same collectives", "[trace][kineto]") {
  const std::string variant =
      GENERATE(std::string("--variant new --seq"), std::string("--variant old"),
               std::string("--variant noargs --no-correlation"),
               std::string("--variant new --kernel-args --dist-info partial --compact"),
               std::string("--variant old --dist-info none --dist-info-last --gzip"));
  fs::path dir = Generate("--ranks 4 --steps 2 --tp 2 " + variant);
  KinetoImport imp = ReadKineto({dir});
  REQUIRE(imp.ranks.size() == 4);
  for (const KinetoRankInfo& r : imp.ranks) {
    std::map<std::string, int64_t> want = {
        {"all_reduce", 2}, {"all_gather", 2}, {"reduce_scatter", 2}, {"broadcast", 2}, {"all_to_all", 2}};
    want[r.rank % 2 == 0 ? "send" : "recv"] = 2;
    CHECK(r.collectives == want);
  }
  // With record_param_comms args: 3 world collectives + 2 tp groups x 2 + 2 send/recv pairs per
  // step. Without them the trace does not say a collective's group, so all 5 are taken as the
  // default group's, and the sends/recvs (peers unknown) as one p2p series on it.
  const bool has_group = variant.find("--variant new") != std::string::npos;
  KinetoAnalysis a = AnalyzeKineto(imp.model);
  CHECK(a.matched == (has_group ? 2 * (3 + 4 + 2) : 2 * (5 + 1)));
  CHECK(a.unmatched == 0);
  fs::remove_all(dir);
}

TEST_CASE("the ops of one name share one shape", "[trace][kineto][resident]") {
  fs::path dir = Generate("--ranks 1 --steps 3 --pad-ops 40");
  KinetoImport imp = ReadKineto({dir});
  REQUIRE(imp.model.ranks.size() == 1);
  const std::vector<Op>& ops = imp.model.ranks[0].events.Of<Op>();
  REQUIRE(ops.size() > 100);
  std::map<std::string, const Op*> first_of_name;
  size_t shared = 0;
  for (const Op& op : ops) {
    CHECK(op.args().empty());
    CHECK(op.inputs().empty());
    CHECK(op.candidates().empty());
    auto [it, fresh] = first_of_name.try_emplace(op.name().str(), &op);
    if (!fresh) {
      CHECK(op.shape.SharesWith(it->second->shape));
      ++shared;
    }
  }
  // Different names, different shapes; the ProfilerStep#N ops have a name each.
  for (const auto& [name, op] : first_of_name)
    for (const auto& [other_name, other] : first_of_name)
      if (name != other_name) CHECK_FALSE(op->shape.SharesWith(other->shape));
  CHECK(first_of_name.count("ProfilerStep#0") == 1);
  CHECK(shared > 0);
  fs::remove_all(dir);
}

TEST_CASE("missing ranks are named, a rank file that stops early is an offset error", "[trace][kineto]") {
  fs::path dir = Generate("--ranks 3 --world 16 --only 0,2 --steps 1");
  Model m = ReadKinetoModel({dir});
  CHECK(m.world == 16);
  bool named = false;
  for (const Diagnostic& d : m.diagnostics)
    named = named || d.message.find("14 of 16 ranks have no profiler trace (1, 3, 4, 5, 6, 7, 8, 9, ...)") !=
                         std::string::npos;
  CHECK(named);
  // Every prefix of a file is refused with the file's name, never accepted or crashed on.
  fs::path file;
  for (const auto& e : fs::directory_iterator(dir)) file = e.path();
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::mt19937 rng(7);
  for (int i = 0; i < 40; ++i) {
    size_t cut = std::uniform_int_distribution<size_t>(0, text.size() - 3)(rng);
    fs::path part = dir / "cut" / "rank-0.json";
    fs::create_directories(part.parent_path());
    std::ofstream(part, std::ios::binary) << text.substr(0, cut);
    try {
      ReadKinetoModel({part});
      FAIL("a prefix of " << cut << " bytes was accepted");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::kInvalidInput);
      CHECK(std::string(e.what()).find("rank-0.json: ") == 0);
    }
  }
  fs::remove_all(dir);
}
