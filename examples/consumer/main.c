/* Plans an op through the C ABI of an installed libmagicube.so (C99). */
#include <magicube/magicube.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *spec = argc > 1 ? argv[1] : "spmm.s8xs8.v8.i32.sm_90";
  size_t needed = 0;
  if (magicube_plan_describe(spec, NULL, 0, &needed) != MAGICUBE_SUCCESS) {
    fprintf(stderr, "magicube: %s\n", magicube_last_error());
    return 1;
  }
  char *text = (char *)malloc(needed);
  if (!text || magicube_plan_describe(spec, text, needed, &needed) != MAGICUBE_SUCCESS) {
    fprintf(stderr, "magicube: %s\n", magicube_last_error());
    return 1;
  }
  printf("magicube %s (C)\n%s", magicube_version(), text);
  free(text);
  /* A bad spec is refused with a status and a message naming the field. */
  char small[8];
  int status = magicube_plan_describe("spmm.s17xs8.v8.i32.sm_90", small, sizeof small, &needed);
  if (status != MAGICUBE_ERROR_INVALID || !strstr(magicube_last_error(), "s17")) {
    fprintf(stderr, "expected an invalid-spec error, got %s: %s\n", magicube_status_name(status), magicube_last_error());
    return 1;
  }
  printf("bad spec: %s: %s\n", magicube_status_name(status), magicube_last_error());
  return 0;
}
