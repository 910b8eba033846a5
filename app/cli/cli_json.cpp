#include "cli_json.hpp"

namespace shardscope::app {

nlohmann::json LayoutJson(const engine::RankLayout& layout) {
  nlohmann::json indices = nlohmann::json::array();
  for (const auto& set : layout.indices) {
    nlohmann::json dim = nlohmann::json::array();
    for (const auto& iv : set) {
      if (iv.size() > 0) dim.push_back({iv.begin, iv.end});
    }
    indices.push_back(std::move(dim));
  }
  return {{"local_shape", layout.local_shape}, {"global_offset", layout.global_offset}, {"indices", indices}};
}

nlohmann::json MeshJson(const engine::Mesh& mesh) {
  nlohmann::json j = {{"shape", mesh.shape()}, {"flattened", nlohmann::json::array()}};
  for (const auto& dims : mesh.flattened()) j["flattened"].push_back(dims);
  if (mesh.has_dim_names()) j["dim_names"] = mesh.dim_names();
  return j;
}

}  // namespace shardscope::app
