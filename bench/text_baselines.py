#!/usr/bin/env python3
"""What a text's held-out end costs other models, in nats per character, for scale
beside a character model's test loss (`cflux train MODEL --data text:FILE`).

The split is cflux's (src/data/text.c): the last 10% of the file's characters is
held out, the rest trains. The held-out part is read as cflux reads it: n = (its
length - 1) // seq sequences of seq characters, each with its targets one character
on, so n * seq characters are scored, each seeing the characters before it in its
sequence (the first, one).

A folder is a corpus, read as cflux reads one (`--data text:FOLDER`): its regular
files at any depth (through symbolic links; names that start with '.' passed over),
sorted by path byte by byte; a file that is the same file as one taken before
(device and inode, links followed) is passed over, and so is one with a NUL byte in
it (not text). Each file's text is its bytes and the end marker 0x1e; the last 10% of
each file's text is held out (int(length * 0.1) characters, marker included): the
training part is the files' heads one after another, the held-out part their tails.
The alphabet is the distinct bytes of the whole corpus, marker included.

  n-gram         a character n-gram of order N (interpolated modified Kneser-Ney),
                 fitted on the training part and frozen: the held-out part is scored
                 as cflux scores it, each sequence of --seq characters from its first
                 character, seeing nothing before it.
  compressor     the bytes a compressor spends on the held-out part when it has seen
                 the training part first: size(train + held-out) - size(train). A
                 compressor learns from the held-out text as it reads it, which a
                 trained model's test loss does not.

Usage: bench/text_baselines.py [FILE_OR_FOLDER] [--seq 64] [--json OUT.json] [--split-only]
"""
import argparse
import array
import gzip
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections import Counter

NATS_PER_BIT = math.log(2)
HELD_OUT = 0.1
FILE_END = "\x1e"                   # cflux's CF_TEXT_FILE_END, after each file of a corpus
ORDERS = (3, 4, 5, 6, 8, 10, 12)


def split(text, seq):
    """The training part, and the held-out part's scored stretch with the character
    before it: held[i + 1] is scored after held[i // seq * seq .. i]."""
    tail = int(len(text) * HELD_OUT)
    n = (tail - 1) // seq
    return text[:len(text) - tail], text[len(text) - tail:][:n * seq + 1]


# ---- a corpus: a folder's files, read and split as cflux reads them ----

def walk(folder, found, passed, stack=()):
    """The regular files under folder, through symbolic links, into found; what is
    passed over into passed, (path, why). Mirrors src/data/text.c's walk."""
    st = os.stat(folder)
    for dev, ino, path in stack:
        if (dev, ino) == (st.st_dev, st.st_ino):
            sys.exit(f"error: {folder}: a loop of symbolic links: it is the folder {path} again")
    if len(stack) == 64:
        sys.exit(f"error: {folder}: folders nested more than 64 deep")
    stack = stack + ((st.st_dev, st.st_ino, folder),)
    slash = folder.endswith("/")
    for name in os.listdir(folder):
        path = folder + ("" if slash else "/") + name
        if name.startswith("."):
            passed.append((path, "hidden"))
            continue
        try:
            st = os.stat(path)
        except OSError as e:
            link = os.path.islink(path)
            sys.exit(f"error: {path}: cannot open: {e.strerror}" + (" (a symbolic link to nothing)" if link else ""))
        if stat.S_ISDIR(st.st_mode):
            walk(path, found, passed, stack)
        elif stat.S_ISREG(st.st_mode):
            found.append(path)
        else:
            passed.append((path, "not a regular file"))


def read_bytes(path):
    """A file's bytes as cflux reads them (zlib's gzopen: gzip'd files unpacked)."""
    data = open(path, "rb").read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def read_corpus(folder):
    """The corpus's files: [(path, text)] in cflux's order, and [(path, why)] passed over."""
    found, passed = [], []
    walk(folder, found, passed)
    found.sort(key=os.fsencode)
    files, seen = [], {}
    for path in found:
        st = os.stat(path)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            passed.append((path, f"the same file as {seen[key]}"))
            continue
        seen[key] = path
        data = read_bytes(path)
        if b"\0" in data:
            passed.append((path, "not text (a NUL byte)"))
            continue
        files.append((path, data.decode("latin-1") + FILE_END))
    passed.sort(key=lambda x: os.fsencode(x[0]))
    if not files:
        sys.exit(f"error: {folder}: the folder holds no file of text")
    return files, passed


def corpus_split(files):
    """Each file's text split at its last 10%: the heads one after another, and the tails."""
    heads, tails = [], []
    for _, t in files:
        tail = int(len(t) * HELD_OUT)
        heads.append(t[:len(t) - tail])
        tails.append(t[len(t) - tail:])
    return "".join(heads), "".join(tails)


# ---- interpolated modified Kneser-Ney, every order from one pass over the counts ----

FALLBACK = [0, 0.5, 1.0, 1.5]          # KenLM's --discount_fallback


def discounts(table, fallbacks=None, name=""):
    """The three discounts of a table of counts, from its counts of counts (Chen and
    Goodman, 1998). Where that estimate fails (no count of 1, 2 or 3 in the table) or
    falls outside [0, c], KenLM's fallback discounts 0.5, 1, 1.5; name is then added
    to fallbacks."""
    n = [0] * 5
    for v, many in Counter(table.values()).items():
        if v <= 4:
            n[v] += many
    if n[1] and n[2] and n[3]:
        y = n[1] / (n[1] + 2 * n[2])
        d = [0, 1 - 2 * y * n[2] / n[1], 2 - 3 * y * n[3] / n[2], 3 - 4 * y * n[4] / n[3]]
        if all(0 <= d[c] <= c for c in (1, 2, 3)):
            return d
    if fallbacks is not None:
        fallbacks.append(name)
    return FALLBACK


def context_stats(table, contexts):
    """For each context of contexts that the table holds (its keys are a context and
    the character after it): [total, kinds with count 1, count 2, count 3 or more]."""
    stats = {}
    for gram, v in table.items():
        context = gram[:-1]
        if context in contexts:
            s = stats.get(context)
            if s is None:
                s = stats[context] = [0, 0, 0, 0]
            s[0] += v
            s[min(v, 3)] += 1
    return stats


def level_terms(table, d, grams, stats):
    """Each gram's level of the interpolation, as (a, b): P = a + b * P(lower levels),
    with a = max(count - D(count), 0) / total and b = the mass the discounts leave; a
    context the table lacks leaves P as it is (0, 1)."""
    a, b = [], []
    for gram in grams:
        s = stats.get(gram[:-1])
        if s is None:
            a.append(0.0)
            b.append(1.0)
            continue
        total = s[0]
        count = table.get(gram, 0)
        a.append(max(count - d[min(count, 3)], 0) / total)
        b.append((d[1] * s[1] + d[2] * s[2] + d[3] * s[3]) / total)
    return a, b


def ngram_losses(train, held, orders, alphabet, seq, fallbacks=None):
    """{order: nats/char} of interpolated modified Kneser-Ney character models fitted
    on train, scoring held as cflux does: held[i + 1] after held[i // seq * seq .. i].

    A model of order N is, at a history of m = min(N - 1, what its sequence has seen)
    characters, levels k = 0 .. m over the last k characters, each
        P_k(c) = max(count_k - D_k, 0) / total_k + backoff_k * P_{k-1}(c),   P_{-1} = 1/alphabet,
    with the raw counts at the top level k = m and continuation counts (how many
    different characters came before) below it; the discounts are the continuation
    tables' at every level but N - 1, where they are the raw table's. Neither table of a
    level depends on N, so one pass over levels 0 .. max(orders) - 1 serves every order:
    the levels below the top (continuation counts) are one chain shared by all orders,
    and each order adds its own top level. Each level's tables are counted, read for
    the held-out grams it is asked about, and let go, so only two levels' counts are
    held at once."""
    top = max(orders)
    npos = len(held) - 1               # n * seq positions; position i scores held[i + 1]
    seen = [i % seq for i in range(npos)]     # characters of its sequence before held[i]
    # what each level is asked: cont[k] for k < m, raw[k] at k = m (k = N - 1, or the
    # history at a sequence's start, shorter than N - 1)
    cont_a, cont_b = [None] * top, [None] * top
    top_a, top_b = {}, {}                     # raw, D_raw: k = N - 1 for an order N; all i with seen + 1 >= k
    short_a, short_b = {}, {}                 # raw, D_cont: k = seen + 1 < N - 1; by sequence
    above = None                              # the raw counts of level k + 1
    for k in range(top - 1, -1, -1):
        raw = Counter(train[i:i + k + 1] for i in range(len(train) - k))
        if k <= top - 2:                      # a continuation level for some order
            cont = Counter(gram[1:] for gram in above)
            d_cont = discounts(cont, fallbacks, f"continuation counts of {k + 1}-grams")
            where = [i for i in range(npos) if seen[i] >= k]
            grams = [held[i + 1 - k:i + 2] for i in where]
            cont_a[k], cont_b[k] = array.array("d", [0.0]) * npos, array.array("d", [1.0]) * npos
            a, b = level_terms(cont, d_cont, grams, context_stats(cont, {g[:-1] for g in grams}))
            for i, x, y in zip(where, a, b):
                cont_a[k][i], cont_b[k][i] = x, y
            del cont
        asked = []
        if k + 1 in orders:
            d_raw = discounts(raw, fallbacks, f"counts of {k + 1}-grams")
            asked.append((d_raw, [i for i in range(npos) if seen[i] + 1 >= k], top_a, top_b))
        if 1 <= k <= top - 2:                 # some order's history is cut short here
            asked.append((d_cont, [i for i in range(npos) if seen[i] + 1 == k], short_a, short_b))
        if asked:
            grams = {i: held[i + 1 - k:i + 2] for _, where, _, _ in asked for i in where}
            stats = context_stats(raw, {g[:-1] for g in grams.values()})
            for d, where, into_a, into_b in asked:
                a, b = level_terms(raw, d, [grams[i] for i in where], stats)
                if into_a is top_a:
                    into_a[k], into_b[k] = array.array("d", [0.0]) * npos, array.array("d", [1.0]) * npos
                    for i, x, y in zip(where, a, b):
                        into_a[k][i], into_b[k][i] = x, y
                else:
                    # one per sequence: sequence s's position s * seq + k - 1
                    into_a[k], into_b[k] = array.array("d", a), array.array("d", b)
        above = raw
    del above
    nats = dict.fromkeys(orders, 0.0)
    for i in range(npos):
        s = seen[i]
        p = 1.0 / alphabet
        chain = [p]                           # chain[m]: levels 0 .. m - 1 from continuation counts
        for k in range(min(top - 1, s + 1)):
            p = cont_a[k][i] + cont_b[k][i] * p
            chain.append(p)
        for order in orders:
            m = min(order - 1, s + 1)
            if m == order - 1:
                p = top_a[m][i] + top_b[m][i] * chain[m]
            else:
                p = short_a[m][i // seq] + short_b[m][i // seq] * chain[m]
            nats[order] -= math.log(p)
    return {order: nats[order] / npos for order in orders}


def ngram_loss(train, held, order, alphabet, seq):
    return ngram_losses(train, held, (order,), alphabet, seq)[order]


# ---- compressors ----

def compressed_size(command, data, workdir):
    """Bytes of data compressed by command (a list: "{in}" names the input; "{out}",
    when there, the archive it writes, else it writes to standard output)."""
    src, dst = os.path.join(workdir, "in.txt"), os.path.join(workdir, "out.7z")
    with open(src, "wb") as f:
        f.write(data)
    if os.path.exists(dst):
        os.remove(dst)
    args = [x.replace("{in}", src).replace("{out}", dst) for x in command]
    out = subprocess.run(args, check=True, stdout=subprocess.PIPE).stdout
    return os.path.getsize(dst) if "{out}" in command else len(out)


COMPRESSORS = [
    ("bzip2 -9", ["bzip2", "-9", "-c", "{in}"]),
    ("xz -9e", ["xz", "-9e", "-c", "{in}"]),
    ("zstd -19", ["zstd", "-19", "-q", "-c", "{in}"]),
    ("PPMd order 6 (7zz)", ["7zz", "a", "-bso0", "-t7z", "-m0=PPMd:o=6:mem=256m", "{out}", "{in}"]),
    ("PPMd order 8 (7zz)", ["7zz", "a", "-bso0", "-t7z", "-m0=PPMd:o=8:mem=256m", "{out}", "{in}"]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?", default="/usr/share/common-licenses/GPL-3",
                    help="a file, or a folder read as a corpus (default: the GPL)")
    ap.add_argument("--seq", type=int, default=64, help="the model's sequence length (64)")
    ap.add_argument("--json", metavar="FILE", help="also write the results to FILE as JSON")
    ap.add_argument("--split-only", action="store_true",
                    help="print the split (the first line) and stop: what tests compare with cflux's")
    a = ap.parse_args()
    result = {"file": a.file, "seq": a.seq, "held_out_share": HELD_OUT}
    if os.path.isdir(a.file):
        files, passed = read_corpus(a.file)
        train, tails = corpus_split(files)
        whole = train + tails
        n = (len(tails) - 1) // a.seq
        if n < 1:
            sys.exit(f"error: {a.file}: the held-out tails, {len(tails)} characters, hold no sequence of {a.seq}")
        held = tails[:n * a.seq + 1]
        alphabet = len(set("".join(t for _, t in files)))
        why = Counter("the same file as one read before" if w.startswith("the same file") else w for _, w in passed)
        over = ", ".join(f"{k} {w}" for w, k in why.items())
        split_about = (f"each file's last {HELD_OUT:.0%} held out (its end marker 0x1e included), "
                       f"the tails one after another")
        print(f"{a.file}: a corpus of {len(files)} files read, {len(passed)} passed over"
              + (f" ({over})" if over else "")
              + f"; {split_about}: {len(train)} characters train, {len(tails)} held out, "
              f"{len(held) - 1} of them scored, {alphabet} distinct")
        result.update(kind="corpus", split=split_about, files=[p for p, _ in files],
                      passed_over=[{"path": p, "why": w} for p, w in passed])
    else:
        whole = open(a.file, "rb").read().decode("latin-1")
        train, held = split(whole, a.seq)
        tails = whole[len(train):]
        alphabet = len(set(whole))
        split_about = f"the last {HELD_OUT:.0%} of the file held out"
        print(f"{a.file}: {len(train)} characters train, {len(held) - 1} held out and scored, {alphabet} distinct")
        result.update(kind="file", split=split_about, files=[a.file], passed_over=[])
    result.update(train_chars=len(train), held_out_chars=len(tails), scored_chars=len(held) - 1,
                  alphabet=alphabet, ngram=[], compressors=[])
    if a.split_only:
        return
    fallbacks = []
    losses = ngram_losses(train, held, ORDERS, alphabet, a.seq, fallbacks)
    result["kn_discount_fallback"] = fallbacks
    for order in ORDERS:
        print(f"{order}-gram, Kneser-Ney, sequences of {a.seq}: {losses[order]:.4f} nats/char")
        result["ngram"].append({"order": order, "nats_per_char": losses[order]})
    raw = whole.encode("latin-1")           # the training part, then the held-out part
    with tempfile.TemporaryDirectory() as work:
        for name, command in COMPRESSORS:
            if not shutil.which(command[0]):
                print(f"{name}: {command[0]} is not installed")
                result["compressors"].append({"name": name, "nats_per_char": None,
                                              "reason": f"{command[0]} is not installed"})
                continue
            start = len(train) + 1                  # the scored characters: raw[start:end]
            end = start + len(held) - 1
            before = compressed_size(command, raw[:start], work)
            after = compressed_size(command, raw[:end], work)
            nats = (after - before) * 8 * NATS_PER_BIT / (end - start)
            print(f"{name}, having read the training part: {nats:.4f} nats/char")
            result["compressors"].append({"name": name, "nats_per_char": nats})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
