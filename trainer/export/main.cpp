// SPDX-License-Identifier: BSD-3-Clause
// finecast-export of the trainer-only build: the module alone, without grid tables (the full
// build's is plugin/export/main.cpp).
#include "trainer/export/export_command.hpp"

int main(int argc, char** argv) { return finecast::trainer::export_main(argc, argv, nullptr); }
