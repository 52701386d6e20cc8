# Session 33: the shares kernel's timeline from the experiment build's ET lines
# (bx by warp seg strides et0 et1 et2 et3; globaltimer ns): the last launch of each file.
import sys, statistics as st
def q(v): return "min %.1f med %.1f max %.1f" % (min(v) / 1e3, st.median(v) / 1e3, max(v) / 1e3)
for path in sys.argv[1:]:
    rows = []
    for l in open(path, errors="replace"):
        if l.startswith("ET "):
            a = l.split()
            if len(a) == 10: rows.append(tuple(int(x) for x in a[1:]))
    if not rows: print(path, "no ET lines"); continue
    rows.sort(key=lambda r: r[5])
    launches = [[rows[0]]]
    for r in rows[1:]:
        if r[5] - launches[-1][-1][5] > 100000: launches.append([])
        launches[-1].append(r)
    print("==", path, "launches", len(launches))
    for R in launches[-2:]:
        t0 = min(r[5] for r in R); t_end = max(r[8] for r in R)
        blocks = {}
        for r in R: blocks.setdefault((r[0], r[1]), []).append(r)
        print(" span %.1f us, blocks %d, lines %d" % ((t_end - t0) / 1e3, len(blocks), len(R)))
        nseg = [len(set(x[3] for x in w)) for w in blocks.values()]
        print("  segments a block: " + ", ".join("%d: %d" % (k, nseg.count(k)) for k in sorted(set(nseg))))
        start = [min(x[5] for x in w) - t0 for w in blocks.values()]
        end = [max(x[8] for x in w) - t0 for w in blocks.values()]
        print("  block start", q(start)); print("  block end  ", q(end))
        copy, loop, spread, cut = [], [], [], []
        for w in blocks.values():
            segs = sorted(set(x[3] for x in w)); prev = min(x[5] for x in w)
            for s in segs:
                W = [x for x in w if x[3] == s]
                landed = max(x[6] for x in W); le_min = min(x[7] for x in W); le_max = max(x[7] for x in W); se = max(x[8] for x in W)
                copy.append((s, landed - prev)); loop.append((s, le_max - landed)); spread.append((s, le_max - le_min)); cut.append((s, se - le_max))
                prev = se
        for s in sorted(set(x for x, _ in copy)):
            f = lambda L: [v for k, v in L if k == s]
            print("  seg %d (%d blocks): start->landed %s | landed->last loop end %s | loop-end spread %s | cut sums %s" % (
                s, len(f(copy)), q(f(copy)), q(f(loop)), q(f(spread)), q(f(cut))))
        busy = sum(e - s for s, e in zip(start, end)) / (len(blocks) * (t_end - t0))
        print("  busy fraction of the span (these blocks) %.3f" % busy)
