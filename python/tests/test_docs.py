"""docs/python.md's examples, run: the worked example prints what the page shows (the
timings aside, and the figures to within rounding of another CPU's kernels), and the
error example's comments are what it prints."""
import os
import re
import subprocess
import sys

from conftest import REPO

DOC = (REPO / "docs/python.md").read_text()
NUM = re.compile(r"-?\d+\.\d+")


def blocks(kind):
    return re.findall(r"```" + kind + r"\n(.*?)```", DOC, re.S)


def run(code, cwd):
    r = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout


def same_line(got, want):
    """Equal once the timings are left out, numbers to 0.002."""
    timing = re.compile(r"\| [\d.]+ s, \d+ samples/s$")
    got, want = timing.sub("| T", got), timing.sub("| T", want)
    if NUM.sub("N", got) != NUM.sub("N", want):
        return False
    return all(abs(float(a) - float(b)) <= 0.002 for a, b in zip(NUM.findall(got), NUM.findall(want)))


def test_worked_example(tmp_path):
    code = next(b for b in blocks("python") if "fashion-mnist" in b)
    shown = blocks("text")[0].splitlines()
    os.symlink(REPO / "models", tmp_path / "models")
    got = run(code, tmp_path).splitlines()
    assert len(got) == len(shown), "\n".join(got)
    for g, w in zip(got, shown):
        assert same_line(g, w), f"printed:\n{g}\nthe page shows:\n{w}"
    assert (tmp_path / "mlp.ckpt").is_file()


def test_error_example(tmp_path):
    code = next(b for b in blocks("python") if "ShapeError as e" in b)
    want = [c.strip() for c in re.findall(r"print\(.*?\)\s+# (.*)", code)]
    got = run("import cflux\n" + code, tmp_path).splitlines()
    assert got == want
