#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns a guest serial log (and host check results) into the test verdict.

Every KTAP block the guest printed between @@UMEM-KTAP-BEGIN/END markers is
fed to the kernel's own tools/testing/kunit/kunit.py parse; its JSON gives the
per-case results. The whole log is also scanned for kernel WARNINGs, BUGs,
Oopses and lockdep reports, which fail the run as one more test. Prints the
plain closing line "N passed, N failed" and exits non-zero on any failure.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

BAD = [
    r"WARNING:",
    r"BUG:",
    r"Oops",
    r"Kernel panic",
    r"kernel BUG at",
    r"possible circular locking dependency",
    r"possible recursive locking",
    r"inconsistent lock state",
    r"DEBUG_LOCKS_WARN_ON",
    r"suspicious RCU usage",
    r"lock held when returning to user space",
    r"UBSAN:",
    r"refcount_t:",
    r"rust_panic",
]
BAD_RE = re.compile("|".join(BAD))


def count_cases(node, results, prefix=None):
    """Collects (suite.case[.param], status) of every leaf test."""
    name = node.get("name", "?")
    if prefix is None:  # kunit.py's root group
        path = ""
    else:
        path = f"{prefix}.{name}" if prefix else name
    for case in node.get("test_cases", []):
        results.append((f"{path}.{case['name']}" if path else case["name"], case["status"]))
    for sub in node.get("sub_groups", []):
        count_cases(sub, results, path)


def ktap_blocks(lines):
    name, block = None, []
    for line in lines:
        m = re.search(r"@@UMEM-KTAP-BEGIN (\S+)@@", line)
        if m:
            name, block = m.group(1), []
            continue
        if name and "@@UMEM-KTAP-END@@" in line:
            yield name, block
            name = None
            continue
        if name:
            block.append(line)


def parse_block(kunit_py, name, block, verbose):
    """Runs kunit.py parse on one block; returns [(case, status)]."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "ktap.log")
        out = os.path.join(tmp, "result.json")
        with open(src, "w") as f:
            f.write("\n".join(block) + "\n")
        proc = subprocess.run(
            [sys.executable, kunit_py, "parse", f"--json={out}", src],
            capture_output=True,
            text=True,
        )
        if verbose or proc.returncode != 0:
            sys.stdout.write(proc.stdout)
        results = []
        if os.path.exists(out):
            with open(out) as f:
                count_cases(json.load(f), results)
        # The same suite may run in several blocks (e.g. with either importer).
        results = [(f"{name}: {case}", status) for case, status in results]
        if not results:
            # A module whose suites were all filtered out prints no tests.
            results.append((f"{name}: no tests in its KTAP output", "SKIP"))
        return results


def log_results(args, path):
    """Results of one boot: its KTAP blocks and the scan of its kernel log."""
    label = os.path.basename(path)
    results = []
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    if not any("@@UMEM-DMESG-END@@" in l for l in lines):
        results.append((f"guest run completed ({label})", "FAIL"))
    ran = 0
    for name, block in ktap_blocks(lines):
        got = parse_block(args.kunit_py, name, block, not args.quiet)
        ran += sum(1 for _, status in got if status != "SKIP")
        results.extend(got)
    if args.require_ktap and not ran:
        results.append((f"guest printed KTAP results ({label})", "FAIL"))
    bad = list(dict.fromkeys(l for l in lines if BAD_RE.search(l)))
    if bad:
        print(f"kernel log of {label} reports problems:")
        for l in bad[:20]:
            print("    " + l)
    results.append((f"kernel log free of WARNING/BUG/Oops/lockdep ({label})",
                    "FAIL" if bad else "PASS"))
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kunit-py", required=True)
    ap.add_argument("--log", action="append",
                    help="guest serial log (repeat for several boots)")
    ap.add_argument("--host", help="host results: lines 'ok NAME' / 'not ok NAME'")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--require-ktap", action="store_true",
                    help="fail when a guest printed no KTAP block")
    args = ap.parse_args()

    results = []
    if args.host and os.path.exists(args.host):
        with open(args.host) as f:
            for line in f:
                line = line.strip()
                if line.startswith("not ok "):
                    results.append((line[7:], "FAIL"))
                elif line.startswith("ok "):
                    results.append((line[3:], "PASS"))

    for log in args.log or []:
        results.extend(log_results(args, log))

    passed = sum(1 for _, s in results if s == "PASS")
    skipped = sum(1 for _, s in results if s == "SKIP")
    failed = [n for n, s in results if s not in ("PASS", "SKIP")]
    for n in failed:
        print(f"FAILED: {n}")
    line = f"{passed} passed, {len(failed)} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
