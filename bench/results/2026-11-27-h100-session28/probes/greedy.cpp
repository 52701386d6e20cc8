#include <cstdio>
#include <vector>
#include <array>
#include <random>
#include <algorithm>
#include <cstdlib>
#include <chrono>
int main(int argc,char**argv){
  int K=atoi(argv[1]), M=atoi(argv[2]); double dens=atof(argv[3]); int passes=atoi(argv[4]);
  int nb=M/8, nnz=int(dens*K+0.5);
  std::mt19937 rng(1);
  std::vector<std::vector<int>> sets(nb); std::vector<std::vector<int>> inv(K);
  std::vector<int> all(K); for(int i=0;i<K;i++) all[i]=i;
  for(int b=0;b<nb;b++){ std::shuffle(all.begin(),all.end(),rng); sets[b].assign(all.begin(),all.begin()+nnz); for(int c:sets[b]) inv[c].push_back(b);}
  int g=(nnz+31)/32*32/8;
  std::vector<std::array<int,8>> h(nb);
  std::vector<int> color(K);
  auto cost=[&](){ long tot=0; for(int b=0;b<nb;b++){h[b].fill(0); for(int c:sets[b]) h[b][color[c]]++; int mx=*std::max_element(h[b].begin(),h[b].end()); tot+=std::max(g,mx);} return tot;};
  for(int k=0;k<K;k++) color[k]=k&7;
  long ideal=(long)g*nb; long c0=cost();
  auto t0=std::chrono::steady_clock::now();
  // greedy: columns in order of decreasing degree (all equal-ish here), least-loaded color with capacity
  std::vector<int> cap(8); for(int c=0;c<8;c++) cap[c]=(K-c+7)/8;
  for(auto&x:h) x.fill(0);
  std::vector<int> order(K); for(int i=0;i<K;i++) order[i]=i; std::shuffle(order.begin(),order.end(),rng);
  for(int k:order){ long best=-1; int bc=-1; for(int c=0;c<8;c++){ if(!cap[c]) continue; long s=0; for(int b:inv[k]) s+= h[b][c]; if(bc<0||s<best){best=s;bc=c;} } color[k]=bc; cap[bc]--; for(int b:inv[k]) h[b][bc]++; }
  long c1=cost();
  // refinement passes: for each column, try swapping with a random column of each other color... simple: try move to best color via swap with column of that color chosen randomly among few
  std::vector<std::vector<int>> members(8); for(int k=0;k<K;k++) members[color[k]].push_back(k);
  std::vector<int> pos(K); for(int c=0;c<8;c++) for(size_t i=0;i<members[c].size();i++) pos[members[c][i]]=i;
  for(int p=0;p<passes;p++) for(int a=0;a<K;a++){
    int ca=color[a];
    for(int tries=0;tries<8;tries++){
      int cb=rng()%8; if(cb==ca) continue; int bcol=members[cb][rng()%members[cb].size()];
      long d=0;
      for(int b:inv[a]){ d+= (2*h[b][cb]+1) - (2*h[b][ca]-1); h[b][ca]--; h[b][cb]++; }
      for(int b:inv[bcol]){ d+= (2*h[b][ca]+1) - (2*h[b][cb]-1); h[b][cb]--; h[b][ca]++; }
      if(d<0){ color[a]=cb; color[bcol]=ca; std::swap(members[ca][pos[a]], members[cb][pos[bcol]]); std::swap(pos[a],pos[bcol]); break; }
      else { for(int b:inv[bcol]){ h[b][ca]--; h[b][cb]++;} for(int b:inv[a]){ h[b][cb]--; h[b][ca]++;} }
    }
  }
  long c2=cost();
  double ms=std::chrono::duration<double,std::milli>(std::chrono::steady_clock::now()-t0).count();
  printf("K=%d M=%d d=%.2f identity +%.1f%% greedy +%.1f%% refined(%d) +%.1f%%  %.0f ms\n",K,M,dens,100.0*(c0-ideal)/ideal,100.0*(c1-ideal)/ideal,passes,100.0*(c2-ideal)/ideal,ms);
}
