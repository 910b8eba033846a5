// Names of collectives and dtypes in Kineto traces (docs/kineto.md, "Collectives").
#include "kineto_names.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace shardscope::trace::detail {

std::string KindOfCollectiveName(std::string_view name) {
  std::string n(name);
  if (n.rfind("nccl:", 0) == 0) n = n.substr(5);
  size_t space = n.find(' ');
  if (space != std::string::npos) n.resize(space);  // "send 1->2"
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  while (!n.empty() && n.front() == '_') n.erase(n.begin());
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (n.empty() || n == "wait") return "";
  if (has("reduce_scatter") || has("reducescatter")) return "reduce_scatter";
  if (has("allgather") || has("all_gather")) return "all_gather";
  if (has("allreduce") || has("all_reduce")) return "all_reduce";
  if (has("alltoall") || has("all_to_all")) return "all_to_all";
  if (has("broadcast")) return "broadcast";
  if (has("barrier")) return "barrier";
  if (n == "reduce") return "reduce";
  if (n == "send" || n == "isend") return "send";
  if (n == "recv" || n == "irecv") return "recv";
  return n;
}

std::string KindOfNcclKernel(std::string_view name) {
  std::string_view rest;
  for (std::string_view prefix : {std::string_view("ncclDevKernel_"), std::string_view("ncclKernel_")}) {
    if (name.substr(0, prefix.size()) == prefix) rest = name.substr(prefix.size());
  }
  if (rest.empty()) return "";
  size_t end = rest.find_first_of("_(");
  std::string_view op = rest.substr(0, end);
  if (op == "AllReduce") return "all_reduce";
  if (op == "AllGather") return "all_gather";
  if (op == "ReduceScatter") return "reduce_scatter";
  if (op == "Broadcast") return "broadcast";
  if (op == "Reduce") return "reduce";
  if (op == "SendRecv") return "send_recv";
  if (op == "Send") return "send";
  if (op == "Recv") return "recv";
  std::string out(op);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out.empty() ? std::string("nccl") : out;
}

std::string DtypeOfInputType(std::string_view type) {
  static const std::map<std::string, std::string, std::less<>> kTypes = {
      {"float", "Float"},      {"double", "Double"},
      {"c10::Half", "Half"},   {"c10::BFloat16", "BFloat16"},
      {"long int", "Long"},    {"long", "Long"},
      {"int64_t", "Long"},     {"int", "Int"},
      {"short int", "Short"},  {"short", "Short"},
      {"signed char", "Char"}, {"unsigned char", "Byte"},
      {"bool", "Bool"},        {"c10::complex<float>", "ComplexFloat"}};
  auto it = kTypes.find(type);
  return it == kTypes.end() ? std::string() : it->second;
}

int64_t DtypeBytes(std::string_view dtype) {
  static const std::map<std::string, int64_t, std::less<>> kBytes = {
      {"Float", 4}, {"Double", 8}, {"Half", 2}, {"BFloat16", 2}, {"Int", 4},          {"Long", 8},
      {"Short", 2}, {"Char", 1},   {"Byte", 1}, {"Bool", 1},     {"ComplexFloat", 8}, {"ComplexDouble", 16}};
  auto it = kBytes.find(dtype);
  return it == kBytes.end() ? 0 : it->second;
}

std::string ShortDtypeName(std::string_view dtype) {
  static const std::map<std::string, std::string, std::less<>> kNames = {
      {"Float", "f32"}, {"Double", "f64"}, {"Half", "f16"}, {"BFloat16", "bf16"}, {"Int", "i32"},
      {"Long", "i64"},  {"Short", "i16"},  {"Char", "i8"},  {"Byte", "u8"},       {"Bool", "b8"}};
  auto it = kNames.find(dtype);
  if (it != kNames.end()) return it->second;
  std::string out(dtype);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::pair<int64_t, int64_t> P2pLocalPair(std::string_view name) {
  size_t space = name.rfind(' ');
  if (space == std::string_view::npos) return {-1, -1};
  std::string_view pair = name.substr(space + 1);
  size_t arrow = pair.find("->");
  if (arrow == std::string_view::npos) arrow = pair.find("<-");
  if (arrow == std::string_view::npos) return {-1, -1};
  auto num = [](std::string_view s) -> int64_t {
    if (s.empty() || s.size() > 7 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return -1;
    return std::stoll(std::string(s));
  };
  int64_t a = num(pair.substr(0, arrow)), b = num(pair.substr(arrow + 2));
  if (a < 0 || b < 0) return {-1, -1};
  return {a, b};
}

}  // namespace shardscope::trace::detail
