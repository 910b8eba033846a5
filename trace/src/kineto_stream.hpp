#pragma once
// Private: streaming one Kineto Chrome-trace file (plain JSON or gzip) without a parse tree of the
// whole file. The top-level object is walked key by key; every top-level value except traceEvents
// is parsed on its own, and traceEvents is parsed in batches of about kKinetoBatchBytes, so memory
// is a few batches whatever the file's size (docs/kineto.md, "Reading").

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

namespace shardscope::trace::detail {

/// Uncompressed bytes parsed per batch of trace events.
inline constexpr size_t kKinetoBatchBytes = size_t{1} << 20;

/// Receives what StreamKineto reads, in file order. The elements are valid only during the call.
class KinetoVisitor {
 public:
  virtual ~KinetoVisitor() = default;
  /// A top-level key other than traceEvents with its value.
  virtual void TopLevel(std::string_view key, simdjson::dom::element value) = 0;
  /// One element of traceEvents.
  virtual void Event(simdjson::dom::element event) = 0;
};

/// The bytes of one file, inflated when it starts with the gzip magic (several gzip members are
/// read one after another, like gzip -d does).
class KinetoInput {
 public:
  /// Opens `path`; `name` prefixes every message. Throws Error(kInvalidInput) when it cannot.
  KinetoInput(const std::filesystem::path& path, std::string name);
  ~KinetoInput();
  KinetoInput(const KinetoInput&) = delete;
  KinetoInput& operator=(const KinetoInput&) = delete;

  /// Writes up to `max` bytes to `dst`; returns how many (0 only at the end). Throws
  /// Error(kInvalidInput) naming the file and the compressed byte offset for corrupt or truncated gzip.
  size_t Read(char* dst, size_t max);
  bool gzip() const { return gzip_; }

 private:
  std::string name_;
  std::FILE* file_ = nullptr;
  bool gzip_ = false;
  bool member_done_ = false;
  void* zs_ = nullptr;  // z_stream
  std::vector<unsigned char> in_;
  int64_t in_offset_ = 0;  // compressed bytes consumed before in_'s current contents
};

/// Streams the file at `path` into `visitor`. Returns the uncompressed byte count. Throws
/// Error(kInvalidInput) "NAME: ... at byte N" for JSON that is malformed or ends early (N counts
/// uncompressed bytes), for a top level that is not an object, and for one value larger than
/// kMaxKinetoValueBytes. `pipelined`: reading and parsing run on a second thread while the calling
/// thread visits the batches parsed before (the visitor is still called from the calling thread
/// only, in file order); whatever either side throws is rethrown here once both have stopped.
int64_t StreamKineto(const std::filesystem::path& path, const std::string& name, KinetoVisitor& visitor,
                     bool pipelined = false);

}  // namespace shardscope::trace::detail
