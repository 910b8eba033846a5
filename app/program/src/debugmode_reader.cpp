// Reads a DebugMode dump line by line. Nesting is indentation (2 spaces plus 2 per call depth):
// a line belongs to the nearest earlier line with less indentation. save_logs JSON is turned into
// the same lines (one per call, indented by call_depth) and read by the same code.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "debugmode_internal.hpp"
#include "shardscope/error.hpp"

namespace shardscope::program {
namespace {

using detail::FindTopLevel;
using detail::SplitTopLevel;
using detail::Trim;

// PyTorch's functional collectives and their argument positions (reference 1.1).
struct CollectiveForm {
  std::string_view op;
  std::string_view kind;
  int size_arg;  ///< index of GROUP_SIZE, -1 when the call does not carry it
  int name_arg;  ///< index of GROUP_NAME
};
constexpr CollectiveForm kCollectives[] = {
    {"all_gather_into_tensor", "all_gather", 1, 2},
    {"reduce_scatter_tensor", "reduce_scatter", 2, 3},
    {"all_reduce", "all_reduce", -1, 2},
    {"shard_dim_alltoall", "all_to_all", -1, 3},
    {"all_to_all_single", "all_to_all", -1, 3},
};

// Calls that carry no redistribute information: waits and autograd wrappers.
bool IsIgnoredCollective(std::string_view op) {
  return op == "wait_tensor" || op == "_wrap_tensor_autograd" || op == "broadcast";
}

class Reader {
 public:
  explicit Reader(DebugModeDump& dump) : d_(dump) {}

  void Line(int64_t line_no, std::string_view raw) {
    size_t indent = 0;
    while (indent < raw.size() && (raw[indent] == ' ' || raw[indent] == '\t')) ++indent;
    std::string_view body = Trim(raw);
    if (body.empty()) return;
    if (body.front() == '#') return;  // stack-trace and hash comments: no call, nothing closes
    // "-> output:" follows its op's children at the op's own indentation or deeper.
    Pop(body.substr(0, 9) == "-> output" ? indent + 1 : indent);
    size_t comment = FindTopLevel(body, "  # ");
    if (comment != std::string_view::npos) body = Trim(body.substr(0, comment));
    try {
      Dispatch(line_no, indent, body);
    } catch (const Error& e) {
      Warn(line_no, e.what());
    }
  }

  void Warn(int64_t line, std::string message) { d_.warnings.push_back({line, std::move(message)}); }

 private:
  struct Open {
    size_t indent;
    int64_t index;
  };

  void Pop(size_t indent) {
    auto pop = [&](std::vector<Open>& stack) {
      while (!stack.empty() && stack.back().indent >= indent) stack.pop_back();
    };
    pop(ops_);
    pop(redistributes_);
    pop(outer_);
    while (!modules_.empty() && modules_.back().first >= indent) modules_.pop_back();
  }

  std::string Module() const { return modules_.empty() ? "" : modules_.back().second; }

  void Dispatch(int64_t line, size_t indent, std::string_view body) {
    if (body.front() == '[') {
      size_t close = body.find(']');
      std::string_view tag = close == std::string_view::npos ? body : body.substr(0, close + 1);
      if (tag == "[nn.Mod]") {
        modules_.push_back({indent, std::string(Trim(body.substr(close + 1)))});
        return;
      }
      if (tag == "[annotate]" || tag == "[record function]" || tag == "[node]" || tag == "[triton]") return;
      Warn(line, "unknown marker " + std::string(tag) + "; line skipped");
      return;
    }
    if (body.substr(0, 9) == "-> output") {
      OutputPlacements(line, body);
      return;
    }
    if (body.substr(0, 18) == "redistribute_input") {
      Redistribute(line, indent, body.substr(18));
      return;
    }
    std::string_view outputs;
    size_t arrow = FindTopLevel(body, "  ->  ");
    if (arrow != std::string_view::npos) {
      outputs = Trim(body.substr(arrow + 6));
      body = Trim(body.substr(0, arrow));
    }
    auto call = detail::SplitCall(body);
    if (!call) {
      Warn(line, "not a call, redistribute or marker line; skipped");
      return;
    }
    std::string_view name = call->name;
    for (std::string_view ns : {"_c10d_functional::", "_dtensor::", "c10d_functional::"}) {
      if (name.substr(0, ns.size()) == ns) {
        Collective(line, indent, name.substr(ns.size()), call->args);
        return;
      }
    }
    Op(line, indent, name, call->args, outputs);
  }

  // "name=value" outside brackets, before any ':' (a tensor "dt: f32[..]{a=x}" is not one).
  static bool IsKeyword(std::string_view a) {
    size_t eq = FindTopLevel(a, "=");
    return eq != std::string_view::npos && eq > 0 && a.find(':') > eq;
  }

  // Flattens an op's arguments the way PyTorch flattens args_schema (lists expand in place);
  // keyword arguments are not part of it.
  static void FlattenArgs(std::string_view args, std::vector<std::string_view>& flat,
                          std::vector<std::string_view>& kwargs) {
    for (std::string_view a : SplitTopLevel(args, ',')) {
      if (!a.empty() && a.front() == '[' && a.back() == ']') {
        for (std::string_view item : SplitTopLevel(a.substr(1, a.size() - 2), ',')) flat.push_back(item);
        continue;
      }
      (IsKeyword(a) ? kwargs : flat).push_back(a);
    }
  }

  void Op(int64_t line, size_t indent, std::string_view name, std::string_view args,
          std::string_view outputs) {
    std::vector<std::string_view> flat, kwargs;
    FlattenArgs(args, flat, kwargs);
    DumpOp op;
    op.line = line;
    op.depth = static_cast<int>(indent / 2);
    op.name = std::string(name);
    op.module = Module();
    bool any_dtensor = false;
    std::vector<int64_t> arg_to_input;
    std::string others;
    for (std::string_view a : flat) {
      auto t = ParseDumpTensor(a);
      arg_to_input.push_back(t ? static_cast<int64_t>(op.inputs.size()) : -1);
      if (t) {
        any_dtensor = any_dtensor || t->IsDTensor();
        NotePrintedMesh(line, *t);
        op.inputs.push_back(std::move(*t));
      } else {
        others += (others.empty() ? "" : ", ") + std::string(a);
      }
    }
    for (std::string_view k : kwargs) others += (others.empty() ? "" : ", ") + std::string(k);
    if (!any_dtensor) return;  // a local op (aten::mm on shards, aten::chunk ...): nothing to import
    op.args = others;
    for (std::string_view a : SplitTopLevel(args, ',')) {
      (IsKeyword(a) ? op.keyword_args : op.positional_args).emplace_back(a);
    }
    if (!outputs.empty()) {
      std::string_view list = outputs;
      if (list.front() == '(' && list.back() == ')') list = list.substr(1, list.size() - 2);
      if (list.front() == '[' && list.back() == ']') list = list.substr(1, list.size() - 2);
      for (std::string_view o : SplitTopLevel(list, ',')) {
        if (auto t = ParseDumpTensor(o)) op.outputs.push_back(std::move(*t));
      }
    }
    d_.ops.push_back(std::move(op));
    arg_maps_.push_back(std::move(arg_to_input));
    ops_.push_back({indent, static_cast<int64_t>(d_.ops.size()) - 1});
  }

  void NotePrintedMesh(int64_t line, const DumpTensor& t) {
    if (t.printed_mesh.empty()) return;
    if (d_.printed_mesh.empty()) {
      d_.printed_mesh = t.printed_mesh;
      d_.printed_mesh_line = line;
    }
  }

  void OutputPlacements(int64_t line, std::string_view body) {
    size_t colon = body.find(':');
    if (colon == std::string_view::npos || ops_.empty()) {
      Warn(line, "'-> output' line outside an op; skipped");
      return;
    }
    DumpOp& op = d_.ops[static_cast<size_t>(ops_.back().index)];
    std::string_view list = Trim(body.substr(colon + 1));
    // A tuple of several outputs' placements: ('R', 'R'); one output: S(0) or S(0)R.
    if (list.size() >= 2 && list.front() == '(' && list.back() == ')' &&
        list.find('\'') != std::string_view::npos) {
      for (std::string_view o : SplitTopLevel(list.substr(1, list.size() - 2), ',')) {
        op.output_placements.emplace_back(detail::Unquote(o));
      }
    } else {
      op.output_placements.emplace_back(list);
    }
  }

  static void SetPlacements(std::string_view text, engine::Placements& out,
                            std::optional<engine::ShardOrder>& order, std::string& concat) {
    engine::PlacementsWithOrder p = engine::ParsePlacementsWithOrder(text, "placements");
    out = std::move(p.placements);
    order = std::move(p.order);
    concat = detail::ConcatText(out, order);
  }

  // "(ARG, SRC -> DST)", "(ARG, [SRC], [DST])", "(t: f32[1, 32], trace: S(0)->R)" or
  // "(t: f32[1, 32], [S(0)] -> [R])", after an optional " [implicit]" / " [explicit]".
  void Redistribute(int64_t line, size_t indent, std::string_view rest) {
    rest = Trim(rest);
    bool is_explicit = false, annotated = false;
    if (rest.substr(0, 10) == "[explicit]") {
      is_explicit = annotated = true;
      rest = Trim(rest.substr(10));
    } else if (rest.substr(0, 10) == "[implicit]") {
      annotated = true;
      rest = Trim(rest.substr(10));
    }
    if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')') {
      Warn(line, "redistribute_input without an argument list; skipped");
      return;
    }
    std::vector<std::string_view> args = SplitTopLevel(rest.substr(1, rest.size() - 2), ',');
    if (args.size() < 2) {
      Warn(line, "redistribute_input with " + std::to_string(args.size()) + " arguments; skipped");
      return;
    }
    int64_t arg_index = 0;
    if (detail::ParseInt64(args[0], arg_index)) {
      Outer(line, indent, is_explicit, arg_index, args);
      return;
    }
    auto local = ParseDumpTensor(args[0]);
    if (!local) {
      Warn(line,
           "redistribute_input: '" + std::string(args[0]) + "' is neither an argument index nor a tensor");
      return;
    }
    // Inner line: merge into the enclosing outer record, or start an explicit one.
    DumpRedistribute* r = nullptr;
    if (!outer_.empty() && outer_.back().index == static_cast<int64_t>(d_.redistributes.size()) - 1 &&
        !d_.redistributes.back().has_local_shape && !d_.redistributes.back().pytorch_trace) {
      r = &d_.redistributes.back();
    }
    if (r == nullptr) {
      r = &NewRedistribute(line, indent);
      // Without an outer line this is a user's own redistribute unless marked [implicit].
      r->explicit_call = !(annotated && !is_explicit);
      r->dtype = local->dtype;
    }
    r->local_shape = local->shape;
    r->has_local_shape = true;
    if (r->dtype.empty()) r->dtype = local->dtype;
    std::string_view how = Trim(args[1]);
    if (how.substr(0, 6) == "trace:") {
      std::string_view notation = Trim(how.substr(6));
      NotationPlan plan = ParseNotation(notation, "trace");
      if (r->src.empty()) {
        r->src = plan.states.front().placements;
        r->src_order = plan.states.front().order;
      }
      if (r->dst.empty()) {
        r->dst = plan.states.back().placements;
        r->dst_order = plan.states.back().order;
      }
      // The notation's end states carry the orders even when the outer line printed none (not
      // for _StridedShard placements, whose order the split factors encode).
      auto strided = [](const engine::Placements& ps) {
        return std::any_of(ps.begin(), ps.end(),
                           [](const engine::Placement& p) { return p.IsStridedShard(); });
      };
      if (!r->src_order && !strided(r->src)) r->src_order = plan.states.front().order;
      if (!r->dst_order && !strided(r->dst)) r->dst_order = plan.states.back().order;
      r->pytorch_trace = NormalizeNotation(notation);
    } else if (args.size() == 2 && FindTopLevel(how, "->") != std::string_view::npos) {
      size_t arrow = FindTopLevel(how, "->");
      if (r->src.empty()) SetPlacements(how.substr(0, arrow), r->src, r->src_order, r->src_text);
      if (r->dst.empty()) SetPlacements(how.substr(arrow + 2), r->dst, r->dst_order, r->dst_text);
    } else {
      Warn(line,
           "redistribute_input: cannot read '" + std::string(how) + "' as 'trace: ...' or 'SRC -> DST'");
    }
    r->src_text = detail::ConcatText(r->src, r->src_order);
    r->dst_text = detail::ConcatText(r->dst, r->dst_order);
    redistributes_.push_back({indent, static_cast<int64_t>(d_.redistributes.size()) - 1});
  }

  // PyTorch prints plain "P" for Partial(sum) in older versions; compare in the newer form.
  static std::string NormalizeNotation(std::string_view notation) {
    std::string out;
    for (size_t i = 0; i < notation.size(); ++i) {
      out += notation[i];
      bool head = notation[i] == 'P' && (i == 0 || notation[i - 1] != '_');
      if (head && (i + 1 == notation.size() || notation[i + 1] != '(')) out += "(sum)";
    }
    return out;
  }

  DumpRedistribute& NewRedistribute(int64_t line, size_t indent) {
    (void)indent;
    DumpRedistribute r;
    r.line = line;
    r.module = Module();
    if (!ops_.empty()) {
      r.op = ops_.back().index;
      d_.ops[static_cast<size_t>(r.op)].redistributes.push_back(
          static_cast<int64_t>(d_.redistributes.size()));
    }
    d_.redistributes.push_back(std::move(r));
    return d_.redistributes.back();
  }

  void Outer(int64_t line, size_t indent, bool is_explicit, int64_t arg_index,
             const std::vector<std::string_view>& args) {
    DumpRedistribute& r = NewRedistribute(line, indent);
    r.arg_index = arg_index;
    r.explicit_call = is_explicit;
    if (args.size() == 3) {  // old: (1, [S(0)], [R])
      SetPlacements(args[1], r.src, r.src_order, r.src_text);
      SetPlacements(args[2], r.dst, r.dst_order, r.dst_text);
    } else {
      size_t arrow = FindTopLevel(args[1], "->");
      if (arrow == std::string_view::npos) {
        Warn(line, "redistribute_input: no 'SRC -> DST' in '" + std::string(args[1]) + "'");
      } else {
        SetPlacements(args[1].substr(0, arrow), r.src, r.src_order, r.src_text);
        SetPlacements(args[1].substr(arrow + 2), r.dst, r.dst_order, r.dst_text);
      }
    }
    if (r.op >= 0) {
      const DumpOp& op = d_.ops[static_cast<size_t>(r.op)];
      const auto& map = arg_maps_[static_cast<size_t>(r.op)];
      if (arg_index >= 0 && arg_index < static_cast<int64_t>(map.size()) &&
          map[static_cast<size_t>(arg_index)] >= 0) {
        r.input = map[static_cast<size_t>(arg_index)];
        const DumpTensor& t = op.inputs[static_cast<size_t>(r.input)];
        if (t.IsDTensor()) {
          r.global_shape = t.shape;
          r.has_global_shape = true;
          r.dtype = t.dtype;
          if (t.order && !r.src_order) {
            r.src_order = t.order;
            r.src_text = detail::ConcatText(r.src, r.src_order);
          }
        }
      } else {
        Warn(line, "redistribute_input: argument " + std::to_string(arg_index) + " of " + op.name +
                       " (line " + std::to_string(op.line) + ") is not a DTensor");
      }
    }
    int64_t index = static_cast<int64_t>(d_.redistributes.size()) - 1;
    outer_.push_back({indent, index});
    redistributes_.push_back({indent, index});
  }

  void Collective(int64_t line, size_t indent, std::string_view op, std::string_view args) {
    (void)indent;
    if (IsIgnoredCollective(op)) return;
    const CollectiveForm* form = nullptr;
    for (const auto& f : kCollectives) {
      if (f.op == op) form = &f;
    }
    if (form == nullptr) {
      Warn(line, "unknown collective '" + std::string(op) + "'; not attributed");
      return;
    }
    std::vector<std::string_view> a = SplitTopLevel(args, ',');
    DumpCollective c;
    c.line = line;
    c.kind = std::string(form->kind);
    if (static_cast<int>(a.size()) <= form->name_arg) {
      Warn(line, std::string(op) + " has " + std::to_string(a.size()) + " arguments, expected at least " +
                     std::to_string(form->name_arg + 1));
      return;
    }
    if (form->size_arg >= 0) {
      int64_t size = 0;
      if (!detail::ParseInt64(a[static_cast<size_t>(form->size_arg)], size) || size < 1 ||
          size > (int64_t{1} << 20)) {
        Warn(line, std::string(op) + ": group size '" + std::string(a[static_cast<size_t>(form->size_arg)]) +
                       "' is not a positive integer");
        return;
      }
      c.group_size = size;
    }
    c.group_name = std::string(detail::Unquote(a[static_cast<size_t>(form->name_arg)]));
    if (redistributes_.empty()) {
      Warn(line, c.kind + " outside any redistribute_input (an op's own communication); not attributed");
      return;
    }
    d_.redistributes[static_cast<size_t>(redistributes_.back().index)].collectives.push_back(std::move(c));
  }

  DebugModeDump& d_;
  std::vector<Open> ops_;
  std::vector<Open> redistributes_;
  std::vector<Open> outer_;
  std::vector<std::pair<size_t, std::string>> modules_;
  std::vector<std::vector<int64_t>> arg_maps_;  ///< per op: flat argument -> input index or -1
};

// ---- save_logs JSON -> lines ----

constexpr int kMaxJsonNesting = 64;

// Rejects nesting deeper than kMaxJsonNesting before the recursive JSON parser sees the text.
bool NestingWithin(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    }
    if (c == ']' || c == '}') --depth;
  }
  return true;
}

// Renders a tagged value of save_logs ({"type": "scalar", "value": 3}, tuples, lists, dicts) in
// the dump's text form; plain strings are already text.
std::string Render(const nlohmann::json& v, bool top = false) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "None";
  if (v.is_array()) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + Render(x);
    return top ? s : "[" + s + "]";
  }
  if (v.is_object()) {
    std::string type = v.contains("type") && v["type"].is_string() ? v["type"].get<std::string>() : "";
    if ((type == "scalar" || type == "nonfinite_float") && v.contains("value")) return Render(v["value"]);
    if ((type == "tuple" || type == "list") && v.contains("items") && v["items"].is_array()) {
      std::string s;
      for (const auto& x : v["items"]) s += (s.empty() ? "" : ", ") + Render(x);
      return top ? s : (type == "list" ? "[" + s + "]" : "(" + s + ")");
    }
    if (type == "dict" && v.contains("items") && v["items"].is_array()) {
      std::string s;
      for (const auto& kv : v["items"]) {
        if (kv.is_array() && kv.size() == 2)
          s += (s.empty() ? "" : ", ") + Render(kv[0]) + "=" + Render(kv[1]);
      }
      return s;
    }
    return v.dump();
  }
  return v.dump();
}

std::string Str(const nlohmann::json& call, const char* key) {
  auto it = call.find(key);
  if (it == call.end() || it->is_null()) return "";
  return Render(*it, true);
}

bool Flag(const nlohmann::json& call, const char* key) {
  auto it = call.find(key);
  return it != call.end() && it->is_boolean() && it->get<bool>();
}

// One save_logs call as the text line debug_string() would print for it; "" when it has none.
std::string CallToLine(const nlohmann::json& call, std::string& problem) {
  if (!call.is_object()) {
    problem = "call is not a JSON object";
    return "";
  }
  std::string type = Str(call, "type");
  if (type == "op") {
    std::string args = Str(call, "args_str");
    std::string kwargs = Str(call, "kwargs_str");
    if (!kwargs.empty()) args += (args.empty() ? "" : ", ") + kwargs;
    std::string line = Str(call, "op_name") + "(" + args + ")";
    std::string out = Str(call, "output_str");
    if (!out.empty()) line += "  ->  " + out;
    return line;
  }
  if (type == "redistribute") {
    std::string tag = Flag(call, "is_explicit") ? " [explicit] " : " [implicit] ";
    if (Flag(call, "is_outer_call")) {
      return "redistribute_input" + tag + "(" + Str(call, "arg_str") + ", " + Str(call, "src_placement_str") +
             " -> " + Str(call, "dst_placement_str") + ")";
    }
    std::string trace = Str(call, "transform_info_str");
    if (!trace.empty())
      return "redistribute_input" + tag + "(" + Str(call, "arg_str") + ", trace: " + trace + ")";
    return "redistribute_input" + tag + "(" + Str(call, "arg_str") + ", " + Str(call, "src_placement_str") +
           " -> " + Str(call, "dst_placement_str") + ")";
  }
  if (type == "output_placement") return "-> output: " + Str(call, "placements_str");
  if (type == "annotate") return "[annotate] " + Str(call, "tag");
  if (type == "triton_kernel") return "[triton] " + Str(call, "kernel_name");
  if (type == "nn_module" || type == "nn.Module") return "[nn.Mod] " + Str(call, "module_name");
  std::string log = Str(call, "log");
  if (!log.empty()) return log;
  problem = "call type '" + type + "' is not known";
  return "";
}

void ReadSaveLogs(std::string_view text, DebugModeDump& dump, Reader& reader) {
  if (!NestingWithin(text, kMaxJsonNesting)) {
    throw InvalidInput("save_logs JSON nests deeper than " + std::to_string(kMaxJsonNesting) + " levels");
  }
  nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) throw InvalidInput("the dump starts with '{' but is not valid JSON");
  if (!doc.is_object() || !doc.contains("logs") || !doc["logs"].is_array()) {
    throw InvalidInput("the JSON has no \"logs\" array (expected DebugMode.save_logs output)");
  }
  const auto& logs = doc["logs"];
  for (size_t i = 0; i < logs.size(); ++i) {
    const auto& call = logs[i];
    int64_t line = static_cast<int64_t>(i) + 1;
    std::string problem;
    std::string text_line;
    try {
      text_line = CallToLine(call, problem);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    if (text_line.empty()) {
      reader.Warn(line, problem.empty() ? "empty call" : problem);
      continue;
    }
    int64_t depth = 0;
    if (call.contains("call_depth") && call["call_depth"].is_number_integer()) {
      depth = std::clamp<int64_t>(call["call_depth"].get<int64_t>(), 0, 4096);
    }
    reader.Line(line, std::string(static_cast<size_t>(2 + 2 * depth), ' ') + text_line);
  }
  dump.lines = static_cast<int64_t>(logs.size());
}

}  // namespace

DebugModeDump ParseDebugModeDump(std::string_view text) {
  DebugModeDump dump;
  Reader reader(dump);
  std::string_view start = Trim(text);
  if (!start.empty() && start.front() == '{') {
    dump.format = "save_logs";
    ReadSaveLogs(text, dump, reader);
  } else {
    dump.format = "text";
    int64_t line = 0;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      std::string_view l = text.substr(pos, end - pos);
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      reader.Line(++line, l);
      pos = end + 1;
    }
    dump.lines = line;
  }
  if (dump.ops.empty() && dump.redistributes.empty()) {
    throw InvalidInput("no DTensor content: no op on a DTensor ('dt: ...') and no redistribute_input in " +
                       std::to_string(dump.lines) + (dump.format == "text" ? " lines" : " calls"));
  }
  return dump;
}

}  // namespace shardscope::program
