#include "comm/call_descriptor.hpp"

namespace shardscope::engine::detail {

std::vector<int64_t> EncodeDescriptor(const CollectiveCall& call, size_t n) {
  std::vector<int64_t> d(kDescriptorHeaderWords + 2 * n, 0);
  d[0] = static_cast<int64_t>(call.kind);
  d[1] = static_cast<int64_t>(call.dtype);
  d[2] = static_cast<int64_t>(call.reduction.op);
  d[3] = call.reduction.divisor;
  d[4] = call.root;
  if (call.kind == CollectiveKind::kShapeExchange) {
    d[5] = static_cast<int64_t>(n);
    for (size_t j = 0; j < n; ++j)
      d[kDescriptorHeaderWords + j] = static_cast<int64_t>(call.shapes_send[j].size());
  } else {
    d[5] = static_cast<int64_t>(call.send.size());
    d[6] = static_cast<int64_t>(call.recv.size());
    for (size_t j = 0; j < call.send.size() && j < n; ++j)
      d[kDescriptorHeaderWords + j] = call.send[j].Count();
    for (size_t j = 0; j < call.recv.size() && j < n; ++j)
      d[kDescriptorHeaderWords + n + j] = call.recv[j].Count();
  }
  return d;
}

namespace {

// A stand-in view with `count` elements and no data: ValidateGroupCalls only reads counts.
template <class View>
View CountView(DType dtype, int64_t count) {
  View v;
  v.shape = {count};
  v.dtype = dtype;
  v.boxes = {Box{{IndexSet{{0, count}}}}};
  return v;
}

CollectiveCall DecodeDescriptor(const int64_t* d, const CollectiveCall& mine, size_t index) {
  const size_t n = mine.group.ranks.size();
  CollectiveCall c;
  c.kind = static_cast<CollectiveKind>(d[0]);
  c.dtype = static_cast<DType>(d[1]);
  c.reduction = Reduction{static_cast<ReduceOp>(d[2]), d[3]};
  c.root = d[4];
  c.group = mine.group;
  c.index = static_cast<int64_t>(index);
  c.rank = mine.group.ranks[index];
  if (c.kind != CollectiveKind::kShapeExchange) {
    for (int64_t j = 0; j < d[5] && static_cast<size_t>(j) < n; ++j)
      c.send.push_back(CountView<SendView>(c.dtype, d[kDescriptorHeaderWords + static_cast<size_t>(j)]));
    for (int64_t j = 0; j < d[6] && static_cast<size_t>(j) < n; ++j)
      c.recv.push_back(CountView<RecvView>(c.dtype, d[kDescriptorHeaderWords + n + static_cast<size_t>(j)]));
  }
  return c;
}

}  // namespace

std::vector<CollectiveCall> DecodeAndValidate(const int64_t* all, size_t words, const CollectiveCall& mine) {
  const size_t n = mine.group.ranks.size();
  std::vector<CollectiveCall> calls;
  calls.reserve(n);
  for (size_t i = 0; i < n; ++i) calls.push_back(DecodeDescriptor(all + i * words, mine, i));
  std::vector<const CollectiveCall*> posted;
  for (const CollectiveCall& c : calls) posted.push_back(&c);
  ValidateGroupCalls(posted);
  return calls;
}

int64_t PairCount(const std::vector<CollectiveCall>& calls, size_t i, size_t j) {
  const CollectiveCall& s = calls[i];
  switch (s.kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kAllReduce:
      return s.send[0].Count();
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kReduceScatter:
      return s.send[j].Count();
    case CollectiveKind::kBroadcast:
      return static_cast<int64_t>(i) == s.root && !s.send.empty() ? s.send[0].Count() : 0;
    default:
      return 0;
  }
}

}  // namespace shardscope::engine::detail
