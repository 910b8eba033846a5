// The data-only pickle reader: pickles written byte by byte from the opcode definitions (CPython's
// Lib/pickletools.py documents each opcode, its argument and its stack effect), hostile ones
// refused without executing or allocating without bound, and a fuzz case for the sanitizer builds.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>

#include "../common/test_knobs.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/flight_recorder.hpp"

using namespace shardscope;
using nlohmann::json;
using namespace std::string_literals;

namespace {

std::string U32(uint32_t v) {
  std::string s;
  for (int k = 0; k < 4; ++k) s += static_cast<char>((v >> (8 * k)) & 0xff);
  return s;
}

// BINUNICODE: 'X', 4-byte little-endian length, UTF-8 bytes.
std::string Str(const std::string& s) { return "X" + U32(static_cast<uint32_t>(s.size())) + s; }

const std::string kProto2 = "\x80\x02";

std::string ErrorOf(const std::string& data) {
  try {
    (void)trace::ReadPickle(data, "dump");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kInvalidInput);
    return e.what();
  }
  FAIL("no error for a hostile pickle");
  return "";
}

}  // namespace

TEST_CASE("pickle: a dict of str, ints, float, bool, None, list and tuple, with the memo",
          "[trace][pickle]") {
  // {"version": "2.4", "n": [5, 258, -1, 0.5, True, None, (1,)], "big": 1764000000000000000, "neg": -1, "z":
  // 0}
  std::string p = kProto2 + "}q\x00("s + Str("version") + "q\x01" + Str("2.4") + "q\x02" + Str("n") +
                  "]q\x03(" + "K\x05" + "M\x02\x01" + "J" + U32(0xffffffffu) + "G\x3f\xe0" +
                  std::string(6, '\0') + "\x88" + "N" + "K\x01\x85" + "e" + Str("big") + "\x8a\x08" +
                  U32(0x67ca0000u) + U32(0x187afca7u) + Str("neg") + "\x8a\x01\xff" + Str("z") + "\x8a\x00"s +
                  "u.";
  json j = trace::ReadPickle(p, "dump");
  CHECK(j["version"] == "2.4");
  CHECK(j["n"] == json::parse("[5, 258, -1, 0.5, true, null, [1]]"));
  // 1764000000000000000 = 0x187AFCA7_67CA0000 (little-endian 8-byte LONG1).
  CHECK(j["big"].get<int64_t>() == 1764000000000000000LL);
  CHECK(j["neg"].get<int64_t>() == -1);
  CHECK(j["z"].get<int64_t>() == 0);
}

TEST_CASE("pickle: memo references share one value; int keys become strings", "[trace][pickle]") {
  // l = ["a"]; {1: l, "b": l} via BINPUT/BINGET and MEMOIZE (protocol 4 form).
  std::string p = "\x80\x04}\x94(K\x01]\x94" + Str("a") + "a" + Str("b") + "h\x01u.";
  json j = trace::ReadPickle(p, "dump");
  CHECK(j == json::parse(R"({"1": ["a"], "b": ["a"]})"));
}

TEST_CASE("pickle: opcodes that import or call code are refused by name", "[trace][pickle]") {
  // pickle.dumps of an object whose __reduce__ is os.system("id"), protocol 2: GLOBAL then REDUCE.
  std::string global = kProto2 + "cos\nsystem\nq\x00"s + Str("id") + "\x85R.";
  std::string msg = ErrorOf(global);
  CHECK_THAT(msg, Catch::Contains("opcode GLOBAL") && Catch::Contains("byte 2") &&
                      Catch::Contains("could import or call code"));
  CHECK_THAT(ErrorOf("\x80\x04" + Str("os") + Str("system") + "\x93."), Catch::Contains("STACK_GLOBAL"));
  CHECK_THAT(ErrorOf(kProto2 + "N)R."), Catch::Contains("opcode REDUCE"));
  CHECK_THAT(ErrorOf(kProto2 + "}}b."), Catch::Contains("opcode BUILD"));
  CHECK_THAT(ErrorOf(kProto2 + "(ios\nsystem\n."), Catch::Contains("opcode INST"));
  CHECK_THAT(ErrorOf(kProto2 + "(No."), Catch::Contains("opcode OBJ"));
  CHECK_THAT(ErrorOf(kProto2 + "N)\x81."), Catch::Contains("opcode NEWOBJ"));
  CHECK_THAT(ErrorOf(kProto2 + "N)}\x92."), Catch::Contains("opcode NEWOBJ_EX"));
  CHECK_THAT(ErrorOf(kProto2 + "\x82\x01."), Catch::Contains("opcode EXT1"));
  CHECK_THAT(ErrorOf(kProto2 + "NQ."), Catch::Contains("opcode BINPERSID"));
  CHECK_THAT(ErrorOf("(dp0\n."), Catch::Contains("protocol 0 text opcode"));
  CHECK_THAT(ErrorOf(kProto2 + "\xff."), Catch::Contains("unknown opcode 0xff"));
}

TEST_CASE("pickle: huge lengths, deep nesting, cycles and memo bombs are refused without allocating",
          "[trace][pickle]") {
  // A BINUNICODE that claims 4 GiB in a 12-byte file.
  CHECK_THAT(ErrorOf(kProto2 + "X" + U32(0xffffffffu) + "ab."),
             Catch::Contains("declares a length of 4294967295 bytes but only 3 remain"));
  CHECK_THAT(ErrorOf(kProto2 + "\x8d" + std::string(8, '\xff') + "."), Catch::Contains("declares a length"));
  // 100 nested lists: ']' x 100 then 'a' x 99.
  std::string deep = kProto2 + std::string(100, ']') + std::string(99, 'a') + ".";
  CHECK_THAT(ErrorOf(deep), Catch::Contains("nested deeper than 64"));
  // A list that holds itself.
  CHECK_THAT(ErrorOf(kProto2 + "]q\x00h\x00"s + "a."), Catch::Contains("nested deeper than 64"));
  // Each level holds the previous one twice through the memo: 2^40 values from 400 bytes.
  std::string bomb = kProto2 + "]q\x00"s;
  for (int i = 1; i <= 40; ++i) {
    bomb += "0]h" + std::string(1, static_cast<char>(i - 1)) + "ah" +
            std::string(1, static_cast<char>(i - 1)) + "aq" + std::string(1, static_cast<char>(i));
  }
  bomb += ".";
  CHECK_THAT(ErrorOf(bomb), Catch::Contains("expands to more than"));
  // A LONG1 of 9 bytes does not fit 64 bits; truncation; a stack underflow; a GET never PUT.
  CHECK_THAT(ErrorOf(kProto2 + "\x8a\x09" + std::string(9, '\x01') + "."),
             Catch::Contains("does not fit 64 bits"));
  CHECK_THAT(ErrorOf(kProto2 + "]"), Catch::Contains("without a STOP"));
  CHECK_THAT(ErrorOf(kProto2 + "a."), Catch::Contains("empty stack"));
  CHECK_THAT(ErrorOf(kProto2 + "h\x07."), Catch::Contains("memo index 7 was never stored"));
  CHECK_THAT(ErrorOf(kProto2 + "NN."), Catch::Contains("2 values on the stack"));
}

TEST_CASE("pickle: invalid UTF-8 in a string becomes U+FFFD", "[trace][pickle]") {
  json j = trace::ReadPickle(kProto2 + "X" + U32(3) + "a\xff" + "b.", "dump");
  CHECK(j ==
        "a\xef\xbf\xbd"
        "b");
  CHECK_NOTHROW(j.dump());
}

TEST_CASE("fuzz: mutated pickles are read or rejected with shardscope::Error", "[trace][pickle][fuzz]") {
  const std::string seed = kProto2 + "}q\x00("s + Str("version") + Str("2.10") + Str("entries") +
                           "]q\x01(}q\x02(" + Str("record_id") + "K\x00"s + Str("input_sizes") +
                           "]]K\x08"
                           "aK\x04"
                           "aa" +
                           Str("state") + Str("completed") +
                           "uh\x02"
                           "eu.";
  REQUIRE_NOTHROW(trace::ReadPickle(seed, "seed"));
  const auto seconds = shardscope::KnobInteger(shardscope::knobs::FuzzSeconds()).value_or(5);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::mt19937_64 rng(20261203);
  int64_t accepted = 0, rejected = 0;
  const std::string opcodes = "}]()N\x88\x89KMJXqhjreatu\x85\x86\x87\x8a\x94.0123cR\x93";
  for (int64_t i = 0; i < 200000 && std::chrono::steady_clock::now() < deadline; ++i) {
    std::string s = seed;
    const int rounds = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < rounds; ++k) {
      size_t at = rng() % (s.size() + 1);
      switch (rng() % 4) {
        case 0:
          if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng() & 0xff);
          break;
        case 1:
          s = s.substr(0, at);
          break;
        case 2:
          s.insert(at, 1, opcodes[rng() % opcodes.size()]);
          break;
        default:
          s.insert(at, std::string(1 + rng() % 200, opcodes[rng() % opcodes.size()]));
          break;
      }
    }
    try {
      json j = trace::ReadPickle(s, "fuzz");
      (void)j.dump();
      ++accepted;
    } catch (const Error&) {
      ++rejected;
    }
  }
  WARN("pickle fuzz: " << accepted << " accepted, " << rejected << " rejected");
  CHECK(accepted + rejected > 0);
}
