#include "shardscope/program/scenario.hpp"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "json_input.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"
#include "shardscope/printable.hpp"

namespace shardscope::program {
// The program layer speaks the engine's vocabulary (specs, placements, plans) throughout.
using namespace shardscope::engine;  // NOLINT(google-build-using-namespace)
namespace {

using nlohmann::json;

using detail::JsonLocator;
using detail::LineColumn;

class ScenarioParser {
 public:
  ScenarioParser(std::string_view text, std::string path) : text_(text), path_(std::move(path)) {}

  Scenario Parse() {
    json root = detail::ParseJsonInput(text_, path_, /*check_duplicates=*/false);
    if (!root.is_object()) Fail({}, "a scenario must be a JSON object with mesh, tensors and steps");
    if (const std::string* key = UnknownKey(root, {"mesh", "mesh_dim_names", "flatten", "tensors", "steps",
                                                   "chunking", "devices_per_host", "description", "name"})) {
      Fail({*key}, "unknown field '" + *key + "'");
    }
    // nlohmann keeps the last of two equal keys: a tensor defined twice would silently run the
    // second definition, so duplicates are refused with both positions.
    detail::RefuseDuplicateKeys(text_, path_);
    Scenario sc;
    sc.path = path_;
    const json& mesh = Require(root, {}, "mesh");
    Shape mesh_shape = IntArray(mesh, {"mesh"}, 1);
    std::vector<std::string> names;
    if (root.contains("mesh_dim_names")) names = StringArray(root["mesh_dim_names"], {"mesh_dim_names"});
    Guard({"mesh"}, [&] { sc.mesh = Mesh(mesh_shape, names); });
    if (root.contains("flatten")) {
      const json& fl = root["flatten"];
      if (fl.is_string() && fl.get<std::string>() == "all") {
        sc.mesh.RegisterAllFlattened();
      } else if (fl.is_array()) {
        for (size_t i = 0; i < fl.size(); ++i) {
          std::vector<std::string> where{"flatten", std::to_string(i)};
          std::vector<int> dims;
          if (!fl[i].is_array()) Fail(where, "expected a list of mesh dims, e.g. [0, 1]");
          for (size_t k = 0; k < fl[i].size(); ++k) {
            const json& d = fl[i][k];
            std::vector<std::string> w2 = where;
            w2.push_back(std::to_string(k));
            if (d.is_string()) {
              Guard(w2, [&] { dims.push_back(sc.mesh.DimIndex(d.get<std::string>())); });
            } else if (d.is_number_integer()) {
              dims.push_back(d.get<int>());
            } else {
              Fail(w2, "expected a mesh dim index or name");
            }
          }
          Guard(where, [&] { sc.mesh.RegisterFlattened(dims); });
        }
      } else {
        Fail({"flatten"}, "expected \"all\" or a list of mesh-dim lists, e.g. [[0, 1]]");
      }
    }
    ChunkRule chunking = ChunkRule::kTorch;
    if (root.contains("chunking")) {
      Guard({"chunking"},
            [&] { chunking = ParseChunkRule(String(root["chunking"], {"chunking"}), "chunking"); });
    }
    int devices_per_host = 8;
    if (root.contains("devices_per_host")) {
      devices_per_host = static_cast<int>(Int(root["devices_per_host"], {"devices_per_host"}));
      if (devices_per_host < 1) Fail({"devices_per_host"}, "must be >= 1");
    }

    const json& tensors = Require(root, {}, "tensors");
    if (!tensors.is_object() || tensors.empty()) Fail({"tensors"}, "expected an object of name -> tensor");
    for (auto it = tensors.begin(); it != tensors.end(); ++it) {
      sc.tensors.push_back(ParseTensor(it.key(), it.value(), sc.mesh, chunking));
    }
    const json& steps = Require(root, {}, "steps");
    if (!steps.is_array()) Fail({"steps"}, "expected a list of steps");
    std::vector<TensorSpec> current;  // every tensor's spec as the steps go (as the runner does)
    for (const auto& t : sc.tensors) current.push_back(t.spec);
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].is_object() && steps[i].contains("op")) {
        sc.steps.push_back(ParseOpStep(steps[i], i, sc, current, devices_per_host));
        continue;
      }
      sc.steps.push_back(ParseStep(steps[i], i, sc, devices_per_host));
      const ScenarioStep& step = sc.steps.back();
      const size_t ti = sc.TensorIndex(step.tensor);
      const TensorSpec src = current[ti];
      Guard({"steps", std::to_string(i), "to"}, [&] {
        current[ti] = MakeSpec(sc.mesh, step.to, step.order, src.shape, src.dtype, src.chunking,
                               step.explicit_sizes, "to");
      });
      CheckPlannable(steps[i], i, src, current[ti], step);
    }
    return sc;
  }

 private:
  // "path:line:column" of the value at `where`.
  std::string Where(const std::vector<std::string>& where) {
    JsonLocator locator(text_);
    return path_ + ":" + LineColumn(text_, locator.Find(where));
  }

  [[noreturn]] void Fail(const std::vector<std::string>& where, const std::string& message) {
    JsonLocator locator(text_);
    size_t offset = locator.Find(where);
    std::string pointer;
    for (const auto& t : where) pointer += "/" + Printable(t);
    throw InvalidInput(path_ + ":" + LineColumn(text_, offset) + ": " +
                       (pointer.empty() ? "" : pointer + ": ") + message);
  }

  // Plans the step as the run will (rank 0; PyTorch's rules do not depend on the rank), so an
  // unsupported transition (P(min) -> P(max), S(0) -> P(sum)) or a planner that cannot serve
  // the shard order is reported at the step, not at run time without a position.
  void CheckPlannable(const json& s, size_t index, const TensorSpec& src, const TensorSpec& dst,
                      const ScenarioStep& step) {
    std::vector<std::string> where{"steps", std::to_string(index), "to"};
    try {
      MakePlan(src, dst, 0, step.options);
      if (step.backward) MakePlan(dst, BackwardTargetSpec(src, dst), 0, step.options);
    } catch (const Error& e) {
      std::string message = e.what();
      // The engine names the CLI flag; in a file the setting is the step's "planner" field.
      constexpr std::string_view kFlag = "--planner greedy: ";
      if (message.rfind(kFlag, 0) == 0) {
        message = "planner \"greedy\": " + message.substr(kFlag.size());
        if (s.contains("planner")) where.back() = "planner";
      }
      Fail(where, message);
    }
  }

  // Names are printed in tables, traces and the GUI: control characters (a newline, an
  // escape sequence) would forge lines or drive the terminal, so they are refused here.
  void CheckName(const std::string& name, const std::vector<std::string>& where) {
    for (unsigned char c : name) {
      if (c < 0x20 || c == 0x7f) {
        char code[8];
        std::snprintf(code, sizeof(code), "\\x%02x", c);
        Fail(where,
             "tensor name contains the control character " + std::string(code) + "; names must be printable");
      }
    }
  }

  template <typename F>
  void Guard(const std::vector<std::string>& where, F&& f) {
    try {
      f();
    } catch (const Error& e) {
      Fail(where, e.what());
    }
  }

  const json& Require(const json& obj, std::vector<std::string> where, const std::string& key) {
    if (!obj.contains(key)) Fail(where, "missing required field '" + key + "'");
    return obj[key];
  }

  int64_t Int(const json& v, const std::vector<std::string>& where) {
    if (!v.is_number_integer()) Fail(where, "expected an integer, got " + v.dump());
    return v.get<int64_t>();
  }

  std::string String(const json& v, const std::vector<std::string>& where) {
    if (!v.is_string()) Fail(where, "expected a string, got " + v.dump());
    return v.get<std::string>();
  }

  Shape IntArray(const json& v, const std::vector<std::string>& where, int64_t min_value) {
    if (!v.is_array()) Fail(where, "expected a list of integers, e.g. [2, 4]");
    Shape out;
    for (size_t i = 0; i < v.size(); ++i) {
      auto w = where;
      w.push_back(std::to_string(i));
      int64_t x = Int(v[i], w);
      if (x < min_value) Fail(w, "extent " + std::to_string(x) + " must be >= " + std::to_string(min_value));
      out.push_back(x);
    }
    return out;
  }

  std::vector<std::string> StringArray(const json& v, const std::vector<std::string>& where) {
    if (!v.is_array()) Fail(where, "expected a list of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
      auto w = where;
      w.push_back(std::to_string(i));
      out.push_back(String(v[i], w));
    }
    return out;
  }

  // A string may spell a shard order with PyTorch's "[k]" suffixes ("S(0)[1]S(0)[0]R"); it goes
  // to `order` when the caller passes one (an explicit "order" field replaces it).
  Placements ParsePlacementsValue(const json& v, const std::vector<std::string>& where,
                                  std::optional<ShardOrder>* order = nullptr) {
    Placements out;
    if (v.is_string()) {
      Guard(where, [&] {
        PlacementsWithOrder parsed = ParsePlacementsWithOrder(v.get<std::string>(), "placements");
        out = parsed.placements;
        if (parsed.order && order != nullptr) {
          *order = parsed.order;
        } else if (parsed.order && !IsDefaultOrder(*parsed.order)) {
          out = ParsePlacements(v.get<std::string>(), "placements");  // throws: order not accepted here
        }
      });
      return out;
    }
    if (!v.is_array())
      Fail(where, "expected placements as a list like [\"S(0)\", \"R\"] or a string \"S(0),R\"");
    for (size_t i = 0; i < v.size(); ++i) {
      auto w = where;
      w.push_back(std::to_string(i));
      std::string s = String(v[i], w);
      Guard(w, [&] { out.push_back(ParsePlacement(s, "placement")); });
    }
    return out;
  }

  std::map<int, std::vector<int64_t>> ExplicitSizes(const json& v, const std::vector<std::string>& where,
                                                    const Mesh& mesh) {
    std::map<int, std::vector<int64_t>> out;
    if (!v.is_object())
      Fail(where, "expected an object mesh_dim -> list of per-rank extents, e.g. {\"0\": [3, 5]}");
    for (auto it = v.begin(); it != v.end(); ++it) {
      auto w = where;
      w.push_back(it.key());
      int md = 0;
      Guard(w, [&] { md = mesh.DimIndex(it.key()); });
      out[md] = IntArray(it.value(), w, 0);
    }
    return out;
  }

  // Range-checks shard dims one by one so the error points at the offending element.
  void CheckDims(const Placements& placements, const json& value, const std::vector<std::string>& where,
                 int ndim) {
    for (size_t i = 0; i < placements.size(); ++i) {
      auto w = where;
      if (value.is_array()) w.push_back(std::to_string(i));
      Placements one{placements[i]};
      Guard(w, [&] { NormalizePlacements(one, ndim, "placement"); });
    }
  }

  ScenarioTensor ParseTensor(const std::string& name, const json& t, const Mesh& mesh, ChunkRule chunking) {
    std::vector<std::string> where{"tensors", name};
    CheckName(name, where);
    if (!t.is_object()) Fail(where, "expected an object with shape, dtype and placements");
    if (const std::string* key =
            UnknownKey(t, {"shape", "dtype", "placements", "order", "shapes", "chunking", "sizes", "seed"})) {
      Fail(Path(where, *key),
           "unknown field '" + *key +
               "' (expected shape, dtype, placements, order, shapes, chunking, sizes, seed)");
    }
    ScenarioTensor out;
    out.name = name;
    out.where = Where(where);
    auto at = [&](const char* key) {
      auto w = where;
      w.push_back(key);
      return w;
    };
    Shape shape = IntArray(Require(t, where, "shape"), at("shape"), 0);
    DType dtype = DType::kF32;
    if (t.contains("dtype"))
      Guard(at("dtype"), [&] { dtype = ParseDType(String(t["dtype"], at("dtype")), "dtype"); });
    std::optional<ShardOrder> order;
    Placements placements = ParsePlacementsValue(Require(t, where, "placements"), at("placements"), &order);
    if (t.contains("order"))
      Guard(at("order"), [&] { order = ParseShardOrder(String(t["order"], at("order")), "order"); });
    ChunkRule rule = chunking;
    if (t.contains("chunking")) {
      Guard(at("chunking"),
            [&] { rule = ParseChunkRule(String(t["chunking"], at("chunking")), "chunking"); });
    }
    std::map<int, std::vector<int64_t>> sizes;
    if (t.contains("sizes")) sizes = ExplicitSizes(t["sizes"], at("sizes"), mesh);
    if (t.contains("shapes")) {
      std::string mode = String(t["shapes"], at("shapes"));
      if (mode == "known") {
        out.shapes = ShapeMode::kKnown;
      } else if (mode == "infer") {
        out.shapes = ShapeMode::kInfer;
      } else {
        Fail(at("shapes"), "'" + mode + "' is not a shape mode (expected known or infer)");
      }
    }
    if (t.contains("seed")) out.seed = static_cast<uint64_t>(Int(t["seed"], at("seed")));
    CheckDims(placements, t["placements"], at("placements"), static_cast<int>(shape.size()));
    Guard(at("placements"), [&] {
      out.spec = MakeSpec(mesh, placements, order, shape, dtype, rule, sizes, "placements");
      ComputeRankLayout(out.spec, 0);
    });
    return out;
  }

  ScenarioStep ParseStep(const json& s, size_t index, const Scenario& sc, int devices_per_host) {
    std::vector<std::string> where{"steps", std::to_string(index)};
    auto at = [&](const char* key) {
      auto w = where;
      w.push_back(key);
      return w;
    };
    if (!s.is_object()) Fail(where, "expected {\"redistribute\": name, \"to\": [...]}");
    if (const std::string* key = UnknownKey(s, {"redistribute", "to", "order", "sizes", "planner", "optimize",
                                                "backward", "allow_partial_target"})) {
      Fail(Path(where, *key), "unknown field '" + *key + "'");
    }
    ScenarioStep step;
    step.tensor = String(Require(s, where, "redistribute"), at("redistribute"));
    size_t ti = 0;
    Guard(at("redistribute"), [&] { ti = sc.TensorIndex(step.tensor); });
    step.to = ParsePlacementsValue(Require(s, where, "to"), at("to"), &step.order);
    if (s.contains("order"))
      Guard(at("order"), [&] { step.order = ParseShardOrder(String(s["order"], at("order")), "order"); });
    if (s.contains("sizes")) step.explicit_sizes = ExplicitSizes(s["sizes"], at("sizes"), sc.mesh);
    ParsePlanOptions(s, where, devices_per_host, step.options);
    if (s.contains("allow_partial_target")) {
      if (!s["allow_partial_target"].is_boolean()) Fail(at("allow_partial_target"), "expected true or false");
      step.options.internal_partial_target = s["allow_partial_target"].get<bool>();
    }
    if (s.contains("backward")) {
      if (!s["backward"].is_boolean()) Fail(at("backward"), "expected true or false");
      step.backward = s["backward"].get<bool>();
    }
    // Validate the target against the tensor now, so a bad step is reported at its position.
    const TensorSpec& base = sc.tensors[ti].spec;
    CheckDims(step.to, s["to"], at("to"), static_cast<int>(base.shape.size()));
    Guard(at("to"), [&] {
      TensorSpec dst = MakeSpec(base.mesh, step.to, step.order, base.shape, base.dtype, base.chunking,
                                step.explicit_sizes, "to");
      ComputeRankLayout(dst, 0);
    });
    return step;
  }

  // The "planner" (auto, greedy, graph) and "optimize" fields of a step.
  void ParsePlanOptions(const json& s, const std::vector<std::string>& where, int devices_per_host,
                        PlanOptions& options) {
    options.devices_per_host = devices_per_host;
    if (s.contains("planner")) {
      const std::string p = String(s["planner"], Path(where, "planner"));
      if (p == "auto") {
        options.planner = PlannerChoice::kAuto;
      } else if (p == "greedy") {
        options.planner = PlannerChoice::kGreedy;
      } else if (p == "graph") {
        options.planner = PlannerChoice::kGraph;
      } else {
        Fail(Path(where, "planner"), "'" + p + "' is not a planner (expected auto, greedy or graph)");
      }
    }
    if (s.contains("optimize")) {
      if (!s["optimize"].is_boolean()) Fail(Path(where, "optimize"), "expected true or false");
      options.optimize = s["optimize"].get<bool>();
    }
  }

  // The first key of the object `obj` that is not in `known` (the fields its schema names), or
  // nullptr when there is none.
  static const std::string* UnknownKey(const json& obj, std::initializer_list<std::string_view> known) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::find(known.begin(), known.end(), it.key()) == known.end()) return &it.key();
    }
    return nullptr;
  }

  static std::vector<std::string> Path(std::vector<std::string> where, const std::string& key) {
    where.push_back(key);
    return where;
  }

  // The arguments each op takes besides op, inputs, output(s), planner and optimize.
  static std::vector<std::string> OpArgs(OpKind kind) {
    switch (kind) {
      case OpKind::kSum:
      case OpKind::kMean:
        return {"dims", "keepdim"};
      case OpKind::kTranspose:
      case OpKind::kPermute:
        return {"dims"};
      case OpKind::kSoftmax:
      case OpKind::kStack:
      case OpKind::kCat:
        return {"dim"};
      case OpKind::kSelect:
        return {"dim", "index"};
      case OpKind::kLayerNorm:
        return {"normalized_ndim", "eps"};
      case OpKind::kLayerNormBackward:
        return {"normalized_ndim", "output_mask"};
      case OpKind::kConv:
        return {"dim", "kernel"};
      default:
        return {};
    }
  }

  // The op's own arguments (dims, dim, index, keepdim, normalized_ndim, eps, kernel); a field the
  // op does not take is reported where it is.
  void ParseOpArgs(const json& s, const std::vector<std::string>& where, const std::string& name,
                   OpCall& call) {
    auto at = [&](const std::string& key) { return Path(where, key); };
    const std::vector<std::string> args = OpArgs(call.kind);
    for (auto it = s.begin(); it != s.end(); ++it) {
      static const char* kCommon[] = {"op", "inputs", "output", "outputs", "planner", "optimize"};
      bool known = std::find(args.begin(), args.end(), it.key()) != args.end();
      for (const char* k : kCommon) known = known || it.key() == k;
      if (!known) {
        std::string allowed = "op, inputs, output(s), planner, optimize";
        for (const auto& a : args) allowed += ", " + a;
        Fail(at(it.key()),
             "field '" + it.key() + "' does not apply to " + name + " (fields: " + allowed + ")");
      }
    }
    if (s.contains("dims")) call.dims = IntArray(s["dims"], at("dims"), std::numeric_limits<int64_t>::min());
    if (s.contains("dim")) call.dim = Int(s["dim"], at("dim"));
    if (s.contains("index")) call.index = Int(s["index"], at("index"));
    if (s.contains("keepdim")) {
      if (!s["keepdim"].is_boolean()) Fail(at("keepdim"), "expected true or false");
      call.keepdim = s["keepdim"].get<bool>();
    }
    if (s.contains("normalized_ndim"))
      call.normalized_ndim = Int(s["normalized_ndim"], at("normalized_ndim"));
    if (s.contains("eps")) {
      if (!s["eps"].is_number() || s["eps"].get<double>() <= 0) Fail(at("eps"), "expected a positive number");
      call.eps = s["eps"].get<double>();
    }
    if (s.contains("kernel")) {
      const json& k = s["kernel"];
      if (!k.is_array()) Fail(at("kernel"), "expected a list of numbers, e.g. [1, 2, 1]");
      for (size_t i = 0; i < k.size(); ++i) {
        if (!k[i].is_number()) Fail(Path(at("kernel"), std::to_string(i)), "expected a number");
        call.kernel.push_back(k[i].get<double>());
      }
    }
    if (call.kind == OpKind::kConv && !s.contains("kernel"))
      Fail(where, "conv needs a 'kernel', e.g. [1, 2, 1]");
  }

  // Inputs: tensor names, null for an absent optional input; returns their current specs.
  std::vector<const TensorSpec*> ParseOpInputs(const json& s, const std::vector<std::string>& where,
                                               Scenario& sc, const std::vector<TensorSpec>& current,
                                               OpCall& call) {
    const json& inputs = Require(s, where, "inputs");
    if (!inputs.is_array()) Fail(Path(where, "inputs"), "expected a list of tensor names");
    std::vector<const TensorSpec*> specs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto w = Path(Path(where, "inputs"), std::to_string(i));
      if (inputs[i].is_null()) {
        call.inputs.emplace_back();
        specs.push_back(nullptr);
        continue;
      }
      call.inputs.push_back(String(inputs[i], w));
      size_t ti = 0;
      Guard(w, [&] { ti = sc.TensorIndex(call.inputs.back()); });
      specs.push_back(&current[ti]);
    }
    return specs;
  }

  // Outputs: "output": name, or "outputs": [name or null, ...] (null: not requested); as many as
  // the op has, new names, each once; layer_norm's backward output_mask must match them.
  void ParseOpOutputs(const json& s, const std::vector<std::string>& where, const std::string& name,
                      const Scenario& sc, OpCall& call) {
    auto at = [&](const std::string& key) { return Path(where, key); };
    if (s.contains("output") == s.contains("outputs"))
      Fail(where, "expected exactly one of 'output' or 'outputs'");
    if (s.contains("output")) {
      call.outputs.push_back(String(s["output"], at("output")));
    } else {
      const json& outs = s["outputs"];
      if (!outs.is_array())
        Fail(at("outputs"), "expected a list of tensor names (null for an output not wanted)");
      for (size_t i = 0; i < outs.size(); ++i)
        call.outputs.push_back(outs[i].is_null() ? std::string()
                                                 : String(outs[i], Path(at("outputs"), std::to_string(i))));
    }
    const size_t want_outputs =
        call.kind == OpKind::kLayerNorm || call.kind == OpKind::kLayerNormBackward ? 3 : 1;
    if (call.outputs.size() != want_outputs) {
      Fail(s.contains("output") ? at("output") : at("outputs"),
           name + " has " + std::to_string(want_outputs) + " output(s), got " +
               std::to_string(call.outputs.size()));
    }
    if (call.kind == OpKind::kLayerNormBackward) {
      for (const auto& o : call.outputs) call.output_mask.push_back(!o.empty());
      if (s.contains("output_mask")) {
        const json& m = s["output_mask"];
        bool ok = m.is_array() && m.size() == 3;
        for (size_t i = 0; ok && i < 3; ++i)
          ok = m[i].is_boolean() && m[i].get<bool>() == call.output_mask[i];
        if (!ok) {
          Fail(at("output_mask"),
               "must be 3 booleans matching 'outputs' (an output is requested when it has a name)");
        }
      }
    } else if (call.kind == OpKind::kLayerNorm) {
      for (size_t o = 0; o < 3; ++o) {
        if (call.outputs[o].empty())
          Fail(at("outputs"), "layer_norm produces out, mean and rstd: name all three");
      }
    }
    for (size_t o = 0; o < call.outputs.size(); ++o) {
      if (call.outputs[o].empty()) continue;
      auto w = s.contains("output") ? at("output") : at("outputs");
      if (s.contains("outputs")) w.push_back(std::to_string(o));
      CheckName(call.outputs[o], w);
      for (const auto& t : sc.tensors) {
        if (t.name == call.outputs[o])
          Fail(w, "tensor '" + call.outputs[o] + "' already exists; op outputs take new names");
      }
      for (size_t p = 0; p < o; ++p) {
        if (call.outputs[p] == call.outputs[o])
          Fail(w, "output name '" + call.outputs[o] + "' is used twice");
      }
    }
  }

  // {"op": "mm", "inputs": ["x", "w"], "output": "y", ...args}: validated by propagating the
  // current specs through the op, which also gives the outputs their specs.
  ScenarioStep ParseOpStep(const json& s, size_t index, Scenario& sc, std::vector<TensorSpec>& current,
                           int devices_per_host) {
    const std::vector<std::string> where{"steps", std::to_string(index)};
    ScenarioStep step;
    OpCall call;
    const std::string name = String(s["op"], Path(where, "op"));
    std::optional<OpKind> kind = ParseOpKind(name);
    if (!kind)
      Fail(Path(where, "op"), "'" + name + "' is not an op (expected one of: " + OpKindNames() + ")");
    call.kind = *kind;
    ParseOpArgs(s, where, name, call);
    const std::vector<const TensorSpec*> specs = ParseOpInputs(s, where, sc, current, call);
    ParseOpOutputs(s, where, name, sc, call);
    ParsePlanOptions(s, where, devices_per_host, step.options);
    OpDecision decision;
    Guard(where, [&] { decision = PropagateOp(call, specs, devices_per_host); });
    for (size_t o = 0; o < call.outputs.size(); ++o) {
      if (call.outputs[o].empty() || !decision.outputs[o]) continue;
      ScenarioTensor t;
      t.name = call.outputs[o];
      t.spec = *decision.outputs[o];
      t.produced_by = static_cast<int64_t>(index);
      t.where = Where(where);
      sc.tensors.push_back(t);
      current.push_back(t.spec);
    }
    step.op = std::move(call);
    return step;
  }

  std::string_view text_;
  std::string path_;
};

}  // namespace

size_t Scenario::TensorIndex(const std::string& name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return i;
  }
  std::string known;
  for (const auto& t : tensors) known += (known.empty() ? "" : ", ") + t.name;
  throw InvalidInput("no tensor named '" + name + "' (tensors: " + known + ")");
}

Scenario ParseScenario(std::string_view text, const std::string& path) {
  return ScenarioParser(text, path).Parse();
}

Scenario LoadScenario(const std::string& path) {
  return ParseScenario(detail::ReadInputFile(path, "scenario file"), path);
}

}  // namespace shardscope::program
