#include "shardscope/trace/istr.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <unordered_map>

namespace shardscope::trace {

namespace istr_detail {
std::atomic<const std::string* const*> chunks[kChunks];
}  // namespace istr_detail

namespace {

struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

// The pool: shards of node-based maps from text to id (a node never moves, so its string's address
// is stable), each behind its own mutex, and never destroyed (an IStr may outlive every static).
// Ids are handed out under one more mutex, which also fills the directory (istr_detail::chunks).
class StringPool {
 public:
  uint32_t Find(std::string_view s, size_t hash) {
    Shard& shard = shards_[hash % kShards];
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.ids.find(s);
    if (it != shard.ids.end()) return it->second;
    it = shard.ids.emplace(std::string(s), 0).first;
    it->second = NewId(&it->first);
    bytes_.fetch_add(s.size(), std::memory_order_relaxed);
    return it->second;
  }
  size_t count() const { return count_.load(std::memory_order_relaxed); }
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kShards = 16;
  static constexpr uint32_t kChunk = uint32_t{1} << istr_detail::kChunkBits;
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> ids;
  };
  // The next id (0 is ""), its text's slot filled before the id is returned.
  uint32_t NewId(const std::string* text) {
    std::lock_guard<std::mutex> lock(ids_mutex_);
    if (next_ == 0) throw std::length_error("interned strings: more than 2^32 - 1 distinct strings");
    const uint32_t id = next_++;
    const size_t c = id >> istr_detail::kChunkBits;
    if (id % kChunk == 0 || chunk_ == nullptr) {
      chunk_ = new const std::string*[kChunk]();  // NOLINT: immortal on purpose
      istr_detail::chunks[c].store(chunk_, std::memory_order_release);
    }
    chunk_[id % kChunk] = text;
    count_.fetch_add(1, std::memory_order_relaxed);
    return id;
  }
  std::array<Shard, kShards> shards_;
  std::mutex ids_mutex_;
  uint32_t next_ = 1;
  const std::string** chunk_ = nullptr;  // the chunk of next_ - 1
  std::atomic<size_t> count_{0};
  std::atomic<size_t> bytes_{0};
};

StringPool& Pool() {
  static StringPool* pool = new StringPool();  // NOLINT: immortal on purpose
  return *pool;
}

}  // namespace

uint32_t IStr::Intern(std::string_view s) {
  if (s.empty()) return 0;
  const size_t hash = std::hash<std::string_view>()(s);
  // A small per-thread cache in front of the pool: a reader interns the same few strings over and
  // over, and a hit takes no lock.
  constexpr size_t kCache = 256;
  thread_local std::array<uint32_t, kCache> cache{};
  uint32_t& slot = cache[(hash ^ (hash >> 17)) % kCache];
  if (slot != 0 && *Text(slot) == s) return slot;
  slot = Pool().Find(s, hash);
  return slot;
}

size_t IStr::PoolSize() { return Pool().count(); }
size_t IStr::PoolBytes() { return Pool().bytes(); }

std::ostream& operator<<(std::ostream& out, const IStr& s) { return out << s.str(); }

}  // namespace shardscope::trace
