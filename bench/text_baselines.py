#!/usr/bin/env python3
"""What a text's held-out end costs other models, in nats per character, for scale
beside a character model's test loss (`cflux train MODEL --data text:FILE`).

The split is cflux's: the last 10% of the file's characters (rounded down to whole
sequences of --seq characters) is held out, the rest trains.

  static n-gram  a character n-gram of order N (absolute discounting, D 0.75, each
                 order backing off to the one below, uniform over the file's characters
                 at the bottom), fitted on the training part and frozen: the held-out
                 part is scored as cflux scores it, each sequence of --seq characters
                 from its first character, seeing nothing before it.
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
    held = int(len(text) * 0.1) // seq * seq
    return text[:-held], text[-held:]


class NGram:
    """Counts of each character after each context of 0..order characters."""

    def __init__(self, order, alphabet, discount=0.75):
        self.order, self.alphabet, self.discount = order, alphabet, discount
        self.counts = [defaultdict(lambda: defaultdict(int)) for _ in range(order + 1)]

    def fit(self, text):
        for i, c in enumerate(text):
            for k in range(min(self.order, i) + 1):
                self.counts[k][text[i - k:i]][c] += 1

    def prob(self, history, c):
        p = 1.0 / self.alphabet
        for k in range(min(self.order, len(history)) + 1):
            seen = self.counts[k].get(history[len(history) - k:])
            if not seen:
                break
            total, kinds = sum(seen.values()), len(seen)
            p = (max(seen.get(c, 0) - self.discount, 0) + self.discount * kinds * p) / total
        return p


def ngram_loss(train, held, order, alphabet, seq):
    model = NGram(order, alphabet)
    model.fit(train)
    nats = 0.0
    for i, c in enumerate(held):
        start = i // seq * seq
        nats -= math.log(model.prob(held[max(start, i - order):i], c))
    return nats / len(held)


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
    print(f"{a.file}: {len(train)} characters train, {len(held)} held out, {alphabet} distinct")
    for order in range(2, 9):
        print(f"static {order}-gram, sequences of {a.seq}: {ngram_loss(train, held, order, alphabet, a.seq):.4f} nats/char")
    with tempfile.TemporaryDirectory() as work:
        for name, command in COMPRESSORS:
            if not shutil.which(command[0]):
                print(f"{name}: {command[0]} is not installed")
                continue
            before = compressed_size(command, raw[:len(train)], work)
            after = compressed_size(command, raw, work)
            print(f"{name}, having read the training part: {(after - before) * 8 * NATS_PER_BIT / len(held):.4f} nats/char")


if __name__ == "__main__":
    main()
