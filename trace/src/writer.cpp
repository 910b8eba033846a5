#include "shardscope/trace/writer.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

#include "encode_v2.hpp"
#include "fast_encode.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/codec.hpp"

namespace shardscope::trace {

int64_t NowNs() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string RankFileName(int64_t rank) { return "rank-" + std::to_string(rank) + ".jsonl"; }

int64_t RankOfFileName(const std::string& name) {
  constexpr std::string_view kPrefix = "rank-", kSuffix = ".jsonl";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return -1;
  }
  std::string digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

std::vector<std::filesystem::path> RankFilesIn(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  const auto status = std::filesystem::status(dir, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return out;
  if (status.type() != std::filesystem::file_type::directory) {
    throw InvalidInput("trace: '" + dir.string() + "' exists and is not a directory");
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (RankOfFileName(entry.path().filename().string()) >= 0) out.push_back(entry.path());
  }
  if (ec) throw InvalidInput("trace: cannot list '" + dir.string() + "': " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

Writer::Writer(const std::filesystem::path& dir, Header header,
               std::function<void(const std::string&)> on_write_error)
    : header_(std::move(header)), on_write_error_(std::move(on_write_error)) {
  header_.format = std::string(kFormatName);
  // The header's version picks the format: v1 for interchange with older readers, else this
  // library's (v2).
  if (header_.version != 1) header_.version = kCurrentVersion;
  if (header_.version >= 2) v2_ = std::make_unique<detail::EncoderV2>(header_.rank, header_.mesh_shape);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InvalidInput("trace: cannot create directory '" + dir.string() + "': " + ec.message());
  path_ = dir / RankFileName(header_.rank);
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) {
    throw InvalidInput("trace: cannot open '" + path_.string() + "' for writing: " + std::strerror(errno));
  }
  Append(ToLine(ToJson(header_)), /*flush=*/true);
}

Writer::~Writer() {
  try {
    Close();
  } catch (const Error&) {
    // A destructor must not throw; ok() already reports the failed write.
  }
}

// The common events are written straight into the buffer (encode_v2.cpp, or fast_encode.cpp for
// v1); one the fast path declines (a string to escape, a non-finite number) goes through the JSON
// tree of codec.cpp.
template <typename E>
void Writer::EmitFast(const E& event, bool flush) {
  if (file_ == nullptr) return;
  if (v2_)
    v2_->Encode(event, buffer_);
  else if (!detail::FastEncode(event, buffer_))
    buffer_ += ToLine(ToJson(Event(event)));
  buffer_ += '\n';
  if (flush || buffer_.size() >= kFlushBytes) Flush();
}

void Writer::Emit(const RedistributeBegin& event) { EmitFast(event, false); }
void Writer::Emit(const RedistributeEnd& event) { EmitFast(event, true); }
void Writer::Emit(const StepBegin& event) { EmitFast(event, false); }
void Writer::Emit(const StepEnd& event) { EmitFast(event, false); }
void Writer::Emit(const Collective& event) { EmitFast(event, false); }
void Writer::Emit(const Op& event) { EmitFast(event, true); }
void Writer::Emit(const Event& event) {
  std::visit([this](const auto& e) { Emit(e); }, event);
}

void Writer::Append(const std::string& line, bool flush) {
  if (file_ == nullptr || !ok_) return;  // after a failed write nothing more is buffered
  buffer_ += line;
  buffer_ += '\n';
  if (flush || buffer_.size() >= kFlushBytes) Flush();
}

void Writer::Flush() {
  if (file_ == nullptr || !ok_) return;
  // Whole lines only reach the file, so a kill leaves at most the last line torn.
  size_t written = buffer_.empty() ? 0 : std::fwrite(buffer_.data(), 1, buffer_.size(), file_);
  bool failed = written != buffer_.size() || std::fflush(file_) != 0;
  buffer_.clear();
  if (failed) Fail("trace: write to '" + path_.string() + "' failed: " + std::strerror(errno));
}

void Writer::Fail(const std::string& message) {
  ok_ = false;
  if (!on_write_error_) throw InvalidInput(message);
  on_write_error_(message);
}

void Writer::Close() {
  if (file_ == nullptr) return;
  std::FILE* file = file_;
  try {
    Flush();
  } catch (const Error&) {
    std::fclose(file);
    file_ = nullptr;
    throw;
  }
  file_ = nullptr;
  if (std::fclose(file) != 0 && ok_)
    Fail("trace: closing '" + path_.string() + "' failed: " + std::strerror(errno));
}

}  // namespace shardscope::trace
