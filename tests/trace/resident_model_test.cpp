// The resident model's size (issue 33, docs/performance.md "Resident model"): the bounds on the
// event structs' sizes, derived from their members, and the sharing that keeps the rest small:
// op records refer to the stored ops, equal op lists share one buffer, a record's first step and
// collective cost no allocation, an event's place in the order costs 4 bytes, the id index 4 bytes
// a record (none when the records are in id order), a reader's lists are allocated at their exact
// sizes, and Flight Recorder entries of one shape share it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../common/all_gather_events.hpp"
#include "../common/fr_json.hpp"
#include "shardscope/trace/event_list.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/istr.hpp"
#include "shardscope/trace/model.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/shared_vec.hpp"
#include "shardscope/trace/small_vec.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

// The slots a struct of 8-byte-aligned members takes: every int64, double, pointer-sized handle
// (SharedVec, Shared, Rare, EventRef) is one 8-byte slot; two IStrs (4 bytes each) or an IStr and a bool
// share one; std::optional<uint64_t> is two (value and flag, aligned).
constexpr size_t Slots(size_t n) { return 8 * n; }

}  // namespace

TEST_CASE("the event structs stay within their derived sizes", "[trace][resident]") {
  // Handles: an IStr is a 32-bit id into the pool; a SharedVec, a Shared, a Rare and an EventRef one
  // pointer.
  STATIC_REQUIRE(sizeof(IStr) == 4);
  STATIC_REQUIRE(sizeof(SharedVec<int64_t>) == 8);
  STATIC_REQUIRE(sizeof(Shared<FlightShape>) == 8);
  STATIC_REQUIRE(sizeof(EventRef<Op>) == 8);
  // Op: id, step, shape, t_ns, end_ns = 5 slots. What calls like it repeat is one shared OpShape:
  // name+args, inputs, outputs, candidates, rule+note, chosen, ok+error = 7 slots. (An op of 11
  // slots held those itself; the std::string / std::vector members it had before made it 280 B.)
  STATIC_REQUIRE(sizeof(Op) <= Slots(5));
  STATIC_REQUIRE(sizeof(OpShape) <= Slots(7));
  // OpInput: tensor (an IStr, padded to a slot), placements, required, redistribute_id = 4 slots.
  STATIC_REQUIRE(sizeof(OpInput) <= Slots(4));
  // OpOutput: tensor+requested, placements, global_shape, local_shape = 4 slots.
  STATIC_REQUIRE(sizeof(OpOutput) <= Slots(4));
  // RedistributeBegin: id, shape, t_ns, op_id, op_input, imported = 6 slots. What redistributes
  // like it repeat is one shared RedistributeShape: tensor+dtype, global_shape, src/dst placements
  // (2), src/dst order, planner+reason, notation+unoptimized, raw/optimized plan (2),
  // skipped_merges, cost_us = 11 slots. (The begin held those itself: 16 slots.)
  STATIC_REQUIRE(sizeof(RedistributeBegin) <= Slots(6));
  STATIC_REQUIRE(sizeof(RedistributeShape) <= Slots(11));
  // RedistributeEnd: id, t_ns, ok+error, checksums (a Rare: one pointer, both checksums on the heap
  // when the run computed them) = 4 slots. (Two inline optional checksums took 2 slots each.)
  STATIC_REQUIRE(sizeof(RedistributeEnd) <= Slots(4));
  // StepBegin: redistribute_id, step+src (step is below kMaxPlanSteps: 4 bytes), dst+comm,
  // mesh_dims, logical_shape, local_shape_before, global_offset_before, t_ns = 8 slots.
  STATIC_REQUIRE(sizeof(StepBegin) <= Slots(8));
  // StepEnd: redistribute_id, step, local_shape_after, global_offset_after, t_ns = 5 slots.
  STATIC_REQUIRE(sizeof(StepEnd) <= Slots(5));
  // Collective: redistribute_id, shape, start_ns, end_ns, op_id (5 slots) and its flight record's
  // own fields (6) = 11 slots. What collectives like it repeat is one shared CollectiveShape:
  // step+kind (a 4-byte step), dtype+negotiated, mesh_dims, group, bytes_sent, bytes_recv, flight
  // shape = 7 slots, one per distinct shape of a load.
  STATIC_REQUIRE(sizeof(Collective) <= Slots(11));
  STATIC_REQUIRE(sizeof(CollectiveShape) <= Slots(7));
  // FlightRecord, held in every collective: seq_id, p2p_seq_id, record_id, op_id, created_ns,
  // duration_ms (an OptionalDouble, NaN for none) = 6 slots. Before, it was a heap block of its own
  // (a Rare: 7 slots with its shape pointer, 64 bytes with malloc's header) beside an 11-slot
  // collective that held the group's lists itself.
  STATIC_REQUIRE(sizeof(FlightRecord) <= Slots(6));
  STATIC_REQUIRE(sizeof(OptionalDouble) == sizeof(double));
  // FlightShape, one per distinct shape of a load: pg_name+pg_desc, profiling_name+state, four
  // lists, timeout_ms, is_p2p = 8 slots.
  STATIC_REQUIRE(sizeof(FlightShape) <= Slots(8));
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

TEST_CASE("OptionalDouble reads like std::optional<double>, NaN standing for none", "[trace][resident]") {
  // The definition: every value but NaN round-trips through std::optional<double>; NaN and nullopt
  // are none; == is std::optional's on those values.
  const double values[] = {0.0,
                           -0.0,
                           0.5,
                           1e12,
                           -3.25,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::denorm_min()};
  CHECK_FALSE(OptionalDouble().has_value());
  CHECK_FALSE(OptionalDouble(std::nullopt));
  CHECK_FALSE(OptionalDouble(std::numeric_limits<double>::quiet_NaN()).has_value());
  CHECK(std::optional<double>(OptionalDouble()) == std::nullopt);
  CHECK(OptionalDouble(std::optional<double>()) == OptionalDouble());
  for (double a : values) {
    const OptionalDouble o = a;
    REQUIRE(o.has_value());
    CHECK(static_cast<bool>(o));
    CHECK(std::memcmp(&*o, &a, sizeof a) == 0);  // the very bits, -0.0 included
    CHECK(std::optional<double>(o) == std::optional<double>(a));
    CHECK(o.value_or(7.0) == a);
    CHECK_FALSE(o == OptionalDouble());
    for (double b : values)
      CHECK((o == OptionalDouble(b)) == (std::optional<double>(a) == std::optional<double>(b)));
    OptionalDouble r = o;
    r.reset();
    CHECK_FALSE(r.has_value());
    CHECK(r.value_or(7.0) == 7.0);
  }
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

// The i-th event of a test list: its type from `kinds`, its id i (so equal ids mean the same event).
static Event TestEvent(int kind, int64_t i) {
  switch (kind) {
    case 0: {
      RedistributeBegin b;
      b.id = i;
      return b;
    }
    case 1: {
      StepEnd e;
      e.redistribute_id = i;
      return e;
    }
    case 2: {
      Collective c;
      c.redistribute_id = i;
      return c;
    }
    default: {
      Op op;
      op.id = i;
      return op;
    }
  }
}

TEST_CASE("an EventList of long runs of one type keeps its order as runs and reads the same",
          "[trace][resident]") {
  // Random lists from all of one type (a Flight Recorder dump) to a type per event, then shrunk,
  // taken (TakeExact) and appended to: every read (operator[], iteration, Visit, Of, ==) gives the
  // events in the order pushed; runs are kept exactly when they take under a quarter of 4 bytes an
  // event (16 bytes a run), so a list of one type costs 16 bytes of order in all.
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    const int64_t n = static_cast<int64_t>(rng() % 3000);
    const uint32_t switch_one_in = 1 + rng() % 2000;  // the chance a type changes, 1 in this many
    std::vector<Event> events;
    EventList list;
    int kind = static_cast<int>(rng() % 4);
    size_t runs = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int before = kind;
      if (rng() % switch_one_in == 0) kind = static_cast<int>(rng() % 4);
      runs += i == 0 || kind != before ? 1 : 0;
      events.push_back(TestEvent(kind, i));
      list.push_back(events.back());
    }
    INFO("round " << round << ", " << n << " events in " << runs << " runs");
    list.shrink_to_fit();
    CHECK(list.HoldsRuns() == (n > 0 && runs * 16 * 4 <= static_cast<size_t>(n) * 4));
    REQUIRE(list.size() == events.size());
    CHECK(list == events);
    EventList taken = list.TakeExact();
    CHECK(list.empty());
    CHECK(taken == events);
    CHECK(taken.HoldsRuns() == (n > 0 && runs * 16 * 4 <= static_cast<size_t>(n) * 4));
    // Stored events by reference, in order, and their columns in file order.
    std::vector<int64_t> ids;
    for (size_t i = 0; i < taken.size(); ++i)
      taken.Visit(i, [&](const auto& e) {
        if constexpr (requires { e.redistribute_id; })
          ids.push_back(e.redistribute_id);
        else
          ids.push_back(e.id);
      });
    std::vector<int64_t> want(events.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<int64_t>(i);
    CHECK(ids == want);
    // Appending after: more of the last type (a run grows) and of others (runs, or entries again).
    for (int64_t i = n; i < n + 200; ++i) {
      if (rng() % 50 == 0) kind = static_cast<int>(rng() % 4);
      events.push_back(TestEvent(kind, i));
      taken.push_back(events.back());
    }
    CHECK(taken == events);
    size_t k = 0;
    for (const Event& e : taken) CHECK(e == events[k++]);
    if (n == 0) continue;
    EventList copy = taken;
    CHECK(copy == taken);
  }
  // One type: one run, 16 bytes of order, whatever the count.
  EventList one;
  for (int64_t i = 0; i < 100000; ++i) one.push_back(TestEvent(2, i));
  one.shrink_to_fit();
  CHECK(one.HoldsRuns());
  CHECK(one.CapacityBytes() == 100000 * sizeof(Collective) + 16);
}

TEST_CASE("op records refer to the stored ops, and equal op lists share one buffer", "[trace][resident]") {
  const fs::path dir = fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/trace/program";
  for (bool fast : {true, false}) {
    Model m = ReadTraceDir(dir, {.jobs = 2, .fast = fast});
    REQUIRE(m.ops.size() == 12);  // 3 ops on each of 4 ranks
    size_t halos = 0, shared_shapes = 0;
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
      CHECK(rec.op->candidates() == first->op->candidates());
      CHECK(rec.op->candidates().SharesWith(first->op->candidates()));
      // Ops alike (the same call on ranks whose shards are alike) share their whole shape.
      if (*rec.op->shape == *first->op->shape) {
        CHECK(rec.op->shape.SharesWith(first->op->shape));
        shared_shapes += &rec != first ? 1 : 0;
      }
    }
    CHECK(shared_shapes > 0);
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

TEST_CASE("TakeExact moves the events into exactly sized columns and keeps the capacity behind",
          "[trace][resident]") {
  std::mt19937 rng(11);
  EventList scratch;
  for (int file = 0; file < 20; ++file) {
    std::vector<Event> events;
    const int n = static_cast<int>(rng() % 300);
    for (int i = 0; i < n; ++i) {
      switch (rng() % 3) {
        case 0: {
          RedistributeBegin b;
          b.id = i;
          b.Mutable().global_shape = {i, 2};
          events.emplace_back(b);
          break;
        }
        case 1: {
          Collective c;
          c.redistribute_id = i;
          c.Mutable().step = static_cast<int32_t>(rng() % 65536);
          c.Mutable().group = {0, i};
          events.emplace_back(c);
          break;
        }
        default: {
          StepEnd e;
          e.redistribute_id = i;
          events.emplace_back(e);
        }
      }
    }
    for (const Event& e : events) scratch.push_back(e);
    const size_t capacity = scratch.Of<Collective>().capacity();
    EventList exact = scratch.TakeExact();
    REQUIRE(exact == events);  // the same events in the same order
    CHECK(exact.Of<RedistributeBegin>().capacity() == exact.Of<RedistributeBegin>().size());
    CHECK(exact.Of<Collective>().capacity() == exact.Of<Collective>().size());
    CHECK(exact.Of<StepEnd>().capacity() == exact.Of<StepEnd>().size());
    CHECK(scratch.empty());
    CHECK(scratch.Of<Collective>().empty());
    CHECK(scratch.Of<Collective>().capacity() == capacity);  // kept for the next file
  }
}

TEST_CASE("the id index of records in any order answers like a scan, in 4 bytes a record or none",
          "[trace][resident][index]") {
  // Definition (model.hpp): RedistributesWithId(id) / OpsWithId(id) = the records with that id in
  // rank order; RedistributeIds() / OpIds() = the distinct ids ascending. Models of 1 to 6 ranks
  // with random ids (runs, gaps, repeats across ranks), records sorted by (rank, id) as the reader
  // leaves them.
  std::mt19937 rng(33);
  for (int round = 0; round < 2000; ++round) {
    Model model;
    const int ranks = 1 + static_cast<int>(rng() % 6);
    for (int r = 0; r < ranks; ++r) {
      int64_t id = static_cast<int64_t>(rng() % 5);
      const int count = static_cast<int>(rng() % 8);
      for (int k = 0; k < count; ++k) {
        RedistributeBegin b;
        b.id = id;
        RedistributeRecord rec;
        rec.rank = r;
        rec.begin = b;
        model.redistributes.push_back(rec);
        Op op;
        op.id = id * 2;
        OpRecord o;
        o.rank = r;
        o.op = op;
        model.ops.push_back(o);
        id += 1 + static_cast<int64_t>(rng() % 3);
      }
    }
    model.Reindex();
    REQUIRE(model.index.built);
    std::map<int64_t, std::vector<const RedistributeRecord*>> by_id;
    for (const RedistributeRecord& rec : model.redistributes) by_id[rec.begin->id].push_back(&rec);
    std::vector<int64_t> ids;
    for (const auto& [id, recs] : by_id) {
      ids.push_back(id);
      CHECK(model.RedistributesWithId(id) == recs);
      REQUIRE(model.OpsWithId(id * 2).size() == recs.size());
      for (size_t i = 0; i < recs.size(); ++i) CHECK(model.OpsWithId(id * 2)[i]->rank == recs[i]->rank);
    }
    CHECK(model.RedistributeIds() == ids);
    CHECK(model.RedistributesWithId(-1).empty());
    CHECK(model.RedistributesWithId(1000).empty());
    // Records already in id order (one rank, or ids that ascend across the ranks) need no list.
    bool in_order = true;
    for (size_t i = 1; i < model.redistributes.size(); ++i)
      in_order = in_order && model.redistributes[i - 1].begin->id <= model.redistributes[i].begin->id;
    CHECK(model.index.redistributes_in_id_order == in_order);
    CHECK(model.index.redistributes.size() == (in_order ? 0 : model.redistributes.size()));
    if (ranks == 1) CHECK(model.index.redistributes_in_id_order);
  }
}

TEST_CASE("equal Flight Recorder shapes share one buffer, read from dumps or from their import",
          "[trace][resident][fr]") {
  using shardscope::testing::FrDump;
  using shardscope::testing::FrEntry;
  // Every rank holds records 0 and 3 of one shape (a completed all_reduce of [8, 4] Floats in the
  // default group), record 1 of another, and record 2, the same all_reduce not completed: the state
  // is the shape's (entries of one call share it per state), so record 2's shape is a third.
  auto one = [](int64_t rows, int64_t cols) {  // one tensor's sizes
    return nlohmann::json::array({nlohmann::json::array({rows, cols})});
  };
  const nlohmann::json entries =
      nlohmann::json::array({FrEntry(0, 1, "nccl:all_reduce", one(8, 4), one(8, 4)),
                             FrEntry(1, 2, "nccl:all_gather", one(8, 4), one(16, 4)),
                             FrEntry(2, 3, "nccl:all_reduce", one(8, 4), one(8, 4), "started"),
                             FrEntry(3, 4, "nccl:all_reduce", one(8, 4), one(8, 4))});
  shardscope::testing::ScopedTempDir dumps("resident_fr_dumps"), imported("resident_fr_import");
  for (int rank : {0, 1})
    std::ofstream(dumps.path / ("nccl_trace_rank_" + std::to_string(rank))) << FrDump(entries).dump();
  const Model fr = ReadFlightRecorder({dumps.path});
  // Writes the import as `shardscope import fr -o` does.
  for (const RankTrace& rt : fr.ranks) {
    Writer writer(imported.path, rt.header);
    for (const Event& e : rt.events) writer.Emit(e);
    writer.Close();
  }
  auto check_shapes = [](const Model& m) {
    REQUIRE(m.ranks.size() == 2);
    const std::vector<Collective>& first = m.ranks[0].events.Of<Collective>();
    for (const RankTrace& rt : m.ranks) {
      const std::vector<Collective>& c = rt.events.Of<Collective>();
      REQUIRE(c.size() == 4);
      for (const Collective& e : c) REQUIRE(e.HasFlight());
      CHECK(c[0].flight_shape().profiling_name == "nccl:all_reduce");
      CHECK(c[0].flight_shape().input_sizes == std::vector<std::vector<int64_t>>{{8, 4}});
      CHECK(c[1].flight_shape().output_sizes == std::vector<std::vector<int64_t>>{{16, 4}});
      CHECK(c[0].shape->flight.SharesWith(c[3].shape->flight));
      CHECK_FALSE(c[0].shape->flight == c[1].shape->flight);
      CHECK(c[0].flight_shape().state == "completed");
      CHECK(c[2].flight_shape().state == "started");
      CHECK_FALSE(c[0].shape->flight == c[2].shape->flight);
      FlightShape as_completed = *c[2].shape->flight;  // all else equal
      as_completed.state = "completed";
      CHECK(as_completed == *c[0].shape->flight);
      // The ranks' equal shapes are one buffer too.
      for (size_t k = 0; k < 4; ++k) CHECK(c[k].shape->flight.SharesWith(first[k].shape->flight));
      // Records 0 and 3 (same call, same group) share their whole collective shape; record 1 not.
      CHECK(c[0].shape.SharesWith(c[3].shape));
      CHECK_FALSE(c[0].shape.SharesWith(c[1].shape));
      CHECK(c[0].group() == std::vector<int64_t>{0, 1});
    }
  };
  check_shapes(fr);
  for (bool fast : {true, false}) {
    INFO("fast " << fast);
    const Model back = ReadTraceDir(imported.path, {.jobs = 2, .fast = fast});
    check_shapes(back);
    for (size_t r = 0; r < fr.ranks.size(); ++r)
      CHECK(back.ranks[r].events.Of<Collective>() == fr.ranks[r].events.Of<Collective>());
  }
  // A copy is a value of its own: writing its shape leaves the original's alone.
  Collective copy = fr.ranks[0].events.Of<Collective>()[0];
  copy.Mutable().flight.Mutable().pg_desc = "other";
  CHECK(fr.ranks[0].events.Of<Collective>()[0].flight_shape().pg_desc == "default_pg");
  CHECK_FALSE(copy == fr.ranks[0].events.Of<Collective>()[0]);
}

TEST_CASE(
    "collectives of one step and group, and begins of one plan, share one shape, read from our own traces",
    "[trace][resident]") {
  // Three redistributes of one plan on each of two ranks, the second with other byte counts: the
  // first and third collectives of a rank are alike but for their redistribute and times.
  shardscope::testing::ScopedTempDir dir("resident_collective_shapes");
  for (int64_t rank : {0, 1}) {
    Header h;
    h.rank = rank;
    h.world = 2;
    h.mesh_shape = {2};
    h.mesh_dim_names = {""};
    Writer writer(dir.path, h);
    const int64_t bytes[] = {64, 32, 64};
    for (int64_t id = 0; id < 3; ++id)
      for (const Event& e :
           shardscope::testing::AllGatherRedistribute(rank, 2, id, 8, bytes[id], "x", 1000 * id, 10))
        writer.Emit(e);
    writer.Close();
  }
  for (bool fast : {true, false}) {
    INFO("fast " << fast);
    const Model m = ReadTraceDir(dir.path, {.jobs = 2, .fast = fast});
    REQUIRE(m.ranks.size() == 2);
    for (const RankTrace& rt : m.ranks) {
      const std::vector<Collective>& c = rt.events.Of<Collective>();
      REQUIRE(c.size() == 3);
      CHECK(c[0].shape.SharesWith(c[2].shape));
      CHECK_FALSE(c[0].shape.SharesWith(c[1].shape));
      CHECK(c[1].bytes_sent() == std::vector<int64_t>(rt.header.rank == 0 ? std::vector<int64_t>{0, 32}
                                                                          : std::vector<int64_t>{32, 0}));
      CHECK(c[2].redistribute_id == 2);
      CHECK(c[2].start_ns == 2020);
      CHECK_FALSE(c[0].HasFlight());
      // The begins differ only in id and time: one shape.
      const std::vector<RedistributeBegin>& begins = rt.events.Of<RedistributeBegin>();
      REQUIRE(begins.size() == 3);
      CHECK(begins[0].shape.SharesWith(begins[1].shape));
      CHECK(begins[0].shape.SharesWith(begins[2].shape));
      CHECK(begins[2].id == 2);
      CHECK(begins[2].tensor() == "x");
    }
  }
}
