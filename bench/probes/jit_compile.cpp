// Probe (Session 14): PTX -> cubin through the driver (cuLink*) against NVRTC CUDA -> cubin, per variant,
// each compile under a new kernel name. Build: g++ -O2 -I$CUDA/include jit_compile.cpp -lnvrtc -lcuda; run with
// CUDA_CACHE_DISABLE=1 beside the .cu and .ptx files that magicube compile --emit=cuda|ptx writes.
#include <cuda.h>
#include <nvrtc.h>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <algorithm>
static std::string slurp(const std::string &f) { std::ifstream i(f); std::stringstream s; s << i.rdbuf(); return s.str(); }
static std::string rename_all(std::string s, const std::string &from, const std::string &to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}
static std::string kname(const std::string &ptx) { size_t a = ptx.find(".entry "); a += 7; size_t e = ptx.find('(', a); return ptx.substr(a, e - a); }
static double now_ms() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static int tag = 0;
static double nvrtc_ms(const std::string &src0, const std::string &name, size_t *sz) {
  std::string src = rename_all(src0, name, name + "_r" + std::to_string(tag++));
  const char *o[] = {"-std=c++17", "--gpu-architecture=sm_90", "-minimal"};
  double t = now_ms();
  nvrtcProgram p; nvrtcCreateProgram(&p, src.c_str(), "k.cu", 0, 0, 0);
  if (nvrtcCompileProgram(p, 3, o) != NVRTC_SUCCESS) { printf("nvrtc fail\n"); return -1; }
  nvrtcGetCUBINSize(p, sz); std::vector<char> b(*sz); nvrtcGetCUBIN(p, b.data()); nvrtcDestroyProgram(&p);
  return now_ms() - t;
}
static double link_ms(const std::string &ptx0, const std::string &name, size_t *sz, int opt) {
  std::string ptx = rename_all(ptx0, name, name + "_r" + std::to_string(tag++));
  double t = now_ms();
  CUlinkState ls; CUjit_option jo[1] = {CU_JIT_OPTIMIZATION_LEVEL}; void *jv[1] = {(void *)(size_t)opt};
  if (cuLinkCreate(1, jo, jv, &ls)) { printf("linkcreate fail\n"); return -1; }
  if (cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)ptx.c_str(), ptx.size() + 1, "k.ptx", 0, 0, 0)) { printf("add fail\n"); return -1; }
  void *cub; size_t n;
  if (cuLinkComplete(ls, &cub, &n)) { printf("complete fail\n"); return -1; }
  std::vector<char> b((char *)cub, (char *)cub + n); *sz = n;
  cuLinkDestroy(ls);
  return now_ms() - t;
}
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
int main() {
  cuInit(0); CUdevice d; cuDeviceGet(&d, 0); CUcontext c; cuDevicePrimaryCtxRetain(&c, d); cuCtxSetCurrent(c);
  size_t sz;
  nvrtc_ms("extern \"C\" __global__ void warmk(){}", "warmk", &sz);
  { std::string e = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry warmp() { ret; }\n"; link_ms(e, "warmp", &sz, 4); }
  std::vector<double> v;
  for (int i = 0; i < 5; ++i) v.push_back(nvrtc_ms("extern \"C\" __global__ void ek(){}", "ek", &sz));
  printf("nvrtc empty kernel: %.1f ms\n", med(v)); v.clear();
  std::string e = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry ep() { ret; }\n";
  for (int i = 0; i < 5; ++i) v.push_back(link_ms(e, "ep", &sz, 4));
  printf("driver link empty ptx: %.1f ms\n", med(v)); v.clear();
  for (const char *f : {"spmm_s8s8", "spmm_s4s4", "sddmm_s8s8", "sddmm_s4s4", "dec16"}) {
    std::string cu = slurp(std::string(f) + ".cu"), ptx = slurp(std::string(f) + ".ptx");
    std::string name = kname(ptx);
    size_t s1 = 0, s2 = 0, s3 = 0;
    std::vector<double> a, b, c2;
    for (int i = 0; i < 3; ++i) { a.push_back(nvrtc_ms(cu, name, &s1)); b.push_back(link_ms(ptx, name, &s2, 4)); c2.push_back(link_ms(ptx, name, &s3, 3)); }
    printf("%-11s nvrtc %.1f ms (cubin %zu) | driver link of NVVM's ptx O4 %.1f ms (%zu) O3 %.1f ms\n", f, med(a), s1, med(b), s2, med(c2));
  }
}
