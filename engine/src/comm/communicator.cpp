#include "shardscope/engine/comm/communicator.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include "shardscope/error.hpp"
#include "shardscope/names.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::engine {
namespace {

// A call of `kind` over `group` moving `dtype` elements: the collectives' common fields.
CollectiveCall NewCall(CollectiveKind kind, const Group& group, DType dtype) {
  CollectiveCall call;
  call.kind = kind;
  call.group = group;
  call.dtype = dtype;
  return call;
}

std::string Where(const CollectiveCall& call) {
  return std::string(CollectiveKindName(call.kind)) + " on group " + call.group.ToString();
}

// Byte range of the tensor a view points into (empty when it holds nothing).
template <class Ptr>
std::pair<const std::byte*, const std::byte*> Extent(const BasicView<Ptr>& view) {
  if (view.data == nullptr) return {nullptr, nullptr};
  const std::byte* begin = view.data;
  return {begin, begin + NumElements(view.shape) * DTypeSize(view.dtype)};
}

template <class Ptr>
void CheckView(const CollectiveCall& call, const BasicView<Ptr>& view, const char* role, size_t slot) {
  auto fail = [&](const std::string& what) {
    throw InvalidInput(Where(call) + ": rank " + std::to_string(call.rank) + "'s " + role + " view " +
                       std::to_string(slot) + " " + what);
  };
  if (view.dtype != call.dtype) {
    fail("has dtype " + std::string(DTypeName(view.dtype)) + " but the collective runs on " +
         std::string(DTypeName(call.dtype)));
  }
  for (int64_t e : view.shape) {
    if (e < 0) fail("has a negative extent in shape " + FormatShape(view.shape));
  }
  for (const Box& box : view.boxes) {
    if (box.dims.size() != view.shape.size()) {
      fail("has a box of " + std::to_string(box.dims.size()) + " dims over a tensor of shape " +
           FormatShape(view.shape));
    }
    for (size_t d = 0; d < box.dims.size(); ++d) {
      for (const Interval& iv : box.dims[d]) {
        if (iv.begin < 0 || iv.end < iv.begin || iv.end > view.shape[d]) {
          fail("has interval [" + std::to_string(iv.begin) + ", " + std::to_string(iv.end) +
               ") outside dim " + std::to_string(d) + " of shape " + FormatShape(view.shape));
        }
      }
    }
  }
  if (view.data == nullptr && view.Count() > 0)
    fail("has no buffer but " + std::to_string(view.Count()) + " elements");
}

void CheckLocal(const CollectiveCall& call, int64_t world_size) {
  const auto& ranks = call.group.ranks;
  if (ranks.empty()) throw InvalidInput(Where(call) + ": the group is empty");
  std::set<int64_t> seen;
  for (int64_t r : ranks) {
    if (r < 0 || r >= world_size) {
      throw InvalidInput(Where(call) + ": rank " + std::to_string(r) + " is outside the world of " +
                         std::to_string(world_size) + " ranks");
    }
    if (!seen.insert(r).second) {
      throw InvalidInput(Where(call) + ": rank " + std::to_string(r) + " appears twice in the group");
    }
  }
  if (!seen.count(call.rank)) {
    throw InvalidInput(Where(call) + ": rank " + std::to_string(call.rank) + " is not a member of the group");
  }
  const size_t n = ranks.size();
  auto expect_count = [&](const char* role, size_t got, size_t want) {
    if (got != want) {
      throw InvalidInput(Where(call) + ": rank " + std::to_string(call.rank) + " passes " +
                         std::to_string(got) + " " + role + " views, expected " + std::to_string(want));
    }
  };
  switch (call.kind) {
    case CollectiveKind::kAllGather:
      expect_count("send", call.send.size(), 1);
      expect_count("recv", call.recv.size(), n);
      break;
    case CollectiveKind::kAllToAll:
      expect_count("send", call.send.size(), n);
      expect_count("recv", call.recv.size(), n);
      break;
    case CollectiveKind::kReduceScatter:
      expect_count("send", call.send.size(), n);
      expect_count("recv", call.recv.size(), 1);
      break;
    case CollectiveKind::kAllReduce:
      expect_count("send", call.send.size(), 1);
      expect_count("recv", call.recv.size(), 1);
      break;
    case CollectiveKind::kBroadcast:
      if (call.root < 0 || call.root >= static_cast<int64_t>(n)) {
        throw InvalidInput(Where(call) + ": root index " + std::to_string(call.root) +
                           " is outside the group of " + std::to_string(n));
      }
      expect_count("send", call.send.size(), call.index == call.root ? 1 : 0);
      expect_count("recv", call.recv.size(), 1);
      break;
    case CollectiveKind::kBarrier:
      break;
    case CollectiveKind::kShapeExchange:
      expect_count("shape", call.shapes_send.size(), n);
      break;
  }
  if (call.reduction.divisor < 1) {
    throw InvalidInput(Where(call) + ": reduction divisor " + std::to_string(call.reduction.divisor) +
                       " is below 1");
  }
  for (size_t k = 0; k < call.send.size(); ++k) CheckView(call, call.send[k], "send", k);
  for (size_t k = 0; k < call.recv.size(); ++k) CheckView(call, call.recv[k], "recv", k);
  if (call.kind == CollectiveKind::kAllReduce && call.send[0].Count() != call.recv[0].Count()) {
    throw InvalidInput(Where(call) + ": rank " + std::to_string(call.rank) + " sends " +
                       std::to_string(call.send[0].Count()) + " elements but receives " +
                       std::to_string(call.recv[0].Count()));
  }
  // Peers read this rank's send buffers while it writes its receive buffers: they must not overlap.
  for (const SendView& s : call.send) {
    auto [sb, se] = Extent(s);
    for (const RecvView& r : call.recv) {
      auto [rb, re] = Extent(r);
      if (sb != se && rb != re && sb < re && rb < se) {
        throw InvalidInput(
            Where(call) + ": rank " + std::to_string(call.rank) +
            " passes overlapping send and receive buffers (in-place collectives are not supported)");
      }
    }
  }
}

int64_t CountOr0(const std::vector<SendView>& views, size_t k) {
  return k < views.size() ? views[k].Count() : 0;
}

}  // namespace

int64_t Box::Count() const {
  int64_t n = 1;
  for (const IndexSet& set : dims) n *= IndexSetSize(set);
  return n;
}

Box FullBox(const Shape& shape) {
  Box box;
  for (int64_t e : shape) box.dims.push_back(e > 0 ? IndexSet{{0, e}} : IndexSet{});
  return box;
}

SendView ViewOf(const LocalTensor& tensor) { return ViewOf(tensor, FullBox(tensor.shape())); }
SendView ViewOf(const LocalTensor& tensor, Box box) {
  return SendView{tensor.data(), tensor.shape(), tensor.dtype(), {std::move(box)}};
}
RecvView MutableViewOf(LocalTensor& tensor) { return MutableViewOf(tensor, FullBox(tensor.shape())); }
RecvView MutableViewOf(LocalTensor& tensor, Box box) {
  return RecvView{tensor.data(), tensor.shape(), tensor.dtype(), {std::move(box)}};
}

std::string Group::ToString() const {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  out += "]";
  if (!mesh_dims.empty()) {
    out += mesh_dims.size() == 1 ? " (mesh dim " : " (mesh dims ";
    for (size_t i = 0; i < mesh_dims.size(); ++i) out += (i ? "," : "") + std::to_string(mesh_dims[i]);
    out += ")";
  }
  return out;
}

std::string_view CollectiveKindName(CollectiveKind kind) {
  static constexpr Named<CollectiveKind> kNames[] = {
      {CollectiveKind::kAllGather, "all_gather"},         {CollectiveKind::kReduceScatter, "reduce_scatter"},
      {CollectiveKind::kAllReduce, "all_reduce"},         {CollectiveKind::kAllToAll, "all_to_all"},
      {CollectiveKind::kBroadcast, "broadcast"},          {CollectiveKind::kBarrier, "barrier"},
      {CollectiveKind::kShapeExchange, "shape_exchange"},
  };
  return NameIn(kNames, kind, "barrier");
}

void ValidateGroupCalls(const std::vector<const CollectiveCall*>& calls) {
  const CollectiveCall& first = *calls.at(0);
  const size_t n = calls.size();
  auto rank_of = [&](size_t i) { return std::to_string(first.group.ranks[i]); };
  for (size_t i = 1; i < n; ++i) {
    const CollectiveCall& c = *calls[i];
    if (c.kind != first.kind) {
      throw InvalidInput(Where(first) + ": rank " + rank_of(i) + " called " +
                         std::string(CollectiveKindName(c.kind)) +
                         " at the same point (collectives out of order)");
    }
    if (c.kind == CollectiveKind::kBarrier || c.kind == CollectiveKind::kShapeExchange) continue;
    if (c.dtype != first.dtype) {
      throw InvalidInput(Where(first) + ": rank " + rank_of(i) + " passes " +
                         std::string(DTypeName(c.dtype)) + " but rank " + rank_of(0) + " passes " +
                         std::string(DTypeName(first.dtype)));
    }
    if (c.reduction != first.reduction) {
      throw InvalidInput(Where(first) + ": rank " + rank_of(i) + " reduces with " +
                         std::string(ReduceOpName(c.reduction.op)) + "/" +
                         std::to_string(c.reduction.divisor) + " but rank " + rank_of(0) + " with " +
                         std::string(ReduceOpName(first.reduction.op)) + "/" +
                         std::to_string(first.reduction.divisor));
    }
    if (c.root != first.root) {
      throw InvalidInput(Where(first) + ": rank " + rank_of(i) + " names root " + std::to_string(c.root) +
                         " but rank " + rank_of(0) + " names " + std::to_string(first.root));
    }
  }
  // For every sender i and receiver j: what i sends to j must be what j expects from i.
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const CollectiveCall& s = *calls[i];
      const CollectiveCall& r = *calls[j];
      int64_t sent = 0, expected = 0;
      switch (first.kind) {
        case CollectiveKind::kAllGather:
          sent = s.send[0].Count();
          expected = r.recv[i].Count();
          break;
        case CollectiveKind::kAllToAll:
          sent = s.send[j].Count();
          expected = r.recv[i].Count();
          break;
        case CollectiveKind::kReduceScatter:
          sent = s.send[j].Count();
          expected = r.recv[0].Count();
          break;
        case CollectiveKind::kAllReduce:
          sent = s.send[0].Count();
          expected = r.recv[0].Count();
          break;
        case CollectiveKind::kBroadcast:
          if (i != static_cast<size_t>(first.root)) continue;
          sent = CountOr0(s.send, 0);
          expected = r.recv[0].Count();
          break;
        case CollectiveKind::kBarrier:
        case CollectiveKind::kShapeExchange:
          continue;
      }
      if (sent != expected) {
        throw InvalidInput(Where(first) + ": rank " + rank_of(j) + " expects " + std::to_string(expected) +
                           " elements from rank " + rank_of(i) + ", which sends " + std::to_string(sent));
      }
    }
  }
}

Communicator::Communicator(int64_t rank, int64_t world_size) : rank_(rank), world_size_(world_size) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw InvalidInput("communicator: rank " + std::to_string(rank) + " is outside a world of " +
                       std::to_string(world_size));
  }
}

CollectiveStats Communicator::Submit(CollectiveCall& call) {
  call.rank = rank_;
  auto it = std::find(call.group.ranks.begin(), call.group.ranks.end(), rank_);
  call.index = it - call.group.ranks.begin();
  CheckLocal(call, world_size_);
  CollectiveStats stats;
  stats.kind = call.kind;
  const size_t n = call.group.ranks.size();
  const int64_t es = DTypeSize(call.dtype);
  stats.bytes_sent.assign(n, 0);
  stats.bytes_recv.assign(n, 0);
  for (size_t k = 0; k < n; ++k) {
    if (static_cast<int64_t>(k) == call.index) continue;
    switch (call.kind) {
      case CollectiveKind::kAllGather:
        stats.bytes_sent[k] = call.send[0].Count() * es;
        stats.bytes_recv[k] = call.recv[k].Count() * es;
        break;
      case CollectiveKind::kAllToAll:
        stats.bytes_sent[k] = call.send[k].Count() * es;
        stats.bytes_recv[k] = call.recv[k].Count() * es;
        break;
      case CollectiveKind::kReduceScatter:
        stats.bytes_sent[k] = call.send[k].Count() * es;
        stats.bytes_recv[k] = call.recv[0].Count() * es;
        break;
      case CollectiveKind::kAllReduce:
        stats.bytes_sent[k] = call.send[0].Count() * es;
        stats.bytes_recv[k] = call.recv[0].Count() * es;
        break;
      case CollectiveKind::kBroadcast:
        if (call.index == call.root) stats.bytes_sent[k] = call.send[0].Count() * es;
        if (static_cast<int64_t>(k) == call.root) stats.bytes_recv[k] = call.recv[0].Count() * es;
        break;
      case CollectiveKind::kShapeExchange:
        stats.bytes_sent[k] = static_cast<int64_t>(call.shapes_send[k].size() * sizeof(int64_t));
        break;
      case CollectiveKind::kBarrier:
        break;
    }
  }
  stats.start_ns = trace::NowNs();
  Execute(call);
  stats.end_ns = trace::NowNs();
  if (call.timed_end_ns > 0) {
    stats.start_ns = call.timed_start_ns;
    stats.end_ns = call.timed_end_ns;
  }
  if (call.kind == CollectiveKind::kShapeExchange && call.shapes_recv) {
    for (size_t k = 0; k < n; ++k) {
      if (static_cast<int64_t>(k) != call.index) {
        stats.bytes_recv[k] = static_cast<int64_t>((*call.shapes_recv)[k].size() * sizeof(int64_t));
      }
    }
  }
  return stats;
}

CollectiveStats Communicator::AllGatherV(const Group& group, const SendView& send,
                                         std::vector<RecvView> recv) {
  CollectiveCall call = NewCall(CollectiveKind::kAllGather, group, send.dtype);
  call.send = {send};
  call.recv = std::move(recv);
  return Submit(call);
}

CollectiveStats Communicator::ReduceScatterV(const Group& group, const Reduction& reduction,
                                             std::vector<SendView> send, const RecvView& recv) {
  CollectiveCall call = NewCall(CollectiveKind::kReduceScatter, group, recv.dtype);
  call.reduction = reduction;
  call.send = std::move(send);
  call.recv = {recv};
  return Submit(call);
}

CollectiveStats Communicator::AllReduce(const Group& group, const Reduction& reduction, const SendView& send,
                                        const RecvView& recv) {
  CollectiveCall call = NewCall(CollectiveKind::kAllReduce, group, send.dtype);
  call.reduction = reduction;
  call.send = {send};
  call.recv = {recv};
  return Submit(call);
}

CollectiveStats Communicator::AllToAllV(const Group& group, std::vector<SendView> send,
                                        std::vector<RecvView> recv) {
  CollectiveCall call =
      NewCall(CollectiveKind::kAllToAll, group, !recv.empty() ? recv[0].dtype : DType::kF32);
  call.send = std::move(send);
  call.recv = std::move(recv);
  return Submit(call);
}

CollectiveStats Communicator::Broadcast(const Group& group, int64_t root_index, const SendView& send,
                                        const RecvView& recv) {
  CollectiveCall call = NewCall(CollectiveKind::kBroadcast, group, recv.dtype);
  call.root = root_index;
  auto it = std::find(group.ranks.begin(), group.ranks.end(), rank_);
  if (it - group.ranks.begin() == root_index) call.send = {send};
  call.recv = {recv};
  return Submit(call);
}

CollectiveStats Communicator::Barrier(const Group& group) {
  CollectiveCall call = NewCall(CollectiveKind::kBarrier, group, DType::kF32);
  return Submit(call);
}

std::vector<std::vector<int64_t>> Communicator::ExchangeShapes(const Group& group,
                                                               std::vector<std::vector<int64_t>> send,
                                                               CollectiveStats* stats) {
  std::vector<std::vector<int64_t>> received;
  CollectiveCall call = NewCall(CollectiveKind::kShapeExchange, group, DType::kI64);
  call.shapes_send = std::move(send);
  call.shapes_recv = &received;
  CollectiveStats s = Submit(call);
  if (stats) *stats = std::move(s);
  return received;
}

}  // namespace shardscope::engine
