#!/usr/bin/python3
"""The report of scripts/compare: the OO7 benchmark in four builds of the same source.

Reads the DBSIZE and RESULT lines of a scripts/compare run, one RESULT line per
operation and mode: qs (hardware mode, page-fault swizzling as QuickStore), sw
(software mode, E-style object identifiers), qs-big (hardware mode with the
software mode's object sizes: the paper's QS-B) and mem (plain new/delete: the
floor). Prints the comparison (cold and hot times with their ratios, commits,
database sizes, the cost of one page fault, geometric means), writes it to
OUTDIR/compare.json and draws the paper's figures as PNG files into OUTDIR.

Usage: compare_report.py RESULTS_FILE OUTDIR
"""

import json
import math
import os
import sys

MODES = ("qs", "sw", "qs-big", "mem")
PERSISTENT_MODES = ("qs", "sw", "qs-big")
COLORS = {"qs": "#1f4e79", "sw": "#c55a11", "qs-big": "#8fb3d9", "mem": "#7f7f7f"}
RATIOS = (("qs/mem", "qs", "mem"), ("sw/qs", "sw", "qs"), ("qs-big/qs", "qs-big", "qs"))
EPSILON = 1e-9


# ---------------------------------------------------------------- input

def parse_number(text):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return None


def parse_fields(tokens):
    fields = {}
    for token in tokens:
        key, sep, value = token.partition("=")
        if sep:
            fields[key] = value
    return fields


class Results:
    """The parsed results: runs[op][mode] holds a RESULT line's numeric fields."""

    def __init__(self, path):
        self.size = None
        self.count = None
        self.indexes = {}  # mode -> "btree" (qs::btree) or "bdb" (Berkeley DB, OO7_INDEX=bdb)
        self.database_bytes = {}
        self.pools = {}  # mode -> the DBSIZE line's pool fields (generation)
        self.runs = {}
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                tokens = line.split()
                if not tokens or tokens[0] not in ("DBSIZE", "RESULT"):
                    continue
                fields = parse_fields(tokens[1:])
                mode = fields.get("mode")
                if mode is None:
                    continue
                if "indexes" in fields:
                    self.indexes[mode] = fields["indexes"]
                if tokens[0] == "DBSIZE":
                    self.size = self.size or fields.get("size")
                    self.database_bytes[mode] = parse_number(fields.get("data_bytes", ""))
                    self.pools[mode] = fields
                elif "op" in fields:
                    numbers = {k: parse_number(v) for k, v in fields.items()}
                    numbers = {k: v for k, v in numbers.items() if v is not None}
                    if self.count is None:
                        self.count = numbers.get("count")
                    self.runs.setdefault(fields["op"], {})[mode] = numbers
        self.ops = list(self.runs)
        present = {m for by_mode in self.runs.values() for m in by_mode} | set(self.database_bytes)
        self.modes = [m for m in MODES if m in present] + sorted(present - set(MODES))

    def value(self, op, mode, field):
        """A field of one run, None if the run or field is missing (or hot_ms is -1)."""
        value = self.runs.get(op, {}).get(mode, {}).get(field)
        if value is None or (field == "hot_ms" and value < 0):
            return None
        return value

    def is_update(self, op):
        """Whether op updates objects: it wrote (write faults), or its commit
        logged something. (T2c's four swaps per part leave the bytes as they
        were after an even number of iterations: nothing to log, but written.)"""
        runs = self.runs[op]
        source = [runs["qs"]] if "qs" in runs else runs.values()
        return any(r.get("write_faults", 0) > 0 or r.get("pages_written", 0) > 0 or r.get("log_bytes", 0) > 0
                   for r in source)

    def groups(self):
        """The traversals (read-only t*), the queries (q*) and the updates, in file order."""
        updates = [op for op in self.ops if self.is_update(op)]
        return {
            "traversals": [op for op in self.ops if op.startswith("t") and op not in updates],
            "queries": [op for op in self.ops if op.startswith("q") and op not in updates],
            "updates": updates,
        }

    def result_mismatches(self, modes):
        """{op: {mode: result}} for the operations whose result differs between `modes`."""
        mismatches = {}
        for op, runs in self.runs.items():
            values = {m: r["result"] for m, r in runs.items() if "result" in r and m in modes}
            if len(set(values.values())) > 1:
                mismatches[op] = values
        return mismatches


# ---------------------------------------------------------------- numbers

def ratio(numerator, denominator):
    if numerator is None or denominator is None or abs(denominator) < EPSILON:
        return None
    return numerator / denominator


def geomean(values):
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fmt_ms(value):
    """Milliseconds with 3 significant digits (all digits from 1000 up), at
    most 4 decimals: the precision of the RESULT lines."""
    if value is None:
        return "-"
    if value == 0:
        return "0"
    decimals = min(4, max(0, 2 - math.floor(math.log10(abs(value)))))
    return f"{value:.{decimals}f}"


def fmt_ratio(value):
    return "-" if value is None else f"{value:.2f}"


def fmt_int(value):
    return "-" if value is None else f"{value:,}"


def fmt_us(value):
    return "-" if value is None else f"{value:.2f}"


def fmt_percent(value):
    return "-" if value is None else f"{value:.1f}%"


# ---------------------------------------------------------------- tables

class Column:
    def __init__(self, title, width, left=False):
        self.title = title
        self.width = max(width, len(title))
        self.left = left

    def cell(self, text):
        return text.ljust(self.width) if self.left else text.rjust(self.width)


def print_table(groups, rows):
    """Prints rows under column groups: [(group title, [Column])], each group's
    title centred over its columns."""
    column_gap, group_gap = "  ", "   "
    spans, titles, columns = [], [], []
    for title, group in groups:
        width = sum(c.width for c in group) + len(column_gap) * (len(group) - 1)
        spans.append(f" {title} ".center(width, "-") if title else " " * width)
        titles.append(column_gap.join(c.cell(c.title) for c in group))
        columns.append(group)
    if any(title for title, _ in groups):
        print(group_gap.join(spans).rstrip())
    print(group_gap.join(titles))
    for row in rows:
        cells, i = [], 0
        for group in columns:
            cells.append(column_gap.join(c.cell(row[i + j]) for j, c in enumerate(group)))
            i += len(group)
        print(group_gap.join(cells))
    print()


def time_and_ratio_cells(res, op, field):
    times = [res.value(op, m, field) for m in MODES]
    by_mode = dict(zip(MODES, times))
    ratios = [ratio(by_mode[a], by_mode[b]) for _, a, b in RATIOS]
    return [fmt_ms(t) for t in times] + [fmt_ratio(r) for r in ratios]


def time_columns():
    return [Column(m, 8) for m in MODES]


def ratio_columns():
    return [Column(name, 6) for name, _, _ in RATIOS]


def result_cell(res, op, mismatches):
    runs = res.runs[op]
    mode = next((m for m in res.modes if "result" in runs.get(m, {})), None)
    text = fmt_int(runs[mode]["result"]) if mode else "-"
    return text + ("!" if op in mismatches else "")


def print_cold_table(res, mismatches):
    print("Cold: iteration 0 in a fresh process, empty caches (ms)")
    rows = []
    for op in res.ops:
        counters = [res.value(op, "qs", "cold_read_faults"), res.value(op, "sw", "cold_read_faults"),
                    res.value(op, "qs", "cold_pages_fetched"), res.value(op, "sw", "cold_pages_fetched")]
        rows.append([op, result_cell(res, op, mismatches)] + time_and_ratio_cells(res, op, "cold_ms")
                    + [fmt_int(c) for c in counters])
    print_table([("", [Column("op", 6, left=True), Column("result", 9)]),
                 ("cold time, ms", time_columns()),
                 ("ratios", ratio_columns()),
                 ("faults/misses", [Column("qs", 6), Column("sw", 6)]),
                 ("pages fetched", [Column("qs", 6), Column("sw", 6)])], rows)


def print_hot_table(res):
    if res.count and res.count > 2:
        print(f"Hot: mean of iterations 1..{res.count - 2} in the same transaction (ms)")
    else:
        print("Hot: no hot iterations (count <= 2)")
    rows = [[op] + time_and_ratio_cells(res, op, "hot_ms") for op in res.ops]
    print_table([("", [Column("op", 6, left=True)]),
                 ("hot time, ms", time_columns()),
                 ("ratios", ratio_columns())], rows)


def print_updates_table(res, updates):
    print("Updates: the commit (in the last iteration)")
    if not updates:
        print("  (no update operations)\n")
        return
    rows = []
    for op in updates:
        commit = [fmt_ms(res.value(op, m, "commit_ms")) for m in PERSISTENT_MODES]
        log = [res.value(op, m, "log_bytes") for m in PERSISTENT_MODES]
        diff = [fmt_int(res.value(op, m, "diff_bytes")) for m in PERSISTENT_MODES]
        log_ratios = [fmt_ratio(ratio(log[1], log[0])), fmt_ratio(ratio(log[2], log[0]))]
        rows.append([op] + commit + [fmt_int(b) for b in log] + diff + log_ratios)
    print_table([("", [Column("op", 6, left=True)]),
                 ("commit, ms", [Column(m, 7) for m in PERSISTENT_MODES]),
                 ("log bytes", [Column(m, 10) for m in PERSISTENT_MODES]),
                 ("changed bytes (diff)", [Column(m, 10) for m in PERSISTENT_MODES]),
                 ("log ratio", [Column("sw/qs", 6), Column("qs-big/qs", 6)])], rows)


def print_database_sizes(res):
    print("Database sizes (Table 2)")
    base = res.database_bytes.get("qs")
    modes = list(PERSISTENT_MODES) + [m for m in res.database_bytes if m not in PERSISTENT_MODES]
    rows = []
    for mode in modes:
        n = res.database_bytes.get(mode)
        mib = "-" if n is None else f"{n / 2**20:.2f}"
        rows.append([mode, fmt_int(n), mib, fmt_ratio(ratio(n, base))] + pool_cells(res, mode))
    print_table([("", [Column("mode", 6, left=True), Column("bytes", 12), Column("MiB", 8),
                       Column("vs qs", 6)]),
                 ("pool and kernel mappings (generation; runs: largest)",
                  [Column("pool pages", 10), Column("MiB", 7), Column("frames", 10, left=True),
                   Column("mappings", 8), Column("run mappings", 12)])], rows)


def pool_cells(res, mode):
    """The buffer pool each run of `mode` had, and the most kernel mappings seen."""
    fields = res.pools.get(mode, {})
    pages = parse_number(fields.get("pool_pages", ""))
    if pages is None:
        return ["-", "-", "-", "-", "-"]
    runs = [r for by_mode in res.runs.values() for m, r in by_mode.items() if m == mode]
    pools = {r.get("pool_pages") for r in runs} - {None}
    most = max((r.get("mappings", 0) for r in runs), default=None)
    pool_text = fmt_int(pages) if pools <= {pages} else fmt_int(pages) + "*"
    return [pool_text, f"{pages * 8192 / 2**20:.0f}", fields.get("frames", "-"),
            fmt_int(parse_number(fields.get("mappings", ""))), fmt_int(most)]


# ---------------------------------------------------------------- faults

FAULT_PARTS = {
    "qs": (("fetch", "cold_fetch_ns"), ("mapping", "cold_mapping_ns"),
           ("swizzle", "cold_swizzle_ns"), ("protect", "cold_protect_ns")),
    "sw": (("fetch", "cold_fetch_ns"), ("swizzle", "cold_swizzle_ns"),
           ("table_update", "cold_protect_ns")),
}

FAULT_ROWS = (
    ("detect: signal delivery + dispatch + return", "detect", "detect"),
    ("fetch: store read + checksum", "fetch", "fetch"),
    ("mapping: the page's mapping object", "mapping", None),
    ("swizzle: vptrs and pointers (sw: vptrs)", "swizzle", "swizzle"),
    ("protect: frame install (sw: residency table)", "protect", "table_update"),
    ("other: locks, page table, bookkeeping", "other", "other"),
    ("total", "total", "total"),
)


def fault_breakdown(res, mode):
    """The cost of one cold fault (qs) or residency miss (sw), in microseconds."""
    runs = [r[mode] for r in res.runs.values() if mode in r]
    faults = sum(r.get("cold_read_faults", 0) for r in runs)
    if faults == 0:
        return None
    detects = [r["detect_ns"] for r in runs if r.get("detect_ns", 0) > 0]
    detect_ns = sum(detects) / len(detects) if detects else 0.0
    handler_ns = sum(r.get("cold_fault_ns", 0) for r in runs)
    per_fault = {"detect": detect_ns / 1e3}
    for part, field in FAULT_PARTS[mode]:
        per_fault[part] = sum(r.get(field, 0) for r in runs) / faults / 1e3
    per_fault["other"] = handler_ns / faults / 1e3 - sum(v for k, v in per_fault.items() if k != "detect")
    per_fault["total"] = per_fault["detect"] + handler_ns / faults / 1e3
    total = per_fault["total"]
    share = {k: (100 * v / total if total > 0 else None) for k, v in per_fault.items()}
    cold_ms = sum(r.get("cold_ms", 0) for r in runs)
    fault_ms = faults * total / 1e3
    return {
        "faults": faults,
        "operations": len(runs),
        "per_fault_us": per_fault,
        "share_percent": share,
        "fault_ms": fault_ms,
        "cold_ms": cold_ms,
        "fault_share_of_cold_percent": 100 * fault_ms / cold_ms if cold_ms > 0 else None,
    }


def print_fault_breakdown(breakdown, modes):
    print("One cold fault (Table 6): qs page fault vs. sw residency miss, "
          "summed over the cold iterations, per fault (us)")
    qs, sw = breakdown["qs"], breakdown["sw"]
    rows = []
    for label, qs_key, sw_key in FAULT_ROWS:
        row = [label]
        for data, key in ((qs, qs_key), (sw, sw_key)):
            if data is None or key is None:
                row += ["-", "-"]
            else:
                row += [fmt_us(data["per_fault_us"][key]), fmt_percent(data["share_percent"][key])]
        rows.append(row)
    print_table([("", [Column("part", 44, left=True)]),
                 ("qs", [Column("us", 7), Column("share", 6)]),
                 ("sw", [Column("us", 7), Column("share", 6)])], rows)
    for mode, data in (("qs", qs), ("sw", sw)):
        if data is None:
            print(f"  {mode}: {'no faults' if mode in modes else 'no results'}")
            continue
        share = data["fault_share_of_cold_percent"]
        print(f"  {mode}: {data['faults']:,} faults in {data['operations']} cold iterations; "
              f"{fmt_ms(data['fault_ms'])} ms of {fmt_ms(data['cold_ms'])} ms cold time "
              f"({fmt_percent(share)}) spent on them")
    print()


# ---------------------------------------------------------------- summary

def summary(res, groups):
    """Geometric means of the ratios per group of operations, cold and hot."""
    result = {}
    for name, ops in groups.items():
        entry = {"ops": ops}
        for phase, field in (("cold", "cold_ms"), ("hot", "hot_ms")):
            entry[phase] = {
                label: geomean([ratio(res.value(op, a, field), res.value(op, b, field)) for op in ops])
                for label, a, b in RATIOS
            }
        result[name] = entry
    return result


def print_summary(geomeans):
    print("Geometric means of the ratios")
    rows = []
    for name, entry in geomeans.items():
        rows.append([name, str(len(entry["ops"]))]
                    + [fmt_ratio(entry["cold"][label]) for label, _, _ in RATIOS]
                    + [fmt_ratio(entry["hot"][label]) for label, _, _ in RATIOS])
    print_table([("", [Column("operations", 10, left=True), Column("n", 3)]),
                 ("cold", ratio_columns()),
                 ("hot", ratio_columns())], rows)


# ---------------------------------------------------------------- plots

def bar_chart(ax, res, ops, modes, field, title, commit=False):
    """Grouped bars, one group per operation and one bar per mode, on a log
    scale when the values spread widely; with commit set, each bar carries the
    operation's commit time as a hatched segment on top."""
    from matplotlib.ticker import FuncFormatter

    width = 0.8 / len(modes)
    heights = []
    for i, mode in enumerate(modes):
        xs = [k + (i - (len(modes) - 1) / 2) * width for k in range(len(ops))]
        values = [res.value(op, mode, field) for op in ops]
        if commit:
            commits = [res.value(op, mode, "commit_ms") for op in ops]
            values = [None if c is None else v for v, c in zip(values, commits)]
        bars = [math.nan if v is None else v for v in values]
        ax.bar(xs, bars, width, color=COLORS.get(mode), edgecolor="black", linewidth=0.5, label=mode)
        heights += [v for v in values if v is not None and v > 0]
        if commit:
            tops = [math.nan if v is None else c for v, c in zip(values, commits)]
            ax.bar(xs, tops, width, bottom=bars, color=COLORS.get(mode), edgecolor="black",
                   linewidth=0.5, hatch="////", alpha=0.6)
            heights += [v + c for v, c in zip(values, commits) if v is not None and v + c > 0]
    if heights and max(heights) / min(heights) > 30:
        ax.set_yscale("log")
        ax.set_ylim(min(heights) / 2, max(heights) * 1.5)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xticks(range(len(ops)))
    ax.set_xticklabels(ops)
    ax.set_xlim(-0.6, len(ops) - 0.4)
    ax.set_xlabel("operation")
    ax.set_ylabel("time (ms)")
    ax.set_title(title)
    ax.grid(axis="y", which="major", alpha=0.3)
    ax.set_axisbelow(True)


def make_plots(res, groups, outdir):
    """Draws figures 8, 9, 12 and 13 of the paper; returns the paths written."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError as e:
        print(f"note: matplotlib is not available ({e}); no plots", file=sys.stderr)
        return []

    size = res.size or "?"
    modes = [m for m in MODES if m in res.modes]
    persistent = [m for m in PERSISTENT_MODES if m in res.modes]
    written = []

    def figure(ops, panels=1):
        fig, axes = plt.subplots(1, panels, figsize=(panels * max(4.5, 1.0 + 0.8 * len(ops)), 4.5),
                                 squeeze=False)
        return fig, axes[0]

    def save(fig, ax, name, extra_handles=()):
        handles, _ = ax.get_legend_handles_labels()
        fig.tight_layout()
        fig.legend(handles=handles + list(extra_handles), title="mode", loc="upper left",
                   bbox_to_anchor=(1.0, 0.9))
        path = os.path.join(outdir, name)
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        written.append(path)

    traversals, queries, updates = groups["traversals"], groups["queries"], groups["updates"]
    for name, field, phase in (("fig8_cold_traversals.png", "cold_ms", "cold"),
                               ("fig9_hot_traversals.png", "hot_ms", "hot")):
        if traversals:
            fig, (ax,) = figure(traversals)
            bar_chart(ax, res, traversals, modes, field, f"OO7 {size}: {phase} traversals")
            save(fig, ax, name)

    if updates and persistent:
        fig, (ax,) = figure(updates)
        bar_chart(ax, res, updates, persistent, "cold_ms",
                  f"OO7 {size}: cold updates, commit on top", commit=True)
        commit = Patch(facecolor="white", edgecolor="black", hatch="////", label="commit")
        save(fig, ax, "fig12_updates.png", [commit])

    if queries:
        fig, axes = figure(queries, panels=2)
        for ax, field, phase in zip(axes, ("cold_ms", "hot_ms"), ("cold", "hot")):
            bar_chart(ax, res, queries, modes, field, f"OO7 {size}: {phase} queries")
        save(fig, axes[0], "fig13_queries.png")

    for group, figures in (("traversals", "8 and 9"), ("queries", "13"), ("updates", "12")):
        if not groups[group]:
            print(f"note: no {group} in the results, so no figure {figures}", file=sys.stderr)
    return written


# ---------------------------------------------------------------- main

def main(argv):
    if len(argv) != 3:
        print(f"usage: {os.path.basename(argv[0])} RESULTS_FILE OUTDIR", file=sys.stderr)
        return 2
    res = Results(argv[1])
    outdir = argv[2]
    if not res.runs:
        print(f"{argv[1]}: no RESULT lines", file=sys.stderr)
        return 1
    os.makedirs(outdir, exist_ok=True)

    print(f"OO7 comparison: database {res.size or '?'}, count={res.count} "
          f"(iterations per operation, one transaction), modes: {' '.join(res.modes)}")
    kinds = {"btree": "qs::btree_multimap", "bdb": "Berkeley DB B-trees (OO7_INDEX=bdb; mem: std::multimap)"}
    if res.indexes:
        print("indexes: " + ", ".join(f"{m} {kinds.get(k, k)}" for m, k in sorted(res.indexes.items())))
    missing = [m for m in MODES if m not in res.modes]
    if missing:
        print(f"(no results for mode {', '.join(missing)}: shown as -)")
    print()
    # The persistent modes run the same sequence of operations on their own
    # databases and must agree; mem starts from a fresh database in every
    # process, so updates earlier in the run (T3's dates, T5's texts) are not
    # in it.
    mismatches = res.result_mismatches(PERSISTENT_MODES)
    for op, values in mismatches.items():
        shown = " ".join(f"{m}={v}" for m, v in values.items())
        print(f"*** WARNING: operation {op}: the result differs between modes: {shown}")
    fresh = {op: v for op, v in res.result_mismatches(MODES).items() if op not in mismatches}
    if fresh:
        shown = ", ".join(f"{op} (mem {v['mem']})" for op, v in fresh.items() if "mem" in v)
        print(f"note: mem regenerates its database in each process, so earlier updates are not in it: {shown}")
    if mismatches or fresh:
        print()

    groups = res.groups()
    print_cold_table(res, mismatches)
    print_hot_table(res)
    print_updates_table(res, groups["updates"])
    print_database_sizes(res)
    breakdown = {mode: fault_breakdown(res, mode) for mode in ("qs", "sw")}
    print_fault_breakdown(breakdown, res.modes)
    geomeans = summary(res, groups)
    print_summary(geomeans)

    json_path = os.path.join(outdir, "compare.json")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump({
            "size": res.size,
            "count": res.count,
            "indexes": res.indexes,
            "modes": res.modes,
            "operations": res.runs,
            "database_bytes": res.database_bytes,
            "fault_breakdown": breakdown,
            "summary": geomeans,
        }, f, indent=2)
        f.write("\n")

    print("Files written:")
    for path in [json_path] + make_plots(res, groups, outdir):
        print(f"  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
