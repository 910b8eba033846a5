#pragma once
// A collective event from its fields in line order (what `Collective{...}` spelled before the
// collective's shared part moved into its shape, events.hpp): the shape is the collective's own.

#include <cstdint>
#include <vector>

#include "shardscope/trace/events.hpp"

namespace shardscope::testing {

inline trace::Collective MakeCollective(int64_t redistribute_id, int32_t step, trace::IStr kind,
                                        trace::IStr dtype, bool negotiated, std::vector<int64_t> mesh_dims,
                                        std::vector<int64_t> group, std::vector<int64_t> bytes_sent,
                                        std::vector<int64_t> bytes_recv, int64_t start_ns, int64_t end_ns,
                                        int64_t op_id = -1) {
  trace::Collective c;
  c.redistribute_id = redistribute_id;
  trace::CollectiveShape& s = c.Mutable();
  s.step = step;
  s.kind = kind;
  s.dtype = dtype;
  s.negotiated = negotiated;
  s.mesh_dims = std::move(mesh_dims);
  s.group = std::move(group);
  s.bytes_sent = std::move(bytes_sent);
  s.bytes_recv = std::move(bytes_recv);
  c.start_ns = start_ns;
  c.end_ns = end_ns;
  c.op_id = op_id;
  return c;
}

}  // namespace shardscope::testing
