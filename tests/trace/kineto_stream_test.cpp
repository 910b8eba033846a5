// The Kineto streamer (trace/src/kineto_stream.cpp) on random traces: every event written is
// visited once, in file order, whatever the layout (one event per line, one line, pretty-printed
// args whose ",\n{" fools the fast cut) and whether parsing runs on a second thread; a file cut
// short fails the same way in both modes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "../../trace/src/kineto_stream.hpp"  // private: the streamer
#include "shardscope/error.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using namespace shardscope::trace;

namespace {

// Records what the streamer visits: each event's "id" and the top-level keys.
struct Recorder : detail::KinetoVisitor {
  std::vector<int64_t> ids;
  std::vector<std::string> keys;
  void TopLevel(std::string_view key, simdjson::dom::element) override { keys.emplace_back(key); }
  void Event(simdjson::dom::element e) override {
    int64_t id = -1;
    if (e["id"].get_int64().get(id)) id = -2;
    ids.push_back(id);
  }
};

// A string value with the characters that trip a scanner: escaped quotes and backslashes, braces,
// brackets and commas.
std::string NastyString(std::mt19937_64& rng) {
  static const char* kParts[] = {"a", "\\\"", "\\\\", "{", "}", "[", "]", ",", " ", "\\n", "x\\\\\\\""};
  std::string s = "\"";
  const int n = static_cast<int>(rng() % 12);
  for (int i = 0; i < n; ++i) s += kParts[rng() % (sizeof kParts / sizeof kParts[0])];
  return s + "\"";
}

enum class Layout { kPerLine, kOneLine, kPretty };

// One trace of `events` events (ids 0..events-1) in `layout`; returns its text.
std::string RandomTrace(std::mt19937_64& rng, int64_t events, Layout layout) {
  const char* nl = layout == Layout::kOneLine ? "" : "\n";
  std::string t = std::string("{\"schemaVersion\": 1,") + nl + "\"traceEvents\": [" + nl;
  for (int64_t i = 0; i < events; ++i) {
    std::string e = "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": " + NastyString(rng) +
                    ", \"id\": " + std::to_string(i) + ", \"ts\": " + std::to_string(rng() % 100000) +
                    ".5, \"dur\": 3";
    if (rng() % 3 == 0) {
      // Nested args; pretty-printed they hold ",\n{" at a depth the fast cut does not see.
      const char* inl = layout == Layout::kPretty ? "\n" : "";
      e += std::string(", \"args\": {\"list\": [") + inl + "{\"k\": " + NastyString(rng) + "}," + inl +
           "{\"k\": [1, 2, {\"z\": " + NastyString(rng) + "}]}" + inl + "], \"pad\": \"" +
           std::string(rng() % 400, 'p') + "\"}";
    }
    e += "}";
    t += e;
    if (i + 1 < events) t += std::string(",") + nl;
  }
  t += std::string("]") + nl + ", \"traceName\": " + NastyString(rng) + "}" + nl;
  return t;
}

fs::path WriteTemp(const std::string& text, int n) {
  fs::path p = fs::temp_directory_path() /
               ("kineto_stream_test_" + std::to_string(getpid()) + "_" + std::to_string(n) + ".json");
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

}  // namespace

TEST_CASE("streaming visits every event once in order, threaded or not, in every layout",
          "[trace][kineto][stream]") {
  std::mt19937_64 rng(35);
  for (int c = 0; c < 40; ++c) {
    const Layout layout = static_cast<Layout>(c % 3);
    // Some traces span several 1 MiB batches (events of ~100-600 bytes).
    const int64_t events =
        c % 4 == 0 ? 4000 + static_cast<int64_t>(rng() % 16000) : static_cast<int64_t>(rng() % 300);
    const std::string text = RandomTrace(rng, events, layout);
    const fs::path path = WriteTemp(text, c);
    std::vector<int64_t> expected(static_cast<size_t>(events));
    for (int64_t i = 0; i < events; ++i) expected[static_cast<size_t>(i)] = i;
    for (bool pipelined : {false, true}) {
      INFO("case " << c << " layout " << static_cast<int>(layout) << " events " << events << " pipelined "
                   << pipelined);
      Recorder r;
      CHECK(detail::StreamKineto(path, "t.json", r, pipelined) == static_cast<int64_t>(text.size()));
      CHECK(r.ids == expected);
      CHECK(r.keys == std::vector<std::string>{"schemaVersion", "traceName"});
    }
    fs::remove(path);
  }
}

TEST_CASE("a trace cut short fails with the same message threaded or not", "[trace][kineto][stream]") {
  std::mt19937_64 rng(3535);
  for (int c = 0; c < 30; ++c) {
    const std::string text =
        RandomTrace(rng, 3000 + static_cast<int64_t>(rng() % 6000), static_cast<Layout>(c % 3));
    // Cut inside traceEvents (its ']' and the rest are gone): always an error.
    const size_t cut = 40 + rng() % (text.rfind(']') - 40);
    const fs::path path = WriteTemp(text.substr(0, cut), 100 + c);
    std::string messages[2];
    for (int pipelined = 0; pipelined < 2; ++pipelined) {
      Recorder r;
      try {
        detail::StreamKineto(path, "t.json", r, pipelined == 1);
        FAIL("case " << c << ": no error for a file cut at byte " << cut);
      } catch (const Error& e) {
        messages[pipelined] = e.what();
      }
    }
    INFO("cut at " << cut);
    CHECK(messages[0] == messages[1]);
    CHECK(messages[0].rfind("t.json: ", 0) == 0);
    fs::remove(path);
  }
}
