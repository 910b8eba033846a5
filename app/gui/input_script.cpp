#include "input_script.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

namespace shardscope::app::gui {
namespace {

// Per InputKey, in order: its script name and the character it types (0 for none).
struct KeyInfo {
  const char* name;
  char typed;
};
constexpr KeyInfo kKeys[] = {{"Left", 0},   {"Right", 0},   {"Up", 0},  {"Down", 0}, {"Space", ' '},
                             {"Plus", '+'}, {"Minus", '-'}, {"A", 'a'}, {"D", 'd'},  {"F", 'f'},
                             {"Escape", 0}, {"CtrlF", 0},   {"W", 'w'}, {"S", 's'},  {"CtrlQ", 0},
                             {"G", 'g'},    {"CtrlG", 0},   {"0", '0'}};
// Other names of keys: the Help menu's spelling.
struct KeyAlias {
  const char* name;
  InputKey key;
};
constexpr KeyAlias kAliases[] = {{"Esc", InputKey::kEscape}, {"Zero", InputKey::kZero}};
static_assert(sizeof kKeys / sizeof kKeys[0] == static_cast<size_t>(InputKey::kCount));

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

InputEvent Event(InputEvent::Kind kind, InputKey key = InputKey::kLeft) {
  InputEvent e;
  e.kind = kind;
  e.key = key;
  return e;
}

}  // namespace

const char* InputKeyName(InputKey key) { return kKeys[static_cast<size_t>(key)].name; }

bool IsCtrlChord(InputKey key) {
  return key == InputKey::kCtrlF || key == InputKey::kCtrlG || key == InputKey::kCtrlQ;
}

char InputKeyChar(InputKey key) { return kKeys[static_cast<size_t>(key)].typed; }

std::string InputKeyNames() {
  std::string s;
  for (size_t i = 0; i < static_cast<size_t>(InputKey::kCount); ++i)
    s += (i ? ", " : "") + std::string(kKeys[i].name);
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
      out.push_back(Event(InputEvent::Kind::kWait));
    } else if (EqualsNoCase(token, "loading")) {
      if (out.size() != 0)
        fail("'loading' must be the first step (the steps after it run while traces load)");
      out.push_back(Event(InputEvent::Kind::kLoading));
    } else if (EqualsNoCase(token, "ready")) {
      out.push_back(Event(InputEvent::Kind::kReady));
    } else if ((token.size() > 6 && EqualsNoCase(token.substr(0, 6), "click:")) ||
               (token.size() > 7 && EqualsNoCase(token.substr(0, 7), "rclick:"))) {
      const bool right = std::tolower(static_cast<unsigned char>(token[0])) == 'r';
      std::string_view rest = token.substr(right ? 7 : 6);
      size_t colon = rest.find(':');
      InputEvent e = Event(right ? InputEvent::Kind::kRightClick : InputEvent::Kind::kClick);
      if (colon == std::string_view::npos || !ParseCoord(rest.substr(0, colon), e.x) ||
          !ParseCoord(rest.substr(colon + 1), e.y))
        fail(right ? "a right click is rclick:X:Y with X and Y whole pixels in 0..16384"
                   : "a click is click:X:Y with X and Y whole pixels in 0..16384");
      out.push_back(e);
    } else if (token.size() > 5 && EqualsNoCase(token.substr(0, 5), "drag:")) {
      std::string_view rest = token.substr(5);
      InputEvent e = Event(InputEvent::Kind::kDrag);
      float* coords[] = {&e.x, &e.y, &e.x1, &e.y1};
      bool ok = true;
      for (size_t k = 0; k < 4 && ok; ++k) {
        const size_t colon = k < 3 ? rest.find(':') : rest.size();
        ok = colon != std::string_view::npos && ParseCoord(rest.substr(0, colon), *coords[k]);
        rest.remove_prefix(std::min(rest.size(), colon + 1));
      }
      if (!ok) fail("a drag is drag:X0:Y0:X1:Y1 with whole pixels in 0..16384");
      out.push_back(e);
    } else if (token.size() > 5 && EqualsNoCase(token.substr(0, 5), "type:")) {
      InputEvent e = Event(InputEvent::Kind::kType);
      e.text = std::string(token.substr(5));
      for (char c : e.text) {
        if (c < 0x20 || c > 0x7e) fail("type:TEXT takes printable ASCII characters");
      }
      out.push_back(e);
    } else if (token.size() > 5 && EqualsNoCase(token.substr(0, 5), "drop:")) {
      InputEvent e = Event(InputEvent::Kind::kDrop);
      e.text = std::string(token.substr(5));
      out.push_back(e);
    } else {
      bool found = false;
      for (size_t k = 0; k < static_cast<size_t>(InputKey::kCount) && !found; ++k) {
        if (EqualsNoCase(token, kKeys[k].name)) {
          out.push_back(Event(InputEvent::Kind::kKey, static_cast<InputKey>(k)));
          found = true;
        }
      }
      for (const KeyAlias& alias : kAliases) {
        if (!found && EqualsNoCase(token, alias.name)) {
          out.push_back(Event(InputEvent::Kind::kKey, alias.key));
          found = true;
        }
      }
      if (!found)
        fail("not a key (" + InputKeyNames() +
             "), click:X:Y, rclick:X:Y, drag:X0:Y0:X1:Y1, type:TEXT, drop:PATH, wait, loading (first) or "
             "ready");
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace shardscope::app::gui
