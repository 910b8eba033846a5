// The line builder's writer of event_fields.hpp's tables (v1, and v2 for encode_v2.cpp);
// tests/trace/writer_test.cpp compares its lines with codec_encode.cpp's, field by field.
#include "fast_encode.hpp"

#include "codec.hpp"
#include "format_v2.hpp"
#include "line_builder.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>

namespace shardscope::trace::detail {

void AppendDouble(double value, std::string& out) {
  if (value == 0) {
    out += std::signbit(value) ? "-0.0" : "0.0";
    return;
  }
  // Shortest round-trip digits, then nlohmann's layout (its format_buffer with min_exp -4 and
  // max_exp 15): fixed notation with ".0" for whole numbers, exponent with a sign and two digits.
  char sci[40];
  auto [end, ec] = std::to_chars(sci, sci + sizeof sci, value, std::chars_format::scientific);
  (void)ec;
  const char* p = sci;
  if (*p == '-') out += *p++;
  char digits[24];
  int k = 0;
  for (; p != end && *p != 'e'; ++p)
    if (*p != '.') digits[k++] = *p;
  // "e+20" / "e-05" (to_chars writes no terminating NUL)
  const bool negative_exp = p + 1 != end && p[1] == '-';
  int exp10 = 0;
  std::from_chars(p + 2, end, exp10);
  if (negative_exp) exp10 = -exp10;
  const int n = exp10 + 1;  // position of the decimal point after the first digit
  if (k <= n && n <= 15) {
    out.append(digits, k);
    out.append(static_cast<size_t>(n - k), '0');
    out += ".0";
  } else if (0 < n && n <= 15) {
    out.append(digits, n);
    out += '.';
    out.append(digits + n, k - n);
  } else if (-4 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-n), '0');
    out.append(digits, k);
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits + 1, k - 1);
    }
    const int e = n - 1;
    out += e < 0 ? "e-" : "e+";
    const int a = e < 0 ? -e : e;
    if (a < 10) out += '0';
    out += std::to_string(a);
  }
}

namespace {

// Whether field F of `e` (rule R: F's, or the rule inside its Like), value `v`, goes on the line.
template <typename F, typename R, typename E, typename V>
bool Written(const E& e, const V& v, const WriteBasis& b) {
  if constexpr (IsLike<R>::value) {
    return Written<F, Unliked<R>>(e, v, b);
  } else if constexpr (kOptional<R>) {
    return Present<R>(e, v);
  } else if constexpr (std::is_same_v<R, rule::Defaulted>) {
    return !b.v2 || !(v == Get<F>(kDefaults<E>));
  } else if constexpr (IsSameAs<R>::value) {
    return !(kV3Only<R> ? b.v3 : b.v2) || !(v == GetMember<IsSameAs<R>::kArg>(e));
  } else if constexpr (IsFromStep<R>::value) {
    return !b.v2 || b.step == nullptr || !(v == b.step->*IsFromStep<R>::kArg);
  } else if constexpr (std::is_same_v<R, rule::FromBeginDtype>) {
    return !b.v2 || b.dtype == nullptr || !(v == *b.dtype);
  } else if constexpr (std::is_same_v<R, rule::FromMeshGroup>) {
    return !b.v2 || b.group == nullptr || !(v == *b.group);
  } else {
    return true;  // Required, Relinked
  }
}

// One writer per codec (event_fields.hpp).
template <int64_t Min, int64_t Max, typename E>
[[gnu::always_inline]] inline void Put(codec::Int<Min, Max>, Line& l, std::string_view name, int64_t v,
                                       const E&, const WriteBasis&) {
  l.Int(name, v);
}
template <int64_t Len, int64_t Min, int64_t Max, typename V, typename E>
[[gnu::always_inline]] inline void Put(codec::Ints<Len, Min, Max>, Line& l, std::string_view name, const V& v,
                                       const E&, const WriteBasis&) {
  l.Ints(name, v);
}
template <typename V, typename E>
[[gnu::always_inline]] inline void Put(codec::Text, Line& l, std::string_view name, const V& v, const E&,
                                       const WriteBasis&) {
  l.Str(name, v);
}
template <typename V, typename E>
[[gnu::always_inline]] inline void Put(codec::NonEmptyText, Line& l, std::string_view name, const V& v,
                                       const E&, const WriteBasis&) {
  l.Str(name, v);
}
template <int64_t Len, typename V, typename E>
[[gnu::always_inline]] inline void Put(codec::Texts<Len>, Line& l, std::string_view name, const V& v,
                                       const E&, const WriteBasis&) {
  l.Strs(name, v);
}
template <typename E>
[[gnu::always_inline]] inline void Put(codec::Flag, Line& l, std::string_view name, bool v, const E&,
                                       const WriteBasis&) {
  l.Bool(name, v);
}
template <typename E>
[[gnu::always_inline]] inline void Put(codec::Real, Line& l, std::string_view name, double v, const E&,
                                       const WriteBasis&) {
  l.Num(name, v);
}
template <typename E>
[[gnu::always_inline]] inline void Put(codec::Checksum, Line& l, std::string_view name,
                                       const std::optional<uint64_t>& v, const E&, const WriteBasis&) {
  l.Uint(name, *v);
}
template <int64_t Len, typename V, typename E>
[[gnu::always_inline]] inline void Put(codec::Objects<Len>, Line& l, std::string_view name, const V& v,
                                       const E&, const WriteBasis& b) {
  l.Objects(name, v, [&](const auto& item) { WriteFields(l, item, b); });
}
template <typename E>
[[gnu::always_inline]] inline void Put(codec::PlacementLists, Line& l, std::string_view name,
                                       const std::vector<std::vector<std::string>>& v, const E&,
                                       const WriteBasis&) {
  l.StrLists(name, v);
}
template <typename E>
[[gnu::always_inline]] inline void Put(codec::StrategyCost, Line& l, std::string_view name, double v,
                                       const E&, const WriteBasis&) {
  l.Num(name, std::isfinite(v) ? v : -1.0);  // the format's spelling of +inf
}
// v2 writes a byte list that gives every peer the same count as that one count.
[[gnu::always_inline]] inline void Put(codec::PeerBytes, Line& l, std::string_view name,
                                       const SharedVec<int64_t>& bytes, const Collective& e,
                                       const WriteBasis& b) {
  int64_t count = 0;
  if (b.v2 && UniformBytes(e.group(), bytes, b.rank, count))
    l.Int(name, count);
  else
    l.Ints(name, bytes);
}
// A rare payload (an imported plan, Flight Recorder fields): one object, its table's fields.
template <typename T, typename E>
inline void Put(codec::Object, Line& l, std::string_view name, const Rare<T>& v, const E&,
                const WriteBasis& b) {
  l.OpenObject(name);
  WriteFields(l, *v, b);
  l.EndObject();
}
// A Flight Recorder record: its flat object.
template <typename E>
inline void Put(codec::Flight, Line& l, std::string_view name, const Collective& c, const E&,
                const WriteBasis& b) {
  l.OpenObject(name);
  WriteFields(l, FlightFieldsOf(c), b);
  l.EndObject();
}
// Flight Recorder shapes: one integer list per tensor.
template <typename V, typename E>
inline void Put(codec::ShapeList, Line& l, std::string_view name, const V& v, const E&, const WriteBasis&) {
  l.IntLists(name, v);
}
// A known duration (rule::When writes it only when finite).
template <typename E>
inline void Put(codec::Millis, Line& l, std::string_view name, const std::optional<double>& v, const E&,
                const WriteBasis&) {
  l.Num(name, *v);
}

}  // namespace

template <typename E>
void WriteFields(Line& l, const E& e, const WriteBasis& b, size_t from, size_t to) {
  ForEachField(kDescOf<E>, [&](auto i, const auto& f) {
    using F = std::remove_cvref_t<decltype(f)>;
    // The name as a constant, so that the line builder formats the key as it would a literal's.
    constexpr std::string_view kName = std::get<decltype(i)::value>(kDescOf<E>.fields).name;
    if constexpr (!kLineOnly<typename F::Rule>) {
      const auto& v = Get<F>(e);
      if (i >= from && i < to && Written<F, typename F::Rule>(e, v, b))
        Put(typename F::Codec{}, l, kName, v, e, b);
    }
  });
}

template void WriteFields(Line&, const RedistributeBegin&, const WriteBasis&, size_t, size_t);
template void WriteFields(Line&, const RedistributeEnd&, const WriteBasis&, size_t, size_t);
template void WriteFields(Line&, const StepBegin&, const WriteBasis&, size_t, size_t);
template void WriteFields(Line&, const StepEnd&, const WriteBasis&, size_t, size_t);
template void WriteFields(Line&, const Collective&, const WriteBasis&, size_t, size_t);
template void WriteFields(Line&, const Op&, const WriteBasis&, size_t, size_t);
template void WriteFields(Line&, const ImportedPlan&, const WriteBasis&, size_t, size_t);

// Each event's v1 line: its "type", then every field.
template <typename E>
bool FastEncode(const E& e, std::string& out) {
  Line l(out);
  l.Str("type", kDescOf<E>.name);
  WriteFields(l, e, WriteBasis{});
  return l.Finish();
}

template bool FastEncode(const RedistributeBegin&, std::string&);
template bool FastEncode(const RedistributeEnd&, std::string&);
template bool FastEncode(const StepBegin&, std::string&);
template bool FastEncode(const StepEnd&, std::string&);
template bool FastEncode(const Collective&, std::string&);
template bool FastEncode(const Op&, std::string&);

}  // namespace shardscope::trace::detail
