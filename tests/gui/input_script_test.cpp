// GL-free parts of the GUI's input: the --keys script grammar, tap counting, and the index-range
// notation of the layout panel's table.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "input_script.hpp"
#include "view_model.hpp"

using shardscope::app::gui::InputEvent;
using shardscope::app::gui::InputKey;
using shardscope::app::gui::InputKeyChar;
using shardscope::app::gui::KeyTaps;
using shardscope::app::gui::ParseInputScript;

namespace {

// The message ParseInputScript throws for `text`, or "no error".
std::string message(const char* text) {
  try {
    ParseInputScript(text);
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

// Checks that `e` is a `kind` event at pixel (x, y).
void CheckAt(const InputEvent& e, InputEvent::Kind kind, int x, int y) {
  CHECK(e.kind == kind);
  CHECK(e.x == x);
  CHECK(e.y == y);
}

}  // namespace

TEST_CASE("input scripts (--keys): key names in any case, clicks at pixels, waits", "[gui][input]") {
  auto s = ParseInputScript("Down,down, RIGHT ,click:412:230,wait,Plus");
  REQUIRE(s.size() == 6);
  CHECK(s[0].kind == InputEvent::Kind::kKey);
  CHECK(s[0].key == InputKey::kDown);
  CHECK(s[1].key == InputKey::kDown);
  CHECK(s[2].key == InputKey::kRight);
  CheckAt(s[3], InputEvent::Kind::kClick, 412, 230);
  CHECK(s[4].kind == InputEvent::Kind::kWait);
  CHECK(s[5].key == InputKey::kPlus);
}

TEST_CASE("input scripts (--keys): CtrlF is Ctrl+F, apart from F", "[gui][input][search]") {
  auto s = ParseInputScript("ctrlf,F");
  REQUIRE(s.size() == 2);
  CHECK(s[0].key == InputKey::kCtrlF);
  CHECK(s[1].key == InputKey::kF);
  CHECK(InputKeyChar(InputKey::kCtrlF) == 0);  // types nothing into a focused text box
}

TEST_CASE("input scripts (--keys): every key the Help menu lists can be pressed", "[gui][input]") {
  // Help: "F, 0", "G or Ctrl+G", "Esc", "W / S, + / -", "A / D", Ctrl+F, Ctrl+Q, Space, arrows.
  auto s = ParseInputScript("G,CtrlG,0,Zero,Esc,Escape,ctrlg,g");
  REQUIRE(s.size() == 8);
  CHECK(s[0].key == InputKey::kG);
  CHECK(s[1].key == InputKey::kCtrlG);
  CHECK(s[2].key == InputKey::kZero);
  CHECK(s[3].key == InputKey::kZero);
  CHECK(s[4].key == InputKey::kEscape);
  CHECK(s[5].key == InputKey::kEscape);
  CHECK(s[6].key == InputKey::kCtrlG);
  CHECK(s[7].key == InputKey::kG);
  for (const auto& e : s) CHECK(e.kind == InputEvent::Kind::kKey);
  // The timeline reads G and 0 as the characters they type; Ctrl+G types none.
  CHECK(InputKeyChar(InputKey::kG) == 'g');
  CHECK(InputKeyChar(InputKey::kZero) == '0');
  CHECK(InputKeyChar(InputKey::kCtrlG) == 0);
  CHECK(shardscope::app::gui::IsCtrlChord(InputKey::kCtrlG));
  CHECK(!shardscope::app::gui::IsCtrlChord(InputKey::kG));
  // Every key name parses back to its key.
  for (int k = 0; k < static_cast<int>(InputKey::kCount); ++k) {
    const auto key = static_cast<InputKey>(k);
    auto one = ParseInputScript(shardscope::app::gui::InputKeyName(key));
    REQUIRE(one.size() == 1);
    CHECK(one[0].key == key);
  }
}

TEST_CASE("input scripts (--keys): a bad token is named with its position", "[gui][input]") {
  CHECK(message("Down,Dwn") ==
        std::string("token 2 'Dwn': not a key (Left, Right, Up, Down, Space, Plus, Minus, "
                    "A, D, F, Escape, CtrlF, W, S, CtrlQ, G, CtrlG, 0), click:X:Y, rclick:X:Y, "
                    "drag:X0:Y0:X1:Y1, type:TEXT, "
                    "drop:PATH, wait, loading (first) or ready"));
  CHECK(message("Down,,Up").find("token 2 '': empty") == 0);
  CHECK(message("click:12").find("token 1 'click:12': a click is click:X:Y") == 0);
  CHECK(message("click:-1:5").find("token 1") == 0);
  CHECK(message("click:1:2x").find("token 1") == 0);
  CHECK(message("").find("token 1 '': empty") == 0);
}

TEST_CASE("input scripts (--keys): a leading `loading` step runs the rest during the load, `ready` waits",
          "[gui][input][loading]") {
  auto s = ParseInputScript("loading,G,type:17,ready,Down");
  REQUIRE(s.size() == 5);
  CHECK(s[0].kind == InputEvent::Kind::kLoading);
  CHECK(s[1].kind == InputEvent::Kind::kKey);
  CHECK(s[2].kind == InputEvent::Kind::kType);
  CHECK(s[3].kind == InputEvent::Kind::kReady);
  CHECK(s[4].kind == InputEvent::Kind::kKey);
  CHECK(ParseInputScript("READY")[0].kind == InputEvent::Kind::kReady);
  // `loading` only as the first step: later it would mean nothing.
  CHECK_THROWS_WITH(ParseInputScript("Down,loading"),
                    Catch::Contains("token 2 'loading': 'loading' must be the first step"));
}

TEST_CASE("input scripts (--keys): right clicks at pixels", "[gui][input]") {
  auto s = ParseInputScript("rclick:30:40,click:1:2,RClick:5:6");
  REQUIRE(s.size() == 3);
  CheckAt(s[0], InputEvent::Kind::kRightClick, 30, 40);
  CHECK(s[1].kind == InputEvent::Kind::kClick);
  CHECK(s[2].kind == InputEvent::Kind::kRightClick);
  CHECK(message("rclick:3").find("token 1 'rclick:3': a right click is rclick:X:Y") == 0);
}

TEST_CASE("input scripts (--keys): drags from one pixel to another, typed text", "[gui][input]") {
  auto s = ParseInputScript("drag:10:20:300:25, type:g517 ,Down");
  REQUIRE(s.size() == 3);
  CheckAt(s[0], InputEvent::Kind::kDrag, 10, 20);
  CHECK(s[0].x1 == 300);
  CHECK(s[0].y1 == 25);
  CHECK(s[1].kind == InputEvent::Kind::kType);
  CHECK(s[1].text == "g517");
  CHECK(s[2].key == InputKey::kDown);
  CHECK(message("drag:1:2:3").find("token 1 'drag:1:2:3': a drag is drag:X0:Y0:X1:Y1") == 0);
  CHECK(message("Up,drag:1:2:3:4:5").find("token 2") == 0);
  CHECK(message("drag:1:2:3:x").find("token 1") == 0);
  CHECK(message("type:").find("token 1 'type:': not a key") == 0);
}

TEST_CASE("key taps count every press of a frame, releases do not cancel them", "[gui][input]") {
  KeyTaps taps;
  taps.Add(InputKey::kDown);
  taps.Add(InputKey::kDown);
  taps.Add(InputKey::kRight);
  CHECK(taps.Count(InputKey::kDown) == 2);
  CHECK(taps.Count(InputKey::kRight) == 1);
  CHECK(taps.Count(InputKey::kUp) == 0);
  taps.Clear();
  CHECK(taps.Count(InputKey::kDown) == 0);
}

TEST_CASE("mesh dims print by name when the mesh names them, else by index", "[gui][view]") {
  using shardscope::app::gui::FormatMeshDims;
  namespace engine = shardscope::engine;
  CHECK(FormatMeshDims({0, 1}, engine::Mesh({2, 4}, {"dp", "tp"})) == "dp,tp");
  CHECK(FormatMeshDims({1}, engine::Mesh({2, 4})) == "1");
  CHECK(FormatMeshDims({}, engine::Mesh({2, 4})) == "-");
}
