// Interned strings and lists shared across rank files (issue 13): IStr behaves like the
// std::string it replaces, equal texts are one pool entry, and a trace's ranks share equal lists.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardscope/trace/istr.hpp"
#include "shardscope/trace/reader.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

TEST_CASE("IStr reads, compares and converts like a std::string", "[trace][compact]") {
  static_assert(sizeof(IStr) == 4);  // an id into the pool (istr.hpp)
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

TEST_CASE("IStr keeps many distinct strings apart, from several threads", "[trace][compact]") {
  // An imported DebugMode trace interns a distinct rule per op: the pool grows through many
  // resizes while two readers intern the same texts in different orders.
  constexpr int kDistinct = 60000;
  auto text = [](int i) {
    return "recorded by PyTorch DebugMode (line " + std::to_string(i) + ", module m)";
  };
  std::vector<std::vector<IStr>> seen(2, std::vector<IStr>(kDistinct));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([t, &seen, &text] {
      for (int k = 0; k < kDistinct; ++k) {
        const int i = t == 0 ? k : kDistinct - 1 - k;
        seen[t][static_cast<size_t>(i)] = IStr(text(i));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kDistinct; ++i) {
    const auto k = static_cast<size_t>(i);
    REQUIRE(seen[0][k].str() == text(i));
    REQUIRE(seen[0][k] == seen[1][k]);  // one pool entry, whichever thread made it
    REQUIRE(seen[0][k].c_str() == IStr(text(i)).c_str());
  }
  CHECK(seen[0][0] != seen[0][1]);
  CHECK(IStr::PoolSize() >= static_cast<size_t>(kDistinct));
}

TEST_CASE("the reader shares equal lists across rank files", "[trace][compact]") {
  // Both ranks of two_rank run the same redistributes: the same shapes, placements, plans and
  // groups, which the reader stores once for the two files, whichever thread reads each.
  for (int jobs : {1, 2}) {
    Model m = ReadTraceDir(fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/trace/two_rank", {.jobs = jobs});
    REQUIRE(m.ranks.size() == 2);
    int compared = 0;
    for (int64_t id : m.RedistributeIds()) {
      std::vector<const RedistributeRecord*> recs = m.RedistributesWithId(id);
      REQUIRE(recs.size() == 2);
      const RedistributeRecord& a = *recs[0];
      const RedistributeRecord& b = *recs[1];
      CHECK(a.rank != b.rank);
      CHECK(a.begin->global_shape().SharesWith(b.begin->global_shape()));
      CHECK(a.begin->src_placements().SharesWith(b.begin->src_placements()));
      CHECK(a.begin->optimized_plan().SharesWith(b.begin->optimized_plan()));
      CHECK(a.begin->notation().c_str() == b.begin->notation().c_str());
      for (size_t k = 0; k < std::min(a.collectives.size(), b.collectives.size()); ++k) {
        if (a.collectives[k].group() != b.collectives[k].group()) continue;
        CHECK(a.collectives[k].group().SharesWith(b.collectives[k].group()));
        CHECK(a.collectives[k].kind().c_str() == b.collectives[k].kind().c_str());
        ++compared;
      }
    }
    CHECK(compared > 0);
  }
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
  const double cost = stored->cost_us();
  rec.begin.Mutable().Mutable().cost_us = cost + 1;
  CHECK_FALSE(rec.begin.IsReference());
  CHECK(rec.begin->cost_us() == cost + 1);
  CHECK(stored->cost_us() == cost);
}

TEST_CASE("EventRef reads like std::optional and owns what is assigned to it", "[trace][compact]") {
  EventRef<RedistributeEnd> none;
  CHECK_FALSE(none);
  CHECK_FALSE(none.has_value());
  CHECK(none->id == 0);  // a default event to read
  RedistributeEnd e{3, 10, false, "boom", RedistributeEnd::Checksums{std::nullopt, 7u}};
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
  c.Mutable().kind = "all_gather";
  list.push_back(c);
  list.push_back(EventRef<Collective>::To(&c));
  REQUIRE(list.size() == 2);
  CHECK(&list[1] == &c);
  CHECK(&list[0] != &c);
  int n = 0;
  for (const Collective& x : list) n += x.kind() == "all_gather";
  CHECK(n == 2);
  CHECK(list.ToVector() == std::vector<Collective>{c, c});
}
