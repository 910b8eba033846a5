#include "shardscope/trace/istr.hpp"

#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardscope::trace {

namespace istr_detail {
std::atomic<const std::string* const*> chunks[kChunks];
}  // namespace istr_detail

namespace {

// The pool: shards of open-addressing tables from a text's hash to its id, each behind its own
// mutex; the texts live in a deque per shard (an element never moves, so the directory's pointer
// to it stays valid) and are never destroyed (an IStr may outlive every static). Slots keep the
// full hash, so a probe compares texts only when the hashes agree and growing rehashes no text:
// an imported trace interns hundreds of thousands of distinct strings (a DebugMode rule per op),
// and a node-based map spent more on rehashing and comparing them than the reader on the rest.
// Ids are handed out under one more mutex, which also fills the directory (istr_detail::chunks).
const std::string* TextOf(uint32_t id) {
  constexpr uint32_t mask = (uint32_t{1} << istr_detail::kChunkBits) - 1;
  return istr_detail::chunks[id >> istr_detail::kChunkBits].load(std::memory_order_acquire)[id & mask];
}

class StringPool {
 public:
  uint32_t Find(std::string_view s, size_t hash) {
    Shard& shard = shards_[hash % kShards];
    std::lock_guard<std::mutex> lock(shard.mutex);
    if (shard.slots.empty()) shard.slots.resize(kFirstSlots);
    size_t mask = shard.slots.size() - 1;
    for (size_t i = (hash / kShards) & mask;; i = (i + 1) & mask) {
      const Slot& slot = shard.slots[i];
      if (slot.id == 0) break;
      if (slot.hash == hash && *TextOf(slot.id) == s) return slot.id;
    }
    shard.texts.emplace_back(s);
    const uint32_t id = NewId(&shard.texts.back());
    if (2 * (shard.used + 1) > shard.slots.size()) Grow(shard);
    mask = shard.slots.size() - 1;
    size_t i = (hash / kShards) & mask;
    while (shard.slots[i].id != 0) i = (i + 1) & mask;
    shard.slots[i] = {hash, id};
    ++shard.used;
    bytes_.fetch_add(s.size(), std::memory_order_relaxed);
    return id;
  }
  size_t count() const { return count_.load(std::memory_order_relaxed); }
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kShards = 16;
  static constexpr size_t kFirstSlots = 256;  // a power of two
  static constexpr uint32_t kChunk = uint32_t{1} << istr_detail::kChunkBits;
  struct Slot {
    size_t hash = 0;
    uint32_t id = 0;  // 0: empty
  };
  struct Shard {
    std::mutex mutex;
    std::vector<Slot> slots;  // a power of two, at most half full
    size_t used = 0;
    std::deque<std::string> texts;
  };
  static void Grow(Shard& shard) {
    std::vector<Slot> bigger(shard.slots.size() * 2);
    const size_t mask = bigger.size() - 1;
    for (const Slot& slot : shard.slots) {
      if (slot.id == 0) continue;
      size_t i = (slot.hash / kShards) & mask;
      while (bigger[i].id != 0) i = (i + 1) & mask;
      bigger[i] = slot;
    }
    shard.slots = std::move(bigger);
  }
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
