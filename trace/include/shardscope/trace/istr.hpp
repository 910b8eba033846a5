#pragma once
// IStr: an interned string, 4 bytes. A trace repeats the same few strings on every event and every
// rank (kinds, dtypes, placements, planner names, plan notations, tensor names); an IStr is the
// number of the one copy of its text in a process-wide pool, so equal strings are stored once and
// compare by number (4 bytes instead of a pointer's 8: two of them fill one 8-byte slot of an
// event, docs/performance.md "Resident model"). Value semantics like std::string (constructible from
// std::string, std::string_view and const char*; converts to const std::string& and std::string_view;
// compares and orders by text), so code written against a std::string field keeps working. The pool never
// shrinks: its strings live until the process ends (most traces have few distinct strings; an imported
// DebugMode log has one rule text per op, shared by its ranks; a tool that loads many traces keeps their
// distinct strings). Thread-safe.

#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace shardscope::trace {

namespace istr_detail {
/// The pool's directory: chunk c holds the texts of ids [c << kChunkBits, (c + 1) << kChunkBits).
/// A chunk, once published, never moves or changes its filled slots, so reads take no lock.
inline constexpr uint32_t kChunkBits = 12;
inline constexpr size_t kChunks = size_t{1} << (32 - kChunkBits);
extern std::atomic<const std::string* const*> chunks[kChunks];
}  // namespace istr_detail

class IStr {
 public:
  IStr() = default;
  IStr(std::string_view s) : id_(Intern(s)) {}               // NOLINT(google-explicit-constructor)
  IStr(const std::string& s) : id_(Intern(s)) {}             // NOLINT(google-explicit-constructor)
  IStr(const char* s) : id_(Intern(std::string_view(s))) {}  // NOLINT(google-explicit-constructor)

  /// The text ("" for an empty string).
  const std::string& str() const { return id_ != 0 ? *Text(id_) : Empty(); }
  std::string_view view() const { return str(); }
  operator const std::string&() const { return str(); }  // NOLINT(google-explicit-constructor)
  operator std::string_view() const { return str(); }    // NOLINT(google-explicit-constructor)

  bool empty() const { return id_ == 0; }
  size_t size() const { return str().size(); }
  size_t length() const { return str().size(); }
  const char* c_str() const { return str().c_str(); }
  const char* data() const { return str().data(); }
  char operator[](size_t i) const { return str()[i]; }
  char front() const { return str().front(); }
  char back() const { return str().back(); }
  std::string::const_iterator begin() const { return str().begin(); }
  std::string::const_iterator end() const { return str().end(); }
  std::string substr(size_t pos, size_t n = std::string::npos) const { return str().substr(pos, n); }
  size_t find(std::string_view s, size_t pos = 0) const { return str().find(s, pos); }
  size_t find(char c, size_t pos = 0) const { return str().find(c, pos); }
  size_t rfind(std::string_view s, size_t pos = std::string::npos) const { return str().rfind(s, pos); }
  size_t rfind(char c, size_t pos = std::string::npos) const { return str().rfind(c, pos); }
  bool starts_with(std::string_view s) const { return view().starts_with(s); }
  bool ends_with(std::string_view s) const { return view().ends_with(s); }
  int compare(std::string_view s) const { return view().compare(s); }
  void clear() { id_ = 0; }

  /// Equal texts are one pool entry, so equality is id equality.
  friend bool operator==(const IStr& a, const IStr& b) { return a.id_ == b.id_; }
  friend bool operator==(const IStr& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const IStr& a, const std::string& b) { return a.view() == b; }
  friend bool operator==(const IStr& a, const char* b) { return a.view() == b; }
  friend std::strong_ordering operator<=>(const IStr& a, const IStr& b) { return a.view() <=> b.view(); }
  friend std::strong_ordering operator<=>(const IStr& a, std::string_view b) { return a.view() <=> b; }
  friend std::strong_ordering operator<=>(const IStr& a, const std::string& b) {
    return a.view() <=> std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const IStr& a, const char* b) {
    return a.view() <=> std::string_view(b);
  }

  friend std::string operator+(const IStr& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const std::string& a, const IStr& b) { return a + b.str(); }
  friend std::string operator+(const IStr& a, const char* b) { return a.str() + b; }
  friend std::string operator+(const char* a, const IStr& b) { return a + b.str(); }
  friend std::string operator+(const IStr& a, char b) { return a.str() + b; }
  friend std::string operator+(char a, const IStr& b) { return a + b.str(); }
  friend std::string operator+(const IStr& a, const IStr& b) { return a.str() + b.str(); }
  friend std::string operator+(std::string&& a, const IStr& b) { return std::move(a) + b.str(); }
  friend std::ostream& operator<<(std::ostream& out, const IStr& s);

  /// Number of distinct strings in the pool and the bytes they hold (for `bench load`).
  static size_t PoolSize();
  static size_t PoolBytes();

 private:
  static uint32_t Intern(std::string_view s);
  static const std::string* Text(uint32_t id) {
    constexpr uint32_t mask = (uint32_t{1} << istr_detail::kChunkBits) - 1;
    return istr_detail::chunks[id >> istr_detail::kChunkBits].load(std::memory_order_acquire)[id & mask];
  }
  static const std::string& Empty() {
    static const std::string empty;
    return empty;
  }
  uint32_t id_ = 0;  // 0 for ""; else the number of the pool's copy
};

/// nlohmann::json conversions, found by argument-dependent lookup (templates, so that this header
/// does not include nlohmann).
template <typename Json>
void to_json(Json& j, const IStr& s) {
  j = s.str();
}
template <typename Json>
void from_json(const Json& j, IStr& s) {
  s = IStr(j.template get<std::string>());
}

}  // namespace shardscope::trace

template <>
struct std::hash<shardscope::trace::IStr> {
  size_t operator()(const shardscope::trace::IStr& s) const noexcept {
    return std::hash<std::string_view>()(s.view());
  }
};
