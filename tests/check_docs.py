#!/usr/bin/env python3
"""check_docs.py - run the commands that README.md and docs/*.md show, and compare
what they print with what the page shows.

    python3 tests/check_docs.py BUILD [--long] [--cap S] [--keep] FILE.md...

What runs, in each page's own scratch directory (BUILD/docs-check/PAGE/, holding
links to the repository's top-level entries, so that `build/cflux`, `models/...` and
`make ...` mean what they mean at the root; `cflux` alone is BUILD's tool):

- a ```sh block: each command in turn, which must exit 0;
- a block of `$ COMMAND` lines (```console, ```text or bare): each command, its output
  (standard output and error together, line-buffered as on a terminal) compared with
  the lines below it; its exit status follows from them: a line "error: ..." means 1, a first line
  "cflux COMMAND: ..." (a usage error) 2, anything else 0.

`$ cat FILE` of a FILE that no command made writes the lines the page shows: the page
shows the file it means.

Directives, HTML comments a reader of the page does not see, before a block:

    <!-- check: setup            a shell script, run (set -e) before the next block:
    ...                          the files a page names but does not make
    -->
    <!-- check: file NAME [after PRELUDE] -->   the next block is the file NAME
                                 (PRELUDE's text first, when given)
    <!-- check: output [SUBSTR] -->   the next block is what the last command (holding
                                 SUBSTR) printed
    <!-- check: long [SUBSTR, ...] -->   the next block (or its commands holding one of
                                 the SUBSTRs) is a long run: whole with --long (make
                                 docs-check); otherwise, when the page shows its output,
                                 run for --cap seconds at most and what it printed by
                                 then compared as a prefix
    <!-- check: after-long [SUBSTR, ...] -->   as long, but needing what a long run before
                                 it wrote: without --long, not run when that was stopped
    <!-- check: vary REGEX -->   in the next block's output, what REGEX matches (in the
                                 page's lines and the printed ones) is not compared: what
                                 depends on the CPU, such as which kernels run
    <!-- check: skip REASON -->  the next block is not run, REASON saying why (reported)
    <!-- check: skip-cmd SUBSTR: REASON -->   nor are its commands holding SUBSTR

Comparing: lines with their trailing blanks and runs of blanks made one; a shown
line "..." (or one beginning "... ") stands for any number of lines, one ending in
" ..." for a line that begins so; timings (a
number followed by s, ms, µs, min, samples/s, tokens/s and the like) are not
compared; other numbers with a decimal point agree to 0.002 or 0.2%, and whole numbers
of 10 or more to 1 or 0.5% (a count in a confusion matrix), the rounding of another
CPU's kernels; smaller whole numbers exactly.

Exit status 0 when every command ran as shown, 1 otherwise (each difference printed).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMING = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?=\s?(?:s|ms|µs|us|min|h|samples/s|tokens/s|"
                    r"steps/s|GFLOP/s|TFLOP/s|GB/s|MB/s|chars/s)\b)")
NUM = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])")
DIRECTIVE = re.compile(r"^<!-- check: ([\w-]+)\s*(.*?)\s*(-->)?$")


class Block:
    def __init__(self, page, line, info, body, directives):
        self.page, self.line, self.info, self.body, self.directives = page, line, info, body, directives


def read_page(path):
    """The page's fenced blocks, each with the directives written just before it."""
    lines = read(path).split("\n")
    blocks, pending, i = [], [], 0
    while i < len(lines):
        m = DIRECTIVE.match(lines[i].strip())
        if m:
            kind, arg = m.group(1), m.group(2)
            if not m.group(3):   # runs to a line "-->"
                body = []
                i += 1
                while i < len(lines) and lines[i].strip() != "-->":
                    body.append(lines[i])
                    i += 1
                arg = (arg + "\n" if arg else "") + "\n".join(body)
            pending.append((kind, arg))
        fence = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if fence:
            indent, info, start, body = len(fence.group(1)), fence.group(2), i + 1, []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
                i += 1
            blocks.append(Block(path, start, info, body, pending))
            pending = []
        i += 1
    return blocks


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def commands(body):
    """A ```sh block's commands: comments dropped, lines ending in \\ or inside a
    quote joined to the next."""
    out, cur = [], ""
    for line in body:
        cur = cur + "\n" + line if cur else line
        if cur.rstrip().endswith("\\") or not complete(cur):
            continue
        if cur.strip() and not cur.strip().startswith("#"):
            out.append(cur)
        cur = ""
    return out


def complete(cmd):
    try:
        shlex.split(cmd, comments=True)
        return True
    except ValueError:
        return False


def transcript(body):
    """A `$ ` block: [(command, [shown lines])]."""
    out, i = [], 0
    while i < len(body):
        if not body[i].startswith("$ "):
            i += 1
            continue
        cmd = body[i][2:]
        i += 1
        while (cmd.rstrip().endswith("\\") or not complete(cmd)) and i < len(body):
            cmd += "\n" + body[i]
            i += 1
        shown = []
        while i < len(body) and not body[i].startswith("$ "):
            shown.append(body[i])
            i += 1
        out.append((cmd, shown))
    return out


def norm(line):
    line = TIMING.sub("T", " ".join(line.split()))
    return line


VARY = []   # the regexes of the block being compared (<!-- check: vary -->)


def same_line(got, want):
    g, w = norm(got), norm(want)
    for r in VARY:
        g, w = re.sub(r, "V", g), re.sub(r, "V", w)
    if NUM.sub("N", g) != NUM.sub("N", w):
        return False
    for a, b in zip(NUM.findall(g), NUM.findall(w)):
        if "." in b or "e" in b:
            if abs(float(a) - float(b)) > max(0.002, 0.002 * abs(float(b))):
                return False
        elif abs(int(a) - int(b)) > (0 if abs(int(b)) < 10 else max(1, abs(int(b)) // 200)):
            return False
    return True


def line_matches(got, want):
    """A shown line ending in " ..." stands for any line that begins as it does."""
    if want.rstrip().endswith(" ...") and want.strip() != "...":
        head = want.rstrip()[:-4].split()
        return same_line(" ".join(got.split()[:len(head)]), " ".join(head))
    return same_line(got, want)


def is_gap(line):
    s = line.strip()
    return s == "..." or s.startswith("... ")


def matches(got, want, prefix=False):
    """Whether got's lines are want's, "..." standing for any lines; with prefix, got
    may stop anywhere in want."""
    memo = {}
    matches.reached = 0   # how many of want's lines were met, for the message

    def m(i, j):
        matches.reached = max(matches.reached, j)
        if (i, j) in memo:
            return memo[(i, j)]
        if j == len(want):
            r = i == len(got)
        elif i == len(got) and prefix:
            r = True
        elif is_gap(want[j]):
            r = m(i, j + 1) or (i < len(got) and m(i + 1, j))
        else:
            r = i < len(got) and line_matches(got[i], want[j]) and m(i + 1, j + 1)
        memo[(i, j)] = r
        return r

    return m(0, 0)


def first_difference(got, want):
    for k, w in enumerate(want):
        if is_gap(w):
            k = matches.reached
            return f"the page's line {k + 1} is not printed where the lines before it put it: " + \
                (want[k] if k < len(want) else "(the end)")
        if k >= len(got):
            return f"the page shows, at line {k + 1}: {w}\nprinted nothing more"
        if not line_matches(got[k], w):
            return f"the page shows, at line {k + 1}: {w}\nprinted: {got[k]}"
    return None


def expected_status(shown):
    first = next((s for s in shown if s.strip()), "")
    if any(s.startswith("error:") for s in shown):
        return 1
    if re.match(r"^cflux \w[\w-]*: ", first):
        return 2
    return 0


class Checker:
    def __init__(self, build, long_runs, cap, keep):
        self.build, self.long, self.cap, self.keep = build, long_runs, cap, keep
        self.failed = self.ran = self.compared = self.capped = 0
        self.skipped = []
        self.prelude = ""

    def scratch(self, page):
        d = os.path.join(self.build, "docs-check", os.path.splitext(os.path.basename(page))[0])
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for e in os.listdir(REPO):
            if e.startswith(".") or e.startswith("build"):
                continue
            os.symlink(os.path.join(REPO, e), os.path.join(d, e))
        os.symlink(os.path.abspath(self.build), os.path.join(d, "build"))
        return d

    def env(self, d):
        env = dict(os.environ)
        path = [os.path.abspath(self.build)]
        venv = os.path.join(REPO, "build-venv-interop", "bin")
        if os.path.isdir(venv):   # PyTorch, onnx, onnxruntime, safetensors, numpy
            path.append(venv)
        env.update(PATH=":".join(path + [env.get("PATH", "/usr/bin:/bin")]), HOME=d, CFLUX_THREADS="2",
                   PYTHONUNBUFFERED="1", LC_ALL="C.UTF-8", COLUMNS="200")
        for k in ("CFLUX_GEMM", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):   # a make that runs this one's
            env.pop(k, None)
        return env

    def run(self, d, cmd, limit):
        """(status, output lines, whether it was stopped at the limit)."""
        where = REPO if re.match(r"^\s*make\b", cmd) else d   # make works at the root
        p = subprocess.Popen(["stdbuf", "-oL", "-eL", "bash", "-c", self.prelude + cmd], cwd=where, env=self.env(d),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=limit)
            stopped = False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            out, _ = p.communicate()
            stopped = True
        text = out.decode("utf-8", "replace")
        if stopped and not text.endswith("\n"):
            text = text[:text.rfind("\n") + 1]   # the last line may be half written
        lines = [l.split("\r")[-1].rstrip() for l in text.split("\n")]   # what a terminal keeps
        while lines and not lines[-1]:
            lines.pop()
        return p.returncode, lines, stopped

    def fail(self, b, cmd, why):
        self.failed += 1
        print(f"FAIL {b.page}:{b.line}: $ {cmd.splitlines()[0]}\n{why}\n", flush=True)

    def plan(self, b, cmd):
        """'run', 'long' or ('skip', reason) for one command of block b."""
        for kind, arg in b.directives:
            if kind == "skip":
                return ("skip", arg)
            if kind == "skip-cmd":
                sub, _, reason = arg.partition(": ")
                if sub in cmd:
                    return ("skip", reason)
            if kind in ("long", "after-long"):
                subs = [s.strip() for s in arg.split(",") if s.strip()]
                if not subs or any(s in cmd for s in subs):
                    return kind
        return "run"

    def command(self, b, d, cmd, shown):
        cat = re.match(r"^cat (\S+)$", cmd)
        if cat and shown and not os.path.exists(os.path.join(d, cat.group(1))):
            with open(os.path.join(d, cat.group(1)), "w") as f:   # the page shows the file it means
                f.write("\n".join(shown) + "\n")
        how = self.plan(b, cmd)
        if isinstance(how, tuple):
            self.skipped.append(f"{b.page}:{b.line}: {cmd.splitlines()[0]}: {how[1]}")
            return
        if how == "after-long" and not self.long and self.stopped_long:
            self.skipped.append(f"{b.page}:{b.line}: {cmd.splitlines()[0]}: needs the long run before it (--long)")
            return
        how = "long" if how == "after-long" else how
        if how == "long" and not self.long and shown is None:
            self.skipped.append(f"{b.page}:{b.line}: {cmd.splitlines()[0]}: a long run that shows no output (--long)")
            return
        limit = (3 * 3600 if self.long else self.cap) if how == "long" else 600   # a quick one that hangs fails
        t = time.time()
        status, got, stopped = self.run(d, cmd, limit)
        self.ran += 1
        took = time.time() - t
        print(f"  {took:6.1f} s  {b.page}:{b.line}: $ {cmd.splitlines()[0][:100]}"
              + ("  (long: stopped, compared as a prefix)" if stopped else ""), flush=True)
        if stopped and how != "long":
            self.fail(b, cmd, f"still running after {limit} s")
            return
        self.capped += stopped
        self.outputs.append((cmd, got, stopped))
        self.stopped_long |= stopped
        if shown is None:
            if status != 0 and not stopped:
                self.fail(b, cmd, f"exit status {status}:\n" + "\n".join(got[-20:]))
            return
        self.check_output(b, cmd, got, shown, status, stopped)

    def check_output(self, b, cmd, got, shown, status, stopped):
        self.compared += 1
        VARY[:] = [a for k, a in b.directives if k == "vary"]
        want = expected_status(shown)
        if not stopped and status != want:
            self.fail(b, cmd, f"exit status {status}, not {want}:\n" + "\n".join(got[-20:]))
        elif not matches(got, shown, prefix=stopped):
            why = first_difference(got, shown) or "the lines differ"
            self.fail(b, cmd, why + "\n--- printed:\n" + "\n".join(got[:60]))

    def page(self, path):
        d = self.scratch(path)
        self.stopped_long, self.outputs = False, []   # the commands run so far: (command, lines, stopped)
        blocks = read_page(path)
        for b in blocks:
            kinds = {k for k, _ in b.directives}
            for kind, arg in b.directives:
                if kind == "setup":
                    r = subprocess.run(["bash", "-ec", arg], cwd=d, env=self.env(d), capture_output=True, text=True)
                    if r.returncode:
                        self.fail(b, "(setup)", r.stdout + r.stderr)
            file = next((a for k, a in b.directives if k == "file"), None)
            if file:
                name, _, prelude = file.partition(" after ")
                text = (read(os.path.join(d, prelude.strip())) if prelude else "") + "\n".join(b.body) + "\n"
                with open(os.path.join(d, name.strip()), "w") as f:
                    f.write(text)
                continue
            if "output" in kinds:
                sub = next(a for k, a in b.directives if k == "output")
                ran = [o for o in self.outputs if sub in o[0]]
                if not ran:
                    self.fail(b, "(output)", f"no command{' holding ' + sub if sub else ''} ran before this output block")
                    continue
                cmd, got, stopped = ran[-1]
                self.check_output(b, cmd, got, b.body, 0, stopped)
                continue
            if b.info == "sh":
                self.prelude = ""   # a block's exports hold for its later commands
                for cmd in commands(b.body):
                    self.command(b, d, cmd, None)
                    if re.match(r"^\s*export\s", cmd):
                        self.prelude += cmd + "\n"
                self.prelude = ""
            elif b.info in ("console", "text", "") and b.body and b.body[0].startswith("$ "):
                for cmd, shown in transcript(b.body):
                    self.command(b, d, cmd, shown)
        if not self.keep and not self.failed:
            shutil.rmtree(d, ignore_errors=True)


def main(argv):
    long_runs, cap, keep, pages, build = False, 20.0, False, [], None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--long":
            long_runs = True
        elif a == "--keep":
            keep = True
        elif a == "--cap":
            i += 1
            cap = float(argv[i])
        elif build is None:
            build = a
        else:
            pages.append(a)
        i += 1
    if not build or not pages:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    if not os.access(os.path.join(build, "cflux"), os.X_OK):
        print(f"check_docs: no tool at {build}/cflux: build it first", file=sys.stderr)
        return 1
    c = Checker(build, long_runs, cap, keep)
    t = time.time()
    for p in pages:
        c.page(p)
    for s in c.skipped:
        print(f"  not run: {s}")
    print(f"docs: {c.ran} commands run, {c.compared} outputs compared, {c.capped} long runs stopped after "
          f"{c.cap:g} s and compared so far, {len(c.skipped)} not run, {c.failed} failed ({time.time() - t:.0f} s)")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
