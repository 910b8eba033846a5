// `shardscope env`: every environment knob of every layer (shardscope/knobs.hpp) with what it
// does, what it accepts, its default and its value here. A set value that is not valid is listed
// as such and then reported like any bad input (exit 2).
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli_output.hpp"
#include "commands.hpp"
#include "shardscope/engine/core/knobs.hpp"
#include "shardscope/error.hpp"
#include "shardscope/knobs.hpp"
#include "shardscope/program/knobs.hpp"

namespace shardscope::app {
namespace {

// The knob's validation error ("" when its value is unset or valid).
std::string Problem(const Knob& knob) {
  try {
    ValidateKnob(knob);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Every layer registers its knobs; the registry then holds them all.
std::vector<const Knob*> AllKnobs() {
  knobs::RegisterAll();
  engine::knobs::RegisterAll();
  program::knobs::RegisterAll();
  return RegisteredKnobs();
}

}  // namespace

int RunEnv(const EnvArgs& args, std::ostream& out) {
  std::string first_problem;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Knob* knob : AllKnobs()) {
    const std::optional<std::string> value = KnobValue(*knob);
    const std::string problem = Problem(*knob);
    if (first_problem.empty()) first_problem = problem;
    if (args.json) {
      nlohmann::ordered_json entry = {{"name", knob->name},
                                      {"layer", knob->layer},
                                      {"description", knob->description},
                                      {"accepts", KnobExpectation(*knob)},
                                      {"default", knob->default_value},
                                      {"value", nullptr},
                                      {"valid", problem.empty()}};
      if (value) entry["value"] = *value;
      if (!problem.empty()) entry["error"] = problem;
      list.push_back(std::move(entry));
      continue;
    }
    out << knob->name << " (" << knob->layer << ")\n  " << knob->description << "\n  accepts "
        << KnobExpectation(*knob) << "; default " << knob->default_value << "; now "
        << (value ? "'" + *value + "'" : std::string("unset")) << (problem.empty() ? "" : " (invalid)")
        << "\n";
  }
  if (args.json) out << DumpJson(nlohmann::ordered_json{{"knobs", list}}) << "\n";
  if (!first_problem.empty()) throw InvalidInput(first_problem);
  return 0;
}

}  // namespace shardscope::app
