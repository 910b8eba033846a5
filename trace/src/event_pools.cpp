#include "event_pools.hpp"

#include <variant>

namespace shardscope::trace::detail {

void EventPools::Intern(Event& event) {
  if (auto* b = std::get_if<RedistributeBegin>(&event)) {
    ints_.Intern(b->global_shape);
    strs_.Intern(b->src_placements);
    strs_.Intern(b->dst_placements);
    plans_.Intern(b->raw_plan);
    plans_.Intern(b->optimized_plan);
    merges_.Intern(b->skipped_merges);
  } else if (auto* s = std::get_if<StepBegin>(&event)) {
    ints_.Intern(s->mesh_dims);
    ints_.Intern(s->logical_shape);
    ints_.Intern(s->local_shape_before);
    ints_.Intern(s->global_offset_before);
  } else if (auto* e = std::get_if<StepEnd>(&event)) {
    ints_.Intern(e->local_shape_after);
    ints_.Intern(e->global_offset_after);
  } else if (auto* c = std::get_if<Collective>(&event)) {
    ints_.Intern(c->mesh_dims);
    ints_.Intern(c->group);
    ints_.Intern(c->bytes_sent);
    ints_.Intern(c->bytes_recv);
  }
}

}  // namespace shardscope::trace::detail
