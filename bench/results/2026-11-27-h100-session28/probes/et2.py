import sys, statistics as st
sys.argv=sys.argv
exec(open('/tmp/sim/et.py').read().split("for path in sys.argv[1:]:")[0])
for path in sys.argv[1:]:
    launches=load(path,0)
    print(path)
    for R in launches[-3:]:
        t0=min(r[4] for r in R)
        W={}
        for r in R: W.setdefault(r[2],[]).append((r[6]-t0)/1e3)
        print(" by warp: loop end mean", " ".join("%d:%.2f"%(w,st.mean(v)) for w,v in sorted(W.items())))
        S={}
        for r in R: S.setdefault(r[3],[]).append((r[6]-t0)/1e3)
        sm=sorted(S.items(), key=lambda x: st.mean(x[1]))
        print(" slowest SMs", [(k,round(st.mean(v),2)) for k,v in sm[-6:]], "fastest", [(k,round(st.mean(v),2)) for k,v in sm[:6]])
        n=[r[8] for r in R]; print(" strides/warp min %d max %d"%(min(n),max(n)))
