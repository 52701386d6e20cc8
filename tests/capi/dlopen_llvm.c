/* libmagicube.so in a process that already holds another LLVM (as Triton, PyTorch, JAX or
 * numba bring one): each libLLVM-*.so found is dlopen'ed RTLD_GLOBAL first and used, then
 * libmagicube.so is loaded and planning runs through its (hidden, static) LLVM Support. Exit
 * 77 (skipped) when no libLLVM is present.
 * Usage: dlopen_llvm LIBMAGICUBE [LIBLLVM...] */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef void *(*context_create_fn)(void);
typedef void (*context_dispose_fn)(void *);
typedef int (*describe_fn)(const char *, char *, size_t, size_t *);
typedef const char *(*last_error_fn)(void);
typedef const char *(*version_fn)(void);

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBMAGICUBE [LIBLLVM...]\n", argv[0]);
    return 2;
  }
  int llvms = 0;
  void *contexts[8];
  context_dispose_fn disposes[8];
  for (int i = 2; i < argc && llvms < 8; ++i) {
    void *h = dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      printf("(not present: %s)\n", argv[i]);
      continue;
    }
    context_create_fn create = (context_create_fn)dlsym(h, "LLVMContextCreate");
    disposes[llvms] = (context_dispose_fn)dlsym(h, "LLVMContextDispose");
    if (!create || !disposes[llvms]) {
      printf("FAIL %s has no LLVMContextCreate\n", argv[i]);
      return 1;
    }
    contexts[llvms] = create(); /* the other LLVM is alive and in use */
    printf("loaded %s\n", argv[i]);
    ++llvms;
  }
  if (llvms == 0) {
    printf("skipped: no libLLVM to load first\n");
    return 77;
  }
  void *m = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!m) {
    printf("FAIL dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  describe_fn describe = (describe_fn)dlsym(m, "magicube_plan_describe");
  last_error_fn last_error = (last_error_fn)dlsym(m, "magicube_last_error");
  version_fn version = (version_fn)dlsym(m, "magicube_version");
  if (!describe || !last_error || !version) {
    printf("FAIL magicube_plan_describe, magicube_last_error or magicube_version not exported\n");
    return 1;
  }
  char text[8192];
  size_t needed = 0;
  if (describe("spmm.s12xu4.v4.i32.sm_80", text, sizeof text, &needed) != 0) {
    printf("FAIL magicube_plan_describe: %s\n", last_error());
    return 1;
  }
  if (strncmp(text, "plan spmm.s12xu4.v4.", 20) != 0) {
    printf("FAIL unexpected plan text: %.80s\n", text);
    return 1;
  }
  if (describe("spmm.s17xs8.v8.i32.sm_90", text, sizeof text, &needed) != 1 || !strstr(last_error(), "s17")) {
    printf("FAIL a bad spec was not refused by name: %s\n", last_error());
    return 1;
  }
  for (int i = 0; i < llvms; ++i) disposes[i](contexts[i]);
  printf("ok   libmagicube %s planned next to %d other LLVM(s): %s", version(), llvms, "plan spmm.s12xu4.v4...\n");
  return 0;
}
