#!/usr/bin/python3
"""peers_report.py RESULTS: prints the table of scripts/peers.

RESULTS holds, for each size, a line "SIZE n=N", then one line per phase of
each row, "RESULT row=ROW peer=PEER phase=PHASE key=value ...", "FAILED
row=ROW phase=PHASE" for a phase that failed, and "NOTE cold_is_warm" when
the OS page cache could not be dropped.
"""
import sys

NOTES = {
    "qs": "qs: one transaction, committed durably (Berkeley DB's log is on disk when commit returns): atomic and durable",
    "boost": "boost: flush() (msync MS_ASYNC) + fdatasync: durable once it returns; not atomic (a crash before leaves"
    " any subset of the pages, the allocator's metadata included)",
    "pmemobj": "pmemobj: pmemobj_tx (undo/redo logs in the pool): atomic; with PMEM_IS_PMEM_FORCE=1 its flushes stop"
    " at the page cache, so it is not durable against an OS crash or power loss",
    "pmemobj-msync": "pmemobj-msync: PMEM_IS_PMEM_FORCE=0, msync on every flush: atomic and durable",
    "mem": "mem: new/delete, nothing durable; hot = the hot passes in the process that built the tree",
    "qs-remote": "qs-remote: qs through qs-pageserver on a Unix socket (a new server for each phase: its cache"
    " starts empty), optimistic serializable transactions",
    "qs-pagesdb": "qs-pagesdb: qs with options::page_file = false: page records in Berkeley DB's B-tree (pages.db),"
    " the layout qs-pageserver serves; qs (the default) keeps them in a file written in place, their changes"
    " logged as Berkeley DB application records (atomic and durable alike)",
    "qs-copied": "qs-copied: qs with options::map_page_file = false: every page copied into its frame, none mapped"
    " from the page file",
}


def parse(path):
    sizes, cold_is_warm = [], False
    for line in open(path):
        words = line.split()
        if not words:
            continue
        kv = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        if words[0] == "SIZE":
            sizes.append((int(kv["n"]), {}))
        elif words[0] == "NOTE" and words[1] == "cold_is_warm":
            cold_is_warm = True
        elif words[0] in ("RESULT", "FAILED") and sizes:
            row = sizes[-1][1].setdefault(kv["row"], {})
            row[kv["phase"]] = kv if words[0] == "RESULT" else None
    return sizes, cold_is_warm


def value(row, phase, key, scale=1.0):
    r = row.get(phase)
    if not r or key not in r:
        return None
    return float(r[key]) * scale


def columns(row):
    """The table's figures for one row, None where the row has none."""
    if "all" in row:  # plain memory
        return {"build s": value(row, "all", "build_s"), "hot ms": value(row, "all", "hot_ms"),
                "update ms": value(row, "all", "update_ms")}
    return {
        "build s": value(row, "build", "build_s"),
        "open ms": value(row, "open", "open_ms"),
        "cold ms": value(row, "cold", "first_ms"),
        "warm ms": value(row, "warm", "first_ms"),
        "hot ms": value(row, "warm", "hot_ms"),
        "hot txn ms": value(row, "warm", "hot_txn_ms"),
        "update ms": value(row, "update", "update_ms"),
        "commit ms": value(row, "update", "commit_ms"),
        "disk MB": value(row, "disk", "alloc_bytes", 1e-6),
    }


def fmt(x, width=11):
    if x is None:
        return "-".rjust(width)
    if x >= 100:
        return f"{x:{width}.0f}"
    if x >= 1:
        return f"{x:{width}.2f}"
    return f"{x:{width}.3f}"


def report(n, rows, cold_is_warm):
    heads = ["build s", "open ms", "cold ms", "warm ms", "hot ms", "hot/mem", "hot txn ms", "update ms", "commit ms",
             "disk MB"]
    cold_label = "cold* ms" if cold_is_warm else "cold ms"
    order = [r for r in rows if r.startswith("qs")] + [r for r in ("boost", "pmemobj", "pmemobj-msync", "mem")
                                                          if r in rows]
    cols = {r: columns(rows[r]) for r in order}
    mem_hot = cols.get("mem", {}).get("hot ms")
    for r in order:
        h = cols[r].get("hot ms")
        cols[r]["hot/mem"] = h / mem_hot if h is not None and mem_hot else None

    print(f"== {n} nodes of 64 bytes, 3 child pointers each, allocated in shuffled order")
    w = max(15, max(len(r) + 1 for r in order))
    print(f"{'':{w}}" + "".join(f"{(cold_label if h == 'cold ms' else h):>11}" for h in heads))
    for r in order:
        failed = [p for p, v in rows[r].items() if v is None]
        print(f"{r:{w}}" + "".join(fmt(cols[r].get(h)) for h in heads) + (f"   ({failed[0]} failed)" if failed else ""))
    if "boost" in cols:
        print("ratio to boost")
        for r in order:
            if r == "boost":
                continue
            line = ""
            for h in heads:
                a, b = cols[r].get(h), cols["boost"].get(h)
                line += fmt(a / b if a is not None and b else None) if h != "hot/mem" else fmt(None)
            print(f"  {r:{w - 2}}" + line)

    # Details: what the table's figures are made of.
    print()
    for r in order:
        row = rows[r]
        if r.startswith("qs") and row.get("cold") and row.get("build"):
            c, b, w = row["cold"], row["build"], row["warm"]
            print(f"  {r}: pool {b['pool_pages']} pages; cold pass {c['read_faults']} read faults, {c['evictions']}"
                  f" evictions, {c.get('prefetched', '?')} pages prefetched (of {c.get('prefetch_watched', '?')} watched,"
                  f" {c.get('prefetched_used', '?')} used), {c.get('pages_mapped', '?')} mapped from the file;"
                  f" hot pass {w['hot_read_faults']} faults; build {b['dirty_evictions']} dirty"
                  f" evictions, {int(b['log_bytes']) / 1e6:.1f} MB logged")
        if r.startswith("qs") and row.get("disk"):
            d = row["disk"]
            files = "pages.db, meta.db" if r in ("qs-pagesdb", "qs-remote") else "pages.qs, pages.db, meta.db"
            print(f"  {r}: on disk {int(d['data_bytes']) / 1e6:.1f} MB of data files ({files}) and"
                  f" {int(d['log_bytes']) / 1e6:.1f} MB of Berkeley DB log")
        if r == "boost" and row.get("disk") and row.get("build"):
            print(f"  boost: file {int(row['disk']['apparent_bytes']) / 1e6:.1f} MB (sparse), of which the heap"
                  f" uses {int(row['build']['used_bytes']) / 1e6:.1f} MB")
        if r == "pmemobj" and row.get("build"):
            print(f"  pmemobj: pool preallocated at {int(row['build']['pool_bytes']) / 1e6:.1f} MB")
    closes = [f"{r} {float(rows[r]['build']['close_s']):.3f} s" for r in order
              if rows[r].get("build") and "close_s" in rows[r]["build"]]
    if closes:
        print("  closing after the build: " + ", ".join(closes))
    closes = [f"{r} {float(rows[r]['update']['close_s']):.3f} s" for r in order
              if rows[r].get("update") and "close_s" in rows[r]["update"]]
    if closes:
        print("  closing after the update: " + ", ".join(closes))
    sums = {}
    for r in order:
        for p in ("cold", "warm", "all"):
            if rows[r].get(p) and "sum" in rows[r][p]:
                sums.setdefault(rows[r][p]["sum"], []).append(f"{r} {p}")
    expected = str(n * (n - 1) // 2)
    if list(sums) == [expected]:
        print(f"  every traversal visited {n} nodes and summed {expected}")
    else:
        print("  the traversals' sums differ: " + "; ".join(f"{s}: {', '.join(w)}" for s, w in sums.items()))
    def ratios_to_qs(row, label, heads, base="qs"):
        if base not in cols or row not in cols:
            return
        ratios = []
        for h in heads:
            a, b = cols[row].get(h), cols[base].get(h)
            if a is not None and b:
                ratios.append(f"{h[:-3] if h.endswith(' ms') else h.split()[0]} {a / b:.2f}")
        print(f"  {label}: " + ", ".join(ratios))

    ratios_to_qs("qs-pagesdb", "qs-pagesdb / qs",
                 ("build s", "cold ms", "warm ms", "hot ms", "update ms", "commit ms"))
    ratios_to_qs("qs", "qs / qs-copied", ("cold ms", "warm ms", "hot ms", "update ms"), base="qs-copied")
    ratios_to_qs("qs-remote", "qs-remote / qs (embedded)",
                 ("build s", "cold ms", "warm ms", "hot ms", "hot txn ms", "update ms"))
    ratios_to_qs("qs-remote", "qs-remote / qs-pagesdb (embedded, the same layout)",
                 ("build s", "cold ms", "warm ms", "hot ms", "hot txn ms", "update ms"), base="qs-pagesdb")
    if cold_is_warm:
        print("  cold*: the OS page cache could not be dropped (not root?): the cold column is a warm one")
    for r in order:
        if r in NOTES or r.startswith("qs-pool"):
            print("  " + NOTES.get(r, f"{r}: qs with options::pool_pages = {r[len('qs-pool'):]}"))
        elif r in ("qs-page_order", "qs-pointers", "qs-both"):
            print(f"  {r}: qs with options::prefetch_along = qs::prefetch_order::{r[3:]}")
    print()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: peers_report.py RESULTS")
    sizes, cold_is_warm = parse(sys.argv[1])
    print("build: create, allocate, link, make durable; open: open and read the root node; cold: a traversal in a")
    print("fresh process, OS page cache dropped; warm: the same with the OS cache warm; hot: the fastest of the")
    print("next passes in that process (up to five, fewer when they take over a second); hot txn: the same")
    print("passes, each a transaction of its own (qs);")
    print("update: 1% of the nodes, each reached from the root, and the durable commit (commit ms: that part);")
    print("disk: bytes allocated on disk after all phases. Every phase is a fresh process.")
    print()
    for n, rows in sizes:
        report(n, rows, cold_is_warm)


if __name__ == "__main__":
    main()
