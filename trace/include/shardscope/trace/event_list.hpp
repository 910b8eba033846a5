#pragma once
// EventList: one rank's events in file order, each stored in a column of its own type, so that an
// event costs its own size (40 bytes for a step_end) and not that of the largest alternative of
// Event (a redistribute_begin), plus 4 bytes for its place in the order (8 in a rank with more than
// 2^29 events of one type), or nothing much when the order is long runs of one type (a Flight
// Recorder dump: all collectives; a profiler trace: ops, then collectives), which a finished list
// keeps as runs (shrink_to_fit, TakeExact). Reads yield Event values;
// their lists share buffers with the stored ones (SharedVec), so a copy costs no element copies.

#include <algorithm>
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

  size_t size() const { return !runs_.empty() ? run_events_ : wide_.empty() ? order_.size() : wide_.size(); }
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
    if (!runs_.empty()) return;  // runs grow by a run, not by an event
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
  /// Keeps the order as runs when that takes less than a quarter of its per-event entries.
  void shrink_to_fit() {
    ToRuns();
    order_.shrink_to_fit();
    wide_.shrink_to_fit();
    runs_.shrink_to_fit();
    std::apply([](auto&... column) { (column.shrink_to_fit(), ...); }, columns_);
  }
  /// Whether the order is held as runs (a few bytes a run instead of 4 an event).
  bool HoldsRuns() const { return !runs_.empty(); }
  void clear() { *this = EventList(); }
  /// Bytes the list has allocated for its events and their order (capacity, not size; not what the
  /// events' own lists hold).
  size_t CapacityBytes() const {
    size_t bytes = order_.capacity() * sizeof(uint32_t) + wide_.capacity() * sizeof(uint64_t) +
                   runs_.capacity() * sizeof(Run);
    std::apply([&](const auto&... column) { ((bytes += column.capacity() * sizeof(column[0])), ...); },
               columns_);
    return bytes;
  }
  /// Moves the events into a list of their own whose columns are allocated at their exact sizes,
  /// and leaves this one empty but with its capacity: a reader fills one such scratch list file after
  /// file, so that the growth of its columns leaves no holes in the heap between the lists it keeps.
  EventList TakeExact() {
    EventList out;
    ToRuns();
    out.order_.reserve(order_.size());
    out.order_.assign(order_.begin(), order_.end());
    out.wide_.reserve(wide_.size());
    out.wide_.assign(wide_.begin(), wide_.end());
    out.runs_.reserve(runs_.size());
    out.runs_.assign(runs_.begin(), runs_.end());
    out.run_events_ = run_events_;
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
    runs_.clear();
    run_events_ = 0;
    return out;
  }
  /// The events as a plain list (copies).
  std::vector<Event> ToVector() const { return {begin(), end()}; }

  friend bool operator==(const EventList& a, const EventList& b) {
    if (a.size() != b.size() || !(a.columns_ == b.columns_)) return false;
    if (a.runs_.empty() && b.runs_.empty()) return a.order_ == b.order_ && a.wide_ == b.wide_;
    for (size_t i = 0; i < a.size(); ++i)  // one of them holds runs: compare the orders they spell
      if (a.Slot(i) != b.Slot(i)) return false;
    return true;
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
  // A run of events of one alternative at consecutive places of its column: event `first` is
  // `slot` ((alternative << kIndexBits) | index), event first + k is slot + k.
  struct Run {
    uint64_t first = 0;
    uint64_t slot = 0;
  };
  uint64_t Slot(size_t i) const {
    if (!runs_.empty()) {
      const auto after = std::upper_bound(runs_.begin(), runs_.end(), uint64_t{i},
                                          [](uint64_t e, const Run& r) { return e < r.first; });
      return (after - 1)->slot + (i - (after - 1)->first);
    }
    return wide_.empty() ? Widen(order_[i]) : wide_[i];
  }
  // The order as runs, when those take under a quarter of the per-event entries' bytes.
  void ToRuns() {
    if (!runs_.empty() || size() == 0) return;
    const size_t n = size();
    size_t runs = 1;
    for (size_t i = 1; i < n; ++i) runs += Slot(i) != Slot(i - 1) + 1 ? 1 : 0;
    const size_t entry = wide_.empty() ? sizeof(uint32_t) : sizeof(uint64_t);
    if (runs * sizeof(Run) * 4 > n * entry) return;
    std::vector<Run> made;
    made.reserve(runs);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t slot = Slot(i);
      if (i == 0 || slot != Slot(i - 1) + 1) made.push_back({i, slot});
    }
    run_events_ = n;
    runs_ = std::move(made);
    std::vector<uint32_t>().swap(order_);
    std::vector<uint64_t>().swap(wide_);
  }
  // Back to per-event entries (an append that would start a new run in a list of many).
  void FromRuns() {
    const size_t n = size();
    std::vector<uint64_t> slots(n);
    for (size_t i = 0; i < n; ++i) slots[i] = Slot(i);
    runs_.clear();
    runs_.shrink_to_fit();
    run_events_ = 0;
    for (uint64_t s : slots)
      Append(static_cast<size_t>(s >> kIndexBits), static_cast<size_t>(s & kIndexMask));
  }
  void Append(size_t kind, size_t index) {
    if (!runs_.empty()) {
      const uint64_t slot = static_cast<uint64_t>(kind) << kIndexBits | index;
      const Run& last = runs_.back();
      if (slot == last.slot + (run_events_ - last.first)) {  // extends the last run
        ++run_events_;
        return;
      }
      if ((runs_.size() + 1) * sizeof(Run) * 4 <= (run_events_ + 1) * sizeof(uint32_t)) {
        runs_.push_back({run_events_, slot});
        ++run_events_;
        return;
      }
      FromRuns();
    }
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
  std::vector<Run> runs_;       // instead of both, ascending by first (shrink_to_fit, TakeExact)
  size_t run_events_ = 0;       // the events the runs hold
  ColumnsOf<Event>::type columns_;
};

}  // namespace shardscope::trace
