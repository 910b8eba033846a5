#pragma once
// EventList: one rank's events in file order, each stored in a column of its own type, so that an
// event costs its own size (40 bytes for a step_end) and not that of the largest alternative of
// Event (a redistribute_begin), plus 4 bytes for its place in the order (8 in a rank with more than
// 2^29 events of one type). Reads yield Event values;
// their lists share buffers with the stored ones (SharedVec), so a copy costs no element copies.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "shardscope/trace/events.hpp"

namespace shardscope::trace {

class EventList {
 public:
  class const_iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Event;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Event;
    const_iterator() = default;
    const_iterator(const EventList* list, size_t i) : list_(list), i_(i) {}
    Event operator*() const { return (*list_)[i_]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      ++i_;
      return before;
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }

   private:
    const EventList* list_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = const_iterator;
  using value_type = Event;
  using size_type = size_t;

  EventList() = default;
  EventList(const std::vector<Event>& events) {  // NOLINT(google-explicit-constructor)
    for (const Event& e : events) push_back(e);
  }

  size_t size() const { return wide_.empty() ? order_.size() : wide_.size(); }
  bool empty() const { return size() == 0; }
  /// The i-th event in file order, as a value.
  Event operator[](size_t i) const {
    const uint64_t slot = Slot(i);
    return Get(static_cast<size_t>(slot >> kIndexBits), static_cast<size_t>(slot & kIndexMask));
  }
  /// Like operator[], throws std::out_of_range past the end.
  Event at(size_t i) const {
    if (i >= size()) throw std::out_of_range("EventList::at");
    return (*this)[i];
  }
  /// The events of type T (a Collective, ...) in file order, by reference: for consumers that keep
  /// pointers to events, which the values yielded by operator[] and iteration are not.
  template <typename T>
  const std::vector<T>& Of() const {
    return std::get<std::vector<T>>(columns_);
  }
  /// Calls f(stored) with the i-th event as stored (a const reference into its column).
  template <typename F>
  void Visit(size_t i, F&& f) const {
    const uint64_t slot = Slot(i);
    VisitAt(static_cast<size_t>(slot >> kIndexBits), static_cast<size_t>(slot & kIndexMask), f,
            std::make_index_sequence<std::variant_size_v<Event>>{});
  }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  void push_back(Event event) {
    std::visit(
        [&](auto&& e) {
          using T = std::decay_t<decltype(e)>;
          auto& column = std::get<std::vector<T>>(columns_);
          Append(event.index(), column.size());
          column.push_back(std::move(e));
        },
        std::move(event));
  }
  template <typename... Args>
  void emplace_back(Args&&... args) {
    push_back(Event(std::forward<Args>(args)...));
  }
  /// Appends a default-constructed event of type T and returns it to be filled in place (a reader
  /// building many events skips the moves through an Event); valid until the next append of a T.
  template <typename T>
  T& EmplaceOf() {
    auto& column = std::get<std::vector<T>>(columns_);
    Append(IndexOf<T>(static_cast<Event*>(nullptr)), column.size());
    return column.emplace_back();
  }
  void reserve(size_t n) {
    if (wide_.empty())
      order_.reserve(n);
    else
      wide_.reserve(n);
  }
  /// Reserves room for n events in all, all of type T (a reader that knows what it will add).
  template <typename T>
  void ReserveOf(size_t n) {
    reserve(size() + n);
    auto& column = std::get<std::vector<T>>(columns_);
    column.reserve(column.size() + n);
  }
  /// Releases the spare capacity of every column (the reader calls it once a file is read).
  void shrink_to_fit() {
    order_.shrink_to_fit();
    wide_.shrink_to_fit();
    std::apply([](auto&... column) { (column.shrink_to_fit(), ...); }, columns_);
  }
  void clear() { *this = EventList(); }
  /// Bytes the list has allocated for its events and their order (capacity, not size; not what the
  /// events' own lists hold).
  size_t CapacityBytes() const {
    size_t bytes = order_.capacity() * sizeof(uint32_t) + wide_.capacity() * sizeof(uint64_t);
    std::apply([&](const auto&... column) { ((bytes += column.capacity() * sizeof(column[0])), ...); },
               columns_);
    return bytes;
  }
  /// Moves the events into a list of their own whose columns are allocated at their exact sizes,
  /// and leaves this one empty but with its capacity: a reader fills one such scratch list file after
  /// file, so that the growth of its columns leaves no holes in the heap between the lists it keeps.
  EventList TakeExact() {
    EventList out;
    out.order_.reserve(order_.size());
    out.order_.assign(order_.begin(), order_.end());
    out.wide_.reserve(wide_.size());
    out.wide_.assign(wide_.begin(), wide_.end());
    std::apply(
        [&](auto&... to) {
          std::apply(
              [&](auto&... from) {
                auto take = [](auto& dst, auto& src) {
                  dst.reserve(src.size());
                  for (auto& e : src) dst.push_back(std::move(e));
                  src.clear();
                };
                (take(to, from), ...);
              },
              columns_);
        },
        out.columns_);
    order_.clear();
    wide_.clear();
    return out;
  }
  /// The events as a plain list (copies).
  std::vector<Event> ToVector() const { return {begin(), end()}; }

  friend bool operator==(const EventList& a, const EventList& b) {
    return a.order_ == b.order_ && a.wide_ == b.wide_ && a.columns_ == b.columns_;
  }
  friend bool operator==(const EventList& a, const std::vector<Event>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < b.size(); ++i)
      if (!(a[i] == b[i])) return false;
    return true;
  }

 private:
  static constexpr int kIndexBits = 56;
  // The index of alternative T in Event.
  template <typename T, typename... Ts>
  static constexpr size_t IndexOf(std::variant<Ts...>*) {
    size_t i = 0;
    (void)((std::is_same_v<T, Ts> ? false : (++i, true)) && ...);
    return i;
  }
  static constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
  // A 4-byte order entry: the alternative in the top 3 bits, the index in its column below.
  static constexpr int kNarrowBits = 29;
  static_assert(std::variant_size_v<Event> <= (size_t{1} << (32 - kNarrowBits)));
  static uint64_t Widen(uint32_t s) {
    return static_cast<uint64_t>(s >> kNarrowBits) << kIndexBits | (s & ((uint32_t{1} << kNarrowBits) - 1));
  }
  uint64_t Slot(size_t i) const { return wide_.empty() ? Widen(order_[i]) : wide_[i]; }
  void Append(size_t kind, size_t index) {
    if (wide_.empty() && index < (size_t{1} << kNarrowBits)) {
      order_.push_back(static_cast<uint32_t>(kind << kNarrowBits | index));
      return;
    }
    if (wide_.empty()) {  // a column outgrew 4-byte entries: every entry becomes 8 bytes
      wide_.reserve(order_.size() + 1);
      for (uint32_t s : order_) wide_.push_back(Widen(s));
      std::vector<uint32_t>().swap(order_);
    }
    wide_.push_back(static_cast<uint64_t>(kind) << kIndexBits | index);
  }
  template <size_t K>
  static Event GetAt(const EventList& list, size_t index) {
    return Event(std::in_place_index<K>, std::get<K>(list.columns_)[index]);
  }
  // A table of plain functions, not of member functions: g++ 12 at -O0 with
  // -fsanitize=address,undefined passes the wrong index through a pointer-to-member call that
  // returns a class (the sanitizer build reads `kind` from the return slot and crashes).
  template <size_t... K>
  Event GetOf(size_t kind, size_t index, std::index_sequence<K...>) const {
    using Getter = Event (*)(const EventList&, size_t);
    static constexpr Getter kGetters[] = {&EventList::GetAt<K>...};
    return kGetters[kind](*this, index);
  }
  template <typename F, size_t... K>
  void VisitAt(size_t kind, size_t index, F& f, std::index_sequence<K...>) const {
    (void)((kind == K ? (f(std::get<K>(columns_)[index]), true) : false) || ...);
  }
  Event Get(size_t kind, size_t index) const {
    return GetOf(kind, index, std::make_index_sequence<std::variant_size_v<Event>>{});
  }

  template <typename Variant>
  struct ColumnsOf;
  template <typename... T>
  struct ColumnsOf<std::variant<T...>> {
    using type = std::tuple<std::vector<T>...>;  // column K holds alternative K
  };

  // Per event, (alternative << kNarrowBits) | index in its column; while wide_ is empty.
  std::vector<uint32_t> order_;
  std::vector<uint64_t> wide_;  // per event, (alternative << kIndexBits) | index, once any index >= 2^29
  ColumnsOf<Event>::type columns_;
};

}  // namespace shardscope::trace
