// SPDX-License-Identifier: BSD-3-Clause
// Pieces of TorchScript source text shared by the denoisers' definitions.
#include "trainer/denoisers/script_source.hpp"

#include <cstdio>
#include <set>

namespace finecast::trainer::denoisers::script {

std::string literal(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string identifier(const std::string& name) {
  static const std::set<std::string> keywords{"in",     "is",   "if",   "or",    "and",  "not",
                                              "def",    "for",  "from", "with",  "as",   "class",
                                              "return", "else", "elif", "while", "pass", "lambda"};
  return keywords.count(name) ? name + "_" : name;
}

std::string attr(const std::string& path) {
  std::string out = "self.net";
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    out += "." + identifier(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out;
}

std::string with_prefix(std::string text, const std::string& prefix) {
  for (size_t at = text.find("{P}"); at != std::string::npos; at = text.find("{P}", at + prefix.size()))
    text.replace(at, 3, prefix);
  return text;
}

std::string activation(Activation a) {
  switch (a) {
    case Activation::kSilu:
      return "torch.silu(x)";
    case Activation::kGelu:
      return "torch.gelu(x, approximate=\"tanh\")";
    case Activation::kRelu:
      return "torch.relu(x)";
  }
  return "x";
}

std::string conditioning(const ModelOptions& mo) {
  const int64_t fine = mo.static_channels * mo.patch_size, head = mo.context_size - fine;
  std::string s = "        head = context.narrow(1, 0, " + std::to_string(head) + ")\n";
  s += "        cond = self._act(torch.linear(torch.cat([head, " + attr("step_table") + ".index_select(0, t)], 1), " +
       attr("cond1.weight") + ", " + attr("cond1.bias") + "))\n";
  s += "        cond = self._act(torch.linear(cond, " + attr("cond2.weight") + ", " + attr("cond2.bias") + "))\n";
  if (mo.static_channels > 0)
    s += "        fields = context.narrow(1, " + std::to_string(head) + ", " + std::to_string(fine) +
         ").reshape([x_t.size(0), " + std::to_string(mo.static_channels) + ", " + std::to_string(mo.patch_size) +
         "])\n";
  return s;
}

}  // namespace finecast::trainer::denoisers::script
