#pragma once
// Shared<T>: one value that copies share, as SharedVec shares a list: a copy costs a reference
// count, not the value's bytes. For parts of an event that repeat from event to event (what a
// Flight Recorder entry shares with the other entries of its process group: FlightShape); the
// reader makes equal values share one buffer (event_pools.hpp). Value semantics: == compares
// values, a mutation (Mutable) copies first when the buffer is shared. A default value allocates
// nothing. Copies on several threads are safe (the count is atomic); writing one object is not.

#include <atomic>
#include <cstdint>
#include <utility>

namespace shardscope::trace {

template <typename T>
class Shared {
 public:
  Shared() = default;
  explicit Shared(T value) : n_(new Node{std::move(value)}) {}
  Shared(const Shared& o) : n_(o.n_) {
    if (n_ != nullptr) n_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Shared(Shared&& o) noexcept : n_(std::exchange(o.n_, nullptr)) {}
  Shared& operator=(const Shared& o) {
    Shared copy(o);
    std::swap(n_, copy.n_);
    return *this;
  }
  Shared& operator=(Shared&& o) noexcept {
    Shared moved(std::move(o));
    std::swap(n_, moved.n_);
    return *this;
  }
  ~Shared() { Release(); }

  /// The value (T{} when none was set).
  const T& get() const { return n_ != nullptr ? n_->v : Default(); }
  const T& operator*() const { return get(); }
  const T* operator->() const { return &get(); }
  /// The value for writing; copies it first when another Shared shares it.
  T& Mutable() {
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
  /// Whether a buffer holds the value (a default-constructed Shared has none).
  bool HasBuffer() const { return n_ != nullptr; }
  /// As SharedVec's: whether a reader's pool holds this buffer as the one copy of its value. Set
  /// before the buffer is shared with other threads; writing through Mutable() clears it.
  bool Pooled() const { return n_ != nullptr && n_->pooled; }
  void MarkPooled() {
    if (n_ != nullptr) n_->pooled = true;
  }
  /// True when both share one buffer (or both have none).
  bool SharesWith(const Shared& o) const { return n_ == o.n_; }

  friend bool operator==(const Shared& a, const Shared& b) { return a.n_ == b.n_ || a.get() == b.get(); }

 private:
  struct Node {
    T v;
    std::atomic<uint32_t> refs{1};
    bool pooled = false;
  };
  static const T& Default() {
    static const T value{};
    return value;
  }
  void Release() {
    if (n_ != nullptr && n_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete n_;
    n_ = nullptr;
  }
  Node* n_ = nullptr;
};

}  // namespace shardscope::trace
