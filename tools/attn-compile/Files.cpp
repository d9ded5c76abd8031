//===- Files.cpp - attn-compile's output files ----------------------------===//
//
// How the driver writes its outputs (and links what it builds) and tells
// two names of one file apart.
//
//===----------------------------------------------------------------------===//

#include "Files.h"

#include "compiler/Target/CPU/Executable.h"

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

int linkObjects(llvm::ArrayRef<llvm::SmallString<0>> objects,
                const std::string &outputPath, bool shared, bool hostOnly,
                bool mpi, mlir::TimingScope &timing) {
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("attn-compile", dir)) {
    llvm::errs() << "attn-compile: error: cannot create a temporary "
                    "directory: "
                 << ec.message() << "\n";
    return 1;
  }
  mlir::TimingScope writing = timing.nest("write the object");
  std::vector<std::string> paths;
  std::string error;
  bool linked = true;
  for (size_t i = 0; linked && i < objects.size(); ++i) {
    paths.push_back((dir + "/kernels" + llvm::Twine(i) + ".o").str());
    linked = writeFile(
        paths.back(), [&](llvm::raw_ostream &os) { os << objects[i]; }, error);
  }
  writing.stop();
  if (linked) {
    mlir::TimingScope linking = timing.nest("link");
    linked = mlir::attn::linkExecutable(paths, outputPath, shared, error,
                                        hostOnly, mpi);
  }
  llvm::sys::fs::remove_directories(dir);
  if (!linked) {
    llvm::errs() << "attn-compile: error: " << error << "\n";
    return 1;
  }
  return 0;
}

} // namespace attn_compile
