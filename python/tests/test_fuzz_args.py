"""Short runs of fuzz_args.py and fuzz_calls.py in child processes: a crash of the
interpreter, or an exception other than those each allows, fails."""
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("fuzzer", ["fuzz_args.py", "fuzz_calls.py"])
def test_fuzz(fuzzer):
    seconds = os.environ.get("CFLUX_FUZZ_ARGS_SECONDS", "15")
    r = subprocess.run([sys.executable, str(Path(__file__).with_name(fuzzer)), seconds, "0"],
                       capture_output=True, text=True, timeout=float(seconds) + 120)
    assert r.returncode == 0, f"{fuzzer}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    assert "none crashed" in r.stdout
