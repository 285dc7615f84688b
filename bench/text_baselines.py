#!/usr/bin/env python3
"""What a text's held-out end costs other models, in nats per character, for scale
beside a character model's test loss (`cflux train MODEL --data text:FILE`).

The split is cflux's (src/data/text.c): the last 10% of the file's characters is
held out, the rest trains. The held-out part is read as cflux reads it: n = (its
length - 1) // seq sequences of seq characters, each with its targets one character
on, so n * seq characters are scored, each seeing the characters before it in its
sequence (the first, one).

  n-gram         a character n-gram of order N (interpolated modified Kneser-Ney),
                 fitted on the training part and frozen: the held-out part is scored
                 as cflux scores it, each sequence of --seq characters from its first
                 character, seeing nothing before it.
  compressor     the bytes a compressor spends on the held-out part when it has seen
                 the training part first: size(train + held-out) - size(train). A
                 compressor learns from the held-out text as it reads it, which a
                 trained model's test loss does not.

Usage: bench/text_baselines.py [FILE] [--seq 64]
"""
import argparse
import math
import os
import shutil
import subprocess
import tempfile
from collections import defaultdict

NATS_PER_BIT = math.log(2)


def split(text, seq):
    """The training part, and the held-out part's scored stretch with the character
    before it: held[i + 1] is scored after held[i // seq * seq .. i]."""
    tail = int(len(text) * 0.1)
    n = (tail - 1) // seq
    return text[:len(text) - tail], text[len(text) - tail:][:n * seq + 1]


class KneserNey:
    """An interpolated modified Kneser-Ney character model (Chen and Goodman, 1998)
    of the given order: the highest order from counts, each lower one from
    continuation counts (how many different characters came before), three discounts
    per order from the counts of counts, uniform over the alphabet at the bottom."""

    def __init__(self, order, alphabet):
        self.order, self.alphabet = order, alphabet

    def fit(self, text):
        n = self.order
        self.raw = [defaultdict(lambda: defaultdict(int)) for _ in range(n)]   # [k][context of k][c]
        for i, c in enumerate(text):
            for k in range(min(n - 1, i) + 1):
                self.raw[k][text[i - k:i]][c] += 1
        self.cont = [defaultdict(lambda: defaultdict(int)) for _ in range(n)]
        for k in range(n - 1):
            for context, after in self.raw[k + 1].items():
                for c in after:
                    self.cont[k][context[1:]][c] += 1
        self.discount = [self._discounts(self.raw[k] if k == n - 1 else self.cont[k]) for k in range(n)]

    @staticmethod
    def _discounts(table):
        n = [0] * 5
        for after in table.values():
            for v in after.values():
                if v <= 4:
                    n[v] += 1
        y = n[1] / (n[1] + 2 * n[2])
        return [0, 1 - 2 * y * n[2] / n[1], 2 - 3 * y * n[3] / n[2], 3 - 4 * y * n[4] / n[3]]

    def prob(self, history, c):
        """P(c | history); a history shorter than order - 1 (a sequence's start) takes
        raw counts at its own length, as the highest order there is."""
        p = 1.0 / self.alphabet
        for k in range(len(history) + 1):
            table = self.raw[k] if k == len(history) else self.cont[k]
            after = table.get(history[len(history) - k:])
            if not after:
                continue
            total, d = sum(after.values()), self.discount[k]
            kinds = [0, 0, 0, 0]
            for v in after.values():
                kinds[min(v, 3)] += 1
            count = after.get(c, 0)
            backoff = (d[1] * kinds[1] + d[2] * kinds[2] + d[3] * kinds[3]) / total
            p = max(count - d[min(count, 3)], 0) / total + backoff * p
        return p


def ngram_loss(train, held, order, alphabet, seq):
    model = KneserNey(order, alphabet)
    model.fit(train)
    nats = 0.0
    for i in range(len(held) - 1):
        start = i // seq * seq
        nats -= math.log(model.prob(held[max(start, i + 2 - order):i + 1], held[i + 1]))
    return nats / (len(held) - 1)


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
    ap.add_argument("file", nargs="?", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--seq", type=int, default=64, help="the model's sequence length (64)")
    a = ap.parse_args()
    raw = open(a.file, "rb").read()
    text = raw.decode("latin-1")
    train, held = split(text, a.seq)
    alphabet = len(set(text))
    print(f"{a.file}: {len(train)} characters train, {len(held) - 1} held out and scored, {alphabet} distinct")
    for order in (3, 4, 5, 6, 8, 10, 12):
        print(f"{order}-gram, Kneser-Ney, sequences of {a.seq}: "
              f"{ngram_loss(train, held, order, alphabet, a.seq):.4f} nats/char")
    with tempfile.TemporaryDirectory() as work:
        for name, command in COMPRESSORS:
            if not shutil.which(command[0]):
                print(f"{name}: {command[0]} is not installed")
                continue
            start = len(train) + 1                  # the scored characters: raw[start:end]
            end = start + len(held) - 1
            before = compressed_size(command, raw[:start], work)
            after = compressed_size(command, raw[:end], work)
            print(f"{name}, having read the training part: "
                  f"{(after - before) * 8 * NATS_PER_BIT / (end - start):.4f} nats/char")


if __name__ == "__main__":
    main()
