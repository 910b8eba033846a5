#pragma once
// Private: IdIndex, the reader's map from the ids of one kind of event in a file to an index.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace shardscope::trace::detail {

/// A map from event ids to a value: a plain vector while the ids are dense (writers number
/// redistributes and ops 0, 1, ...), a hash map for ids far beyond the count (or below 0), so a
/// hostile id cannot make it allocate without bound. Keeps the first value given for an id.
class IdIndex {
 public:
  /// Sets the value of `id` unless it has one; returns whether it did.
  bool TryEmplace(int64_t id, size_t value) {
    // Dense while the ids stay within a few times the count seen.
    if (id >= 0 && (static_cast<uint64_t>(id) < dense_.size() ||
                    static_cast<uint64_t>(id) <= 4 * static_cast<uint64_t>(count_) + 4096)) {
      const auto i = static_cast<size_t>(id);
      if (i >= dense_.size()) dense_.resize(std::max(i + 1, dense_.size() * 2), kNone);
      if (dense_[i] != kNone) return false;
      dense_[i] = value;
    } else if (!sparse_.try_emplace(id, value).second) {
      return false;
    }
    ++count_;
    return true;
  }
  /// The value of `id`, or nullptr.
  const size_t* Find(int64_t id) const {
    if (id >= 0 && static_cast<uint64_t>(id) < dense_.size()) {
      const size_t* at = &dense_[static_cast<size_t>(id)];
      return *at == kNone ? nullptr : at;
    }
    if (sparse_.empty()) return nullptr;
    auto it = sparse_.find(id);
    return it == sparse_.end() ? nullptr : &it->second;
  }
  bool Contains(int64_t id) const { return Find(id) != nullptr; }

 private:
  static constexpr size_t kNone = SIZE_MAX;
  std::vector<size_t> dense_;  // by id; kNone where none
  std::unordered_map<int64_t, size_t> sparse_;
  size_t count_ = 0;
};

}  // namespace shardscope::trace::detail
