#pragma once
// SmallVec<T>: a list that holds its first element inside itself and allocates only from the
// second on. A record of a trace (model.hpp) groups the steps and collectives of one redistribute,
// and almost every redistribute has one of each: a std::vector would cost one allocation apiece
// (32 bytes and malloc's bookkeeping per record), a SmallVec none. 24 bytes for a 16-byte element,
// 16 for an 8-byte one. Reads and writes like the std::vector it replaces (iterators are pointers).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

namespace shardscope::trace {

template <typename T>
class SmallVec {
 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVec() = default;
  SmallVec(std::initializer_list<T> list) { Append(list.begin(), list.end()); }
  SmallVec(const std::vector<T>& v) { Append(v.begin(), v.end()); }  // NOLINT(google-explicit-constructor)
  SmallVec(const SmallVec& o) { Append(o.begin(), o.end()); }
  SmallVec(SmallVec&& o) noexcept { Take(std::move(o)); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) {
      clear();
      Append(o.begin(), o.end());
    }
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      Free();
      Take(std::move(o));
    }
    return *this;
  }
  ~SmallVec() { Free(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }
  T* data() { return cap_ == 1 ? Inline() : Heap(); }
  const T* data() const { return cap_ == 1 ? Inline() : Heap(); }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size_; }
  const_iterator cbegin() const { return begin(); }
  const_iterator cend() const { return end(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& at(size_t i) {
    if (i >= size_) throw std::out_of_range("SmallVec::at");
    return data()[i];
  }
  const T& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVec::at");
    return data()[i];
  }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(const T& value) { emplace_back(value); }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == cap_) {
      T tmp(std::forward<Args>(args)...);  // args may refer to an element that Grow moves
      Grow(size_t{cap_} * 2);
      return *new (data() + size_++) T(std::move(tmp));
    }
    return *new (data() + size_++) T(std::forward<Args>(args)...);
  }
  void pop_back() { data()[--size_].~T(); }
  void reserve(size_t n) {
    if (n > cap_) Grow(n);
  }
  void resize(size_t n) {
    reserve(n);
    while (size_ > n) pop_back();
    while (size_ < n) emplace_back();
  }
  void clear() {
    while (size_ > 0) pop_back();
  }
  void shrink_to_fit() {}
  /// The elements as a std::vector (copies).
  std::vector<T> ToVector() const { return {begin(), end()}; }

  friend bool operator==(const SmallVec& a, const SmallVec& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  static constexpr size_t kBytes = sizeof(T) > sizeof(T*) ? sizeof(T) : sizeof(T*);
  T* Inline() { return std::launder(reinterpret_cast<T*>(buf_)); }
  const T* Inline() const { return std::launder(reinterpret_cast<const T*>(buf_)); }
  T* Heap() const {
    T* p;
    __builtin_memcpy(&p, buf_, sizeof p);
    return p;
  }
  void SetHeap(T* p) { __builtin_memcpy(buf_, &p, sizeof p); }
  template <typename It>
  void Append(It first, It last) {
    reserve(static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) emplace_back(*first);
  }
  void Grow(size_t n) {
    if (n > UINT32_MAX) throw std::length_error("SmallVec: too many elements");
    T* fresh = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
    T* old = data();
    for (size_t i = 0; i < size_; ++i) {
      new (fresh + i) T(std::move(old[i]));
      old[i].~T();
    }
    if (cap_ != 1) ::operator delete(old, std::align_val_t(alignof(T)));
    SetHeap(fresh);
    cap_ = static_cast<uint32_t>(n);
  }
  void Free() {
    clear();
    if (cap_ != 1) ::operator delete(Heap(), std::align_val_t(alignof(T)));
    cap_ = 1;
  }
  // Leaves o empty; this must hold nothing.
  void Take(SmallVec&& o) {
    if (o.cap_ == 1) {
      size_ = 0;
      cap_ = 1;
      if (o.size_ == 1) {
        new (Inline()) T(std::move(*o.Inline()));
        size_ = 1;
        o.pop_back();
      }
      return;
    }
    SetHeap(o.Heap());
    size_ = o.size_;
    cap_ = o.cap_;
    o.size_ = 0;
    o.cap_ = 1;
  }

  alignas(T) alignas(T*) unsigned char buf_[kBytes];  // the one element, or a pointer to the heap's
  uint32_t size_ = 0;
  uint32_t cap_ = 1;  // 1: the element (if any) is in buf_
};

}  // namespace shardscope::trace
