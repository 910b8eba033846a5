#pragma once
// The one home for reading JSON input files (scenario and program files): bounded reads of
// regular files only, syntax errors and duplicate keys reported as path:line:column.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::program::detail {

/// Largest input file read (64 MiB): a scenario or program file is a few KiB; the bound keeps a
/// mistaken argument (/dev/zero, a trace, a core dump) from being read into memory.
inline constexpr uint64_t kMaxInputFileBytes = uint64_t{64} << 20;

/// Reads a whole input file. Refuses with Error(kInvalidInput) naming `path` and `what` ("scenario
/// file") a missing or unreadable path, anything but a regular file (a directory, /dev/zero, a
/// FIFO) and a file over `max_bytes` (the size is checked before reading and while reading).
std::string ReadInputFile(const std::string& path, std::string_view what,
                          uint64_t max_bytes = kMaxInputFileBytes);

/// "line:column" (1-based) of byte `offset` in `text`.
std::string LineColumn(std::string_view text, size_t offset);

/// Parses JSON text. A syntax error, a number out of range or a key that appears twice in one
/// object (nlohmann would silently keep the last) throws Error(kInvalidInput):
/// "path:line:column: ..." where the duplicate's message names the JSON pointer of the object
/// and the line:column of the first occurrence.
/// `check_duplicates` false leaves that check to a later RefuseDuplicateKeys call (the scenario
/// parser reports unknown top-level fields first).
nlohmann::json ParseJsonInput(std::string_view text, const std::string& path, bool check_duplicates = true);

/// The duplicate-key check of ParseJsonInput on text that nlohmann has parsed: throws
/// Error(kInvalidInput) at the first key repeated within one object, naming both positions.
void RefuseDuplicateKeys(std::string_view text, const std::string& path);

// nlohmann::json keeps no source positions, so errors about a value re-scan the text along
// the value's path to report line:column where the user has to look.
class JsonLocator {
 public:
  explicit JsonLocator(std::string_view text) : text_(text) {}

  size_t Find(const std::vector<std::string>& path) {
    pos_ = 0;
    SkipSpace();
    for (const std::string& token : path) {
      if (pos_ >= text_.size()) break;
      if (text_[pos_] == '{') {
        if (!EnterMember(token)) break;
      } else if (text_[pos_] == '[') {
        if (!EnterElement(std::stoul(token))) break;
      } else {
        break;
      }
    }
    return pos_;
  }

 private:
  // Steps into the object or list at pos_ (closed by `close`) and stops at the first entry for
  // which at_entry(index) answers true (for an object it reads the key and the colon): true, or
  // false with pos_ back where it was.
  template <class AtEntry>
  bool EnterEntry(char close, AtEntry&& at_entry) {
    size_t start = pos_;
    ++pos_;
    for (size_t i = 0;; ++i) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] == close) break;
      if (at_entry(i)) return true;
      SkipValue();
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') ++pos_;
    }
    pos_ = start;
    return false;
  }

  bool EnterMember(const std::string& key) {
    return EnterEntry('}', [&](size_t) {
      std::string k = ReadString();
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ':') ++pos_;
      SkipSpace();
      return k == key;
    });
  }

  bool EnterElement(size_t index) {
    return EnterEntry(']', [&](size_t i) { return i == index; });
  }

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  std::string ReadString() {
    std::string out;
    if (pos_ >= text_.size() || text_[pos_] != '"') return out;
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\') ++pos_;
      if (pos_ < text_.size()) out += text_[pos_++];
    }
    ++pos_;
    return out;
  }

  void SkipValue() {
    if (pos_ >= text_.size()) return;
    char c = text_[pos_];
    if (c == '"') {
      ReadString();
      return;
    }
    if (c == '{' || c == '[') {
      int depth = 0;
      while (pos_ < text_.size()) {
        char d = text_[pos_];
        if (d == '"') {
          ReadString();
          continue;
        }
        if (d == '{' || d == '[') ++depth;
        if (d == '}' || d == ']') --depth;
        ++pos_;
        if (depth == 0) return;
      }
      return;
    }
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}' && text_[pos_] != ']') ++pos_;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace shardscope::program::detail
