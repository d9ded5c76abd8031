//===- resources.h - resource bounds of the runtime's commands -----*- C++ -*-===//
//
// The checks every command makes before a large allocation: a size that
// cannot fit in this machine's memory is an error that says what would be
// needed, never a std::bad_alloc.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_RESOURCES_H
#define ATTN_RUNTIME_RESOURCES_H

#include <cstdint>
#include <string>

namespace attn_rt {

/// The largest batch `sdpa` and `block` take (no real batch comes close; a
/// larger one with empty sequences would only loop).
constexpr int64_t kMaxBatch = int64_t(1) << 31;

/// The machine's physical memory in bytes.
uint64_t physicalMemory();

/// What a command may allocate: 80% of physical memory.
uint64_t memoryBudget();

/// False, with "WHAT needs N bytes (M GB); this machine has K GB of memory"
/// in `error`, when `bytes` exceed memoryBudget().
bool fitsInMemory(unsigned __int128 bytes, const std::string &what,
                  std::string &error);

} // namespace attn_rt

#endif // ATTN_RUNTIME_RESOURCES_H
