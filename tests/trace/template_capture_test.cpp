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

#include "../common/all_gather_events.hpp"
#include "../common/collective.hpp"
#include "../common/temp_dir.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

Header RankHeader(int64_t rank, int64_t world) { return MakeHeader(rank, world, {world}, {"dp"}, "local"); }

// The line a template capture stands for, per TemplateFields' documentation.
Event Expected(const Event& tmpl, const TemplateFields& f) {
  Event e = tmpl;
  if (auto* b = std::get_if<RedistributeBegin>(&e)) {
    b->id = f.id, b->t_ns = f.t_ns, b->op_id = f.op_id, b->op_input = f.op_input;
    if (b->tensor() != f.tensor) b->Mutable().tensor = f.tensor;
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
  std::vector<EventTemplate> out;
  for (Event& e : shardscope::testing::AllGatherRedistribute(0, world, 0, 4 * world + p, 128 + p, "", 0, 0))
    out.push_back(std::make_shared<const Event>(std::move(e)));
  return out;
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

namespace {

// The lines of a rank file after its header.
std::string Body(const fs::path& dir) {
  std::string text = shardscope::testing::ReadFile(dir / RankFileName(0));
  return text.substr(text.find('\n') + 1);
}

}  // namespace

TEST_CASE("template capture reads back as what whole events with lists of their own write",
          "[trace][writer][local]") {
  // Format v2 writes a begin whose plan fields repeat an earlier begin's as `like`; the encoder
  // recognises a template's begin by its shared lists instead of formatting them again, keeps
  // one copy per event kind while the template repeats, and writes a whole redistribute whose
  // templates equal an earlier one's as one redistribute_repeat line. None may change what is
  // read: the same sequence is written once by template capture (the shortcuts taken) and once as
  // whole events built afresh for every emit (no list shared with anything earlier, so no
  // shortcut applies, and no repeat line).
  // Templates are dropped and rebuilt with other contents now and then, so freed addresses come
  // back holding other lists; more distinct begins than the encoder remembers.
  std::mt19937_64 rng(20261204);
  for (int round = 0; round < 10; ++round) {
    const fs::path by_template = shardscope::testing::FreshTempDir("tmpl_bytes_t" + std::to_string(round));
    const fs::path by_event = shardscope::testing::FreshTempDir("tmpl_bytes_e" + std::to_string(round));
    const int slots = 1 + static_cast<int>(rng() % 20);
    std::vector<int> content(static_cast<size_t>(slots));
    std::vector<std::vector<EventTemplate>> templates;
    for (int s = 0; s < slots; ++s) {
      content[static_cast<size_t>(s)] = s;
      templates.push_back(Templates(3, s));
    }
    {
      Writer t(by_template, RankHeader(0, 3), {}, Durability::kBackground);
      Writer e(by_event, RankHeader(0, 3), {}, Durability::kBackground);
      int next_content = slots;
      for (int64_t id = 0; id < 400; ++id) {
        const size_t s = rng() % templates.size();
        if (rng() % 16 == 0) {  // a new plan in this slot: the old templates are dropped
          content[s] = rng() % 2 ? next_content++ : content[(s + 1) % content.size()];
          templates[s] = Templates(3, content[s]);
        }
        const std::vector<EventTemplate> fresh = Templates(3, content[s]);
        TemplateFields f;
        f.id = id;
        f.t_ns = 1000 * id;
        f.end_ns = 1000 * id + 7;
        f.tensor = rng() % 3 ? "x" : "weight";
        f.op_id = rng() % 4 == 0 ? id : -1;
        f.op_input = f.op_id >= 0 ? 0 : -1;
        for (size_t k = 0; k < fresh.size(); ++k) {
          t.Emit(templates[s][k], f);
          e.Emit(Materialize(*fresh[k], f));
        }
      }
    }
    INFO("round " << round << ", " << slots << " slots");
    const std::vector<Event> want = ReadBack(by_event);
    REQUIRE(want.size() == 2000);
    CHECK(ReadBack(by_template) == want);
    // Every redistribute after the first of its templates is one line.
    CHECK(Body(by_template).find("redistribute_repeat") != std::string::npos);
    CHECK(Body(by_event).find("redistribute_repeat") == std::string::npos);
  }
}

TEST_CASE("template capture: begins that share every list but differ in a string or a number are not alike",
          "[trace][writer][local]") {
  // Copies of one begin share its lists; each differs from it in one field the lists do not hold.
  const RedistributeBegin base = std::get<RedistributeBegin>(*Templates(2, 0)[0]);
  std::vector<RedistributeBegin> variants(6, base);
  variants[1].Mutable().cost_us = 4.5;
  variants[2].Mutable().planner_reason = "another reason";
  variants[3].Mutable().notation = "S(0)-> R";
  variants[4].Mutable().dtype = "f64";
  variants[5].Mutable().src_order = "S(0)[0]";
  const fs::path by_template = shardscope::testing::FreshTempDir("tmpl_alike_t");
  const fs::path by_event = shardscope::testing::FreshTempDir("tmpl_alike_e");
  {
    Writer t(by_template, RankHeader(0, 2), {}, Durability::kEveryEnd);
    Writer e(by_event, RankHeader(0, 2), {}, Durability::kEveryEnd);
    std::vector<EventTemplate> templates;
    for (const RedistributeBegin& v : variants) templates.push_back(std::make_shared<const Event>(v));
    const EventTemplate end = std::make_shared<const Event>(RedistributeEnd{});
    for (int64_t id = 0; id < 60; ++id) {
      const size_t v = static_cast<size_t>(id * 7 % 6);
      const TemplateFields f{id, id, id, -1, -1, "x"};
      t.Emit(templates[v], f);
      t.Emit(end, f);
      Event fresh = Materialize(Event(variants[v]), f);  // its lists copied: shared with nothing
      auto& b = std::get<RedistributeBegin>(fresh);
      b.Mutable().global_shape = std::vector<int64_t>(b.global_shape().get());
      b.Mutable().src_placements = std::vector<std::string>(b.src_placements().get());
      b.Mutable().dst_placements = std::vector<std::string>(b.dst_placements().get());
      b.Mutable().raw_plan = std::vector<PlanStep>(b.raw_plan().get());
      b.Mutable().optimized_plan = std::vector<PlanStep>(b.optimized_plan().get());
      e.Emit(std::move(fresh));
      e.Emit(Materialize(Event(RedistributeEnd{}), f));
    }
  }
  CHECK(ReadBack(by_template) == ReadBack(by_event));
  // Six distinct plan fields: six begins written in full; the other 54 refer to one of them, by
  // `like` on their begin (whole events) or as repeat lines (templates).
  using shardscope::testing::CountOf;
  CHECK(CountOf(Body(by_event), "\"like\"") == 54);
  CHECK(CountOf(Body(by_template), "\"type\":\"redistribute_repeat\"") == 54);
  CHECK(CountOf(Body(by_template), "\"like\"") == 54);
}

namespace {

// Begins of three plans and dtypes, and step, collective and end templates emitted under any of
// them (or under none), all built afresh on every call: nothing shared with an earlier call.
struct Mixed {
  std::vector<EventTemplate> begins;  // [0] plan A f32, [1] plan B f32, [2] plan A f64, [3] no steps
  std::vector<EventTemplate> steps;   // step begins, collectives, step ends of step 0 or 1
  EventTemplate end;
};

Mixed MixedTemplates() {
  auto begin = [](std::string dtype, std::vector<PlanStep> plan) {
    RedistributeBegin b;
    b.Mutable().global_shape = {12, 8};
    b.Mutable().dtype = dtype;
    b.Mutable().src_placements = {"S(0)"};
    b.Mutable().dst_placements = {"R"};
    b.Mutable().planner = "greedy";
    b.Mutable().planner_reason = "default";
    b.Mutable().notation = b.Mutable().notation_unoptimized = "S(0)->R";
    b.Mutable().raw_plan = plan;
    b.Mutable().optimized_plan = std::move(plan);
    return std::make_shared<const Event>(std::move(b));
  };
  const PlanStep gather{{0}, "S(0)", "R", "all_gather", {12, 8}, false, 1.0, 3.5};
  const PlanStep swap{{0}, "S(1)", "S(0)", "all_to_all", {12, 8}, false, 1.0, 2.5};
  Mixed m;
  m.begins = {begin("f32", {gather}), begin("f32", {swap, gather}), begin("f64", {gather}), begin("f32", {})};
  auto add = [&m](auto event) { m.steps.push_back(std::make_shared<const Event>(std::move(event))); };
  add(StepBegin{0, 0, "S(0)", "R", "all_gather", {0}, {12, 8}, {4, 8}, {0, 0}, 0});
  add(StepBegin{0, 1, "S(0)", "R", "all_gather", {0}, {12, 8}, {4, 8}, {4, 0}, 0});
  add(shardscope::testing::MakeCollective(0, 0, "all_gather", "f32", false, {0}, {0, 1, 2}, {0, 32, 32},
                                          {0, 32, 32}, 0, 0, -1));
  add(shardscope::testing::MakeCollective(0, 0, "all_gather", "f64", false, {0}, {0, 1, 2}, {0, 64, 8},
                                          {0, 64, 8}, 0, 0, -1));
  add(shardscope::testing::MakeCollective(0, 1, "all_to_all", "f32", true, {0}, {0, 1, 2}, {0, 32, 32},
                                          {0, 32, 32}, 0, 0, -1));
  add(StepEnd{0, 0, {12, 8}, {0, 0}, 0});
  add(StepEnd{0, 1, {4, 8}, {8, 0}, 0});
  m.end = std::make_shared<const Event>(RedistributeEnd{});
  return m;
}

}  // namespace

TEST_CASE(
    "template capture: step and collective lines written from remembered text match whatever begin they "
    "follow",
    "[trace][writer][local]") {
  // The encoder remembers a template's step_begin, step_end and collective line with its id and
  // times cut out, and writes later copies from that text. What a v2 line leaves out depends on
  // the redistribute it belongs to (its plan step: src, dst, comm, mesh dims; its dtype): here the
  // same templates follow begins of other plans, another dtype, a plan without that step, and no
  // begin at all, in random order. Every line must be what the whole event writes.
  std::mt19937_64 rng(20261205);
  for (int round = 0; round < 6; ++round) {
    const fs::path by_template = shardscope::testing::FreshTempDir("tmpl_lines_t" + std::to_string(round));
    const fs::path by_event = shardscope::testing::FreshTempDir("tmpl_lines_e" + std::to_string(round));
    Mixed templates = MixedTemplates();
    {
      Writer t(by_template, RankHeader(0, 3), {}, Durability::kBackground);
      Writer e(by_event, RankHeader(0, 3), {}, Durability::kBackground);
      for (int64_t id = 0; id < 300; ++id) {
        if (rng() % 50 == 0) templates = MixedTemplates();  // dropped: their addresses come back
        const Mixed fresh = MixedTemplates();
        TemplateFields f;
        f.id = id;
        f.t_ns = 1000 * id;
        f.end_ns = 1000 * id + 7;
        f.tensor = "x";
        const size_t b = rng() % (templates.begins.size() + 1);  // == size(): no begin
        auto emit = [&](const EventTemplate& tmpl, const EventTemplate& same) {
          t.Emit(tmpl, f);
          e.Emit(Materialize(*same, f));
        };
        if (b < templates.begins.size()) emit(templates.begins[b], fresh.begins[b]);
        for (int n = static_cast<int>(rng() % 6); n > 0; --n) {
          const size_t s = rng() % templates.steps.size();
          f.t_ns += 10;
          f.end_ns += 10;
          emit(templates.steps[s], fresh.steps[s]);
        }
        // The end as a whole event: no redistribute here is all templates, so none becomes a
        // repeat line and every line is compared (these mixtures are not valid traces to read).
        t.Emit(Materialize(*templates.end, f));
        e.Emit(Materialize(*fresh.end, f));
      }
    }
    INFO("round " << round);
    const std::string want = Body(by_event), got = Body(by_template);
    REQUIRE(want.size() > 0);
    CHECK(got == want);
  }
}
