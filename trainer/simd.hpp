// SPDX-License-Identifier: BSD-3-Clause
// FINECAST_CLONES: compile a hot loop once per instruction set (AVX-512, AVX2, the baseline) and
// let the dynamic linker pick the one the CPU runs, so one binary is fast on every x86-64 node.
// Plain C++ (no torch).
#pragma once

// Not under ThreadSanitizer: the clones' resolvers run while the dynamic linker relocates the
// library, before TSan's runtime is set up, and their instrumented code crashed there (SIGSEGV).
// The AVX-512 clone is x86-64-v4 and x86-64-v3 (AVX2 with FMA) comes before plain AVX2: both fuse
// multiply-adds, which GCC's "avx512f" target alone does not. Until 2026-11-29 the AVX-512 clone
// was "avx512f": on AVX-512 CPUs the packed product, the Philox fill, the activations and the
// sampler's update ran unfused (docs/performance.md, "The fused clones on an AVX-512 CPU").
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define FINECAST_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "avx2", "default")))
#else
#define FINECAST_CLONES
#endif

namespace finecast::trainer {

/// Eight floats as GCC's vector extension (the fused loops' unit; unaligned loads through
/// memcpy). Functions that take or return it by value are always inlined into a cloned caller, so
/// GCC's -Wpsabi note about the `default` clone's ABI does not apply (the .cpp files silence it).
using Lanes = float __attribute__((vector_size(32), aligned(4)));

}  // namespace finecast::trainer
