#pragma once
// Environment knobs (SHARDSCOPE_*): one registry that parses, validates and documents each one,
// NCCL-style. It lives in the trace library because trace is the bottom layer that every other
// module links; each layer registers its own knobs (engine/core/knobs.hpp, program/knobs.hpp) so
// that this file names none of theirs. `shardscope env` lists them all.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

/// What a knob's value must be.
enum class KnobKind {
  kText,     ///< any non-empty text (a path)
  kInteger,  ///< a whole number within [min, max]
  kNumber,   ///< a positive number (decimal or exponent form)
  kChoice,   ///< one of `choices`
};

/// One environment variable: its name, what it does, and what a valid value is.
struct Knob {
  std::string name;   ///< "SHARDSCOPE_BLOCK_CACHE_MIB"
  std::string layer;  ///< who reads it: trace, engine, program, tests
  KnobKind kind = KnobKind::kText;
  std::string default_value;  ///< what unset means, as printed by `shardscope env`
  std::string description;    ///< one sentence
  std::string unit;           ///< kInteger/kNumber: "MiB", "bytes", "seconds"; "" for none
  int64_t min = 0;            ///< kInteger bounds
  int64_t max = std::numeric_limits<int64_t>::max();
  std::vector<std::string> choices;  ///< kChoice values
};

/// Knobs of each kind (the fields not named keep their defaults).
Knob TextKnob(std::string name, std::string layer, std::string default_value, std::string description);
Knob IntegerKnob(std::string name, std::string layer, std::string default_value, std::string description,
                 std::string unit, int64_t min, int64_t max = std::numeric_limits<int64_t>::max());
Knob NumberKnob(std::string name, std::string layer, std::string default_value, std::string description,
                std::string unit);
Knob ChoiceKnob(std::string name, std::string layer, std::string default_value, std::string description,
                std::vector<std::string> choices);

/// Adds `knob` to the registry (once per name: a second registration returns the first) and
/// returns the registered entry, which lives as long as the program. Thread-safe.
const Knob& RegisterKnob(Knob knob);
/// Every registered knob, by name.
std::vector<const Knob*> RegisteredKnobs();

/// The variable's text; nullopt when it is unset or empty.
std::optional<std::string> KnobValue(const Knob& knob);
/// "a whole number of MiB from 0 to 16777216", "a positive number of bytes", "one of native, exact".
std::string KnobExpectation(const Knob& knob);
/// Throws Error(kInvalidInput) "NAME='value' is not <expectation>" when the set value is bad.
void ValidateKnob(const Knob& knob);
/// The validated value (each throws like ValidateKnob); nullopt when unset.
std::optional<int64_t> KnobInteger(const Knob& knob);
std::optional<double> KnobNumber(const Knob& knob);
/// kChoice: the set value, or the knob's default when unset.
std::string KnobChoice(const Knob& knob);

/// The trace layer's knob (listed by `shardscope env`). The test suites' bounds are not part of the
/// library a job links: they live in tests/common/test_knobs.hpp.
namespace knobs {
const Knob& TraceDir();  ///< SHARDSCOPE_TRACE (defined beside the trace session that reads it)
/// Registers all of the above.
void RegisterAll();
}  // namespace knobs

}  // namespace shardscope
