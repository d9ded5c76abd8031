//===- resources.cpp - resource bounds of the runtime's commands ----------===//
//
// This file implements the memory checks of resources.h.
//
//===----------------------------------------------------------------------===//

#include "resources.h"

#include <cstdio>

#include <unistd.h>

using namespace attn_rt;

uint64_t attn_rt::physicalMemory() {
  return uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGE_SIZE));
}

uint64_t attn_rt::memoryBudget() { return physicalMemory() / 5 * 4; }

bool attn_rt::fitsInMemory(unsigned __int128 bytes, const std::string &what,
                           std::string &error) {
  if (bytes <= memoryBudget())
    return true;
  double physical = double(physicalMemory());
  char buf[160];
  std::snprintf(buf, sizeof(buf),
                " needs %.3g bytes (%.1f GB); this machine has %.1f GB of "
                "memory",
                double(bytes), double(bytes) / 1e9, physical / 1e9);
  error = what + buf;
  return false;
}
