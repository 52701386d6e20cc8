import random, sys
def write(path, rows, cols, nnz, balanced, seed):
    rng = random.Random(seed)
    ptr=[0]; idx=[]
    for r in range(rows):
        if balanced:
            per=[nnz//8]*8
            for i in rng.sample(range(8), nnz%8): per[i]+=1
            s=[]
            for res in range(8):
                s += [res + 8*j for j in rng.sample(range(cols//8), per[res])]
            s.sort()
        else:
            s=sorted(rng.sample(range(cols), nnz))
        idx+=s; ptr.append(len(idx))
    with open(path,'w') as f:
        f.write(f"{rows}, {cols}, {len(idx)}\n"); f.write(" ".join(map(str,ptr))+"\n"); f.write(" ".join(map(str,idx))+"\n")
d=sys.argv[1]
for (m,k) in [(4096,4096),(14336,4096),(4096,11008)]:
    nnz=int(0.1*k+0.5)
    for bal in (0,1):
        write(f"{d}/m{m}k{k}_{'bal' if bal else 'uni'}.smtx", m//8, k, nnz, bal, 7)
