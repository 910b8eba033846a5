// The environment knob registry (shardscope/knobs.hpp): each kind parses what its definition
// accepts, refuses the rest with one message naming the knob and the value, and unset means
// "the default" (nullopt or the choice's default).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "shardscope/error.hpp"
#include "shardscope/knobs.hpp"

using namespace shardscope;

namespace {

// Sets `name` for the scope, unsets it after.
struct SetEnv {
  SetEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~SetEnv() { ::unsetenv(name_); }
  const char* name_;
};

const Knob& Integer() {
  static const Knob& knob = RegisterKnob(
      IntegerKnob("SHARDSCOPE_TEST_INTEGER", "tests", "3", "an integer for this test", "MiB", 0, 10));
  return knob;
}

const Knob& Choice() {
  static const Knob& knob =
      RegisterKnob(ChoiceKnob("SHARDSCOPE_TEST_CHOICE", "tests", "a", "a choice for this test", {"a", "b"}));
  return knob;
}

const Knob& Number() {
  static const Knob& knob =
      RegisterKnob(NumberKnob("SHARDSCOPE_TEST_NUMBER", "tests", "none", "a number for this test", "bytes"));
  return knob;
}

}  // namespace

TEST_CASE("knobs: unset or empty means the default", "[trace][knobs]") {
  ::unsetenv("SHARDSCOPE_TEST_INTEGER");
  CHECK_FALSE(KnobInteger(Integer()).has_value());
  SetEnv empty("SHARDSCOPE_TEST_INTEGER", "");
  CHECK_FALSE(KnobValue(Integer()).has_value());
  CHECK(KnobChoice(Choice()) == "a");
  CHECK_FALSE(KnobNumber(Number()).has_value());
}

TEST_CASE("knobs: integers within the bounds, nothing else", "[trace][knobs]") {
  {
    SetEnv set("SHARDSCOPE_TEST_INTEGER", "10");
    CHECK(KnobInteger(Integer()) == 10);
  }
  for (const char* bad : {"11", "-1", "2x", "x", "1e3", "99999999999999999999"}) {
    SetEnv set("SHARDSCOPE_TEST_INTEGER", bad);
    CHECK_THROWS_WITH(KnobInteger(Integer()), "SHARDSCOPE_TEST_INTEGER='" + std::string(bad) +
                                                  "' is not a whole number of MiB from 0 to 10");
    CHECK_THROWS_AS(ValidateKnob(Integer()), Error);
  }
}

TEST_CASE("knobs: choices and positive numbers", "[trace][knobs]") {
  {
    SetEnv set("SHARDSCOPE_TEST_CHOICE", "b");
    CHECK(KnobChoice(Choice()) == "b");
  }
  {
    SetEnv set("SHARDSCOPE_TEST_CHOICE", "c");
    CHECK_THROWS_WITH(KnobChoice(Choice()), "SHARDSCOPE_TEST_CHOICE='c' is not one of a, b");
  }
  {
    SetEnv set("SHARDSCOPE_TEST_NUMBER", "2.5e3");
    CHECK(KnobNumber(Number()) == 2500.0);
  }
  for (const char* bad : {"0", "-4", "lots", "1e999", "nan"}) {
    SetEnv set("SHARDSCOPE_TEST_NUMBER", bad);
    CHECK_THROWS_WITH(KnobNumber(Number()),
                      "SHARDSCOPE_TEST_NUMBER='" + std::string(bad) + "' is not a positive number of bytes");
  }
}

TEST_CASE("knobs: one entry per name, listed by name", "[trace][knobs]") {
  const Knob& first = Integer();
  const Knob& again = RegisterKnob(IntegerKnob("SHARDSCOPE_TEST_INTEGER", "other", "", "", "", 0, 1));
  CHECK(&first == &again);
  CHECK(again.layer == "tests");
  knobs::RegisterAll();
  const auto all = RegisteredKnobs();
  for (size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1]->name < all[i]->name);
  bool trace_listed = false;
  for (const Knob* k : all) trace_listed = trace_listed || k->name == "SHARDSCOPE_TRACE";
  CHECK(trace_listed);
}
