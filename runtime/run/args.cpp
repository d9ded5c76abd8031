//===- args.cpp - the executables' argument parsing -----------------------===//
//
// This file implements the argument parsing of the executables' commands:
// `--name value` options and flags, bounded integers, layer numbers. Every
// error names the option and what is accepted, and exits 1.
//
//===----------------------------------------------------------------------===//

#include "cli.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace attn_rt {
namespace cli {

int ompThreads() { return omp_get_max_threads ? omp_get_max_threads() : 1; }

[[noreturn]] void fail(const std::string &msg) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  std::exit(1);
}

Args parseArgs(int argc, char **argv, int first,
               const std::vector<std::string> &known,
               const std::vector<std::string> &flags) {
  std::map<std::string, std::string> args;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0)
      fail("unexpected argument '" + a + "'; options start with --");
    std::string name = a.substr(2);
    if (args.count(name))
      fail("option '" + a + "' is given twice; give it once");
    if (std::find(flags.begin(), flags.end(), name) != flags.end()) {
      args[name] = "1";
      continue;
    }
    if (std::find(known.begin(), known.end(), name) == known.end())
      fail("unknown option '" + a + "'");
    if (i + 1 >= argc)
      fail("option '" + a + "' needs a value");
    args[name] = argv[++i];
  }
  return args;
}

int64_t intArg(const Args &args, const std::string &name, int64_t dflt,
               int64_t lo, int64_t hi) {
  auto it = args.find(name);
  if (it == args.end())
    return dflt;
  const char *str = it->second.c_str();
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(str, &end, 10);
  // strtoll skips leading blanks: refuse them as any other stray text.
  bool blank = std::isspace(static_cast<unsigned char>(str[0]));
  if (blank || !end || end == str || *end || errno == ERANGE || v < lo ||
      v > hi)
    fail("--" + name + " must be an integer in [" + std::to_string(lo) +
         ", " + std::to_string(hi) + "], got '" + it->second + "'");
  return v;
}

std::vector<std::string> inputsOf(const Args &args,
                                  const std::vector<std::string> &outputs) {
  std::vector<std::string> in;
  for (const auto &[name, value] : args)
    if (std::find(outputs.begin(), outputs.end(), name) == outputs.end())
      in.push_back(value);
  return in;
}

void writeOut(Args &args, const std::string &key,
              const std::vector<int64_t> &shape, const float *data) {
  NpyOutputs outs;
  outs.add(args[key], shape, data);
  std::string err;
  if (!outs.commit(inputsOf(args, {key}), err))
    fail(err);
}

void writeOut(Args &args, const std::string &key,
              const std::vector<int64_t> &shape, const uint16_t *data,
              bool half) {
  NpyOutputs outs;
  outs.add(args[key], shape, data, half);
  std::string err;
  if (!outs.commit(inputsOf(args, {key}), err))
    fail(err);
}

const attn_rt_kind &kindOfLayer(const attn_rt_model *m, int64_t layer,
                                const char *option) {
  if (layer < 0 || layer >= m->num_layers)
    fail(std::string("--") + option + " " + std::to_string(layer) +
         " is out of range: the model "
         "has layers 0.." +
         std::to_string(m->num_layers - 1));
  int64_t k = m->layer_kind[layer];
  if (k < 0)
    fail("layer " + std::to_string(layer) +
         " is linear attention, which this executable does not compile "
         "(the CUDA target has no Gated DeltaNet kernel yet; see `info`)");
  return m->kinds[k];
}

} // namespace cli
} // namespace attn_rt
