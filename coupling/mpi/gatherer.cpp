// SPDX-License-Identifier: BSD-3-Clause
// MPI gathering by global index (Gatherv of values; indices exchanged once at set-up).
#include "coupling/mpi/gatherer.hpp"

#include <climits>
#include <string>

#include "coupling/error.hpp"

namespace finecast::coupling {

Gatherer::Gatherer(MPI_Comm comm, int root, std::vector<int64_t> owned_global, int64_t n_global)
    : root_(root), n_global_(n_global), owned_(std::move(owned_global)) {
  CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  CHECK_MPI(MPI_Comm_size(comm_, &size_));
  if (root < 0 || root >= size_) {
    MPI_Comm_free(&comm_);
    throw MpiError("Gatherer: root rank " + std::to_string(root) + " is outside the communicator's " +
                   std::to_string(size_) + " ranks");
  }
  if (owned_.size() > static_cast<size_t>(INT_MAX)) {
    MPI_Comm_free(&comm_);
    throw MpiError("Gatherer: rank " + std::to_string(rank_) + " owns more cells than MPI counts can address");
  }
  const int n_mine = static_cast<int>(owned_.size());
  if (is_root()) {
    counts_.assign(size_, 0);
    displs_.assign(size_, 0);
  }
  CHECK_MPI(MPI_Gather(&n_mine, 1, MPI_INT, is_root() ? counts_.data() : nullptr, 1, MPI_INT, root_, comm_));

  // The root checks the decomposition and tells everyone, so that a bad one fails on every rank
  // instead of leaving the others waiting in the next collective.
  std::string problem;
  if (is_root()) {
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      displs_[r] = static_cast<int>(total);
      total += counts_[r];
    }
    if (total != n_global_) {
      problem = "the ranks own " + std::to_string(total) + " cells in total but the global field has " +
                std::to_string(n_global_);
    } else if (total > INT_MAX) {
      problem = "the global field has more cells than MPI counts can address";
    }
    if (problem.empty()) recv_global_.resize(static_cast<size_t>(total));
  }
  int problem_len = static_cast<int>(problem.size());
  CHECK_MPI(MPI_Bcast(&problem_len, 1, MPI_INT, root_, comm_));
  if (problem_len == 0) {
    CHECK_MPI(MPI_Gatherv(owned_.data(), n_mine, MPI_INT64_T, is_root() ? recv_global_.data() : nullptr,
                          is_root() ? counts_.data() : nullptr, is_root() ? displs_.data() : nullptr, MPI_INT64_T,
                          root_, comm_));
    if (is_root()) {
      std::vector<int> owner(static_cast<size_t>(n_global_), -1);
      for (int r = 0; r < size_ && problem.empty(); ++r) {
        for (int i = 0; i < counts_[r]; ++i) {
          const int64_t g = recv_global_[static_cast<size_t>(displs_[r] + i)];
          if (g < 0 || g >= n_global_) {
            problem = "rank " + std::to_string(r) + " owns global index " + std::to_string(g) + ", outside 0.." +
                      std::to_string(n_global_ - 1);
            break;
          }
          if (owner[static_cast<size_t>(g)] >= 0) {
            problem = "global index " + std::to_string(g) + " is owned by rank " +
                      std::to_string(owner[static_cast<size_t>(g)]) + " and by rank " + std::to_string(r);
            break;
          }
          owner[static_cast<size_t>(g)] = r;
        }
      }
    }
    problem_len = static_cast<int>(problem.size());
    CHECK_MPI(MPI_Bcast(&problem_len, 1, MPI_INT, root_, comm_));
  }
  if (problem_len > 0) {
    problem.resize(static_cast<size_t>(problem_len));
    CHECK_MPI(MPI_Bcast(problem.data(), problem_len, MPI_CHAR, root_, comm_));
    MPI_Comm_free(&comm_);
    throw MpiError("Gatherer: inconsistent decomposition: " + problem +
                   " (each global cell must be owned by exactly one rank; halo cells excluded)");
  }
}

Gatherer::~Gatherer() {
  if (comm_ != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
}

void Gatherer::prepare_counts(int n_fields) {
  if (n_fields == prepared_fields_) return;
  // Checked on every rank (n_global is known everywhere) so no rank is left in a collective.
  if (static_cast<int64_t>(n_fields) * n_global_ > INT_MAX)
    throw MpiError("Gatherer: " + std::to_string(n_fields) + " fields of " + std::to_string(n_global_) +
                   " cells exceed what one MPI collective can address");
  if (is_root()) {
    field_counts_.resize(size_);
    field_displs_.resize(size_);
    for (int r = 0; r < size_; ++r) {
      field_counts_[r] = counts_[r] * n_fields;
      field_displs_[r] = displs_[r] * n_fields;
    }
    recv_.resize(static_cast<size_t>(n_global_) * n_fields);
  }
  prepared_fields_ = n_fields;
}

// The received buffer is rank-major: rank r's block is its [n_fields][count_r] array.
void Gatherer::gather(int n_fields, const float* local, float* global_out) {
  if (n_fields < 1) throw MpiError("Gatherer::gather: n_fields must be >= 1, got " + std::to_string(n_fields));
  prepare_counts(n_fields);
  const int n_send = static_cast<int>(owned_.size()) * n_fields;
  if (size_ == 1) {
    // One rank: the collective is a copy; skip it and permute directly.
    for (int f = 0; f < n_fields; ++f) {
      const float* src = local + static_cast<size_t>(f) * owned_.size();
      float* dst = global_out + static_cast<size_t>(f) * n_global_;
      for (size_t i = 0; i < owned_.size(); ++i) dst[owned_[i]] = src[i];
    }
    return;
  }
  CHECK_MPI(MPI_Gatherv(local, n_send, MPI_FLOAT, is_root() ? recv_.data() : nullptr,
                        is_root() ? field_counts_.data() : nullptr, is_root() ? field_displs_.data() : nullptr,
                        MPI_FLOAT, root_, comm_));
  if (!is_root()) return;
  for (int r = 0; r < size_; ++r) {
    const int n = counts_[r];
    const int64_t* gidx = recv_global_.data() + displs_[r];
    const float* block = recv_.data() + static_cast<size_t>(displs_[r]) * n_fields;
    for (int f = 0; f < n_fields; ++f) {
      const float* src = block + static_cast<size_t>(f) * n;
      float* dst = global_out + static_cast<size_t>(f) * n_global_;
      for (int i = 0; i < n; ++i) dst[gidx[i]] = src[i];
    }
  }
}

void Gatherer::scatter(int n_fields, const float* global_in, float* local_out) {
  if (n_fields < 1) throw MpiError("Gatherer::scatter: n_fields must be >= 1, got " + std::to_string(n_fields));
  prepare_counts(n_fields);
  const int n_recv = static_cast<int>(owned_.size()) * n_fields;
  if (size_ == 1) {
    for (int f = 0; f < n_fields; ++f) {
      const float* src = global_in + static_cast<size_t>(f) * n_global_;
      float* dst = local_out + static_cast<size_t>(f) * owned_.size();
      for (size_t i = 0; i < owned_.size(); ++i) dst[i] = src[owned_[i]];
    }
    return;
  }
  if (is_root()) {
    for (int r = 0; r < size_; ++r) {
      const int n = counts_[r];
      const int64_t* gidx = recv_global_.data() + displs_[r];
      float* block = recv_.data() + static_cast<size_t>(displs_[r]) * n_fields;
      for (int f = 0; f < n_fields; ++f) {
        const float* src = global_in + static_cast<size_t>(f) * n_global_;
        float* dst = block + static_cast<size_t>(f) * n;
        for (int i = 0; i < n; ++i) dst[i] = src[gidx[i]];
      }
    }
  }
  CHECK_MPI(MPI_Scatterv(is_root() ? recv_.data() : nullptr, is_root() ? field_counts_.data() : nullptr,
                         is_root() ? field_displs_.data() : nullptr, MPI_FLOAT, local_out, n_recv, MPI_FLOAT, root_,
                         comm_));
}

}  // namespace finecast::coupling
