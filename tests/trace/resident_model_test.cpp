// The resident model's size (issue 33, docs/performance.md "Resident model"): the bounds on the
// event structs' sizes, derived from their members, and the sharing that keeps the rest small:
// op records refer to the stored ops, equal op lists share one buffer, a record's first step and
// collective cost no allocation, and an event's place in the order costs 4 bytes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "shardscope/trace/event_list.hpp"
#include "shardscope/trace/istr.hpp"
#include "shardscope/trace/model.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/shared_vec.hpp"
#include "shardscope/trace/small_vec.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

// The slots a struct of 8-byte-aligned members takes: every int64, double, pointer-sized handle
// (SharedVec, Rare, EventRef) is one 8-byte slot; two IStrs (4 bytes each) or an IStr and a bool
// share one; std::optional<uint64_t> is two (value and flag, aligned).
constexpr size_t Slots(size_t n) { return 8 * n; }

}  // namespace

TEST_CASE("the event structs stay within their derived sizes", "[trace][resident]") {
  // Handles: an IStr is a 32-bit id into the pool; a SharedVec, a Rare and an EventRef one pointer.
  STATIC_REQUIRE(sizeof(IStr) == 4);
  STATIC_REQUIRE(sizeof(SharedVec<int64_t>) == 8);
  STATIC_REQUIRE(sizeof(Rare<FlightRecord>) == 8);
  STATIC_REQUIRE(sizeof(EventRef<Op>) == 8);
  // Op: id, step, chosen, t_ns, end_ns (5 slots); inputs, outputs, candidates (3); name+args,
  // rule+note, ok+error (3) = 11 slots. The std::string / std::vector members it had made it 280 B.
  STATIC_REQUIRE(sizeof(Op) <= Slots(11));
  // OpInput: tensor (an IStr, padded to a slot), placements, required, redistribute_id = 4 slots.
  STATIC_REQUIRE(sizeof(OpInput) <= Slots(4));
  // OpOutput: tensor+requested, placements, global_shape, local_shape = 4 slots.
  STATIC_REQUIRE(sizeof(OpOutput) <= Slots(4));
  // RedistributeBegin: id, tensor+dtype, global_shape, src/dst placements (2), src/dst order,
  // planner+reason, notation+unoptimized, raw/optimized plan (2), skipped_merges, cost_us, t_ns,
  // op_id, op_input, imported = 16 slots.
  STATIC_REQUIRE(sizeof(RedistributeBegin) <= Slots(16));
  // RedistributeEnd: id, t_ns, ok+error, two optional checksums (2 slots each) = 7 slots.
  STATIC_REQUIRE(sizeof(RedistributeEnd) <= Slots(7));
  // StepBegin: redistribute_id, step, mesh_dims, src+dst, comm, logical_shape, local_shape_before,
  // global_offset_before, t_ns = 9 slots.
  STATIC_REQUIRE(sizeof(StepBegin) <= Slots(9));
  // StepEnd: redistribute_id, step, local_shape_after, global_offset_after, t_ns = 5 slots.
  STATIC_REQUIRE(sizeof(StepEnd) <= Slots(5));
  // Collective: redistribute_id, step, kind+dtype, mesh_dims, group, bytes_sent, bytes_recv,
  // negotiated, start_ns, end_ns, op_id, flight = 12 slots.
  STATIC_REQUIRE(sizeof(Collective) <= Slots(12));
  // FlightRecord: pg_name+pg_desc, seq_id, p2p_seq_id, record_id, op_id, profiling_name+state,
  // four lists, created_ns, duration_ms (2), timeout_ms, is_p2p = 15 slots.
  STATIC_REQUIRE(sizeof(FlightRecord) <= Slots(15));
  // ImportedPlan: source, line, notation, collectives, verdict+reason = 5 slots.
  STATIC_REQUIRE(sizeof(ImportedPlan) <= Slots(5));
  // Records: a SmallVec of 16-byte StepRecords holds one inline plus a 4-byte size and capacity
  // (3 slots); of 8-byte EventRefs 2 slots, of int64_t 2 slots. RedistributeRecord: rank, begin,
  // end, steps (3), collectives (2) = 8 slots; OpRecord: rank, op, redistribute_ids (2),
  // collectives (2) = 6 slots.
  STATIC_REQUIRE(sizeof(SmallVec<StepRecord>) <= Slots(3));
  STATIC_REQUIRE(sizeof(EventRefs<Collective>) <= Slots(2));
  STATIC_REQUIRE(sizeof(RedistributeRecord) <= Slots(8));
  STATIC_REQUIRE(sizeof(SmallVec<int64_t>) <= Slots(2));
  STATIC_REQUIRE(sizeof(OpRecord) <= Slots(6));
}

TEST_CASE("SmallVec holds one element inline and behaves like a vector", "[trace][resident]") {
  std::mt19937 rng(33);
  for (int round = 0; round < 2000; ++round) {
    // Random pushes, pops, copies and moves against a std::vector doing the same.
    SmallVec<std::string> v;
    std::vector<std::string> ref;
    const int ops = static_cast<int>(rng() % 12);
    for (int i = 0; i < ops; ++i) {
      switch (rng() % 5) {
        case 0:
        case 1: {
          std::string s(rng() % 40, static_cast<char>('a' + rng() % 26));  // long ones live on the heap
          v.push_back(s);
          ref.push_back(s);
          break;
        }
        case 2:
          if (!ref.empty()) {
            v.push_back(v.front());  // an element of its own, while it may grow
            ref.push_back(ref.front());
          }
          break;
        case 3:
          if (!ref.empty()) {
            v.pop_back();
            ref.pop_back();
          }
          break;
        default: {
          SmallVec<std::string> copy = v;
          SmallVec<std::string> moved = std::move(copy);
          CHECK(copy.empty());
          v = std::move(moved);
        }
      }
      REQUIRE(v.size() == ref.size());
      REQUIRE(v.ToVector() == ref);
      if (ref.size() <= 1) CHECK(v.capacity() >= 1);
    }
  }
  SmallVec<int64_t> one{7};
  CHECK(one.capacity() == 1);  // no allocation for the first element
  one.push_back(8);
  CHECK(one.capacity() >= 2);
  CHECK(one == SmallVec<int64_t>{7, 8});
}

TEST_CASE("EventList orders events with 4-byte entries and yields them in file order", "[trace][resident]") {
  EventList list;
  std::vector<Event> events;
  std::mt19937 rng(7);
  for (int64_t i = 0; i < 3000; ++i) {
    switch (rng() % 4) {
      case 0: {
        RedistributeBegin b;
        b.id = i;
        events.emplace_back(b);
        break;
      }
      case 1: {
        StepEnd e;
        e.redistribute_id = i;
        events.emplace_back(e);
        break;
      }
      case 2: {
        Collective c;
        c.redistribute_id = i;
        events.emplace_back(c);
        break;
      }
      default: {
        Op op;
        op.id = i;
        events.emplace_back(op);
      }
    }
    list.push_back(events.back());
  }
  REQUIRE(list.size() == events.size());
  CHECK(list == events);
  for (size_t i = 0; i < events.size(); ++i) CHECK(list[i].index() == events[i].index());
}

TEST_CASE("op records refer to the stored ops, and equal op lists share one buffer", "[trace][resident]") {
  const fs::path dir = fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/trace/program";
  for (bool fast : {true, false}) {
    Model m = ReadTraceDir(dir, {.jobs = 2, .fast = fast});
    REQUIRE(m.ops.size() == 12);  // 3 ops on each of 4 ranks
    size_t halos = 0;
    for (const OpRecord& rec : m.ops) {
      const RankTrace& rank = m.ranks.at(static_cast<size_t>(rec.rank));
      const std::vector<Op>& stored = rank.events.Of<Op>();
      REQUIRE(rec.op.IsReference());
      CHECK(std::less_equal<const Op*>()(stored.data(), &*rec.op));
      CHECK(std::less<const Op*>()(&*rec.op, stored.data() + stored.size()));
      for (size_t i = 0; i < rec.collectives.size(); ++i, ++halos) {
        const Collective& c = rec.collectives[i];
        CHECK(c.op_id == rec.op->id);
        CHECK(c.redistribute_id == -1);
      }
      // The same op on every rank: equal candidate lists are one buffer.
      const OpRecord* first = m.OpsWithId(rec.op->id).front();
      CHECK(rec.op->candidates == first->op->candidates);
      CHECK(rec.op->candidates.SharesWith(first->op->candidates));
    }
    CHECK(halos > 0);  // conv2d's halo exchanges
    // A copy's records refer to the copy's events.
    const Model copy = m;
    for (size_t i = 0; i < copy.ops.size(); ++i) {
      const std::vector<Op>& stored = copy.ranks.at(static_cast<size_t>(copy.ops[i].rank)).events.Of<Op>();
      CHECK(copy.ops[i].op.IsReference());
      CHECK(std::less_equal<const Op*>()(stored.data(), &*copy.ops[i].op));
      CHECK(std::less<const Op*>()(&*copy.ops[i].op, stored.data() + stored.size()));
      CHECK(*copy.ops[i].op == *m.ops[i].op);
    }
  }
}
