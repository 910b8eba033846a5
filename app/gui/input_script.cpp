#include "input_script.hpp"

#include <cctype>
#include <charconv>
#include <stdexcept>

namespace shardscope::app::gui {
namespace {

constexpr const char* kNames[] = {"Left",  "Right", "Up", "Down", "Space",  "Plus",
                                  "Minus", "A",     "D",  "F",    "Escape", "CtrlF"};
static_assert(sizeof kNames / sizeof kNames[0] == static_cast<size_t>(InputKey::kCount));

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool ParseCoord(std::string_view s, float& out) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  out = static_cast<float>(v);
  return ec == std::errc() && end == s.data() + s.size() && v >= 0 && v <= 16384;
}

}  // namespace

const char* InputKeyName(InputKey key) { return kNames[static_cast<size_t>(key)]; }

char InputKeyChar(InputKey key) {
  switch (key) {
    case InputKey::kPlus:
      return '+';
    case InputKey::kMinus:
      return '-';
    case InputKey::kA:
      return 'a';
    case InputKey::kD:
      return 'd';
    case InputKey::kF:
      return 'f';
    case InputKey::kSpace:
      return ' ';
    default:
      return 0;
  }
}

std::string InputKeyNames() {
  std::string s;
  for (size_t i = 0; i < static_cast<size_t>(InputKey::kCount); ++i)
    s += (i ? ", " : "") + std::string(kNames[i]);
  return s;
}

std::vector<InputEvent> ParseInputScript(std::string_view text) {
  std::vector<InputEvent> out;
  size_t index = 0;
  while (true) {
    size_t comma = text.find(',');
    std::string_view token = Trim(text.substr(0, comma));
    ++index;
    auto fail = [&](const std::string& why) {
      throw std::invalid_argument("token " + std::to_string(index) + " '" + std::string(token) + "': " + why);
    };
    if (token.empty()) fail("empty (tokens are separated by single commas)");
    if (EqualsNoCase(token, "wait")) {
      out.push_back({InputEvent::Kind::kWait});
    } else if (token.size() > 6 && EqualsNoCase(token.substr(0, 6), "click:")) {
      std::string_view rest = token.substr(6);
      size_t colon = rest.find(':');
      InputEvent e{InputEvent::Kind::kClick};
      if (colon == std::string_view::npos || !ParseCoord(rest.substr(0, colon), e.x) ||
          !ParseCoord(rest.substr(colon + 1), e.y))
        fail("a click is click:X:Y with X and Y whole pixels in 0..16384");
      out.push_back(e);
    } else {
      bool found = false;
      for (size_t k = 0; k < static_cast<size_t>(InputKey::kCount) && !found; ++k) {
        if (EqualsNoCase(token, kNames[k])) {
          out.push_back({InputEvent::Kind::kKey, static_cast<InputKey>(k)});
          found = true;
        }
      }
      if (!found) fail("not a key (" + InputKeyNames() + "), click:X:Y or wait");
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace shardscope::app::gui
