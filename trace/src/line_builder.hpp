#pragma once
// Private: builds one JSON line field by field, without a JSON tree, for the writer's encoders
// (fast_encode.cpp for v1, encode_v2.cpp for v2). It writes strings without escaping, so it
// declines (Finish() returns false and restores `out`) a string holding anything but printable
// ASCII without quotes or backslashes, and a number that is not finite: the writer then encodes
// that event through codec_encode.cpp, which escapes and replaces.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::trace::detail {

/// Appends [from, to) to `out` as one copy (std::string's iterator-pair append goes through its
/// general replace()).
inline void Append(std::string& out, const char* from, const char* to) {
  out.append(from, static_cast<size_t>(to - from));
}

/// A finite double as the fast path writes it (shortest round-trip digits, nlohmann's layout).
void AppendDouble(double value, std::string& out);

/// An integer in decimal.
inline void AppendInt(int64_t value, std::string& out) {
  char buf[24];
  Append(out, buf, std::to_chars(buf, buf + sizeof buf, value).ptr);
}

// Builds one line; any field that the fast path cannot write makes the whole line decline.
class Line {
 public:
  explicit Line(std::string& out) : out_(out), start_(out.size()) { out_ += '{'; }

  // Each field goes in with one append where it can: key and value are formatted on the stack.
  // The small ones are inlined into each caller, whose field name is a constant there.
  [[gnu::always_inline]] void Key(std::string_view name) {
    char buf[kMaxKey + 4];
    if (name.size() > kMaxKey) return LongKey(name);
    Append(out_, buf, KeyInto(buf, name));
  }
  [[gnu::always_inline]] void Str(std::string_view name, std::string_view s) {
    char buf[256];
    if (name.size() > kMaxKey || s.size() > sizeof buf - kMaxKey - 6) {
      Key(name);
      return Quoted(s);
    }
    Check(s);
    char* p = KeyInto(buf, name);
    *p++ = '"';
    std::memcpy(p, s.data(), s.size());
    p += s.size();
    *p++ = '"';
    Append(out_, buf, p);
  }
  [[gnu::always_inline]] void Int(std::string_view name, int64_t v) {
    char buf[kMaxKey + 32];
    if (name.size() > kMaxKey) {
      Key(name);
      return Integer(v);
    }
    char* p = KeyInto(buf, name);
    Append(out_, buf, std::to_chars(p, p + 24, v).ptr);
  }
  void Uint(std::string_view name, uint64_t v) {
    Key(name);
    char buf[24];
    Append(out_, buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  }
  void Bool(std::string_view name, bool v) {
    Key(name);
    out_ += v ? "true" : "false";
  }
  void Num(std::string_view name, double v) {
    Key(name);
    Double(v);
  }
  void Ints(std::string_view name, const std::vector<int64_t>& v) {
    // Short lists (shapes, offsets, small groups) are formatted on the stack and appended once.
    char buf[256];
    char* p = buf;
    if (name.size() > kMaxKey)
      Key(name);
    else
      p = KeyInto(buf, name);
    *p++ = '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (p + 24 > buf + sizeof buf) {
        Append(out_, buf, p);
        p = buf;
      }
      if (i) *p++ = ',';
      p = std::to_chars(p, p + 21, v[i]).ptr;
    }
    *p++ = ']';
    Append(out_, buf, p);
  }
  void Strs(std::string_view name, const std::vector<std::string>& v) {
    Key(name);
    out_ += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out_ += ',';
      Quoted(v[i]);
    }
    out_ += ']';
  }
  void StrLists(std::string_view name, const std::vector<std::vector<std::string>>& v) {
    NestedLists(name, v, [this](const auto& s) { Quoted(s); });
  }
  /// "name":[[1,2],[3]]: a list of integer lists (Flight Recorder shapes).
  template <typename Lists>
  void IntLists(std::string_view name, const Lists& v) {
    NestedLists(name, v, [this](const auto& x) { Integer(x); });
  }
  /// "name":[[a,b],[c]]: a list of lists, each element written by put(element).
  template <typename Lists, typename Put>
  void NestedLists(std::string_view name, const Lists& v, Put put) {
    Key(name);
    out_ += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out_ += ',';
      out_ += '[';
      for (size_t j = 0; j < v[i].size(); ++j) {
        if (j) out_ += ',';
        put(v[i][j]);
      }
      out_ += ']';
    }
    out_ += ']';
  }
  /// "name":{ ... one object as a field's value; EndObject closes it.
  void OpenObject(std::string_view name) {
    Key(name);
    out_ += '{';
    first_ = true;
  }
  // Starts an array of objects / one object inside it; End* close them.
  void BeginArray(std::string_view name) {
    Key(name);
    out_ += '[';
    first_ = true;
  }
  void BeginObject() {
    if (!first_) out_ += ',';
    out_ += '{';
    first_ = true;
  }
  void EndObject() {
    out_ += '}';
    first_ = false;
  }
  void EndArray() {
    out_ += ']';
    first_ = false;
  }
  /// "name":[{...},{...}]: an object per item of `list`, whose fields `write(item)` adds.
  template <typename List, typename Write>
  void Objects(std::string_view name, const List& list, Write write) {
    BeginArray(name);
    for (const auto& item : list) {
      BeginObject();
      write(item);
      EndObject();
    }
    EndArray();
  }

  // Makes the line go through codec_encode.cpp instead (e.g. for a rare optional payload).
  void Decline() { ok_ = false; }
  bool ok() const { return ok_; }
  // The text written so far, and going back to an earlier size of it (for a field list that is
  // replaced by a shorter one once it is known); `first` says whether a ',' must precede the next key.
  std::string_view Since(size_t at) const { return std::string_view(out_).substr(at); }
  size_t size() const { return out_.size(); }
  void Truncate(size_t at, bool first) {
    out_.resize(at);
    first_ = first;
  }

  // Closes the line; on a declined field, restores `out` and returns false.
  bool Finish() {
    if (!ok_) {
      out_.resize(start_);
      return false;
    }
    out_ += '}';
    return true;
  }

 private:
  void Integer(int64_t v) { AppendInt(v, out_); }
  void Double(double v) {
    if (!std::isfinite(v)) {
      ok_ = false;
      return;
    }
    AppendDouble(v, out_);
  }
  static constexpr size_t kMaxKey = 48;  // longer names (none today) take LongKey
  // Writes `,"name":` (the comma unless first) at p; returns the end.
  [[gnu::always_inline]] char* KeyInto(char* p, std::string_view name) {
    if (!first_) *p++ = ',';
    first_ = false;
    *p++ = '"';
    std::memcpy(p, name.data(), name.size());
    p += name.size();
    *p++ = '"';
    *p++ = ':';
    return p;
  }
  // Declines the line unless `s` is printable ASCII without quotes or backslashes.
  void Check(std::string_view s) {
    for (char c : s) {
      auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') ok_ = false;
    }
  }
  void Quoted(std::string_view s) {
    Check(s);
    const size_t at = out_.size();
    out_.resize(at + s.size() + 2);
    char* p = out_.data() + at;
    *p = '"';
    std::memcpy(p + 1, s.data(), s.size());
    p[s.size() + 1] = '"';
  }
  void LongKey(std::string_view name) {
    if (!first_) out_ += ',';
    first_ = false;
    out_ += '"';
    out_ += name;
    out_ += "\":";
  }

  std::string& out_;
  size_t start_;
  bool first_ = true;
  bool ok_ = true;
};

}  // namespace shardscope::trace::detail
