// Plan cache [PyTorch @functools.cache on _gen_transform_infos]. The key is every field that
// changes a plan; ShardTensor cached on fewer fields and returned plans of other specs
// (physicsnemo PR 2210). A lookup encodes the key losslessly into 64-bit words on the stack,
// hashes them, and compares words with memcmp, so a hit allocates nothing and a hash
// collision costs a comparison, never a wrong plan.

#include <cstring>
#include <memory>
#include <string_view>

#include "shardscope/engine/plan/planner.hpp"

namespace shardscope::engine {
namespace {

uint64_t U(int64_t v) { return static_cast<uint64_t>(v); }
uint64_t U32(int v) { return static_cast<uint64_t>(static_cast<uint32_t>(v)); }

// Word buffer with inline storage; only keys larger than any realistic mesh spill to the heap.
// The write cursor is a pointer (not an index) so stores of words cannot alias it and it stays
// in a register while encoding.
class KeyWords {
 public:
  KeyWords() : base_(inline_), cur_(inline_), end_(inline_ + kInline) {}
  KeyWords(const KeyWords&) = delete;
  KeyWords& operator=(const KeyWords&) = delete;
  [[gnu::always_inline]] void Push(uint64_t v) {
    if (cur_ == end_) Grow();
    *cur_++ = v;
  }
  const uint64_t* data() const { return base_; }
  size_t size() const { return static_cast<size_t>(cur_ - base_); }

 private:
  [[gnu::noinline]] void Grow() {
    const size_t n = size();
    auto bigger = std::make_unique<uint64_t[]>(2 * n);
    std::memcpy(bigger.get(), base_, n * sizeof(uint64_t));
    heap_ = std::move(bigger);
    base_ = heap_.get();
    cur_ = base_ + n;
    end_ = base_ + 2 * n;
  }
  static constexpr size_t kInline = 192;
  uint64_t inline_[kInline];
  std::unique_ptr<uint64_t[]> heap_;
  uint64_t* base_;
  uint64_t* cur_;
  uint64_t* end_;
};

// Every field is preceded by its count where it has one, so the encoding is self-delimiting
// and therefore injective: equal words <=> equal keys.
void EncodeString(KeyWords& w, std::string_view s) {
  w.Push(s.size());
  uint64_t word = 0;
  size_t n = 0;
  for (char c : s) {
    word = (word << 8) | static_cast<unsigned char>(c);
    if (++n == 8) {
      w.Push(word);
      word = 0;
      n = 0;
    }
  }
  if (n) w.Push(word);
}

void EncodeDims(KeyWords& w, const std::vector<int>& dims) {
  w.Push(dims.size());
  for (int d : dims) w.Push(U32(d));
}

// A flattened sub-mesh is a sorted set of dims: one bitmask word when every dim is below 63
// (bit 63 marks the form); otherwise the explicit list, whose count word never has bit 63.
void EncodeDimSet(KeyWords& w, const std::vector<int>& sorted_dims) {
  uint64_t mask = uint64_t{1} << 63;
  for (int d : sorted_dims) {
    if (d < 0 || d >= 63) {
      EncodeDims(w, sorted_dims);
      return;
    }
    mask |= uint64_t{1} << d;
  }
  w.Push(mask);
}

void EncodeMesh(KeyWords& w, const Mesh& mesh) {
  w.Push(mesh.shape().size());
  for (int64_t e : mesh.shape()) w.Push(U(e));
  w.Push(mesh.dim_names().size());
  for (const auto& n : mesh.dim_names()) EncodeString(w, n);
  w.Push(mesh.flattened().size());
  for (const auto& f : mesh.flattened()) EncodeDimSet(w, f);
}

// Exactly the fields Placement::operator== compares, so equal placements encode equal.
void EncodePlacement(KeyWords& w, const Placement& p) {
  uint64_t head = static_cast<uint64_t>(p.kind);
  switch (p.kind) {
    case PlacementKind::kReplicate:
      w.Push(head);
      break;
    case PlacementKind::kShard:
      w.Push(head | U32(p.dim) << 32);
      break;
    case PlacementKind::kStridedShard:
      w.Push(head | U32(p.dim) << 32);
      w.Push(U(p.split_factor));
      break;
    case PlacementKind::kPartial:
      w.Push(head | static_cast<uint64_t>(p.op) << 8);
      break;
  }
}

void EncodeSpec(KeyWords& w, const TensorSpec& spec) {
  EncodeMesh(w, spec.mesh);
  w.Push(spec.placements.size());
  for (const auto& p : spec.placements) EncodePlacement(w, p);
  w.Push(spec.shape.size());
  for (int64_t e : spec.shape) w.Push(U(e));
  w.Push(static_cast<uint64_t>(spec.dtype) | static_cast<uint64_t>(spec.chunking) << 8 |
         U(spec.shard_order.has_value() ? 1 : 0) << 16);
  if (spec.shard_order) {
    w.Push(spec.shard_order->size());
    for (const auto& e : *spec.shard_order) {
      w.Push(U32(e.tensor_dim));
      EncodeDims(w, e.mesh_dims);
    }
  }
  w.Push(spec.explicit_sizes.size());
  for (const auto& [md, sizes] : spec.explicit_sizes) {
    w.Push(U32(md));
    w.Push(sizes.size());
    for (int64_t s : sizes) w.Push(U(s));
  }
}

void EncodeKey(KeyWords& w, const TensorSpec& src, const TensorSpec& dst, int64_t rank,
               const PlanOptions& options) {
  EncodeSpec(w, src);
  EncodeSpec(w, dst);
  w.Push(U(rank));
  w.Push(static_cast<uint64_t>(options.planner) | U(options.optimize ? 1 : 0) << 8 |
         U(options.guard_uneven_all_gather ? 1 : 0) << 9 | U(options.internal_partial_target ? 1 : 0) << 10 |
         U32(options.devices_per_host) << 32);
}

uint64_t Avalanche(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Four independent multiply lanes (in registers) keep the multipliers busy instead of one
// serial chain.
uint64_t HashWords(const uint64_t* words, size_t n) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  uint64_t a = 0x243f6a8885a308d3ULL, b = 0x13198a2e03707344ULL, c = 0xa4093822299f31d0ULL,
           d = 0x082efa98ec4e6c89ULL;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a = (a ^ words[i]) * kMul;
    b = (b ^ words[i + 1]) * kMul;
    c = (c ^ words[i + 2]) * kMul;
    d = (d ^ words[i + 3]) * kMul;
  }
  if (i < n) a = (a ^ words[i++]) * kMul;
  if (i < n) b = (b ^ words[i++]) * kMul;
  if (i < n) c = (c ^ words[i++]) * kMul;
  return Avalanche(a ^ Avalanche(b ^ Avalanche(c ^ Avalanche(d ^ n))));
}

}  // namespace

uint64_t PlanKeyHash(const TensorSpec& src, const TensorSpec& dst, int64_t rank, const PlanOptions& options) {
  KeyWords w;
  EncodeKey(w, src, dst, rank, options);
  return HashWords(w.data(), w.size());
}

std::shared_ptr<const Plan> PlanCache::Get(const TensorSpec& src, const TensorSpec& dst, int64_t rank,
                                           const PlanOptions& options) {
  KeyWords words;
  EncodeKey(words, src, dst, rank, options);
  const uint64_t hash = HashWords(words.data(), words.size());
  auto find = [&]() -> std::shared_ptr<const Plan> {
    auto [begin, end] = entries_.equal_range(hash);
    for (auto it = begin; it != end; ++it) {
      const auto& key = it->second.key;
      if (key.size() == words.size() &&
          std::memcmp(key.data(), words.data(), words.size() * sizeof(uint64_t)) == 0) {
        return it->second.plan;
      }
    }
    return nullptr;
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto plan = find()) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return plan;
    }
  }
  // Planning runs unlocked so a slow graph plan does not block hits of other threads; a racing
  // thread may plan the same key, and the first insert wins.
  misses_.fetch_add(1, std::memory_order_relaxed);
  auto plan = std::make_shared<const Plan>(MakePlan(src, dst, rank, options));
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto existing = find()) return existing;
  entries_.emplace(hash, Entry{std::vector<uint64_t>(words.data(), words.data() + words.size()), plan});
  return plan;
}

size_t PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

void PlanCache::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
}

}  // namespace shardscope::engine
