#pragma once
// The data-only pickle machine in compact form: a parsed pickle is a root value plus the items of
// its containers in one arena. A value is 16 bytes; a string or bytes value is a view (offset,
// length) into the pickle itself, so parsing copies no text. The Flight Recorder reader walks the
// few fields it needs straight from here into its records; ReadPickle turns it into JSON.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::trace::detail {

enum class PKind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kBytes, kList, kTuple, kDict, kMark };

/// One pickle value. Str/Bytes: `u` is the offset of the text in the pickle, `len` its length.
/// List/Tuple/Dict: `u` is the container's index in PickleDoc. Int: `i`; Float: `f`; Bool: `u`.
struct PValue {
  PKind kind = PKind::kNone;
  uint32_t len = 0;
  union {
    int64_t i;
    double f;
    uint64_t u = 0;
  };
};
static_assert(sizeof(PValue) == 16);

/// A parsed pickle. Holds a view of the input, which must outlive it. Containers are filled in
/// batches (APPENDS, SETITEMS), each batch one run of consecutive arena slots; a dict's items
/// alternate key, value.
class PickleDoc {
 public:
  /// Runs the pickle in `data` (limits and refusals as documented at ReadPickle); `where` prefixes
  /// error messages. Throws Error(kInvalidInput).
  PickleDoc(std::string_view data, std::string where);
  /// An empty document, for Parse.
  PickleDoc() = default;
  /// Parses `data` into this document, reusing its buffers (what an earlier parse held is gone).
  void Parse(std::string_view data, std::string where);

  const PValue& root() const { return root_; }
  std::string_view data() const { return data_; }
  const std::string& where() const { return where_; }
  std::string_view Text(const PValue& v) const { return data_.substr(static_cast<size_t>(v.u), v.len); }
  /// Number of items of a list or tuple (keys plus values of a dict).
  uint32_t Count(const PValue& v) const { return containers_[static_cast<size_t>(v.u)].count; }
  /// Calls f(item) for every item of a list, tuple or dict (dicts: key, value, key, value, ...).
  template <typename F>
  void ForEach(const PValue& v, F&& f) const {
    for (uint32_t r = containers_[static_cast<size_t>(v.u)].head; r != kNoRun; r = runs_[r].next) {
      const Run& run = runs_[r];
      for (uint32_t k = 0; k < run.count; ++k) f(items_[run.start + k]);
    }
  }
  /// Calls f(key, value) for every pair of a dict, in insertion order.
  template <typename F>
  void ForEachPair(const PValue& v, F&& f) const {
    const PValue* key = nullptr;
    ForEach(v, [&](const PValue& x) {
      if (key == nullptr) {
        key = &x;
      } else {
        f(*key, x);
        key = nullptr;
      }
    });
  }

  /// Run and arena sizes, for tests and the benchmark.
  size_t Values() const { return values_; }

 private:
  static constexpr uint32_t kNoRun = UINT32_MAX;
  struct Container {
    uint32_t head = kNoRun, tail = kNoRun, count = 0;
  };
  struct Run {
    uint32_t start = 0, count = 0, next = kNoRun;
  };
  friend class PickleMachine;

  std::string_view data_;
  std::string where_;
  PValue root_;
  std::vector<PValue> items_;
  std::vector<Container> containers_;
  std::vector<Run> runs_;
  size_t values_ = 0;
  // The machine's working space, kept from parse to parse so that reading many files allocates
  // (and faults in) these buffers once.
  std::vector<PValue> stack_;
  std::vector<size_t> marks_;  // stack sizes at each MARK
  std::vector<PValue> memo_;   // kind kMark: never stored
};

/// Text of a pickle string with invalid UTF-8 sequences replaced by U+FFFD.
std::string ValidUtf8(std::string_view s);
/// True when `s` is valid UTF-8 (then ValidUtf8(s) == s).
bool IsValidUtf8(std::string_view s);

}  // namespace shardscope::trace::detail
