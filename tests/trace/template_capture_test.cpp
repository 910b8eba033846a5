// Template capture (Writer::Emit(EventTemplate, TemplateFields)): the engine's redistributes emit
// events copied from templates; the writer keeps a pointer and the changing fields, and writes the
// template with those fields set. Checked against the field mapping TemplateFields documents,
// written out here per kind, in every durability mode, with whole events in between; templates
// the caller drops at once stay alive until written (ASan would see a use after free); the
// deferred mode writes nothing before Flush and bounds its memory.
// Tagged [local] as well: the background thread runs, so scripts/sanitize.sh tsan runs these.
#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../common/temp_dir.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

Header RankHeader(int64_t rank, int64_t world) {
  Header h;
  h.rank = rank;
  h.world = world;
  h.mesh_shape = {world};
  h.mesh_dim_names = {"dp"};
  h.backend = "local";
  return h;
}

// The line a template capture stands for, per TemplateFields' documentation.
Event Expected(const Event& tmpl, const TemplateFields& f) {
  Event e = tmpl;
  if (auto* b = std::get_if<RedistributeBegin>(&e)) {
    b->id = f.id, b->t_ns = f.t_ns, b->tensor = f.tensor, b->op_id = f.op_id, b->op_input = f.op_input;
  } else if (auto* end = std::get_if<RedistributeEnd>(&e)) {
    end->id = f.id, end->t_ns = f.t_ns;
  } else if (auto* sb = std::get_if<StepBegin>(&e)) {
    sb->redistribute_id = f.id, sb->t_ns = f.t_ns;
  } else if (auto* se = std::get_if<StepEnd>(&e)) {
    se->redistribute_id = f.id, se->t_ns = f.t_ns;
  } else if (auto* c = std::get_if<Collective>(&e)) {
    c->redistribute_id = f.id, c->start_ns = f.t_ns, c->end_ns = f.end_ns;
  }
  return e;
}

// Templates of one redistribute of plan `p` on rank 0 of `world` (begin, step begin, collective,
// step end, end), each a distinct object.
std::vector<EventTemplate> Templates(int64_t world, int p) {
  RedistributeBegin b;
  b.global_shape = {4 * world + p, 8};
  b.dtype = "f32";
  b.src_placements = {"S(0)"};
  b.dst_placements = {"R"};
  b.planner = "greedy";
  b.planner_reason = "default";
  b.notation = b.notation_unoptimized = "S(0)->R";
  b.raw_plan =
      b.optimized_plan = {PlanStep{{0}, "S(0)", "R", "all_gather", {4 * world + p, 8}, false, 1.0, 3.5}};
  std::vector<int64_t> group, bytes;
  for (int64_t r = 0; r < world; ++r) group.push_back(r), bytes.push_back(r == 0 ? 0 : 128 + p);
  StepBegin sb{0, 0, {0}, "S(0)", "R", "all_gather", {4 * world + p, 8}, {4, 8}, {0, 0}, 0};
  Collective c{0, 0, "all_gather", {0}, group, "f32", bytes, bytes, false, 0, 0, -1, {}};
  StepEnd se{0, 0, {4 * world + p, 8}, {0, 0}, 0};
  return {std::make_shared<const Event>(std::move(b)), std::make_shared<const Event>(std::move(sb)),
          std::make_shared<const Event>(std::move(c)), std::make_shared<const Event>(std::move(se)),
          std::make_shared<const Event>(RedistributeEnd{})};
}

std::vector<Event> ReadBack(const fs::path& dir) {
  Model model = ReadTraceFile(dir / RankFileName(0));
  return model.ranks.at(0).events.ToVector();
}

}  // namespace

TEST_CASE("template capture writes the template with its fields set, in Emit order, in every durability",
          "[trace][writer][local]") {
  const Durability modes[] = {Durability::kEveryEnd, Durability::kBackground, Durability::kDeferred};
  std::mt19937_64 rng(20261203);
  for (Durability mode : modes) {
    for (int round = 0; round < 20; ++round) {
      const fs::path dir = shardscope::testing::FreshTempDir("tmpl_" + std::to_string(round));
      const int plans = 1 + static_cast<int>(rng() % 50);  // past Writer's 32 pins now and then
      std::vector<std::vector<EventTemplate>> templates;
      for (int p = 0; p < plans; ++p) templates.push_back(Templates(3, p));
      std::vector<Event> expected;
      {
        Writer w(dir, RankHeader(0, 3), {}, mode);
        const int redistributes = 1 + static_cast<int>(rng() % 300);
        for (int64_t id = 0; id < redistributes; ++id) {
          const auto& t = templates[rng() % templates.size()];
          const bool whole_step = rng() % 4 == 0;  // a whole event between template captures
          for (size_t k = 0; k < t.size(); ++k) {
            TemplateFields f;
            f.id = id;
            f.t_ns = static_cast<int64_t>(rng() % 1000000);
            f.end_ns = f.t_ns + static_cast<int64_t>(rng() % 1000);
            if (k == 0) {
              f.tensor = rng() % 2 ? "x" : "weight";
              f.op_id = rng() % 3 == 0 ? static_cast<int64_t>(rng() % 10) : -1;
              f.op_input = f.op_id >= 0 ? 1 : -1;
            }
            if (whole_step && k == 1) {
              Event e = Expected(*t[k], f);
              w.Emit(e);
              expected.push_back(std::move(e));
              continue;
            }
            w.Emit(t[k], f);
            expected.push_back(Expected(*t[k], f));
          }
        }
      }  // the destructor writes what is left
      const std::vector<Event> got = ReadBack(dir);
      REQUIRE(got.size() == expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("durability " << static_cast<int>(mode) << ", line " << i + 2);
        REQUIRE(got[i] == expected[i]);
      }
    }
  }
}

TEST_CASE("template capture keeps every template alive until its lines are written",
          "[trace][writer][local]") {
  const fs::path dir = shardscope::testing::FreshTempDir("tmpl_alive");
  std::vector<Event> expected;
  {
    Writer w(dir, RankHeader(0, 2), {}, Durability::kBackground);
    for (int64_t id = 0; id < 400; ++id) {
      // Fresh templates for every redistribute, dropped by the caller right after Emit: only the
      // writer holds them (far more of them than its pins).
      std::vector<EventTemplate> t = Templates(2, static_cast<int>(id % 97));
      for (const EventTemplate& tmpl : t) {
        TemplateFields f;
        f.id = id;
        f.t_ns = 100 * id;
        f.end_ns = 100 * id + 1;
        f.tensor = "x";
        w.Emit(tmpl, f);
        expected.push_back(Expected(*tmpl, f));
      }
    }
    w.Emit(EventTemplate(), TemplateFields{});  // a null template is ignored
  }
  CHECK(ReadBack(dir) == expected);
}

TEST_CASE("a deferred writer writes nothing before Flush, everything at Close, and bounds its memory",
          "[trace][writer][local]") {
  const fs::path dir = shardscope::testing::FreshTempDir("tmpl_deferred");
  const std::vector<EventTemplate> t = Templates(2, 0);
  auto emit = [&](Writer& w, int64_t id) {
    for (const EventTemplate& tmpl : t) w.Emit(tmpl, TemplateFields{id, id, id, -1, -1, "x"});
  };
  const fs::path file = dir / RankFileName(0);
  {
    Writer w(dir, RankHeader(0, 2), {}, Durability::kDeferred);
    for (int64_t id = 0; id < 10; ++id) emit(w, id);
    CHECK(ReadBack(dir).empty());  // the header only
    w.Flush();
    CHECK(ReadBack(dir).size() == 50);
    emit(w, 10);
    CHECK(ReadBack(dir).size() == 50);
    // Past the queue's bound the emitting thread writes: memory stays bounded.
    const int64_t more = static_cast<int64_t>(Writer::kMaxQueuedEvents / t.size()) + 1;
    for (int64_t id = 11; id < 11 + more; ++id) emit(w, id);
    CHECK(ReadBack(dir).size() > 55);
  }
  const size_t total = (11 + Writer::kMaxQueuedEvents / t.size() + 1) * t.size();
  CHECK(ReadBack(dir).size() == total);
}
