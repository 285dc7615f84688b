"""The results of `make bench` (bench/run.sh): tags each contender's JSON line as it
comes, then reports the medians and writes the whole as one JSON file.

  python3 bench/results.py tag CONTENDER ROUND [MODEL] < JSON > LINE
      the JSON object on standard input (cflux's or bench/peers.py's) as one line,
      with "contender" and "round" added, and "model" as a name: mlp, cnn, lstm,
      gpt (MODEL when given, as run.sh does; cflux's model file, e.g.
      models/char-rnn.flux, goes to "model_file")
  python3 bench/results.py report RAW OUT [--rounds R] [--seconds S] [--commit C] [--load L0 L1]
      prints, for each model, for each contender and thread count, the median
      (min..max) of each figure over the rounds, then a table of each contender at
      its best thread count with the ratios to cflux; writes it all, raw lines
      included, to OUT
  python3 bench/results.py compare RAW [--load L0 L1]
      for bench/compare.sh: the raw lines of two cflux binaries, tagged cflux-old
      and cflux-new, as a markdown table of each case (model and thread count): the
      median of each figure for both over the rounds, their ratio new/old and the
      median and range of the rounds' ratios (each round ran both, one after the other)

Figures: train (samples/s, batch 64), infer (samples/s, batch 1000), latency (µs,
batch 1, median of calls) and memory (peak RSS of the training process, MB). Ratios
are > 1 where cflux is better: cflux/peer for samples/s, peer/cflux for latency.
The LSTM's samples are sequences of 50 characters: its train (batch 32) and infer
figures are in characters/s (samples/s x 50, for every contender alike), its latency
that of one whole sequence. The GPT's (models/char-gpt.flux) are sequences of 64:
its train (batch 32) and infer (batch 100) figures are in tokens/s (samples/s x 64),
its latency that of one sequence of 64; MXNet does not run it.
"""
import argparse
import datetime
import json
import os
import statistics
import sys

# name, label, better (+1 higher, -1 lower, 0 neither: shown, never ranked)
FIGURES = (("train", "train samples/s", 1), ("infer", "infer samples/s", 1),
           ("latency", "latency µs", -1), ("generate", "generate chars/s", 1), ("memory", "peak RSS MB", 0))
LEGEND = ("train: training, batch 64; infer: forward passes, batch 1000; latency: one forward"
          " pass of batch 1, median call; generate (the GPT): characters drawn one at a time at batch 1"
          " with a cache of keys and values; peak RSS: the training process's")
# the GPT's context, from models/char-gpt.flux as the peer reads it
GPT_T = __import__("peers").gpt_config()[4]
# Models whose samples are sequences: steps a sample, unit, legend. Their train and
# infer figures are reported per step (characters/s, tokens/s).
SEQUENCES = {"lstm": (50, "chars/s", "lstm: train and infer in characters/s (sequences/s x 50), training batch 32"
                                     " sequences; latency: one sequence of 50 at batch 1"),
             "gpt": (GPT_T, "tokens/s", "gpt: train and infer in tokens/s (sequences/s x %d), training batch 32"
                                        " sequences, inference batch 100; latency: one sequence of %d at batch 1"
                     % (GPT_T, GPT_T))}
# The contender the ratios are to (report_model sets it for each model).
REF = "cflux"
# A model's name by the file cflux ran, where it differs.
FILES = {"char-rnn": "lstm", "char-gpt": "gpt"}


def tag(contender, rnd, model=None):
    text = sys.stdin.read()
    try:
        obj = json.loads(text[text.index("{"):text.rindex("}") + 1])
    except ValueError:
        sys.exit("results.py: no JSON object in %s's output: %r" % (contender, text[:200]))
    line = {"contender": contender, "round": int(rnd)}
    line.update(obj)
    if str(line.get("model", "")).endswith(".flux"):
        line["model_file"] = line["model"]
    line["model"] = model or model_name(line)
    print(json.dumps(line))


def model_name(line):
    """mlp, cnn, lstm, gpt: the name of a raw line's model; its file's name for cflux's
    (which gives the path; FILES where the two differ), and mlp for the lines of runs
    from before the CNN, which name none."""
    model = str(line.get("model", "mlp"))
    name = os.path.basename(model)[:-len(".flux")] if model.endswith(".flux") else model
    return FILES.get(name, name)


def figures(line):
    """The (figure, value) pairs of one raw line; per step for a sequence model; the
    inference figures alone of an int8 case's."""
    steps = SEQUENCES.get(model_name(line), (1,))[0]
    if model_name(line).endswith("-int8"):
        return [(f, v) for f, v in figures(dict(line, model=model_name(line)[:-5])) if f in ("infer", "latency")]
    if line["contender"].startswith("cflux"):   # cflux, and cflux-prescott
        pairs = (("train", "train_samples_per_sec"), ("infer", "infer_samples_per_sec"),
                 ("latency", "latency_us"), ("generate", "generate_chars_per_sec"), ("memory", "peak_rss_mb"))
    else:
        pairs = {"train": (("train", "samples_per_sec"), ("memory", "peak_rss_mb")),
                 "infer": (("infer", "samples_per_sec"),),
                 "latency": (("latency", "latency_us"),),
                 "generate": (("generate", "chars_per_sec"),)}[line["case"]]
    return [(f, float(line[k]) * (steps if f in ("train", "infer") else 1)) for f, k in pairs
            if line.get(k) is not None]


def cpu_info():
    model, flags = "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for row in f:
                key, _, val = row.partition(":")
                key = key.strip()
                if key == "model name" and model == "unknown":
                    model = val.strip()
                elif key == "flags" and not flags:
                    flags = set(val.split())
    except OSError:
        pass
    return model, {f: f in flags for f in ("avx2", "fma", "avx512f")}


def fmt(v):
    return "%.0f" % v if v >= 100 else "%.3g" % v


def report(a):
    with open(a.raw) as f:
        raw = [json.loads(row) for row in f if row.strip()]
    if not raw:
        sys.exit("results.py: %s holds no results" % a.raw)
    contenders = list(dict.fromkeys(line["contender"] for line in raw))
    versions = {line["contender"]: line["version"] for line in raw if "version" in line}
    model, flags = cpu_info()
    print("cpu: %s; %s" % (model, ", ".join("%s %s" % (f, "yes" if v else "no") for f, v in flags.items())))
    cf = next((line for line in raw if line["contender"] == "cflux"), {})
    if cf:
        k = cf.get("kernels") or {}
        print("cflux %s (%s): gemm %s%s" % (cf.get("version", "?"), a.commit, k.get("gemm", "?"),
                                            ": " + k["why"] if k.get("why") else ""))
    for c in contenders:
        if c != "cflux":
            print("%s %s" % (c, versions.get(c, "?")))
    print("\n" + LEGEND)
    for m in dict.fromkeys(model_name(line) for line in raw):
        if m in SEQUENCES:
            print(SEQUENCES[m][2])

    models = {}  # model -> its raw lines
    for line in raw:
        models.setdefault(model_name(line), []).append(line)
    results = {}
    for m, lines in models.items():
        files = {v: "models/%s.flux" % k for k, v in FILES.items()}
        print("\n== %s (%s) ==" % (m, next((x["model_file"] for x in lines if "model_file" in x),
                                            files.get(m, "models/%s.flux" % m))))
        results[m] = report_model(lines, m)

    doc = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "cpu": model, "flags": flags,
           "rounds": a.rounds, "seconds": a.seconds, "cflux_commit": a.commit, "load_average": a.load,
           "versions": versions, "cflux_kernels": cf.get("kernels"), "cflux_cpu": cf.get("cpu"),
           "models": results, "raw": raw}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("\nresults: %s (raw lines: %s)" % (a.out, a.raw))


def report_model(raw, model="mlp"):
    """Prints the tables of one model's raw lines; returns their medians and bests.
    The ratios are to cflux, or in an int8 case to cflux-int8."""
    global REF
    REF = "cflux-int8" if model.endswith("-int8") else "cflux"
    unit = SEQUENCES[model][1] if model in SEQUENCES else "samples/s"
    labels = {fig: label.replace("samples/s", unit) for fig, label, _ in FIGURES}
    contenders = list(dict.fromkeys(line["contender"] for line in raw))
    values = {}  # contender -> threads -> figure -> [values]
    for line in raw:
        c = line["contender"]
        per = values.setdefault(c, {}).setdefault(int(line["threads"]), {})
        for fig, v in figures(line):
            per.setdefault(fig, []).append(v)
    medians = {c: {t: {fig: {"median": statistics.median(vs), "min": min(vs), "max": max(vs), "n": len(vs)}
                       for fig, vs in figs.items()}
                   for t, figs in sorted(per.items())}
               for c, per in values.items()}
    # the inference batches of each contender: cflux bench picks its own (100 for the GPT)
    batches = {}
    for line in raw:
        if "infer_batch" in line or line.get("case") == "infer":
            batches.setdefault(line["contender"], set()).add(line.get("infer_batch", line.get("batch")))
    if len(set().union(*batches.values())) > 1:
        print("note: the inference batches differ: %s" % ", ".join(
            "%s %s" % (c, "/".join(map(str, sorted(b)))) for c, b in batches.items()))
    print("median (min..max) over the rounds, per contender and thread count:")
    head = "%-14s %-7s" % ("", "threads") + "".join(" %-26s" % labels[fig] for fig, _, _ in FIGURES)
    print(head.rstrip())
    for c in contenders:
        for t, figs in medians[c].items():
            cells = []
            for fig, _, _ in FIGURES:
                m = figs.get(fig)
                cells.append("%s (%s..%s)" % (fmt(m["median"]), fmt(m["min"]), fmt(m["max"])) if m else "-")
            print(("%-14s %-7d" % (c, t) + "".join(" %-26s" % s for s in cells)).rstrip())

    # each contender at its best thread count; memory at its best training thread count
    best = {}
    for fig, _, better in FIGURES:
        best[fig] = {}
        for c in contenders:
            if better:
                cands = [(m[fig]["median"], t) for t, m in medians[c].items() if fig in m]
                if not cands:
                    continue
                v, t = max(cands) if better > 0 else min(cands)
            else:
                t = best["train"].get(c, {}).get("threads")
                if t is None or fig not in medians[c].get(t, {}):
                    continue
                v = medians[c][t][fig]["median"]
            best[fig][c] = {"threads": t, "median": v}
        ref = best[fig].get(REF)
        for c, b in best[fig].items():
            if c != REF and ref and better:
                b["ratio"] = ref["median"] / b["median"] if better > 0 else b["median"] / ref["median"]

    peers = [c for c in contenders if c != REF]
    print("\neach at its best thread count (@N: the one that won; ratio > 1: %s is better):" % REF)
    print(("%-16s %-16s" % ("", REF) + "".join(" %-16s %-14s" % (p, "ratio") for p in peers)).rstrip())
    for fig, _, better in FIGURES:
        label = labels[fig]
        row = best[fig]
        cell = lambda c: "%s @%d" % (fmt(row[c]["median"]), row[c]["threads"]) if c in row else "-"
        line = "%-16s %-16s" % (label, cell(REF))
        for p in peers:
            r = row.get(p, {}).get("ratio")
            line += " %-16s %-14s" % (cell(p), "%.2f" % r if r is not None else "-")
        print(line.rstrip())
    print("(ratio: %s/peer for %s, peer/%s for latency; memory at each one's best"
          " training thread count)" % (REF, unit, REF))
    t = best["train"].get("cflux", {}).get("threads")
    at_t = [line for line in raw if line["contender"] == "cflux" and line["threads"] == t
            and line.get("train_gflops") is not None and line.get("peak_gflops") is not None]
    if at_t:
        print("cflux training at %d thread(s): median %.1f GFLOP/s of a measured peak of %.1f" % (
            t, statistics.median(x["train_gflops"] for x in at_t), statistics.median(x["peak_gflops"] for x in at_t)))
    return {"unit": unit, "medians": {c: {str(t): m for t, m in per.items()} for c, per in medians.items()},
            "best": best}


# A ratio new/old worse than this (or better than its inverse, for a figure where lower
# is better) is marked: more than the noise of a quiet machine.
WORSE = 0.95


def compare(a):
    """Prints the medians of the old and the new cflux (bench/compare.sh's raw lines) and
    their ratio for each case: a summary of the ratios, then every figure."""
    with open(a.raw) as f:
        raw = [json.loads(row) for row in f if row.strip()]
    if not raw:
        sys.exit("results.py: %s holds no results" % a.raw)
    values = {}  # (model, threads) -> figure -> contender -> round -> value
    for line in raw:
        case = values.setdefault((model_name(line), int(line["threads"])), {})
        for fig, v in figures(line):
            case.setdefault(fig, {}).setdefault(line["contender"], {})[line["round"]] = v
    lower = {"latency", "memory"}
    labels = {fig: label for fig, label, _ in FIGURES}
    models = list(dict.fromkeys(m for m, _ in values))
    print(LEGEND)
    for m in models:
        if m in SEQUENCES:
            print(SEQUENCES[m][2])
    if a.load:
        print("load average (1 min) at the start %.2f, at the end %.2f" % tuple(a.load))
    print("\nnew/old: the new binary's median over the old's. Higher is better for train and infer,"
          "\nLOWER is better for latency and peak RSS. rounds: the median (lowest..highest) of the"
          "\nratios of each round's pair; !: worse by more than %.0f%%." % (100 * (1 - WORSE)))

    rows = {}  # (model, threads) -> figure -> (old median, new median, ratio, round ratios)
    for key, figs in values.items():
        for fig, _, _ in FIGURES:
            by = figs.get(fig, {})
            old, new = by.get("cflux-old", {}), by.get("cflux-new", {})
            if not old or not new:
                continue
            mo, mn = statistics.median(old.values()), statistics.median(new.values())
            pairs = sorted(new[r] / old[r] for r in old if r in new and old[r])
            rows.setdefault(key, {})[fig] = (mo, mn, mn / mo if mo else float("nan"), pairs)

    def ratio(fig, r):
        bad = r > 1 / WORSE if fig in lower else r < WORSE
        return "%.2f%s" % (r, " !" if bad else "")

    print("\nratios new/old (train, infer: higher is better; latency, peak RSS: lower is better):\n")
    print("| case | threads | " + " | ".join(labels[fig] for fig, _, _ in FIGURES) + " |")
    print("|---|---:|" + "---:|" * len(FIGURES))
    for (m, t), figs in sorted(rows.items(), key=lambda kv: (models.index(kv[0][0]), kv[0][1])):
        print("| %s | %d | " % (m, t) + " | ".join(ratio(fig, figs[fig][2]) if fig in figs else "-"
                                                   for fig, _, _ in FIGURES) + " |")

    print("\nmedians over the rounds:\n")
    print("| case | threads | figure | old | new | new/old | rounds |")
    print("|---|---:|---|---:|---:|---:|---|")
    for (m, t), figs in sorted(rows.items(), key=lambda kv: (models.index(kv[0][0]), kv[0][1])):
        unit = SEQUENCES[m][1] if m in SEQUENCES else "samples/s"
        for fig, _, _ in FIGURES:
            if fig not in figs:
                continue
            mo, mn, r, pairs = figs[fig]
            label = labels[fig].replace("samples/s", unit) + (" (lower is better)" if fig in lower else "")
            span = "%.2f (%.2f..%.2f)" % (statistics.median(pairs), pairs[0], pairs[-1]) if pairs else "-"
            print("| %s | %d | %s | %s | %s | %s | %s |" % (m, t, label, fmt(mo), fmt(mn), ratio(fig, r), span))


def main():
    if len(sys.argv) in (4, 5) and sys.argv[1] == "tag":
        return tag(*sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", choices=("report", "compare"))
    ap.add_argument("raw")
    ap.add_argument("out", nargs="?", help="report: the JSON file to write")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--load", type=float, nargs=2)
    a = ap.parse_args()
    if a.cmd == "compare":
        return compare(a)
    if a.out is None:
        ap.error("report needs OUT, the JSON file to write")
    report(a)


if __name__ == "__main__":
    main()
