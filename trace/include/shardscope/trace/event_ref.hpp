#pragma once
// EventRef<T> and EventRefs<T>: how a record (model.hpp) holds the events it groups without
// copying them. A record the reader builds points to the events stored in its rank's EventList
// (each event is stored once); a record built by hand owns copies of what is assigned to it.
// Reads look like those of the std::optional<T> / std::vector<T> they replace (->, *, bool,
// iteration over const T&); writes go through Mutable(), which first copies a stored event into
// the record (so a record never edits its rank's event list).

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "shardscope/trace/small_vec.hpp"

namespace shardscope::trace {

template <typename T>
class EventRef {
 public:
  EventRef() = default;
  EventRef(std::nullopt_t) {}                                   // NOLINT(google-explicit-constructor)
  EventRef(const T& value) : bits_(Own(new T(value))) {}        // NOLINT(google-explicit-constructor)
  EventRef(T&& value) : bits_(Own(new T(std::move(value)))) {}  // NOLINT(google-explicit-constructor)
  /// A reference to `stored`, which must outlive this EventRef (an event of a rank's EventList).
  static EventRef To(const T* stored) {
    EventRef r;
    r.bits_ = reinterpret_cast<uintptr_t>(stored);
    return r;
  }
  EventRef(const EventRef& o) : bits_(o.owned() ? Own(new T(*o.ptr())) : o.bits_) {}
  EventRef(EventRef&& o) noexcept : bits_(std::exchange(o.bits_, 0)) {}
  EventRef& operator=(const EventRef& o) {
    if (this != &o) *this = EventRef(o);
    return *this;
  }
  EventRef& operator=(EventRef&& o) noexcept {
    std::swap(bits_, o.bits_);
    return *this;
  }
  EventRef& operator=(std::nullopt_t) {
    reset();
    return *this;
  }
  ~EventRef() { reset(); }

  explicit operator bool() const { return bits_ != 0; }
  bool has_value() const { return bits_ != 0; }
  /// The event; a default T when there is none (a record built by hand before it was set).
  const T& operator*() const { return bits_ != 0 ? *ptr() : Default(); }
  const T* operator->() const { return &**this; }
  const T& value() const { return **this; }
  operator const T&() const { return **this; }  // NOLINT(google-explicit-constructor)
  /// The event for writing: a stored event is copied into the record first; none becomes a default T.
  T& Mutable() {
    if (!owned()) bits_ = Own(bits_ != 0 ? new T(*ptr()) : new T());
    return *ptr();
  }
  /// True when this refers to an event stored elsewhere (not a copy of its own).
  bool IsReference() const { return bits_ != 0 && !owned(); }
  void reset() {
    if (owned()) delete ptr();
    bits_ = 0;
  }

 private:
  static_assert(alignof(T) >= 2, "the low bit of the pointer marks an owned event");
  static uintptr_t Own(T* p) { return reinterpret_cast<uintptr_t>(p) | 1; }
  bool owned() const { return (bits_ & 1) != 0; }
  T* ptr() const { return reinterpret_cast<T*>(bits_ & ~uintptr_t{1}); }
  static const T& Default() {
    static const T value{};
    return value;
  }
  uintptr_t bits_ = 0;  // 0: none; pointer | 1: owned; pointer: stored elsewhere
};

/// A list of events held as EventRefs; iterates as const T&. The first reference is held inline
/// (small_vec.hpp): a record with one collective allocates nothing for it.
template <typename T>
class EventRefs {
 public:
  using value_type = T;
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = const T*;
    using reference = const T&;
    const_iterator() = default;
    explicit const_iterator(const EventRef<T>* it) : it_(it) {}
    const T& operator*() const { return **it_; }
    const T* operator->() const { return &**it_; }
    const T& operator[](difference_type n) const { return *it_[n]; }
    const_iterator& operator++() {
      ++it_;
      return *this;
    }
    const_iterator operator++(int) { return const_iterator(it_++); }
    const_iterator& operator--() {
      --it_;
      return *this;
    }
    const_iterator operator--(int) { return const_iterator(it_--); }
    const_iterator& operator+=(difference_type n) {
      it_ += n;
      return *this;
    }
    const_iterator& operator-=(difference_type n) {
      it_ -= n;
      return *this;
    }
    friend const_iterator operator+(const_iterator a, difference_type n) { return a += n; }
    friend const_iterator operator+(difference_type n, const_iterator a) { return a += n; }
    friend const_iterator operator-(const_iterator a, difference_type n) { return a -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return a.it_ - b.it_;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.it_ == b.it_; }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) { return a.it_ <=> b.it_; }

   private:
    const EventRef<T>* it_ = nullptr;
  };
  using iterator = const_iterator;

  EventRefs() = default;
  EventRefs(const std::vector<T>& values) {  // NOLINT(google-explicit-constructor)
    for (const T& v : values) push_back(v);
  }
  size_t size() const { return refs_.size(); }
  bool empty() const { return refs_.empty(); }
  const T& operator[](size_t i) const { return *refs_[i]; }
  const T& at(size_t i) const { return *refs_.at(i); }
  const T& front() const { return *refs_.front(); }
  const T& back() const { return *refs_.back(); }
  const_iterator begin() const { return const_iterator(refs_.begin()); }
  const_iterator end() const { return const_iterator(refs_.end()); }
  void push_back(const T& value) { refs_.emplace_back(value); }
  void push_back(T&& value) { refs_.emplace_back(std::move(value)); }
  void push_back(EventRef<T> ref) { refs_.push_back(std::move(ref)); }
  void reserve(size_t n) { refs_.reserve(n); }
  void clear() { refs_.clear(); }
  void shrink_to_fit() { refs_.shrink_to_fit(); }
  /// The i-th reference (to rebind it).
  EventRef<T>& Ref(size_t i) { return refs_[i]; }
  /// The i-th event for writing (copied into the list first when stored elsewhere).
  T& Mutable(size_t i) { return refs_[i].Mutable(); }
  /// The events as a plain list (copies).
  std::vector<T> ToVector() const { return {begin(), end()}; }
  operator std::vector<T>() const { return ToVector(); }  // NOLINT(google-explicit-constructor)

 private:
  SmallVec<EventRef<T>> refs_;
};

}  // namespace shardscope::trace
