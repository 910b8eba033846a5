#include "mesh_view_model.hpp"

#include <algorithm>

namespace shardscope::app::gui {
namespace {

int64_t IndexOf(const std::vector<int64_t>& of, int64_t rank) {
  return rank >= 0 && rank < static_cast<int64_t>(of.size()) ? of[static_cast<size_t>(rank)] : -1;
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

}  // namespace

BytesMatrix ComputeBytesMatrix(const RedistributeView& view, int64_t step, bool negotiation,
                               const std::vector<int64_t>& row_of, int64_t rows,
                               const std::vector<int64_t>& col_of, int64_t cols) {
  BytesMatrix m;
  m.rows = std::max<int64_t>(rows, 0), m.cols = std::max<int64_t>(cols, 0);
  m.bytes.assign(static_cast<size_t>(m.rows * m.cols), 0);
  for (const trace::RedistributeRecord* rec : view.per_rank) {
    const int64_t i = IndexOf(row_of, rec->rank);
    if (i < 0 || i >= m.rows) continue;
    for (const trace::Collective& c : rec->collectives) {
      if ((step >= 0 && c.step() != step) || c.negotiated() != negotiation) continue;
      for (size_t k = 0; k < c.group().size() && k < c.bytes_sent().size(); ++k) {
        const int64_t j = IndexOf(col_of, c.group()[k]);
        if (j < 0 || j >= m.cols) continue;
        m.bytes[static_cast<size_t>(i * m.cols + j)] += c.bytes_sent()[k];
        m.total += c.bytes_sent()[k];
      }
    }
  }
  for (int64_t b : m.bytes) m.max = std::max(m.max, b);
  return m;
}

ByteTotals ComputeByteTotals(const RedistributeView& view, int64_t step) {
  ByteTotals t;
  for (const trace::RedistributeRecord* rec : view.per_rank) {
    for (const trace::Collective& c : rec->collectives) {
      if (step >= 0 && c.step() != step) continue;
      for (int64_t b : c.bytes_sent()) (c.negotiated() ? t.negotiation : t.data) += b;
    }
  }
  return t;
}

int64_t MeshBlocks::count() const { return Product(blocks); }

int64_t MeshBlocks::BlockOf(int64_t rank) const {
  int64_t b = 0, rest = rank;
  std::vector<int64_t> coord(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coord[d] = rest % shape[d];
    rest /= shape[d];
  }
  for (size_t d = 0; d < shape.size(); ++d) b = b * blocks[d] + coord[d] / block[d];
  return b;
}

std::vector<int64_t> MeshBlocks::Origin(int64_t b) const {
  std::vector<int64_t> origin(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    origin[d] = (b % blocks[d]) * block[d];
    b /= blocks[d];
  }
  return origin;
}

std::vector<int64_t> MeshBlocks::Extent(int64_t b) const {
  std::vector<int64_t> origin = Origin(b), extent(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) extent[d] = std::min(block[d], shape[d] - origin[d]);
  return extent;
}

std::vector<int64_t> MeshBlocks::Ranks(int64_t b) const {
  const std::vector<int64_t> origin = Origin(b), extent = Extent(b);
  std::vector<int64_t> out;
  const int64_t n = Product(extent);
  out.reserve(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {  // row-major over the box, hence ascending ranks
    int64_t rest = k, rank = 0;
    std::vector<int64_t> local(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
      local[d] = rest % extent[d];
      rest /= extent[d];
    }
    for (size_t d = 0; d < shape.size(); ++d) rank = rank * shape[d] + origin[d] + local[d];
    out.push_back(rank);
  }
  return out;
}

std::vector<int64_t> MeshBlocks::BlockOfEach() const {
  std::vector<int64_t> out(static_cast<size_t>(Product(shape)));
  for (size_t r = 0; r < out.size(); ++r) out[r] = BlockOf(static_cast<int64_t>(r));
  return out;
}

MeshBlocks AggregateMesh(const std::vector<int64_t>& shape, int64_t max_blocks) {
  MeshBlocks m;
  m.shape = shape;
  m.block.assign(shape.size(), 1);
  m.blocks = shape;
  max_blocks = std::max<int64_t>(max_blocks, 1);
  while (m.count() > max_blocks) {
    const size_t d =
        static_cast<size_t>(std::max_element(m.blocks.begin(), m.blocks.end()) - m.blocks.begin());
    m.block[d] = std::min(shape[d], m.block[d] * 2);
    m.blocks[d] = (shape[d] + m.block[d] - 1) / m.block[d];
  }
  return m;
}

}  // namespace shardscope::app::gui
