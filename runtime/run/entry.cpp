//===- entry.cpp - main of compiled executables ----------------------------===//
//
// The executable's `main`, alone in its archive member: the linker pulls it
// into executables (crt1 needs `main`) and leaves it out of --emit=shared
// libraries and of programs that link --emit=obj objects with their own main.
//
//===----------------------------------------------------------------------===//

#include "attn_runtime.h"

int main(int argc, char **argv) { return attn_rt_main(argc, argv); }
