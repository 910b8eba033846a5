#pragma once
// Redistribute planning [PyTorch DTensorRedistributePlanner], one header per concept; this one
// includes them all for callers that use several:
//   plan.hpp          plans as plain data (transforms, skipped merges, states)
//   plan_options.hpp  knobs that change a plan
//   cost_model.hpp    PyTorch's alpha-beta cost model and redistribute_cost
//   planners.hpp      the greedy and graph planners
//   optimizer.hpp     the flattening optimizer
//   notation.hpp      PyTorch's notation string
//   make_plan.hpp     the entry point (validation, planner choice, optimizer, costs)
//   backward.hpp      the gradient redistribute's target
//   plan_cache.hpp    a thread-safe plan cache
//   plan_layouts.hpp  every rank's layout along a plan, and the dry run that checks a plan

#include "shardscope/engine/plan/backward.hpp"
#include "shardscope/engine/plan/cost_model.hpp"
#include "shardscope/engine/plan/make_plan.hpp"
#include "shardscope/engine/plan/notation.hpp"
#include "shardscope/engine/plan/optimizer.hpp"
#include "shardscope/engine/plan/plan.hpp"
#include "shardscope/engine/plan/plan_cache.hpp"
#include "shardscope/engine/plan/plan_layouts.hpp"
#include "shardscope/engine/plan/plan_options.hpp"
#include "shardscope/engine/plan/planners.hpp"
