#pragma once
// SharedVec<T>: a list that copies cost a reference count, not the elements. A trace repeats the
// same lists on every event and every rank (a collective's group and per-peer bytes, a plan, the
// placements of a redistribute); the reader makes equal lists share one buffer (InternPool), and
// the events held by a rank and by its records share them too. Value semantics: == compares
// elements, a mutation (Mutable, push_back, ...) copies first when the buffer is shared. An empty
// list allocates nothing. Reads go through a const std::vector<T>&, so existing code that takes a
// vector keeps working.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <utility>
#include <vector>

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
    if (!v.empty()) n_ = new Node{std::move(v)};
  }
  SharedVec(std::initializer_list<T> list) {
    if (list.size() != 0) n_ = new Node{std::vector<T>(list)};
  }
  template <std::input_iterator It>
  SharedVec(It first, It last) {
    if (first != last) n_ = new Node{std::vector<T>(first, last)};
  }
  SharedVec(const SharedVec& o) : n_(o.n_) {
    if (n_ != nullptr) n_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  SharedVec(SharedVec&& o) noexcept : n_(std::exchange(o.n_, nullptr)) {}
  SharedVec& operator=(const SharedVec& o) {
    SharedVec copy(o);
    std::swap(n_, copy.n_);
    return *this;
  }
  SharedVec& operator=(SharedVec&& o) noexcept {
    SharedVec moved(std::move(o));
    std::swap(n_, moved.n_);
    return *this;
  }
  ~SharedVec() { Release(); }

  /// The elements (an empty vector when there are none).
  const std::vector<T>& get() const { return n_ != nullptr ? n_->v : Empty(); }
  operator const std::vector<T>&() const { return get(); }  // NOLINT(google-explicit-constructor)
  /// The elements for writing; copies them first when another SharedVec shares them.
  std::vector<T>& Mutable() {
    if (n_ == nullptr) {
      n_ = new Node{};
    } else if (n_->refs.load(std::memory_order_acquire) != 1) {
      Node* own = new Node{n_->v};
      Release();
      n_ = own;
    }
    n_->pooled = false;
    return n_->v;
  }
  /// Whether a reader's pool holds this buffer as the one copy of its elements (MarkPooled): a
  /// list copied from a stored event needs no second look-up. Set before the buffer is shared
  /// with other threads; writing through Mutable() clears it.
  bool Pooled() const { return n_ != nullptr && n_->pooled; }
  void MarkPooled() {
    if (n_ != nullptr) n_->pooled = true;
  }
  /// True when both share one buffer (or both are empty).
  bool SharesWith(const SharedVec& o) const { return n_ == o.n_; }

  size_t size() const { return get().size(); }
  bool empty() const { return n_ == nullptr || n_->v.empty(); }
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

  friend bool operator==(const SharedVec& a, const SharedVec& b) {
    return a.n_ == b.n_ || a.get() == b.get();
  }
  friend bool operator==(const SharedVec& a, const std::vector<T>& b) { return a.get() == b; }

 private:
  struct Node {
    std::vector<T> v;
    std::atomic<uint32_t> refs{1};
    bool pooled = false;
  };
  static const std::vector<T>& Empty() {
    static const std::vector<T> empty;
    return empty;
  }
  void Release() {
    if (n_ != nullptr && n_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete n_;
    n_ = nullptr;
  }
  Node* n_ = nullptr;
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
