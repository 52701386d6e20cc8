import sys, statistics as st
def load(path, per):
    L=[l.split() for l in open(path) if l.startswith("ET ")]
    rows=[(int(a[1]),int(a[2]),int(a[3]),int(a[4]),int(a[5]),int(a[6]),int(a[7]),int(a[8]),int(a[9])) for a in L]
    # split into launches by gaps in et0
    rows.sort(key=lambda r:r[4])
    launches=[[rows[0]]]
    for r in rows[1:]:
        if r[4]-launches[-1][-1][4] > 200000: launches.append([])
        launches[-1].append(r)
    return launches
for path in sys.argv[1:]:
    launches=load(path,0)
    print(path, "launches", len(launches), [len(l) for l in launches])
    for R in launches[-2:]:
        t0=min(r[4] for r in R)
        end=max(r[7] for r in R)
        blocks={}
        for r in R: blocks.setdefault((r[0],r[1]),[]).append(r)
        bstart=[min(x[4] for x in w)-t0 for w in blocks.values()]
        bland=[max(x[5] for x in w)-t0 for w in blocks.values()]
        loopend_min=[min(x[6] for x in w)-t0 for w in blocks.values()]
        loopend_max=[max(x[6] for x in w)-t0 for w in blocks.values()]
        bend=[max(x[7] for x in w)-t0 for w in blocks.values()]
        q=lambda v:"min %.1f med %.1f max %.1f"%(min(v)/1e3,st.median(v)/1e3,max(v)/1e3)
        print(" span %.1f us, blocks %d"%((end-t0)/1e3,len(blocks)))
        print("  block start  ",q(bstart))
        print("  slice landed ",q(bland))
        print("  first warp loop end",q(loopend_min))
        print("  last warp loop end ",q(loopend_max))
        print("  block end    ",q(bend))
        spread=[ (b-a) for a,b in zip(loopend_min,loopend_max)]
        print("  in-block loop-end spread",q(spread))
        dur=[b-a for a,b in zip(bstart,bend)]
        print("  block duration",q(dur))
        busy=sum(dur)/ (132*(end-t0))
        print("  SM busy fraction (132 SMs) %.3f"%busy)
