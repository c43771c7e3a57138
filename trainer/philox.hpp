// SPDX-License-Identifier: BSD-3-Clause
// A counter-based generator whose stream is the same on the CPU and the GPU: Philox4x32-10
// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) and normal numbers
// from it by Box-Muller in double precision, rounded to float. Element e of a draw depends only
// on (key, counter, e), so any device, thread or rank computes any part of a draw alone.
// Plain C++ (no torch): the CUDA kernel (philox_cuda.cu) compiles the same functions.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define FINECAST_HD __host__ __device__ __forceinline__
#else
#define FINECAST_HD inline
#endif

namespace finecast::trainer::philox {

/// What a draw is for (the counter's last word): draws of different purposes never overlap.
enum Purpose : uint32_t { kTrainingNoise = 1, kSamplingNoise = 2, kRecentreNoise = 3 };

struct Block {
  uint32_t x[4];
};

FINECAST_HD void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

/// Philox4x32 with 10 rounds: the four 32-bit outputs for one 128-bit counter and 64-bit key.
FINECAST_HD Block philox4x32_10(Block c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c.x[0], hi0, lo0);
    mulhilo(0xCD9E8D57u, c.x[2], hi1, lo1);
    c = Block{{hi1 ^ c.x[1] ^ k0, lo1, hi0 ^ c.x[3] ^ k1, lo0}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

/// Element e (< 2^34) of the normal draw (key, stream, purpose): block e / 4 of the counter
/// {e / 4, stream low, stream high, purpose}; lanes (0, 1) and (2, 3) are Box-Muller pairs, an
/// even lane takes the cosine, an odd one the sine. In double precision, rounded to float: the
/// CPU's and CUDA's double log/cos/sin differ by an ulp of a double at most, which rounding to
/// float almost never shows.
FINECAST_HD float normal_at(uint64_t key, uint64_t stream, uint32_t purpose, uint64_t e) {
  const Block c{
      {static_cast<uint32_t>(e >> 2), static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32), purpose}};
  const Block r = philox4x32_10(c, static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
  const int lane = static_cast<int>(e & 3);
  const uint32_t a = r.x[lane & 2], b = r.x[(lane & 2) + 1];
  // u1 in (0, 1] (its log is finite), u2 in [0, 1); steps of 2^-32.
  const double u1 = (static_cast<double>(a) + 1.0) * 2.3283064365386963e-10;
  const double u2 = static_cast<double>(b) * 2.3283064365386963e-10;
  const double radius = ::sqrt(-2.0 * ::log(u1));
  const double angle = 6.283185307179586 * u2;
  return static_cast<float>(radius * ((lane & 1) ? ::sin(angle) : ::cos(angle)));
}

}  // namespace finecast::trainer::philox
