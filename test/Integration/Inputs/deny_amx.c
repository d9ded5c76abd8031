// Runs argv[1..] with arch_prctl(ARCH_REQ_XCOMP_PERM, ...) refused (EPERM)
// by a seccomp filter: the kernels' request for the AMX tile state fails as
// it would on a Linux before 5.16 or under a sandbox, and they must take
// the AVX-512 path (amx-decode.test).
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: deny_amx PROGRAM [ARGS...]\n");
    return 2;
  }
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_arch_prctl, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
               offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 0,
               1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
    perror("deny_amx: seccomp");
    return 2;
  }
  // The filter holds: the request is refused here too.
  if (syscall(SYS_arch_prctl, 0x1023, 18) != -1 || errno != EPERM) {
    fprintf(stderr, "deny_amx: arch_prctl was not refused\n");
    return 2;
  }
  execv(argv[1], argv + 1);
  perror("deny_amx: exec");
  return 2;
}
