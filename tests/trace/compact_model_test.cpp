// The compact trace model (issue 13): SharedVec and Shared (value semantics over a shared buffer),
// InternPool, EventList (per-type columns in file order) and the reader's sharing of equal lists.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "shardscope/trace/event_list.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/shared_value.hpp"
#include "shardscope/trace/shared_vec.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

TEST_CASE("SharedVec copies share, mutations copy first, == compares elements", "[trace][compact]") {
  SharedVec<int64_t> a = {1, 2, 3};
  SharedVec<int64_t> b = a;
  CHECK(b.SharesWith(a));
  CHECK(b == std::vector<int64_t>{1, 2, 3});
  b.push_back(4);
  CHECK_FALSE(b.SharesWith(a));
  CHECK(a == std::vector<int64_t>{1, 2, 3});
  CHECK(b == std::vector<int64_t>{1, 2, 3, 4});
  b.Mutable()[0] = 9;
  CHECK(b[0] == 9);
  CHECK(a[0] == 1);
  SharedVec<int64_t> c(std::vector<int64_t>{1, 2, 3});
  CHECK_FALSE(c.SharesWith(a));
  CHECK(c == a);
  const std::vector<int64_t>& view = a;  // reads go through a plain vector
  CHECK(view.size() == 3);
  SharedVec<int64_t> empty;
  CHECK(empty.empty());
  CHECK(empty.size() == 0);
  CHECK(empty == std::vector<int64_t>{});
  CHECK(empty.SharesWith(SharedVec<int64_t>(std::vector<int64_t>{})));  // nothing allocated
  SharedVec<int64_t> moved = std::move(c);
  CHECK(moved == std::vector<int64_t>{1, 2, 3});
}

TEST_CASE("SharedVec's pooled mark travels with its buffer and goes with a write", "[trace][compact]") {
  SharedVec<int64_t> a = {1, 2};
  CHECK_FALSE(a.Pooled());
  a.MarkPooled();
  SharedVec<int64_t> copy = a;  // a copy is the pooled buffer
  CHECK(copy.Pooled());
  copy.Mutable()[0] = 5;  // shared: the write copies, and the copy is no pool's
  CHECK_FALSE(copy.Pooled());
  CHECK(a.Pooled());
  CHECK(a == std::vector<int64_t>{1, 2});
  SharedVec<int64_t> alone = {3};
  alone.MarkPooled();
  alone.Mutable()[0] = 4;  // the only holder writes in place: no longer what a pool holds
  CHECK_FALSE(alone.Pooled());
  SharedVec<int64_t> empty;
  empty.MarkPooled();
  CHECK_FALSE(empty.Pooled());  // nothing to mark
}

TEST_CASE("Shared copies share one value, writes copy first, == compares values", "[trace][compact]") {
  struct Pair {
    int64_t x = 0;
    std::string y;
    bool operator==(const Pair&) const = default;
  };
  Shared<Pair> none;
  CHECK_FALSE(none.HasBuffer());
  CHECK(*none == Pair{});  // a default value, nothing allocated
  CHECK(none == Shared<Pair>(Pair{}));
  Shared<Pair> a(Pair{1, "one"});
  Shared<Pair> b = a;
  CHECK(b.SharesWith(a));
  a.MarkPooled();
  CHECK(b.Pooled());  // the mark travels with the buffer
  b.Mutable().x = 2;  // shared: the write copies, and the copy is no pool's
  CHECK_FALSE(b.SharesWith(a));
  CHECK_FALSE(b.Pooled());
  CHECK(a->x == 1);
  CHECK(b->x == 2);
  CHECK_FALSE(a == b);
  Shared<Pair> c(Pair{1, "one"});
  CHECK_FALSE(c.SharesWith(a));
  CHECK(c == a);
  Pair& own = c.Mutable();  // the only holder writes in place
  own.y = "uno";
  CHECK(c->y == "uno");
  Shared<Pair> moved = std::move(c);
  CHECK(moved->y == "uno");
  CHECK_FALSE(c.HasBuffer());  // NOLINT(bugprone-use-after-move): a moved-from Shared holds nothing
}

TEST_CASE("InternPool makes equal lists share one buffer", "[trace][compact]") {
  InternPool<std::string> pool;
  SharedVec<std::string> a = {"S(0)", "R"};
  SharedVec<std::string> b = {"S(0)", "R"};
  SharedVec<std::string> c = {"R", "R"};
  pool.Intern(a);
  pool.Intern(b);
  pool.Intern(c);
  CHECK(b.SharesWith(a));
  CHECK_FALSE(c.SharesWith(a));
  CHECK(b == std::vector<std::string>{"S(0)", "R"});
  SharedVec<std::string> empty;
  empty.Mutable();  // an allocated empty list is released
  pool.Intern(empty);
  CHECK(empty.SharesWith(SharedVec<std::string>()));
}

TEST_CASE("the reader shares equal lists between events, ranks' lists and records", "[trace][compact]") {
  fs::path dir =
      fs::temp_directory_path() / ("shardscope_shared_vec_" + std::to_string(std::random_device{}()));
  fs::remove_all(dir);
  Header header;
  header.world = 4;
  header.mesh_shape = {4};
  header.mesh_dim_names = {"x"};
  header.backend = "local";
  {
    Writer w(dir, header);
    for (int64_t id = 0; id < 3; ++id) {
      RedistributeBegin b;
      b.id = id;
      b.Mutable().global_shape = {8, 8};
      b.Mutable().dtype = "f32";
      b.Mutable().src_placements = {"S(0)"};
      b.Mutable().dst_placements = {"R"};
      b.Mutable().planner = "greedy";
      b.Mutable().optimized_plan = {PlanStep{{0}, "S(0)", "R", "all_gather", {8, 8}, false, 1.0, 2.0}};
      b.Mutable().raw_plan = b.optimized_plan();
      w.Emit(b);
      Collective c;
      c.redistribute_id = id;
      c.Mutable().kind = "all_gather";
      c.Mutable().mesh_dims = {0};
      c.Mutable().group = {0, 1, 2, 3};
      c.Mutable().dtype = "f32";
      c.Mutable().bytes_sent = {0, 64, 64, 64};
      c.Mutable().bytes_recv = {0, 64, 64, 64};
      w.Emit(c);
      w.Emit(RedistributeEnd{id, 10, true, ""});
    }
  }
  for (bool fast : {true, false}) {
    Model m = ReadTraceDir(dir, {.jobs = 1, .fast = fast});
    REQUIRE(m.redistributes.size() == 3);
    const Collective& first = m.redistributes[0].collectives.at(0);
    CHECK(first.group() == std::vector<int64_t>{0, 1, 2, 3});
    CHECK(first.bytes_sent() == std::vector<int64_t>{0, 64, 64, 64});
    CHECK(first.bytes_recv().SharesWith(first.bytes_sent()));
    for (const RedistributeRecord& rec : m.redistributes) {
      CHECK(rec.collectives.at(0).group().SharesWith(first.group()));
      CHECK(rec.begin->optimized_plan().SharesWith(m.redistributes[0].begin->raw_plan()));
      CHECK(rec.begin->src_placements().SharesWith(m.redistributes[0].begin->src_placements()));
    }
    // The rank's event list holds the same buffers as the records.
    const Collective in_list = std::get<Collective>(m.ranks.at(0).events.at(1));
    CHECK(in_list.group().SharesWith(first.group()));
    CHECK(in_list == first);
  }
  fs::remove_all(dir);
}

TEST_CASE("EventList keeps file order and yields the events it was given", "[trace][compact]") {
  RedistributeBegin b;
  b.id = 7;
  b.Mutable().tensor = "w";
  b.Mutable().global_shape = {4, 4};
  b.Mutable().src_placements = {"S(0)"};
  StepBegin s{7, 0, "S(0)", "R", "all_gather", {0}, {4, 4}, {2, 4}, {0, 0}, 5};
  Collective c;
  c.redistribute_id = 7;
  c.Mutable().kind = "all_gather";
  c.Mutable().group = {0, 1};
  c.Mutable().bytes_sent = {0, 32};
  c.Mutable().bytes_recv = {0, 32};
  StepEnd e{7, 0, {4, 4}, {0, 0}, 9};
  Op op;
  op.id = 3;
  op.Mutable().name = "mm";
  const std::vector<Event> events = {
      b, s, c, e, RedistributeEnd{7, 10, true, "", RedistributeEnd::Checksums{std::nullopt, 42u}}, op, c};
  EventList list;
  for (const Event& ev : events) list.push_back(ev);
  REQUIRE(list.size() == events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    CHECK(list[i].index() == events[i].index());
    CHECK(list[i] == events[i]);
  }
  CHECK(list == events);
  CHECK(list.ToVector() == events);
  CHECK(std::vector<Event>(list.begin(), list.end()) == events);
  CHECK_THROWS_AS(list.at(events.size()), std::out_of_range);
  EventList copy = list;
  CHECK(copy == list);
  copy.emplace_back(RedistributeEnd{8, 11, true, ""});
  CHECK_FALSE(copy == list);
  // Copies of one collective (the stored ones and those yielded) share its lists.
  CHECK(std::get<Collective>(list[6]).group().SharesWith(std::get<Collective>(list[2]).group()));
  CHECK(std::get<Collective>(list[2]).bytes_sent().SharesWith(c.bytes_sent()));
  list.shrink_to_fit();
  CHECK(list == events);
  list.clear();
  CHECK(list.empty());
}

TEST_CASE("v2 repeats and like-ops that name ids far apart read back as written", "[trace][compact]") {
  // The reader finds what a `like` names through an index over the file's ids: a plain array
  // while they are dense, a map for ids far beyond their count (and no array of that size).
  fs::path dir =
      fs::temp_directory_path() / ("shardscope_sparse_ids_" + std::to_string(std::random_device{}()));
  fs::remove_all(dir);
  Header header;
  header.world = 1;
  header.mesh_shape = {1};
  header.version = 3;  // repeat lines of imported redistributes
  header.mesh_dim_names = {"x"};
  header.backend = "local";
  constexpr int64_t kFar = int64_t{1} << 40;
  const std::vector<int64_t> ids = {kFar + 3, 0, 1, kFar, 2, kFar + 7, 3, int64_t{1} << 62, kFar + 8};
  std::vector<Event> written;
  {
    Writer w(dir, header);
    int64_t t = 100;
    for (int64_t id : ids) {
      RedistributeBegin b;
      b.id = id;
      b.Mutable().tensor = "w";
      b.Mutable().global_shape = {8, 8};
      b.Mutable().dtype = "f32";
      b.Mutable().src_placements = {"S(0)"};
      b.Mutable().dst_placements = {"R"};
      b.Mutable().planner = "greedy";
      b.Mutable().optimized_plan = {PlanStep{{0}, "S(0)", "R", "all_gather", {8, 8}, false, 1.0, 2.0}};
      b.Mutable().raw_plan = b.optimized_plan();
      b.t_ns = t;
      b.op_id = id;
      b.op_input = 0;
      b.imported = ImportedPlan{"debugmode", id % 1000, "S(0)->R", {}, "same", ""};
      Collective c;
      c.redistribute_id = id;
      c.Mutable().kind = "all_gather";
      c.Mutable().mesh_dims = {0};
      c.Mutable().group = {0};
      c.Mutable().dtype = "f32";
      c.Mutable().bytes_sent = {0};
      c.Mutable().bytes_recv = {0};
      c.start_ns = t + 10;
      c.end_ns = t + 20;
      RedistributeEnd e{id, t + 30, true, ""};
      Op op;
      op.id = id;  // ops numbered like their redistributes
      op.Mutable().name = "aten::mm";
      op.Mutable().inputs = {OpInput{"w", {"S(0)"}, {"R"}, id}};
      op.Mutable().outputs = {OpOutput{"y", true, {"R"}, {8, 8}, {8, 8}}};
      op.Mutable().candidates = {OpStrategy{{{"R"}}, {{"R"}}, 2.0}};
      op.Mutable().rule = "least redistribute cost";
      op.t_ns = t + 40;
      op.end_ns = t + 50;
      for (const Event& ev : {Event(b), Event(c), Event(e), Event(op)}) {
        std::visit([&](const auto& x) { w.Emit(x); }, ev);
        written.push_back(ev);
      }
      t += 1000;
    }
  }
  // The writer wrote repeats of redistribute 0 and ops `like` op 0, naming the far ids (else this
  // test tests nothing).
  std::ifstream in(dir / "rank-0.jsonl");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"type\":\"redistribute_repeat\"") != std::string::npos);
  CHECK(text.find("\"like\":") != std::string::npos);
  CHECK(text.find("\"like\":1099511627779") != std::string::npos);  // the first redistribute and op
  for (bool fast : {true, false}) {
    Model m = ReadTraceDir(dir, {.jobs = 1, .fast = fast});
    REQUIRE(m.ranks.size() == 1);
    CHECK(m.diagnostics.empty());
    CHECK(m.ranks[0].events == written);
    REQUIRE(m.ops.size() == ids.size());
    for (const OpRecord& rec : m.ops)
      CHECK(std::vector<int64_t>(rec.redistribute_ids.begin(), rec.redistribute_ids.end()) ==
            std::vector<int64_t>{rec.op->id});
  }
  fs::remove_all(dir);
}
