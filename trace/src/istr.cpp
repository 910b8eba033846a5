#include "shardscope/trace/istr.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <ostream>
#include <unordered_set>

namespace shardscope::trace {
namespace {

// The pool: shards of node-based sets (a node never moves, so its string's address is stable),
// each behind its own mutex, and never destroyed (an IStr may outlive every static).
class StringPool {
 public:
  const std::string* Find(std::string_view s, size_t hash) {
    Shard& shard = shards_[hash % kShards];
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto [it, inserted] = shard.strings.emplace(s);
    if (inserted) {
      count_.fetch_add(1, std::memory_order_relaxed);
      bytes_.fetch_add(s.size(), std::memory_order_relaxed);
    }
    return &*it;
  }
  size_t count() const { return count_.load(std::memory_order_relaxed); }
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    std::mutex mutex;
    std::unordered_set<std::string> strings;
  };
  std::array<Shard, kShards> shards_;
  std::atomic<size_t> count_{0};
  std::atomic<size_t> bytes_{0};
};

StringPool& Pool() {
  static StringPool* pool = new StringPool();  // NOLINT: immortal on purpose
  return *pool;
}

}  // namespace

const std::string* IStr::Intern(std::string_view s) {
  if (s.empty()) return nullptr;
  const size_t hash = std::hash<std::string_view>()(s);
  // A small per-thread cache in front of the pool: a reader interns the same few strings over and
  // over, and a hit takes no lock.
  constexpr size_t kCache = 256;
  thread_local std::array<const std::string*, kCache> cache{};
  const std::string*& slot = cache[(hash ^ (hash >> 17)) % kCache];
  if (slot != nullptr && *slot == s) return slot;
  slot = Pool().Find(s, hash);
  return slot;
}

size_t IStr::PoolSize() { return Pool().count(); }
size_t IStr::PoolBytes() { return Pool().bytes(); }

std::ostream& operator<<(std::ostream& out, const IStr& s) { return out << s.str(); }

}  // namespace shardscope::trace
