#pragma once
// The collective call descriptor of the process backends (mpi, nccl): what one member posts,
// encoded as int64 words that every member all-gathers, and the validation phase that follows
// (every member decodes the same words and runs ValidateGroupCalls, so a mismatch throws the
// local backend's message on every member before any data moves).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shardscope/engine/comm/communicator.hpp"

namespace shardscope::engine::detail {

/// Words before the counts: [kind, dtype, op, divisor, root, nsend, nrecv]; then the send counts
/// (n words) and the recv counts (n words). A shape exchange puts its per-peer shape lengths in
/// the send counts.
inline constexpr size_t kDescriptorHeaderWords = 7;

/// The descriptor of `call` in a group of `n` members (kDescriptorHeaderWords + 2n words).
std::vector<int64_t> EncodeDescriptor(const CollectiveCall& call, size_t n);

/// Decodes the group's all-gathered descriptors (`words` per member, member order) into calls
/// that carry counts only, and runs ValidateGroupCalls on them: throws the local backend's
/// Error on a mismatch, identically on every member.
std::vector<CollectiveCall> DecodeAndValidate(const int64_t* all, size_t words, const CollectiveCall& mine);

/// Elements member i sends to member j, from the validated descriptors.
int64_t PairCount(const std::vector<CollectiveCall>& calls, size_t i, size_t j);

}  // namespace shardscope::engine::detail
