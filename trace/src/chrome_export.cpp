#include "shardscope/trace/chrome_export.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <type_traits>
#include <variant>

#include "collective_match.hpp"
#include "format_v2.hpp"

namespace shardscope::trace {

using nlohmann::ordered_json;

namespace {

// Where the events go, one at a time: an array (ChromeTraceJson) or the stream (WriteChromeTrace).
using Sink = std::function<void(ordered_json&&)>;

// Some trace_processor versions reject \uXXXX escapes, so every string leaves as plain ASCII.
std::string Ascii(const std::string& s) {
  std::string out = s;
  for (char& ch : out) {
    auto u = static_cast<unsigned char>(ch);
    if (u >= 0x80 || u < 0x20) ch = '?';
  }
  return out;
}

std::string Placements(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + Ascii(v[i]);
  return out;
}

ordered_json AsciiArray(const std::vector<std::string>& v) {
  ordered_json a = ordered_json::array();
  for (const std::string& s : v) a.push_back(Ascii(s));
  return a;
}

std::string Ints(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

// Microseconds since the trace origin. Long double keeps ns precision for any int64 inputs and
// cannot overflow on hostile clock offsets.
class Clocks {
 public:
  explicit Clocks(const Model& model) {
    for (const RankTrace& rt : model.ranks) offset_[rt.header.rank] = rt.header.clock.offset_ns;
    bool any = false;
    long double origin = 0;
    auto see = [&](int64_t rank, int64_t t) {
      long double v = Abs(rank, t);
      if (!any || v < origin) origin = v;
      any = true;
    };
    for (const RankTrace& rt : model.ranks) {
      for (const Event& e : rt.events) {
        std::visit(
            [&](const auto& ev) {
              using T = std::decay_t<decltype(ev)>;
              if constexpr (std::is_same_v<T, Collective>)
                see(rt.header.rank, ev.start_ns);
              else
                see(rt.header.rank, ev.t_ns);
            },
            e);
      }
    }
    origin_ = origin;
  }

  double Us(int64_t rank, int64_t t) const { return static_cast<double>((Abs(rank, t) - origin_) / 1000.0L); }
  double DurUs(int64_t begin, int64_t end) const {
    long double d = (static_cast<long double>(end) - static_cast<long double>(begin)) / 1000.0L;
    return d < 0 ? 0.0 : static_cast<double>(d);
  }
  long double OriginNs() const { return origin_; }

 private:
  long double Abs(int64_t rank, int64_t t) const {
    auto it = offset_.find(rank);
    return static_cast<long double>(t) + static_cast<long double>(it == offset_.end() ? 0 : it->second);
  }
  std::map<int64_t, int64_t> offset_;
  long double origin_ = 0;
};

ordered_json Slice(const std::string& name, const char* cat, int64_t pid, int tid, double ts, double dur) {
  ordered_json e;
  e["ph"] = "X";
  e["name"] = name;
  e["cat"] = cat;
  e["pid"] = pid;
  e["tid"] = tid;
  e["ts"] = ts;
  e["dur"] = dur;
  return e;
}

ordered_json Meta(const char* what, int64_t pid, std::optional<int> tid, const std::string& name) {
  ordered_json e;
  e["ph"] = "M";
  e["name"] = what;
  e["pid"] = pid;
  if (tid) e["tid"] = *tid;
  e["args"] = {{"name", name}};
  return e;
}

std::string CoordText(int64_t rank, const std::vector<int64_t>& mesh) {
  std::vector<int64_t> c(mesh.size(), 0);
  for (size_t d = mesh.size(); d-- > 0;) {
    if (mesh[d] <= 0) break;
    c[d] = rank % mesh[d];
    rank /= mesh[d];
  }
  return Ints(c);
}

void AddRedistribute(const RedistributeRecord& r, const Clocks& clocks, const Sink& emit) {
  const RedistributeBegin& b = r.begin;
  int64_t end = b.t_ns;
  if (r.end) {
    end = r.end->t_ns;
  } else {
    for (const StepRecord& s : r.steps)
      end = std::max({end, s.begin->t_ns, s.end ? s.end->t_ns : s.begin->t_ns});
    for (const Collective& c : r.collectives) end = std::max(end, c.end_ns);
  }
  std::string name = "redistribute #" + std::to_string(b.id) + " " +
                     (b.tensor().empty() ? "" : Ascii(b.tensor()) + " ") + Placements(b.src_placements()) +
                     " -> " + Placements(b.dst_placements());
  ordered_json e = Slice(name, "redistribute", r.rank, kChromeRedistributeTid, clocks.Us(r.rank, b.t_ns),
                         clocks.DurUs(b.t_ns, end));
  ordered_json args;
  args["id"] = b.id;
  args["tensor"] = Ascii(b.tensor());
  args["global_shape"] = b.global_shape();
  args["dtype"] = Ascii(b.dtype());
  args["src_placements"] = AsciiArray(b.src_placements());
  args["dst_placements"] = AsciiArray(b.dst_placements());
  args["src_order"] = Ascii(b.src_order());
  args["dst_order"] = Ascii(b.dst_order());
  args["planner"] = Ascii(b.planner());
  args["planner_reason"] = Ascii(b.planner_reason());
  args["notation"] = Ascii(b.notation());
  args["notation_unoptimized"] = Ascii(b.notation_unoptimized());
  args["plan_steps"] = b.optimized_plan().size();
  args["skipped_merges"] = b.skipped_merges().size();
  args["predicted_cost_us"] = b.cost_us();
  args["outcome"] = !r.end ? "incomplete" : r.end->ok ? "ok" : "failed";
  if (r.end && !r.end->ok) args["error"] = Ascii(r.end->error);
  // 64-bit checksums as hex strings: JSON numbers above 2^53 lose precision in viewers.
  auto hex = [](uint64_t v) {
    char buf[19];
    std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
    return std::string(buf);
  };
  if (r.end && r.end->checksum_before()) args["checksum_before"] = hex(*r.end->checksum_before());
  if (r.end && r.end->checksum_after()) args["checksum_after"] = hex(*r.end->checksum_after());
  e["args"] = args;
  emit(std::move(e));

  for (const StepRecord& s : r.steps) {
    const StepBegin& sb = s.begin;
    int64_t send = s.end ? s.end->t_ns : sb.t_ns;
    ordered_json x =
        Slice("step " + std::to_string(sb.step) + " " + Ascii(sb.src) + "->" + Ascii(sb.dst) + " " +
                  Ascii(sb.comm) + " on mesh dims " + Ints(sb.mesh_dims),
              "step", r.rank, kChromeStepTid, clocks.Us(r.rank, sb.t_ns), clocks.DurUs(sb.t_ns, send));
    ordered_json a;
    a["redistribute_id"] = sb.redistribute_id;
    a["step"] = sb.step;
    a["mesh_dims"] = sb.mesh_dims;
    a["src"] = Ascii(sb.src);
    a["dst"] = Ascii(sb.dst);
    a["comm"] = Ascii(sb.comm);
    a["logical_shape"] = sb.logical_shape;
    a["local_shape_before"] = sb.local_shape_before;
    a["global_offset_before"] = sb.global_offset_before;
    if (s.end) {
      a["local_shape_after"] = s.end->local_shape_after;
      a["global_offset_after"] = s.end->global_offset_after;
    }
    x["args"] = a;
    emit(std::move(x));
  }
}

// An op on its rank's first lane, where the redistributes it caused (which run inside it) nest.
void AddOp(const OpRecord& r, const Clocks& clocks, const Sink& emit) {
  const Op& op = r.op;
  std::string name = "op #" + std::to_string(op.id) + " " + Ascii(op.name());
  ordered_json e = Slice(name, "op", r.rank, kChromeRedistributeTid, clocks.Us(r.rank, op.t_ns),
                         clocks.DurUs(op.t_ns, op.end_ns));
  ordered_json args;
  args["id"] = op.id;
  args["step"] = op.step;
  args["name"] = Ascii(op.name());
  args["args"] = Ascii(op.args());
  ordered_json inputs = ordered_json::array();
  for (const OpInput& in : op.inputs()) {
    ordered_json i;
    i["tensor"] = Ascii(in.tensor);
    i["placements"] = Placements(in.placements);
    i["required"] = Placements(in.required);
    i["redistribute_id"] = in.redistribute_id;
    inputs.push_back(std::move(i));
  }
  args["inputs"] = std::move(inputs);
  ordered_json outputs = ordered_json::array();
  for (const OpOutput& out : op.outputs()) {
    ordered_json o;
    o["tensor"] = Ascii(out.tensor);
    o["requested"] = out.requested;
    o["placements"] = Placements(out.placements);
    o["global_shape"] = out.global_shape;
    o["local_shape"] = out.local_shape;
    outputs.push_back(std::move(o));
  }
  args["outputs"] = std::move(outputs);
  args["candidates"] = op.candidates().size();
  args["chosen"] = op.chosen();
  if (op.chosen() >= 0 && op.chosen() < static_cast<int64_t>(op.candidates().size())) {
    const OpStrategy& s = op.candidates()[static_cast<size_t>(op.chosen())];
    ordered_json ins = ordered_json::array(), outs = ordered_json::array();
    for (const auto& p : s.inputs) ins.push_back(Placements(p));
    for (const auto& p : s.outputs) outs.push_back(Placements(p));
    args["chosen_inputs"] = std::move(ins);
    args["chosen_outputs"] = std::move(outs);
    // +inf (an impossible strategy) is not JSON; the trace format's -1 stands for it here too.
    args["chosen_cost_us"] = std::isfinite(s.cost_us) ? s.cost_us : -1.0;
  }
  args["rule"] = Ascii(op.rule());
  if (!op.note().empty()) args["note"] = Ascii(op.note());
  args["redistributes"] = r.redistribute_ids.ToVector();
  args["outcome"] = op.ok() ? "ok" : "failed";
  if (!op.ok()) args["error"] = Ascii(op.error());
  e["args"] = std::move(args);
  emit(std::move(e));
}

ordered_json CollectiveSlice(int64_t rank, const Collective& c, const Clocks& clocks) {
  ordered_json x = Slice(Ascii(c.kind()), "collective", rank, kChromeCollectiveTid,
                         clocks.Us(rank, c.start_ns), clocks.DurUs(c.start_ns, c.end_ns));
  ordered_json a;
  a["redistribute_id"] = c.redistribute_id;
  a["step"] = c.step();
  a["kind"] = Ascii(c.kind());
  a["mesh_dims"] = c.mesh_dims();
  // A slice lists a group and its per-peer bytes in full up to kChromeListedPeers members; past
  // that (a trace may claim a group of 2^20 ranks in a few bytes) the first members, the size and
  // the per-peer count when it is one number: the export grows with the events, not the world.
  const bool listed = c.group().size() <= kChromeListedPeers;
  auto head = [](const std::vector<int64_t>& v) {
    return std::vector<int64_t>(
        v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size(), kChromeListedPeers)));
  };
  a["group"] = listed ? c.group().get() : head(c.group());
  if (!listed) a["group_size"] = c.group().size();
  a["dtype"] = Ascii(c.dtype());
  for (auto [name, bytes] :
       {std::pair{"bytes_sent", &c.bytes_sent()}, std::pair{"bytes_recv", &c.bytes_recv()}}) {
    int64_t per_peer = 0;
    if (listed || bytes->size() <= kChromeListedPeers)
      a[name] = bytes->get();
    else if (detail::UniformBytes(c.group(), *bytes, rank, per_peer))
      a[std::string(name) + "_per_peer"] = per_peer;
    else
      a[name] = head(*bytes);
  }
  a["bytes_sent_total"] = detail::SumBytes(c.bytes_sent());
  a["bytes_recv_total"] = detail::SumBytes(c.bytes_recv());
  a["negotiated"] = c.negotiated();
  if (c.op_id >= 0) a["op_id"] = c.op_id;
  x["args"] = a;
  return x;
}

// The flow point sits mid-slice so it binds to that slice whatever the viewer's boundary rule.
double MidUs(int64_t rank, const Collective& c, const Clocks& clocks) {
  return clocks.Us(rank, c.start_ns) + clocks.DurUs(c.start_ns, c.end_ns) / 2.0;
}

// Every event of the export in its order, each handed to `emit` as it is made.
void EmitEvents(const Model& model, const Clocks& clocks, const Sink& emit) {
  for (const RankTrace& rt : model.ranks) {
    const Header& h = rt.header;
    std::string name = "rank " + std::to_string(h.rank) + " " + CoordText(h.rank, h.mesh_shape) + " " +
                       Ascii(h.backend) + (h.host.empty() ? "" : "@" + Ascii(h.host));
    emit(Meta("process_name", h.rank, std::nullopt, name));
    emit(Meta("thread_name", h.rank, kChromeRedistributeTid,
              model.ops.empty() ? "redistributes" : "ops and redistributes"));
    emit(Meta("thread_name", h.rank, kChromeStepTid, "plan steps"));
    emit(Meta("thread_name", h.rank, kChromeCollectiveTid, "collectives"));
  }
  // Ops first: a viewer that keeps input order for equal timestamps then nests the redistribute
  // an op began at its own start time inside the op.
  for (const OpRecord& r : model.ops) AddOp(r, clocks, emit);
  for (const RedistributeRecord& r : model.redistributes) AddRedistribute(r, clocks, emit);
  for (const RankTrace& rt : model.ranks) {
    for (const Collective& c : rt.events.Of<Collective>()) emit(CollectiveSlice(rt.header.rank, c, clocks));
  }
  // Flow arrows: call n of a group on its lowest rank -> call n on every other member that issued
  // the same kind for the same redistribute step (the pairing `shardscope check` uses).
  int64_t next_id = 1;
  for (const detail::GroupCalls& g : detail::GroupCollectives(model)) {
    size_t longest = 0;
    for (const auto& [rank, calls] : g.calls) longest = std::max(longest, calls.size());
    for (size_t n = 0; n < longest; ++n) {
      int64_t src_rank = -1;
      const Collective* src = nullptr;
      for (const auto& [rank, calls] : g.calls) {
        if (calls.size() <= n) continue;
        const Collective* c = calls[n];
        if (src == nullptr) {
          src = c;
          src_rank = rank;
          continue;
        }
        if (c->kind() != src->kind() || c->redistribute_id != src->redistribute_id ||
            c->step() != src->step() || c->op_id != src->op_id)
          continue;
        const int64_t id = next_id++;
        // A flow arrow from the source's slice ("s") to this rank's ("f", bound to its enclosing slice).
        auto flow = [&](const char* ph, int64_t pid, const Collective& at) {
          ordered_json e;
          e["ph"] = ph;
          if (std::string_view(ph) == "f") e["bp"] = "e";
          e["id"] = id;
          e["cat"] = "flow";
          e["name"] = "collective";
          e["pid"] = pid;
          e["tid"] = kChromeCollectiveTid;
          e["ts"] = MidUs(pid, at, clocks);
          emit(std::move(e));
        };
        flow("s", src_rank, *src);
        flow("f", rank, *c);
      }
    }
  }
}

ordered_json Metadata(const Model& model, const Clocks& clocks) {
  ordered_json meta;
  meta["source"] = "shardscope";
  meta["world"] = model.world;
  if (!model.ranks.empty()) {
    const Header& h = model.ranks.front().header;
    meta["format_version"] = h.version;
    meta["mesh_shape"] = h.mesh_shape;
    meta["mesh_dim_names"] = AsciiArray(h.mesh_dim_names);
    meta["backend"] = Ascii(h.backend);
  }
  meta["time_origin_ns"] = static_cast<double>(clocks.OriginNs());
  return meta;
}

// As the whole document's dump writes them: compact, ASCII (\uXXXX), bytes that are not UTF-8
// replaced.
void Dump(const ordered_json& j, std::string& out) {
  out += j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

}  // namespace

ordered_json ChromeTraceJson(const Model& model) {
  Clocks clocks(model);
  ordered_json events = ordered_json::array();
  EmitEvents(model, clocks, [&](ordered_json&& e) { events.push_back(std::move(e)); });
  ordered_json out;
  out["traceEvents"] = std::move(events);
  out["metadata"] = Metadata(model, clocks);
  return out;
}

size_t WriteChromeTrace(const Model& model, const std::function<void(std::string_view)>& write) {
  constexpr size_t kChunk = size_t{1} << 20;
  Clocks clocks(model);
  std::string buffer = "{\"traceEvents\":[";
  buffer.reserve(kChunk + (size_t{64} << 10));
  size_t count = 0;
  EmitEvents(model, clocks, [&](ordered_json&& e) {
    if (count++ > 0) buffer += ',';
    Dump(e, buffer);
    if (buffer.size() >= kChunk) {
      write(buffer);
      buffer.clear();
    }
  });
  buffer += "],\"metadata\":";
  Dump(Metadata(model, clocks), buffer);
  buffer += '}';
  write(buffer);
  return count;
}

}  // namespace shardscope::trace
