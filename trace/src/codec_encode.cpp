// Encoding of trace lines as JSON (the reference writer; fast_encode.cpp and encode_v2.cpp write
// the same lines without a JSON tree), field by field as event_fields.hpp describes them.
// Decoding lives in codec.cpp.
#include <cmath>
#include <type_traits>

#include "codec.hpp"
#include "shardscope/trace/codec.hpp"

namespace shardscope::trace {

using OJson = nlohmann::ordered_json;  // encoding keeps the documented field order
using namespace detail;                // the kType* names

namespace {

template <typename T>
OJson Fields(const T& e);

// One encoder per codec (event_fields.hpp).
template <typename C>
OJson Json(C, int64_t v) {
  return v;
}
template <typename C>
OJson Json(C, int32_t v) {  // a field narrowed to 4 bytes
  return int64_t{v};
}
template <typename C>
OJson Json(C, bool v) {
  return v;
}
template <typename C>
OJson Json(C, double v) {
  return v;
}
template <typename C>
OJson Json(C, const IStr& v) {
  return v.str();
}
template <typename C>
OJson Json(C, const std::string& v) {
  return v;
}
template <typename C, typename T>
OJson Json(C, const std::vector<T>& v) {
  return v;
}
template <typename C, typename T>
OJson Json(C, const std::optional<T>& v) {
  return *v;
}
template <int64_t Len, typename T>
OJson Json(codec::Objects<Len>, const std::vector<T>& v) {
  OJson out = OJson::array();
  for (const T& item : v) out.push_back(Fields(item));
  return out;
}
template <typename T>
OJson Json(codec::Object, const Rare<T>& v) {
  return Fields(*v);
}
OJson Json(codec::Flight, const Collective& c) { return Fields(FlightFieldsOf(c)); }
// An infinite (or NaN) strategy cost cannot be JSON; the format writes it as -1.
OJson Json(codec::StrategyCost, double v) { return std::isfinite(v) ? v : -1.0; }
template <typename C, typename T>
OJson Json(C, const SharedVec<T>& v) {
  return Json(C{}, v.get());
}

// The fields of T's table that a v1 line has, in table order.
template <typename T>
void AddFields(OJson& out, const T& e) {
  ForEachField(kDescOf<T>, [&](auto, const auto& f) {
    using F = std::remove_cvref_t<decltype(f)>;
    using R = typename F::Rule;
    if constexpr (!kLineOnly<R>) {
      const auto& v = Get<F>(e);
      if (Present<R>(e, v)) out[std::string(f.name)] = Json(typename F::Codec{}, v);
    }
  });
}

template <typename T>
OJson Fields(const T& e) {
  OJson out = OJson::object();
  AddFields(out, e);
  return out;
}

template <typename E>
OJson EncodeEvent(const E& e) {
  OJson out = {{"type", std::string(kDescOf<E>.name)}};
  AddFields(out, e);
  return out;
}

}  // namespace

OJson ToJson(const Header& h) {
  return {{"type", kTypeHeader},  {"format", h.format},
          {"version", h.version}, {"rank", h.rank},
          {"world", h.world},     {"mesh", {{"shape", h.mesh_shape}, {"dim_names", h.mesh_dim_names}}},
          {"backend", h.backend}, {"host", h.host},
          {"pid", h.pid},         {"clock", {{"name", h.clock.name}, {"offset_ns", h.clock.offset_ns}}}};
}

OJson ToJson(const Event& event) {
  return std::visit([](const auto& e) { return EncodeEvent(e); }, event);
}

std::string ToLine(const OJson& line) { return line.dump(-1, ' ', false, OJson::error_handler_t::replace); }

std::string_view EventTypeName(const Event& event) {
  return std::visit([](const auto& e) { return kDescOf<std::decay_t<decltype(e)>>.name; }, event);
}

}  // namespace shardscope::trace
