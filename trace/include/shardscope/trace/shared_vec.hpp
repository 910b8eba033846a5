#pragma once
// SharedVec<T>: a list that copies cost a reference count, not the elements. A trace repeats the
// same lists on every event and every rank (a collective's group and per-peer bytes, a plan, the
// placements of a redistribute); the reader makes equal lists share one buffer (InternPool), and
// the events held by a rank and by its records share them too. Value semantics: == compares
// elements, a mutation (Mutable, push_back, ...) copies first when the buffer is shared. An empty
// list allocates nothing. Reads go through a const std::vector<T>&, so existing code that takes a
// vector keeps working. The buffer is a Shared<std::vector<T>> (shared_value.hpp, the one
// reference-counted handle of the trace model).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <utility>
#include <vector>

#include "shardscope/trace/shared_value.hpp"

namespace shardscope::trace {

template <typename T>
class SharedVec {
 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using const_iterator = typename std::vector<T>::const_iterator;
  using iterator = const_iterator;
  using const_reference = const T&;
  using reference = const T&;

  SharedVec() = default;
  SharedVec(std::vector<T> v) {  // NOLINT(google-explicit-constructor)
    if (!v.empty()) s_ = Shared<std::vector<T>>(std::move(v));
  }
  SharedVec(std::initializer_list<T> list) {
    if (list.size() != 0) s_ = Shared<std::vector<T>>(std::vector<T>(list));
  }
  template <std::input_iterator It>
  SharedVec(It first, It last) {
    if (first != last) s_ = Shared<std::vector<T>>(std::vector<T>(first, last));
  }

  /// The elements (an empty vector when there are none).
  const std::vector<T>& get() const { return s_.get(); }
  operator const std::vector<T>&() const { return get(); }  // NOLINT(google-explicit-constructor)
  /// The elements for writing; copies them first when another SharedVec shares them.
  std::vector<T>& Mutable() { return s_.Mutable(); }
  /// Whether a reader's pool holds this buffer as the one copy of its elements (MarkPooled): a
  /// list copied from a stored event needs no second look-up. Set before the buffer is shared
  /// with other threads; writing through Mutable() clears it.
  bool Pooled() const { return s_.Pooled(); }
  void MarkPooled() { s_.MarkPooled(); }
  /// True when both share one buffer (or both are empty).
  bool SharesWith(const SharedVec& o) const { return s_.SharesWith(o.s_); }

  size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  const T& operator[](size_t i) const { return get()[i]; }
  const T& at(size_t i) const { return get().at(i); }
  const T& front() const { return get().front(); }
  const T& back() const { return get().back(); }
  const T* data() const { return get().data(); }
  const_iterator begin() const { return get().begin(); }
  const_iterator end() const { return get().end(); }
  const_iterator cbegin() const { return get().begin(); }
  const_iterator cend() const { return get().end(); }

  void push_back(T value) { Mutable().push_back(std::move(value)); }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    return Mutable().emplace_back(std::forward<Args>(args)...);
  }
  void reserve(size_t n) { Mutable().reserve(n); }
  void resize(size_t n) { Mutable().resize(n); }
  void resize(size_t n, const T& value) { Mutable().resize(n, value); }
  void assign(size_t n, const T& value) { Mutable().assign(n, value); }
  void clear() { *this = SharedVec(); }

  friend bool operator==(const SharedVec& a, const SharedVec& b) { return a.s_ == b.s_; }
  friend bool operator==(const SharedVec& a, const std::vector<T>& b) { return a.get() == b; }

 private:
  Shared<std::vector<T>> s_;  // the reference-counted buffer (shared_value.hpp); none when empty
};

/// Makes equal lists share one buffer: Intern(v) replaces v by an earlier equal list when one of
/// the last kRecent distinct lists seen is equal (traces repeat the same few lists over and over),
/// else remembers v. Empty lists are left alone. Not thread-safe: one pool per reading thread.
template <typename T>
class InternPool {
 public:
  static constexpr size_t kRecent = 16;
  void Intern(SharedVec<T>& v) {
    if (!Find(v)) Remember(v);
  }
  /// Replaces v by an equal recent list and returns true, or returns false (v is then unchanged,
  /// except that an empty list drops its buffer and counts as found).
  bool Find(SharedVec<T>& v) {
    if (v.empty()) {
      v.clear();
      return true;
    }
    for (size_t i = 0; i < recent_.size(); ++i) {
      if (recent_[i].SharesWith(v) || recent_[i] == v) {
        v = recent_[i];
        std::rotate(recent_.begin(), recent_.begin() + static_cast<std::ptrdiff_t>(i),
                    recent_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        return true;
      }
    }
    return false;
  }
  /// Makes v the most recent list (after a Find that returned false).
  void Remember(const SharedVec<T>& v) {
    if (recent_.size() == kRecent) recent_.pop_back();
    recent_.insert(recent_.begin(), v);
  }

 private:
  std::vector<SharedVec<T>> recent_;  // most recently used first
};

}  // namespace shardscope::trace
