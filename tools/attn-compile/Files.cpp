//===- Files.cpp - attn-compile's output files ----------------------------===//
//
// How the driver writes its outputs and tells two names of one file apart.
//
//===----------------------------------------------------------------------===//

#include "Files.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace attn_compile {

bool writeFile(const std::string &path,
               llvm::function_ref<void(llvm::raw_ostream &)> write,
               std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec) {
    write(os);
    os.close();
    ec = os.error();
    os.clear_error();
  }
  if (ec)
    error = "cannot write '" + path + "': " + ec.message();
  return !ec;
}

bool sameFile(llvm::StringRef a, llvm::StringRef b) {
  llvm::SmallString<256> na(a), nb(b);
  llvm::sys::path::remove_dots(na, /*remove_dot_dot=*/true);
  llvm::sys::path::remove_dots(nb, /*remove_dot_dot=*/true);
  bool same = false;
  return na == nb || (!llvm::sys::fs::equivalent(a, b, same) && same);
}

} // namespace attn_compile
