// SPDX-License-Identifier: BSD-3-Clause
// The redistribution plan (a distributed directory, three all-to-all exchanges at set-up) and
// the per-step exchanges.
#include "coupling/mpi/redistribution.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "common/error.hpp"
#include "coupling/error.hpp"

namespace finecast::coupling {
namespace {

/// Counts and displacements of an all-to-all from per-destination counts.
void displacements(const std::vector<int>& counts, std::vector<int>& displs) {
  displs.assign(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
}

/// All-to-all of int64 values: `send` grouped by destination with `send_counts`; returns what
/// arrived, grouped by source, and fills `recv_counts`.
std::vector<int64_t> exchange(MPI_Comm comm, const std::vector<int64_t>& send, const std::vector<int>& send_counts,
                              std::vector<int>& recv_counts) {
  const int size = static_cast<int>(send_counts.size());
  recv_counts.assign(static_cast<size_t>(size), 0);
  CHECK_MPI(MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm));
  std::vector<int> sd, rd;
  displacements(send_counts, sd);
  displacements(recv_counts, rd);
  std::vector<int64_t> recv(static_cast<size_t>(rd.back() + recv_counts.back()));
  CHECK_MPI(MPI_Alltoallv(send.data(), send_counts.data(), sd.data(), MPI_INT64_T, recv.data(), recv_counts.data(),
                          rd.data(), MPI_INT64_T, comm));
  return recv;
}

/// Tuples of `width` int64 values, sent to the rank `dest(tuple)`; returns the received tuples.
template <class Dest>
std::vector<int64_t> route(MPI_Comm comm, int size, const std::vector<int64_t>& tuples, int width, Dest dest) {
  const size_t n = tuples.size() / static_cast<size_t>(width);
  std::vector<int> counts(static_cast<size_t>(size), 0);
  std::vector<int> to(n);
  for (size_t i = 0; i < n; ++i) {
    to[i] = dest(&tuples[i * width]);
    counts[static_cast<size_t>(to[i])] += width;
  }
  std::vector<int> pos;
  displacements(counts, pos);
  std::vector<int64_t> send(tuples.size());
  for (size_t i = 0; i < n; ++i) {
    std::copy(&tuples[i * width], &tuples[i * width] + width, send.begin() + pos[static_cast<size_t>(to[i])]);
    pos[static_cast<size_t>(to[i])] += width;
  }
  std::vector<int> recv_counts;
  return exchange(comm, send, counts, recv_counts);
}

}  // namespace

Redistribution::Redistribution(MPI_Comm comm, const std::vector<int64_t>& owned_global,
                               const std::vector<int64_t>& slot_cells, int64_t n_global)
    : n_owned_(static_cast<int64_t>(owned_global.size())) {
  CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  const int rank = rank_;
  const int size = size_;
  // The directory rank of cell g: contiguous, balanced ranges of the global ids.
  auto directory = [size, n_global](int64_t g) {
    return static_cast<int>(std::min<int64_t>(size - 1, g * size / std::max<int64_t>(1, n_global)));
  };
  // This rank's range of the directory: exactly the ids g with directory(g) == rank.
  const int64_t first = (static_cast<int64_t>(rank) * n_global + size - 1) / size;
  const int64_t last = (static_cast<int64_t>(rank + 1) * n_global + size - 1) / size;  // exclusive
  std::string problem;
  for (int64_t g : owned_global)
    if (g < 0 || g >= n_global)
      problem = "owned cell id " + std::to_string(g) + " outside 0.." + std::to_string(n_global - 1);
  for (int64_t g : slot_cells)
    if (g < 0 || g >= n_global)
      problem = "slot cell id " + std::to_string(g) + " outside 0.." + std::to_string(n_global - 1);

  // A: owners register (id, rank, position); B: trainers register (id, rank, slot).
  std::vector<int64_t> tuples;
  tuples.reserve(owned_global.size() * 3);
  for (size_t p = 0; p < owned_global.size(); ++p)
    if (owned_global[p] >= 0 && owned_global[p] < n_global)
      tuples.insert(tuples.end(), {owned_global[p], rank, static_cast<int64_t>(p)});
  const auto owners = route(comm_, size, tuples, 3, [&](const int64_t* t) { return directory(t[0]); });
  tuples.clear();
  for (size_t s = 0; s < slot_cells.size(); ++s)
    if (slot_cells[s] >= 0 && slot_cells[s] < n_global)
      tuples.insert(tuples.end(), {slot_cells[s], rank, static_cast<int64_t>(s)});
  const auto slots = route(comm_, size, tuples, 3, [&](const int64_t* t) { return directory(t[0]); });

  // The directory's range: owner (rank, position) and slot (trainer, slot) of each of its ids.
  const int64_t span = last - first;
  std::vector<int64_t> owner_rank(static_cast<size_t>(span), -1), owner_pos(static_cast<size_t>(span), -1);
  std::vector<int64_t> slot_rank(static_cast<size_t>(span), -1), slot_index(static_cast<size_t>(span), -1);
  for (size_t i = 0; i < owners.size(); i += 3) {
    const int64_t k = owners[i] - first;
    if (owner_rank[static_cast<size_t>(k)] >= 0)
      problem = "cell " + std::to_string(owners[i]) + " is owned by ranks " +
                std::to_string(owner_rank[static_cast<size_t>(k)]) + " and " + std::to_string(owners[i + 1]);
    owner_rank[static_cast<size_t>(k)] = owners[i + 1];
    owner_pos[static_cast<size_t>(k)] = owners[i + 2];
  }
  for (size_t i = 0; i < slots.size(); i += 3) {
    const int64_t k = slots[i] - first;
    if (slot_rank[static_cast<size_t>(k)] >= 0) problem = "cell " + std::to_string(slots[i]) + " is in two slots";
    slot_rank[static_cast<size_t>(k)] = slots[i + 1];
    slot_index[static_cast<size_t>(k)] = slots[i + 2];
  }
  for (int64_t k = 0; k < span; ++k) {
    if (owner_rank[static_cast<size_t>(k)] < 0) problem = "cell " + std::to_string(first + k) + " is owned by no rank";
  }
  // C: each owner learns (position, trainer, slot) of its cells that are in a slot.
  tuples.clear();
  for (int64_t k = 0; k < span; ++k)
    if (slot_rank[static_cast<size_t>(k)] >= 0 && owner_rank[static_cast<size_t>(k)] >= 0)
      tuples.insert(tuples.end(), {owner_rank[static_cast<size_t>(k)], owner_pos[static_cast<size_t>(k)],
                                   slot_rank[static_cast<size_t>(k)], slot_index[static_cast<size_t>(k)]});
  auto mine = route(comm_, size, tuples, 4, [](const int64_t* t) { return static_cast<int>(t[0]); });

  int bad = problem.empty() ? 0 : 1, any_bad = 0;
  CHECK_MPI(MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, comm_));
  if (any_bad) {
    MPI_Comm_free(&comm_);
    throw GridError("patch redistribution: " + (problem.empty() ? std::string("another rank found an inconsistent "
                                                                              "decomposition")
                                                                : problem));
  }

  // Send order: by trainer, then by slot, so each trainer receives every source's values in
  // slot order. D: the trainers learn the slot of each value they will receive.
  const size_t n_mine = mine.size() / 4;
  std::vector<size_t> order(n_mine);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(mine[a * 4 + 2], mine[a * 4 + 3]) < std::make_pair(mine[b * 4 + 2], mine[b * 4 + 3]);
  });
  send_counts_.assign(static_cast<size_t>(size), 0);
  send_pos_.clear();
  std::vector<int64_t> slot_list;
  for (size_t i : order) {
    send_pos_.push_back(mine[i * 4 + 1]);
    slot_list.push_back(mine[i * 4 + 3]);
    ++send_counts_[static_cast<size_t>(mine[i * 4 + 2])];
  }
  displacements(send_counts_, send_displs_);
  recv_slot_ = exchange(comm_, slot_list, send_counts_, recv_counts_);
  displacements(recv_counts_, recv_displs_);
  if (recv_slot_.size() != slot_cells.size()) {
    // Cannot happen after the checks above: every slot's cell has an owner, who sends it.
    MPI_Comm_free(&comm_);
    throw InternalError("patch redistribution: a trainer receives " + std::to_string(recv_slot_.size()) +
                        " values for " + std::to_string(slot_cells.size()) + " slots");
  }
}

Redistribution::~Redistribution() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

void Redistribution::scale_counts(int n_fields) {
  field_send_counts_.resize(static_cast<size_t>(size_));
  field_send_displs_.resize(static_cast<size_t>(size_));
  field_recv_counts_.resize(static_cast<size_t>(size_));
  field_recv_displs_.resize(static_cast<size_t>(size_));
  // Per peer: [fields][its values], contiguous.
  for (int r = 0; r < size_; ++r) {
    field_send_counts_[r] = send_counts_[r] * n_fields;
    field_send_displs_[r] = send_displs_[r] * n_fields;
    field_recv_counts_[r] = recv_counts_[r] * n_fields;
    field_recv_displs_[r] = recv_displs_[r] * n_fields;
  }
}

void Redistribution::forward(int n_fields, const float* local, float* slots) {
  const size_t n_send = send_pos_.size(), n_recv = recv_slot_.size();
  send_buf_.resize(n_send * static_cast<size_t>(n_fields));
  recv_buf_.resize(n_recv * static_cast<size_t>(n_fields));
  scale_counts(n_fields);
  for (int r = 0; r < size_; ++r)
    for (int f = 0; f < n_fields; ++f)
      for (int i = 0; i < send_counts_[r]; ++i)
        send_buf_[static_cast<size_t>(field_send_displs_[r] + f * send_counts_[r] + i)] =
            local[static_cast<size_t>(f) * static_cast<size_t>(n_owned_) +
                  static_cast<size_t>(send_pos_[static_cast<size_t>(send_displs_[r] + i)])];
  CHECK_MPI(MPI_Alltoallv(send_buf_.data(), field_send_counts_.data(), field_send_displs_.data(), MPI_FLOAT,
                          recv_buf_.data(), field_recv_counts_.data(), field_recv_displs_.data(), MPI_FLOAT, comm_));
  if (n_recv == 0) return;
  for (int r = 0; r < size_; ++r)
    for (int f = 0; f < n_fields; ++f)
      for (int i = 0; i < recv_counts_[r]; ++i)
        slots[static_cast<size_t>(f) * n_recv +
              static_cast<size_t>(recv_slot_[static_cast<size_t>(recv_displs_[r] + i)])] =
            recv_buf_[static_cast<size_t>(field_recv_displs_[r] + f * recv_counts_[r] + i)];
}

void Redistribution::reverse(int n_fields, const float* slots, float* local) {
  const size_t n_send = send_pos_.size(), n_recv = recv_slot_.size();
  // The buffers are the call's own: a plan per piece of an output record (record_gather.hpp)
  // keeping its pieces' buffers would hold the whole record.
  std::vector<float> from_slots(n_recv * static_cast<size_t>(n_fields)),
      to_owned(n_send * static_cast<size_t>(n_fields));
  scale_counts(n_fields);
  // The forward exchange's roles swapped: trainers send what they received, owners receive what
  // they sent.
  for (int r = 0; r < size_; ++r)
    for (int f = 0; f < n_fields; ++f)
      for (int i = 0; i < recv_counts_[r]; ++i)
        from_slots[static_cast<size_t>(field_recv_displs_[r] + f * recv_counts_[r] + i)] =
            slots[static_cast<size_t>(f) * n_recv +
                  static_cast<size_t>(recv_slot_[static_cast<size_t>(recv_displs_[r] + i)])];
  CHECK_MPI(MPI_Alltoallv(from_slots.data(), field_recv_counts_.data(), field_recv_displs_.data(), MPI_FLOAT,
                          to_owned.data(), field_send_counts_.data(), field_send_displs_.data(), MPI_FLOAT, comm_));
  if (n_owned_ == 0) return;
  std::fill(local, local + static_cast<size_t>(n_fields) * static_cast<size_t>(n_owned_),
            std::numeric_limits<float>::quiet_NaN());
  for (int r = 0; r < size_; ++r)
    for (int f = 0; f < n_fields; ++f)
      for (int i = 0; i < send_counts_[r]; ++i)
        local[static_cast<size_t>(f) * static_cast<size_t>(n_owned_) +
              static_cast<size_t>(send_pos_[static_cast<size_t>(send_displs_[r] + i)])] =
            to_owned[static_cast<size_t>(field_send_displs_[r] + f * send_counts_[r] + i)];
}

}  // namespace finecast::coupling
