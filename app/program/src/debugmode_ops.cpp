// The aten ops of a DebugMode dump that shardscope implements with exactly PyTorch's semantics
// (the table in docs/import.md), and the judgement of one op: shardscope's sharding
// propagation given the placements PyTorch's inputs had when the op ran, compared with the
// strategy PyTorch took (its recorded redistributes) and its recorded output placements.
#include "debugmode_ops.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "debugmode_internal.hpp"
#include "shardscope/error.hpp"

namespace shardscope::program {
namespace {

using detail::SplitTopLevel;
using detail::Trim;

bool IsTensor(std::string_view arg) { return ParseDumpTensor(arg).has_value(); }

bool ParseIntList(std::string_view text, std::vector<int64_t>& out) {
  text = Trim(text);
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return false;
  out.clear();
  for (std::string_view item : SplitTopLevel(text.substr(1, text.size() - 2), ',')) {
    int64_t v = 0;
    if (!detail::ParseInt64(item, v)) return false;
    out.push_back(v);
  }
  return true;
}

bool ParseBool(std::string_view text, bool& out) {
  text = Trim(text);
  if (text == "True") out = true;
  if (text == "False") out = false;
  return text == "True" || text == "False";
}

bool ParseDouble(std::string_view text, double& out) {
  std::string s(Trim(text));
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// The op's keyword arguments as name -> value text.
std::map<std::string, std::string> Keywords(const DumpOp& op) {
  std::map<std::string, std::string> kw;
  for (const std::string& k : op.keyword_args) {
    size_t eq = k.find('=');
    kw[std::string(Trim(std::string_view(k).substr(0, eq)))] =
        std::string(Trim(std::string_view(k).substr(eq + 1)));
  }
  return kw;
}

// Argument `i`: positional when given, else keyword `name`, else `fallback`.
std::string Arg(const DumpOp& op, const std::map<std::string, std::string>& kw, size_t i,
                const std::string& name, const std::string& fallback) {
  if (i < op.positional_args.size()) return op.positional_args[i];
  auto it = kw.find(name);
  return it != kw.end() ? it->second : fallback;
}

struct Mapper {
  explicit Mapper(const DumpOp& dump_op) : op(dump_op), kw(Keywords(dump_op)) {}
  const DumpOp& op;
  std::map<std::string, std::string> kw;
  std::string why;
  ComputableOp out;

  // Only these keywords may be present (with the given value, "" for any parsed elsewhere).
  bool OnlyKeywords(const std::map<std::string, std::string>& allowed) {
    for (const auto& [k, v] : kw) {
      auto it = allowed.find(k);
      if (it == allowed.end() || (!it->second.empty() && it->second != v)) {
        why = "keyword argument " + k + "=" + v + " has no counterpart in shardscope's op";
        return false;
      }
    }
    return true;
  }
  // The call's tensor inputs are all of DumpOp::inputs, in order.
  bool AllInputs(size_t expected) {
    if (expected != 0 && op.inputs.size() != expected) {
      why = std::to_string(op.inputs.size()) + " tensor arguments where shardscope's op takes " +
            std::to_string(expected);
      return false;
    }
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      out.call.inputs.push_back("i" + std::to_string(i));
      out.dump_inputs.push_back(static_cast<int64_t>(i));
    }
    return true;
  }
  bool Positional(size_t max) {
    if (op.positional_args.size() <= max) return true;
    why = "more positional arguments than shardscope's op takes";
    return false;
  }
  bool Int(const std::string& text, int64_t& v, const char* what) {
    if (detail::ParseInt64(text, v)) return true;
    why = std::string(what) + " '" + text + "' is not an integer";
    return false;
  }
  bool Dims(const std::string& text, std::vector<int64_t>& dims) {
    if (ParseIntList(text, dims)) return true;
    why = "dims '" + text + "' is not a list of integers";
    return false;
  }

  bool Map(std::string_view name);
  bool Reduction(engine::OpKind kind, bool with_dims);
  bool LayerNorm();
  bool Softmax(bool internal);
  bool Transpose(bool t);
};

bool Mapper::Reduction(engine::OpKind kind, bool with_dims) {
  out.call.kind = kind;
  if (!OnlyKeywords({{"dim", ""}, {"keepdim", ""}}) || !Positional(with_dims ? 3 : 1) || !AllInputs(1))
    return false;
  // PyTorch promotes an integer sum to i64; shardscope keeps the dtype: only floats map.
  const std::string& dtype = op.inputs[0].dtype;
  if (dtype != "f32" && dtype != "f64" && dtype != "f16" && dtype != "bf16") {
    why = "PyTorch's " + op.name + " of " + dtype + " promotes the dtype; shardscope's does not";
    return false;
  }
  if (!with_dims) return true;
  std::string dims = Arg(op, kw, 1, "dim", "None");
  if (dims == "None") {
    out.call.dims.clear();
  } else if (!Dims(dims, out.call.dims)) {
    return false;
  } else if (out.call.dims.empty()) {
    why = "an empty dim list";  // PyTorch reduces over all dims then, shardscope's "dims" would too
    return false;
  }
  std::string keepdim = Arg(op, kw, 2, "keepdim", "False");
  if (!ParseBool(keepdim, out.call.keepdim)) {
    why = "keepdim '" + keepdim + "' is not True or False";
    return false;
  }
  return true;
}

// aten::layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True)
// and aten::native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd):
// only `out` is computed (PyTorch's mean/rstd keep size-1 normalized dims, shardscope's do not).
bool Mapper::LayerNorm() {
  out.call.kind = engine::OpKind::kLayerNorm;
  if (!OnlyKeywords({{"weight", ""}, {"bias", ""}, {"eps", ""}, {"cudnn_enable", ""}}) || !Positional(6))
    return false;
  if (op.inputs.empty() || !IsTensor(Arg(op, kw, 0, "input", ""))) {
    why = "no input tensor";
    return false;
  }
  std::vector<int64_t> normalized;
  if (!Dims(Arg(op, kw, 1, "normalized_shape", ""), normalized)) return false;
  const std::vector<int64_t>& shape = op.inputs[0].shape;
  if (normalized.empty() || normalized.size() > shape.size() ||
      !std::equal(normalized.begin(), normalized.end(),
                  shape.end() - static_cast<int64_t>(normalized.size()))) {
    why = "normalized_shape is not the input's trailing dims";
    return false;
  }
  out.call.normalized_ndim = static_cast<int64_t>(normalized.size());
  out.call.inputs = {"i0"};
  out.dump_inputs = {0};
  int64_t next = 1;
  for (auto [i, arg_name] : {std::pair<size_t, const char*>{2, "weight"}, {3, "bias"}}) {
    std::string a = Arg(op, kw, i, arg_name, "None");
    bool tensor = IsTensor(a);
    if (!tensor && a != "None") {
      why = std::string(arg_name) + " '" + a + "' is neither a tensor nor None";
      return false;
    }
    out.call.inputs.push_back(tensor ? "i" + std::to_string(i - 1) : "");
    out.dump_inputs.push_back(tensor ? next++ : -1);
  }
  if (next != static_cast<int64_t>(op.inputs.size())) {
    why = "tensor arguments beyond input, weight and bias";
    return false;
  }
  std::string eps = Arg(op, kw, 4, "eps", "1e-05");
  if (!ParseDouble(eps, out.call.eps)) {
    why = "eps '" + eps + "' is not a number";
    return false;
  }
  out.call.outputs = {"o0", "", ""};
  return true;
}

bool Mapper::Map(std::string_view name) {
  using K = engine::OpKind;
  auto simple = [&](K kind, size_t inputs) {
    out.call.kind = kind;
    return OnlyKeywords({}) && Positional(inputs) && AllInputs(inputs);
  };
  if (name == "aten::mm") return simple(K::kMm, 2);
  if (name == "aten::bmm") return simple(K::kBmm, 2);
  if (name == "aten::mul.Tensor") return simple(K::kMul, 2);
  if (name == "aten::add.Tensor" || name == "aten::sub.Tensor") {
    out.call.kind = name == "aten::add.Tensor" ? K::kAdd : K::kSub;
    return OnlyKeywords({{"alpha", "1"}}) && Positional(2) && AllInputs(2);
  }
  if (name == "aten::linear") {  // (input, weight, bias=None): shardscope's linear has no bias
    out.call.kind = K::kLinear;
    if (Arg(op, kw, 2, "bias", "None") != "None") {
      why = "a bias (shardscope's linear has none)";
      return false;
    }
    kw.erase("bias");
    return OnlyKeywords({}) && Positional(3) && AllInputs(2);
  }
  if (name == "aten::gelu") {
    out.call.kind = K::kGelu;
    return OnlyKeywords({{"approximate", "'none'"}}) && Positional(1) && AllInputs(1);
  }
  if (name == "aten::sum" || name == "aten::mean")
    return Reduction(name == "aten::sum" ? K::kSum : K::kMean, false);
  if (name == "aten::sum.dim_IntList" || name == "aten::mean.dim")
    return Reduction(name == "aten::sum.dim_IntList" ? K::kSum : K::kMean, true);
  if (name == "aten::_softmax" || name == "aten::softmax.int") return Softmax(name == "aten::_softmax");
  if (name == "aten::t" || name == "aten::transpose.int") return Transpose(name == "aten::t");
  if (name == "aten::permute") {
    out.call.kind = K::kPermute;
    return OnlyKeywords({}) && Positional(2) && AllInputs(1) &&
           Dims(Arg(op, kw, 1, "dims", ""), out.call.dims);
  }
  if (name == "aten::select.int") {
    out.call.kind = K::kSelect;
    return OnlyKeywords({}) && Positional(3) && AllInputs(1) &&
           Int(Arg(op, kw, 1, "dim", ""), out.call.dim, "dim") &&
           Int(Arg(op, kw, 2, "index", ""), out.call.index, "index");
  }
  if (name == "aten::cat" || name == "aten::stack") {
    out.call.kind = name == "aten::cat" ? K::kCat : K::kStack;
    std::string list = Arg(op, kw, 0, "tensors", "");
    if (list.empty() || list.front() != '[') {
      why = "the tensors are not a list";
      return false;
    }
    return OnlyKeywords({{"dim", ""}}) && Positional(2) && AllInputs(0) &&
           Int(Arg(op, kw, 1, "dim", "0"), out.call.dim, "dim");
  }
  if (name == "aten::layer_norm" || name == "aten::native_layer_norm") return LayerNorm();
  return false;
}

// aten::_softmax (`internal`: self, dim, half_to_float) or aten::softmax.int (self, dim, dtype=None).
bool Mapper::Softmax(bool internal) {
  out.call.kind = engine::OpKind::kSoftmax;
  std::string third = Arg(op, kw, 2, internal ? "half_to_float" : "dtype", internal ? "False" : "None");
  if (third != (internal ? "False" : "None")) {
    why = std::string(internal ? "half_to_float=" : "dtype=") + third + " changes the dtype";
    return false;
  }
  kw.erase(internal ? "half_to_float" : "dtype");
  return OnlyKeywords({}) && Positional(3) && AllInputs(1) &&
         Int(Arg(op, kw, 1, "dim", ""), out.call.dim, "dim");
}

// aten::t (`t`: a 2-d tensor's dims 0 and 1) or aten::transpose.int (self, dim0, dim1).
bool Mapper::Transpose(bool t) {
  out.call.kind = engine::OpKind::kTranspose;
  if (t) {
    out.call.dims = {0, 1};
    if (op.inputs.size() == 1 && op.inputs[0].shape.size() != 2) {
      why =
          "t of a " + std::to_string(op.inputs[0].shape.size()) + "-d tensor (shardscope transposes 2 dims)";
      return false;
    }
    return OnlyKeywords({}) && Positional(1) && AllInputs(1);
  }
  int64_t a = 0, b = 0;
  if (!OnlyKeywords({}) || !Positional(3) || !AllInputs(1) || !Int(Arg(op, kw, 1, "dim0", ""), a, "dim0") ||
      !Int(Arg(op, kw, 2, "dim1", ""), b, "dim1"))
    return false;
  out.call.dims = {a, b};
  return true;
}

std::string Text(const engine::Placements& p, const std::optional<engine::ShardOrder>& order) {
  return detail::ConcatText(p, order);
}

std::string Text(const engine::TensorSpec& s) { return Text(s.placements, s.shard_order); }

bool SamePlacement(const engine::TensorSpec& a, const engine::TensorSpec& b) {
  return a.placements == b.placements && a.EffectiveOrder() == b.EffectiveOrder();
}

// PyTorch's output placements as recorded: the "  ->  " DTensor outputs, else "-> output:".
std::vector<engine::PlacementsWithOrder> RecordedOutputs(const DumpOp& op) {
  std::vector<engine::PlacementsWithOrder> out;
  for (const DumpTensor& t : op.outputs) {
    if (t.IsDTensor() && t.has_placements) out.push_back({t.placements, t.order});
  }
  if (!out.empty()) return out;
  for (const std::string& text : op.output_placements) {
    try {
      out.push_back(engine::ParsePlacementsWithOrder(text, "output"));
    } catch (const Error&) {
      return {};
    }
  }
  return out;
}

}  // namespace

std::optional<ComputableOp> MapDumpOp(const DumpOp& op, std::string& why) {
  Mapper m(op);
  why.clear();
  for (const DumpTensor& t : op.inputs) {
    if (!t.IsDTensor()) {
      why = "a tensor argument that is not a DTensor";
      return std::nullopt;
    }
  }
  if (!m.Map(op.name)) {
    why = m.why;
    return std::nullopt;
  }
  if (m.out.call.outputs.empty()) m.out.call.outputs = {"o0"};
  return std::move(m.out);
}

void JudgeOp(const DebugModeDump& dump, size_t j, const engine::Mesh& mesh,
             const engine::PlanOptions& options, ImportedOp& out, std::optional<ComputableOp>& run) {
  const DumpOp& op = dump.ops[j];
  std::string why;
  std::optional<ComputableOp> mapped = MapDumpOp(op, why);
  if (!mapped) {
    out.verdict = trace::ImportVerdict::kOpaque;
    out.reason = why.empty() ? "" : op.name + " with " + why + ": not shardscope's op";
    return;
  }
  out.shardscope_op = std::string(engine::OpKindName(mapped->call.kind));
  auto not_computed = [&](const std::string& reason) {
    out.verdict = trace::ImportVerdict::kNotComputed;
    out.reason = reason;
  };
  const std::string at = "line " + std::to_string(op.line) + ": " + op.name + " ";
  // The inputs as PyTorch ran the op: after the redistributes recorded under it.
  std::vector<const engine::TensorSpec*> specs;
  for (size_t k = 0; k < mapped->dump_inputs.size(); ++k) {
    int64_t i = mapped->dump_inputs[k];
    if (i < 0) {
      mapped->inputs.emplace_back();
      continue;
    }
    const DumpTensor& t = op.inputs[static_cast<size_t>(i)];
    if (!t.has_placements) return not_computed("input " + std::to_string(i) + " has no placements");
    engine::Placements placements = t.placements;
    std::optional<engine::ShardOrder> order = t.order;
    for (int64_t ri : op.redistributes) {
      const DumpRedistribute& r = dump.redistributes[static_cast<size_t>(ri)];
      if (r.input != i || r.dst.size() != placements.size()) continue;
      placements = r.dst;
      order = r.dst_order;
    }
    try {
      engine::DType dtype = engine::ParseDType(t.dtype, "dtype");
      mapped->inputs.push_back(engine::MakeSpec(mesh, placements, order, t.shape, dtype,
                                                engine::ChunkRule::kTorch, {},
                                                at + "input " + std::to_string(i)));
    } catch (const Error& e) {
      return not_computed(e.what());
    }
    out.inputs.push_back(Text(*mapped->inputs.back()));
  }
  for (const auto& s : mapped->inputs) specs.push_back(s ? &*s : nullptr);
  engine::OpDecision decision;
  try {
    decision = engine::PropagateOp(mapped->call, specs, options.devices_per_host);
  } catch (const Error& e) {
    return not_computed(e.what());
  }
  for (size_t o = 0; o < decision.outputs.size() && o < mapped->call.outputs.size(); ++o) {
    if (mapped->call.outputs[o].empty() || !decision.outputs[o]) continue;
    out.shardscope_outputs.push_back(Text(*decision.outputs[o]));
    mapped->outputs.push_back(*decision.outputs[o]);
  }
  for (const auto& r : RecordedOutputs(op)) out.recorded_outputs.push_back(Text(r.placements, r.order));
  std::string needs;
  for (size_t k = 0; k < specs.size(); ++k) {
    if (!specs[k] || !decision.inputs[k] || SamePlacement(*specs[k], *decision.inputs[k])) continue;
    needs += (needs.empty() ? "" : ", ") + std::string("input ") + std::to_string(mapped->dump_inputs[k]) +
             " " + Text(*decision.inputs[k]) + " where PyTorch ran it on " + Text(*specs[k]);
  }
  if (!needs.empty()) {
    out.verdict = trace::ImportVerdict::kDiffers;
    out.reason = "shardscope's strategy (" + decision.rule + ") needs " + needs + "; not computed";
    return;
  }
  // Compare the outputs the dump shows with shardscope's for the same inputs (the first output
  // only for layer_norm: the others are not computed).
  const size_t compared = std::min(out.recorded_outputs.size(), out.shardscope_outputs.size());
  for (size_t o = 0; o < compared; ++o) {
    if (out.recorded_outputs[o] == out.shardscope_outputs[o]) continue;
    out.verdict = trace::ImportVerdict::kDiffers;
    out.reason = "output " + std::to_string(o) + ": PyTorch " + out.recorded_outputs[o] + ", shardscope " +
                 out.shardscope_outputs[o] + " (" + decision.rule + ")";
    break;
  }
  if (out.verdict != trace::ImportVerdict::kDiffers) out.verdict = trace::ImportVerdict::kSame;
  run = std::move(mapped);
}

namespace {

// What makes two op records the same call: the name, the arguments as printed without tensor ids,
// the placements each input was redistributed to, and the recorded outputs.
std::string CallKey(const DebugModeDump& dump, const DumpOp& op) {
  std::string key = op.name + "(";
  auto add_without_ids = [&key](const std::string& text) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '$') {
        while (i + 1 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '9') ++i;
        continue;
      }
      key += text[i];
    }
    key += ',';
  };
  for (const std::string& a : op.positional_args) add_without_ids(a);
  for (const std::string& a : op.keyword_args) add_without_ids(a);
  key += ")";
  for (int64_t ri : op.redistributes) {
    const DumpRedistribute& r = dump.redistributes[static_cast<size_t>(ri)];
    key += ";" + std::to_string(r.input) + ">" + r.dst_text;
  }
  key += "->";
  for (const DumpTensor& t : op.outputs) key += t.placements_text + ",";
  for (const std::string& t : op.output_placements) key += t + ",";
  return key;
}

}  // namespace

std::vector<const ComputableOp*> JudgeOps(const DebugModeDump& dump, const engine::Mesh& mesh,
                                          const engine::PlanOptions& options, std::vector<ImportedOp>& out,
                                          std::deque<ComputableOp>& storage) {
  std::map<std::string, size_t> first;  // call key -> the first op with it
  std::vector<const ComputableOp*> runs(dump.ops.size(), nullptr);
  out.assign(dump.ops.size(), ImportedOp{});
  for (size_t j = 0; j < dump.ops.size(); ++j) {
    auto [it, inserted] = first.emplace(CallKey(dump, dump.ops[j]), j);
    if (!inserted) {
      out[j] = out[it->second];
      runs[j] = runs[it->second];
      continue;
    }
    std::optional<ComputableOp> run;
    JudgeOp(dump, j, mesh, options, out[j], run);
    if (run) {
      storage.push_back(std::move(*run));
      runs[j] = &storage.back();
    }
  }
  return runs;
}

}  // namespace shardscope::program
