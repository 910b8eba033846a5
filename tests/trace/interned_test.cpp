// Interned strings and lists shared across rank files (issue 13): IStr behaves like the
// std::string it replaces, equal texts are one pool entry, and a trace's ranks share equal lists.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardscope/trace/istr.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

TEST_CASE("IStr reads, compares and converts like a std::string", "[trace][compact]") {
  static_assert(sizeof(IStr) == 8);
  IStr empty;
  CHECK(empty.empty());
  CHECK(empty == "");
  CHECK(empty.str().empty());
  CHECK(IStr("") == empty);
  IStr a = std::string("all_gather");
  IStr b = "all_gather";
  IStr c = std::string_view("all_reduce");
  CHECK(a == b);
  CHECK(a.c_str() == b.c_str());  // one pool entry for equal texts
  CHECK(a != c);
  CHECK(a == std::string("all_gather"));
  CHECK(std::string("all_gather") == a);
  CHECK(a == std::string_view("all_gather"));
  CHECK("all_gather" == a);
  CHECK(a < c);  // by text
  CHECK(a.size() == 10);
  CHECK(a.starts_with("all_"));
  CHECK(a.find('_') == 3);
  CHECK(a.substr(4) == "gather");
  const std::string& ref = a;
  std::string_view view = a;
  std::string copy = a;
  CHECK(ref == "all_gather");
  CHECK(view == "all_gather");
  CHECK(copy == "all_gather");
  CHECK(a + "/" + c == "all_gather/all_reduce");
  std::ostringstream out;
  out << a << ' ' << empty << '|';
  CHECK(out.str() == "all_gather |");
  std::map<IStr, int> counts;
  ++counts[a];
  ++counts[b];
  CHECK(counts.size() == 1);
  CHECK(counts.at("all_gather") == 2);
  nlohmann::json j = {{"kind", a}};
  CHECK(j.dump() == R"({"kind":"all_gather"})");
  CHECK(j.at("kind").get<IStr>() == a);
  IStr d = a;
  d = "x";
  CHECK(d == "x");
  CHECK(a == "all_gather");
  d.clear();
  CHECK(d.empty());
}

TEST_CASE("IStr interns from several threads at once", "[trace][compact]") {
  std::vector<std::vector<const char*>> seen(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([t, &seen] {
      for (int i = 0; i < 2000; ++i) seen[t].push_back(IStr("interned-" + std::to_string(i % 300)).c_str());
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t t = 1; t < seen.size(); ++t) CHECK(seen[t] == seen[0]);
  CHECK(IStr::PoolSize() >= 300);
}

TEST_CASE("the reader shares equal lists across rank files", "[trace][compact]") {
  fs::path dir =
      fs::temp_directory_path() / ("shardscope_interned_" + std::to_string(std::random_device{}()));
  fs::remove_all(dir);
  for (int64_t rank = 0; rank < 4; ++rank) {
    Header header;
    header.rank = rank;
    header.world = 4;
    header.mesh_shape = {4};
    header.mesh_dim_names = {"x"};
    header.backend = "local";
    Writer w(dir, header);
    RedistributeBegin b;
    b.id = 0;
    b.global_shape = {8, 8};
    b.dtype = "f32";
    b.src_placements = {"S(0)"};
    b.dst_placements = {"R"};
    b.planner = "greedy";
    b.optimized_plan = {PlanStep{{0}, "S(0)", "R", "all_gather", {8, 8}, false, 1.0, 2.0}};
    b.raw_plan = b.optimized_plan;
    w.Emit(b);
    Collective c;
    c.redistribute_id = 0;
    c.kind = "all_gather";
    c.mesh_dims = {0};
    c.group = {0, 1, 2, 3};
    c.dtype = "f32";
    c.bytes_sent = {64, 64, 64, 64};
    c.bytes_recv = c.bytes_sent;
    w.Emit(c);
    w.Emit(RedistributeEnd{0, 10, true, "", std::nullopt, std::nullopt});
  }
  for (int jobs : {1, 2}) {
    Model m = ReadTraceDir(dir, {.jobs = jobs, .fast = true});
    REQUIRE(m.redistributes.size() == 4);
    const RedistributeRecord& first = m.redistributes[0];
    for (const RedistributeRecord& rec : m.redistributes) {
      CHECK(rec.collectives.at(0).group.SharesWith(first.collectives.at(0).group));
      CHECK(rec.collectives.at(0).bytes_sent.SharesWith(first.collectives.at(0).bytes_sent));
      CHECK(rec.begin->optimized_plan.SharesWith(first.begin->optimized_plan));
      CHECK(rec.begin->global_shape.SharesWith(first.begin->global_shape));
      CHECK(rec.collectives.at(0).kind.c_str() == first.collectives.at(0).kind.c_str());
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("records refer to the events stored in their rank's list; a copied model to its own",
          "[trace][compact]") {
  Model m = ReadTraceDir(fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/trace/two_rank");
  REQUIRE(!m.redistributes.empty());
  auto rank_of = [](const Model& model, int64_t rank) -> const EventList& {
    for (const RankTrace& r : model.ranks)
      if (r.header.rank == rank) return r.events;
    FAIL("no rank " << rank);
    return model.ranks.front().events;
  };
  auto stored_in = [](const auto& event, const auto& column) {
    for (const auto& e : column)
      if (&e == &event) return true;
    return false;
  };
  auto check_refs = [&](const Model& model) {
    for (const RedistributeRecord& rec : model.redistributes) {
      const EventList& list = rank_of(model, rec.rank);
      CHECK(rec.begin.IsReference());
      CHECK(stored_in(*rec.begin, list.Of<RedistributeBegin>()));
      if (rec.end) CHECK(stored_in(*rec.end, list.Of<RedistributeEnd>()));
      for (const StepRecord& s : rec.steps) {
        CHECK(stored_in(*s.begin, list.Of<StepBegin>()));
        if (s.end) CHECK(stored_in(*s.end, list.Of<StepEnd>()));
      }
      for (const Collective& c : rec.collectives) CHECK(stored_in(c, list.Of<Collective>()));
    }
  };
  check_refs(m);
  Model copy = m;
  check_refs(copy);
  REQUIRE(copy.redistributes.size() == m.redistributes.size());
  for (size_t i = 0; i < m.redistributes.size(); ++i) {
    CHECK(*copy.redistributes[i].begin == *m.redistributes[i].begin);
    CHECK(&*copy.redistributes[i].begin != &*m.redistributes[i].begin);
  }
  // Writing through a record copies the event into it first: the rank's list keeps its event.
  RedistributeRecord& rec = copy.redistributes.front();
  const RedistributeBegin* stored = &*rec.begin;
  const double cost = stored->cost_us;
  rec.begin.Mutable().cost_us = cost + 1;
  CHECK_FALSE(rec.begin.IsReference());
  CHECK(rec.begin->cost_us == cost + 1);
  CHECK(stored->cost_us == cost);
}

TEST_CASE("EventRef reads like std::optional and owns what is assigned to it", "[trace][compact]") {
  EventRef<RedistributeEnd> none;
  CHECK_FALSE(none);
  CHECK_FALSE(none.has_value());
  CHECK(none->id == 0);  // a default event to read
  RedistributeEnd e{3, 10, false, "boom", std::nullopt, 7u};
  EventRef<RedistributeEnd> owned = e;
  REQUIRE(owned);
  CHECK_FALSE(owned.IsReference());
  CHECK(*owned == e);
  EventRef<RedistributeEnd> copy = owned;
  CHECK(&*copy != &*owned);  // an owned event is copied with its record
  CHECK(*copy == e);
  EventRef<RedistributeEnd> ref = EventRef<RedistributeEnd>::To(&e);
  CHECK(ref.IsReference());
  CHECK(&*ref == &e);
  EventRef<RedistributeEnd> ref_copy = ref;
  CHECK(&*ref_copy == &e);
  ref_copy.Mutable().error = "other";
  CHECK(e.error == "boom");
  CHECK(ref_copy->error == "other");
  owned.reset();
  CHECK_FALSE(owned);
  EventRefs<Collective> list;
  Collective c;
  c.kind = "all_gather";
  list.push_back(c);
  list.push_back(EventRef<Collective>::To(&c));
  REQUIRE(list.size() == 2);
  CHECK(&list[1] == &c);
  CHECK(&list[0] != &c);
  int n = 0;
  for (const Collective& x : list) n += x.kind == "all_gather";
  CHECK(n == 2);
  CHECK(list.ToVector() == std::vector<Collective>{c, c});
}
