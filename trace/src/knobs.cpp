#include "shardscope/knobs.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>

#include "shardscope/error.hpp"
#include "shardscope/text.hpp"

namespace shardscope {
namespace {

struct Registry {
  std::mutex mutex;
  std::deque<Knob> knobs;  // stable addresses
  std::map<std::string, const Knob*, std::less<>> by_name;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;  // never destroyed: knobs may be read at exit
  return *registry;
}

// "of MiB " for a knob with a unit.
std::string Of(const Knob& knob) { return knob.unit.empty() ? "" : "of " + knob.unit + " "; }

Error Bad(const Knob& knob, const std::string& value) {
  return InvalidInput(knob.name + "='" + value + "' is not " + KnobExpectation(knob));
}

}  // namespace

Knob TextKnob(std::string name, std::string layer, std::string default_value, std::string description) {
  Knob k;
  k.name = std::move(name);
  k.layer = std::move(layer);
  k.default_value = std::move(default_value);
  k.description = std::move(description);
  return k;
}

Knob IntegerKnob(std::string name, std::string layer, std::string default_value, std::string description,
                 std::string unit, int64_t min, int64_t max) {
  Knob k = TextKnob(std::move(name), std::move(layer), std::move(default_value), std::move(description));
  k.kind = KnobKind::kInteger;
  k.unit = std::move(unit);
  k.min = min;
  k.max = max;
  return k;
}

Knob NumberKnob(std::string name, std::string layer, std::string default_value, std::string description,
                std::string unit) {
  Knob k = TextKnob(std::move(name), std::move(layer), std::move(default_value), std::move(description));
  k.kind = KnobKind::kNumber;
  k.unit = std::move(unit);
  return k;
}

Knob ChoiceKnob(std::string name, std::string layer, std::string default_value, std::string description,
                std::vector<std::string> choices) {
  Knob k = TextKnob(std::move(name), std::move(layer), std::move(default_value), std::move(description));
  k.kind = KnobKind::kChoice;
  k.choices = std::move(choices);
  return k;
}

const Knob& RegisterKnob(Knob knob) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (auto it = r.by_name.find(knob.name); it != r.by_name.end()) return *it->second;
  const Knob& added = r.knobs.emplace_back(std::move(knob));
  r.by_name.emplace(added.name, &added);
  return added;
}

std::vector<const Knob*> RegisteredKnobs() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<const Knob*> all;
  for (const auto& [name, knob] : r.by_name) all.push_back(knob);
  return all;
}

std::optional<std::string> KnobValue(const Knob& knob) {
  const char* value = std::getenv(knob.name.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string KnobExpectation(const Knob& knob) {
  switch (knob.kind) {
    case KnobKind::kInteger:
      if (knob.max == std::numeric_limits<int64_t>::max())
        return "a whole number " + Of(knob) + "(" + std::to_string(knob.min) + " or more)";
      return "a whole number " + Of(knob) + "from " + std::to_string(knob.min) + " to " +
             std::to_string(knob.max);
    case KnobKind::kNumber:
      return "a positive number" + (knob.unit.empty() ? "" : " of " + knob.unit);
    case KnobKind::kChoice:
      return "one of " + Join(knob.choices, ", ");
    case KnobKind::kText:
      break;
  }
  return "a non-empty text";
}

std::optional<int64_t> KnobInteger(const Knob& knob) {
  const std::optional<std::string> text = KnobValue(knob);
  if (!text) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(text->c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || n < knob.min || n > knob.max) throw Bad(knob, *text);
  return n;
}

std::optional<double> KnobNumber(const Knob& knob) {
  const std::optional<std::string> text = KnobValue(knob);
  if (!text) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || *end != '\0' || !(v > 0) || !std::isfinite(v)) throw Bad(knob, *text);
  return v;
}

std::string KnobChoice(const Knob& knob) {
  const std::optional<std::string> text = KnobValue(knob);
  if (!text) return knob.default_value;
  for (const std::string& c : knob.choices)
    if (c == *text) return c;
  throw Bad(knob, *text);
}

void ValidateKnob(const Knob& knob) {
  switch (knob.kind) {
    case KnobKind::kInteger:
      KnobInteger(knob);
      break;
    case KnobKind::kNumber:
      KnobNumber(knob);
      break;
    case KnobKind::kChoice:
      KnobChoice(knob);
      break;
    case KnobKind::kText:
      break;
  }
}

namespace knobs {

void RegisterAll() { TraceDir(); }

}  // namespace knobs
}  // namespace shardscope
