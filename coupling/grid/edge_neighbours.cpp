// SPDX-License-Identifier: BSD-3-Clause
#include "coupling/grid/edge_neighbours.hpp"

#include <algorithm>
#include <utility>

#include "common/error.hpp"

namespace finecast::coupling {

std::vector<std::array<int32_t, 3>> edge_neighbours(const std::vector<std::array<int32_t, 3>>& corners,
                                                    int64_t n_vertices, const std::string& what) {
  struct Half {
    int64_t key;  // the edge's two vertex ids, smaller first, as one number
    int32_t triangle;
    int8_t slot;
  };
  const size_t n = corners.size();
  std::vector<Half> halves;
  halves.reserve(3 * n);
  for (size_t t = 0; t < n; ++t)
    for (int k = 0; k < 3; ++k) {
      // Slot k is the edge opposite corner k, so neighbour k lies across from corner k.
      int64_t a = corners[t][(k + 1) % 3], b = corners[t][(k + 2) % 3];
      if (a > b) std::swap(a, b);
      halves.push_back({a * n_vertices + b, static_cast<int32_t>(t), static_cast<int8_t>(k)});
    }
  std::sort(halves.begin(), halves.end(), [](const Half& x, const Half& y) { return x.key < y.key; });
  std::vector<std::array<int32_t, 3>> out(n, {-1, -1, -1});
  for (size_t i = 0; i < halves.size();) {
    size_t j = i;
    while (j < halves.size() && halves[j].key == halves[i].key) ++j;
    if (j - i > 2)
      throw GridError(what + ": an edge is shared by " + std::to_string(j - i) + " triangles (triangle " +
                      std::to_string(halves[i].triangle) + "), expected at most 2");
    if (j - i == 2) {
      out[halves[i].triangle][halves[i].slot] = halves[i + 1].triangle;
      out[halves[i + 1].triangle][halves[i + 1].slot] = halves[i].triangle;
    }
    i = j;
  }
  return out;
}

}  // namespace finecast::coupling
