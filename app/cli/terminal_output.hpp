#pragma once
// Everything the CLI prints passes through TerminalSafeBuf: text from files (tensor names,
// hosts, op arguments) may hold control characters that would drive the user's terminal.

#include <algorithm>
#include <streambuf>
#include <string>

#include "shardscope/printable.hpp"

namespace shardscope::app {

/// A streambuf that forwards to `target`, escaping control characters (shardscope::Printable,
/// newlines kept). Installed on std::cout and std::cerr by main; not thread-safe (like the
/// streams). A UTF-8 C1 control split across two writes is escaped too (one byte is held back).
class TerminalSafeBuf : public std::streambuf {
 public:
  explicit TerminalSafeBuf(std::streambuf* target) : target_(target) {}
  ~TerminalSafeBuf() override { sync(); }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    // Block by block, so that a large write (show's text) is not copied whole; each block is
    // escaped like a write of its own (its last byte held back when it may start a C1 control).
    constexpr std::streamsize kBlock = std::streamsize{1} << 16;
    for (std::streamsize done = 0; done < n;) {
      const std::streamsize len = std::min(kBlock, n - done);
      text_.assign(pending_);
      text_.append(s + done, static_cast<size_t>(len));
      pending_.clear();
      if (!text_.empty() && static_cast<unsigned char>(text_.back()) == 0xc2) {  // maybe the start of a C1
        pending_ = text_.back();
        text_.pop_back();
      }
      safe_.clear();
      AppendPrintable(safe_, text_, /*keep_newlines=*/true);
      if (target_->sputn(safe_.data(), static_cast<std::streamsize>(safe_.size())) !=
          static_cast<std::streamsize>(safe_.size()))
        return done;
      done += len;
    }
    return n;
  }
  int sync() override {
    if (!pending_.empty()) {
      target_->sputn(pending_.data(), static_cast<std::streamsize>(pending_.size()));
      pending_.clear();
    }
    return target_->pubsync();
  }

 private:
  std::streambuf* target_;
  std::string pending_;
  std::string text_, safe_;  // a block and its escaped text (kept to reuse their memory)
};

}  // namespace shardscope::app
