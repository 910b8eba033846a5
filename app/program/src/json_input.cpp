#include "json_input.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "shardscope/error.hpp"
#include "shardscope/printable.hpp"

namespace shardscope::program::detail {
namespace {

using nlohmann::json;

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

uint32_t Hex4(std::string_view text, size_t at) {
  uint32_t v = 0;
  for (size_t k = 0; k < 4 && at + k < text.size(); ++k) {
    char c = text[at + k];
    v = v * 16 + static_cast<uint32_t>(c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0');
  }
  return v;
}

// Decodes the string literal starting at text[pos] == '"' (the text is valid JSON: nlohmann has
// parsed it) and leaves pos after the closing quote. Keys are compared decoded, so "a" and
// "\u0061" are the same key, as they are to nlohmann.
std::string ReadString(std::string_view text, size_t& pos) {
  std::string out;
  ++pos;
  while (pos < text.size() && text[pos] != '"') {
    if (text[pos] != '\\') {
      out += text[pos++];
      continue;
    }
    char e = pos + 1 < text.size() ? text[pos + 1] : '\0';
    pos += 2;
    switch (e) {
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp = Hex4(text, pos);
        pos += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && pos + 1 < text.size() && text[pos] == '\\' &&
            text[pos + 1] == 'u') {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (Hex4(text, pos + 2) - 0xDC00);
          pos += 6;
        }
        AppendUtf8(out, cp);
        break;
      }
      default:
        out += e;
        break;  // \" \\ \/
    }
  }
  ++pos;
  return out;
}

// RFC 6901 escaping of one reference token.
std::string PointerToken(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

// Walks valid JSON text once; keys are decoded before comparing.
void RefuseDuplicateKeys(std::string_view text, const std::string& path) {
  struct Frame {
    bool object = false;
    bool expect_key = false;
    std::string token;  // the member key or element index being read (for the pointer)
    int64_t index = 0;
    std::map<std::string, size_t> keys;  // key -> offset of its first occurrence
  };
  std::vector<Frame> stack;
  size_t pos = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == '"') {
      const size_t start = pos;
      std::string s = ReadString(text, pos);
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        Frame& f = stack.back();
        f.expect_key = false;
        auto [it, inserted] = f.keys.emplace(s, start);
        if (!inserted) {
          std::string pointer;
          for (size_t k = 0; k + 1 < stack.size(); ++k) pointer += "/" + stack[k].token;
          throw InvalidInput(path + ":" + LineColumn(text, start) + ": " +
                             Printable(pointer + "/" + PointerToken(s)) + ": duplicate key '" + Printable(s) +
                             "' (first at " + LineColumn(text, it->second) +
                             "); a JSON object's keys must be unique");
        }
        f.token = PointerToken(s);
      }
      continue;
    }
    if (c == '{' || c == '[') {
      Frame f;
      f.object = c == '{';
      f.expect_key = f.object;
      if (!f.object) f.token = "0";
      stack.push_back(std::move(f));
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
    } else if (c == ',' && !stack.empty()) {
      Frame& f = stack.back();
      if (f.object) {
        f.expect_key = true;
      } else {
        f.token = std::to_string(++f.index);
      }
    }
    ++pos;
  }
}

std::string LineColumn(std::string_view text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

std::string ReadInputFile(const std::string& path, std::string_view what, uint64_t max_bytes) {
  const std::string where = path + ": ";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw InvalidInput(where + "cannot open " + std::string(what) + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw InvalidInput(where + "is a directory, not a " + std::string(what));
  if (!S_ISREG(st.st_mode)) {
    throw InvalidInput(where + "is not a regular file (a device, FIFO or socket); a " + std::string(what) +
                       " must be a regular file");
  }
  const std::string limit = " (limit " + std::to_string(max_bytes >> 20) + " MiB)";
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    throw InvalidInput(where + std::string(what) + " is " + std::to_string(st.st_size) +
                       " bytes, over the limit" + limit);
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw InvalidInput(where + "cannot open " + std::string(what) + ": " + std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  // The size can change between stat and read (a growing file): the bound holds while reading too.
  while ((n = std::fread(buf, 1, sizeof(buf), file.get())) > 0) {
    if (text.size() + n > max_bytes)
      throw InvalidInput(where + std::string(what) + " grew past the limit" + limit);
    text.append(buf, n);
  }
  if (std::ferror(file.get())) {
    throw InvalidInput(where + "cannot read " + std::string(what) + ": " + std::strerror(errno));
  }
  return text;
}

json ParseJsonInput(std::string_view text, const std::string& path, bool check_duplicates) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    size_t cut = what.find("parse error at ");
    size_t colon = what.find(": ", cut == std::string::npos ? 0 : cut);
    std::string reason = colon == std::string::npos ? what : what.substr(colon + 2);
    size_t byte = e.byte > 0 ? e.byte - 1 : 0;
    throw InvalidInput(path + ":" + LineColumn(text, byte) + ": invalid JSON: " + reason);
  } catch (const json::exception& e) {  // out_of_range: a number beyond double, e.g. 1e999
    std::string what = e.what();
    size_t close = what.find("] ");
    throw InvalidInput(path +
                       ": invalid JSON: " + (close == std::string::npos ? what : what.substr(close + 2)));
  }
  if (check_duplicates) RefuseDuplicateKeys(text, path);
  return root;
}

}  // namespace shardscope::program::detail
