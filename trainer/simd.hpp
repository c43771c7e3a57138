// SPDX-License-Identifier: BSD-3-Clause
// FINECAST_CLONES: compile a hot loop once per instruction set (AVX-512, AVX2, the baseline) and
// let the dynamic linker pick the one the CPU runs, so one binary is fast on every x86-64 node.
// Plain C++ (no torch).
#pragma once

// Not under ThreadSanitizer: the clones' resolvers run while the dynamic linker relocates the
// library, before TSan's runtime is set up, and their instrumented code crashed there (SIGSEGV).
// FINECAST_CLONES_FMA, for loops of multiply-adds (products, polynomials), fuses them: its AVX-512
// clone is x86-64-v4, which includes FMA, where GCC's "avx512f" alone does not (until 2026-11-29
// the packed product and the Philox fill ran unfused on AVX-512 CPUs, their FMA-less clone
// chosen first), and x86-64-v3 (AVX2 with FMA) comes before plain AVX2.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define FINECAST_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define FINECAST_CLONES_FMA __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "avx2", "default")))
#else
#define FINECAST_CLONES
#define FINECAST_CLONES_FMA
#endif

namespace finecast::trainer {

/// Eight floats as GCC's vector extension (the fused loops' unit; unaligned loads through
/// memcpy). Functions that take or return it by value are always inlined into a cloned caller, so
/// GCC's -Wpsabi note about the `default` clone's ABI does not apply (the .cpp files silence it).
using Lanes = float __attribute__((vector_size(32), aligned(4)));

}  // namespace finecast::trainer
