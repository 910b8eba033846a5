#pragma once
// Untrusted text (tensor names, hosts, placements read from files) made safe for a terminal:
// control characters are escaped so a file cannot forge output lines or send escape sequences.

#include <cstdio>
#include <string>
#include <string_view>

namespace shardscope {

/// Appends Printable(text, keep_newlines) (below) to `out` without a temporary string.
inline void AppendPrintable(std::string& out, std::string_view text, bool keep_newlines = false) {
  char code[8];
  size_t plain = 0;  // start of the run of bytes not yet appended, all kept as they are
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != 0x7f && c != 0xc2) continue;
    if ((c < 0x20 && !(keep_newlines && c == '\n')) || c == 0x7f) {
      out.append(text.data() + plain, i - plain);
      std::snprintf(code, sizeof(code), "\\x%02x", c);
      out += code;
      plain = i + 1;
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out.append(text.data() + plain, i - plain);
      std::snprintf(code, sizeof(code), "\\u%04x", static_cast<unsigned char>(text[i + 1]));
      out += code;
      ++i;
      plain = i + 1;
    }
  }
  out.append(text.data() + plain, text.size() - plain);
}

/// `text` with every C0 control byte (including newline and tab), DEL and every UTF-8-encoded C1
/// control (U+0080..U+009F, which some terminals obey like ESC [) written as \xNN / \u00NN;
/// everything else, other UTF-8 included, unchanged. Never throws except std::bad_alloc.
inline std::string Printable(std::string_view text, bool keep_newlines = false) {
  std::string out;
  out.reserve(text.size());
  AppendPrintable(out, text, keep_newlines);
  return out;
}

}  // namespace shardscope
