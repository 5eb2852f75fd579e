#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns a guest serial log (and host check results) into the test verdict.

Every KTAP block the guest printed between @@UMEM-KTAP-BEGIN/END markers is
fed to the kernel's own tools/testing/kunit/kunit.py parse; its JSON gives the
per-case results. The whole log is also scanned for kernel WARNINGs, BUGs,
Oopses, lockdep, KASAN, UBSAN, debugobjects and list corruption reports, which
fail the run as one more test; a WARNING between the kernel log lines
"umem-expect-warnings-begin NAME" and "umem-expect-warnings-end NAME" is one a
test provoked on purpose and does not count. The guest's kmemleak report
(@@UMEM-KMEMLEAK-BEGIN/END@@) fails the run when a leaked object's allocation
backtrace touches RDMA, dma-buf or the project's modules. Prints the plain
closing line "N passed, N failed" and exits non-zero on any failure.
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
    r"ODEBUG:",
    r"list_add corruption",
    r"list_del corruption",
    r"kernel BUG",
]
BAD_RE = re.compile("|".join(BAD))
# What a test may provoke on purpose between expect-warnings markers.
EXPECTABLE_RE = re.compile(r"WARNING:")
EXPECT_RE = re.compile(r"umem-expect-warnings-(begin|end) (\S+)")
# A leak in the code under test: its allocation backtrace names one of these.
LEAK_RE = re.compile(
    r"\b(ib_\w+|rxe_\w+|rdma_\w+|uverbs\w*|\w*dma_buf\w*|\w*dmabuf\w*|umem\w*|"
    r"dma_resv\w*|dma_fence\w*)|\[(umem_dmabuf_rs|dmabuf_exporter_rs)\]|"
    # A frame kmemleak could not name: in module space, so in one of the
    # project's modules (the only ones the guest loads), unloaded by then.
    r"^\s*0xffffffffa[0-9a-f]{7}\b"
)


def scan_problems(lines):
    """Kernel log lines that report a problem, and the expected WARNINGs.

    Returns (bad, expected): the distinct problem lines outside expect
    windows, and the number of WARNING lines inside them.
    """
    bad, expected, window = [], 0, None
    for line in lines:
        m = EXPECT_RE.search(line)
        if m:
            window = m.group(2) if m.group(1) == "begin" else None
            continue
        if not BAD_RE.search(line):
            continue
        if window and EXPECTABLE_RE.search(line) and not re.search(
                r"BUG:|Oops|panic|lock|KASAN|UBSAN", line):
            expected += 1
            continue
        bad.append(line)
    return list(dict.fromkeys(bad)), expected


def kmemleak_leaks(lines):
    """Objects of the guest's kmemleak report: (all, ours), each a list of
    the objects' text; "ours" are those whose backtrace matches LEAK_RE."""
    block, inside = [], False
    for line in lines:
        if "@@UMEM-KMEMLEAK-BEGIN@@" in line:
            inside = True
            continue
        if "@@UMEM-KMEMLEAK-END@@" in line:
            inside = False
            continue
        if inside:
            block.append(line)
    objects, cur = [], None
    for line in block:
        if "unreferenced object" in line:
            cur = [line]
            objects.append(cur)
        elif cur is not None:
            cur.append(line)
    ours = [o for o in objects if any(LEAK_RE.search(l) for l in backtrace(o))]
    return objects, ours


def backtrace(obj):
    """The frames of one kmemleak object: the lines after "backtrace"
    ("[<addr>] func+off/size" on older kernels, "func+off/size" on 6.12 and later)."""
    for i, line in enumerate(obj):
        if "backtrace" in line:
            return obj[i + 1:]
    return []


def has_kmemleak(lines):
    return any("@@UMEM-KMEMLEAK-END@@" in l for l in lines)


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
    bad, expected = scan_problems(lines)
    if bad:
        print(f"kernel log of {label} reports problems:")
        for l in bad[:20]:
            print("    " + l)
    if expected:
        print(f"{label}: {expected} WARNING line(s) provoked on purpose between expect markers")
    results.append((f"kernel log free of WARNING/BUG/Oops/lockdep/KASAN/UBSAN ({label})",
                    "FAIL" if bad else "PASS"))
    dma_errors = [int(m.group(1)) for m in
                  (re.search(r"@@UMEM-DMA-API-ERRORS (\d+)@@", l) for l in lines) if m]
    if dma_errors:
        if dma_errors[-1]:
            print(f"{label}: DMA-API debugging counted {dma_errors[-1]} error(s)")
        results.append((f"DMA-API debug error count is 0 ({label})",
                        "FAIL" if dma_errors[-1] else "PASS"))
    if args.require_kmemleak or has_kmemleak(lines):
        objects, ours = kmemleak_leaks(lines)
        if objects:
            print(f"{label}: kmemleak reports {len(objects)} unreferenced object(s), "
                  f"{len(ours)} in RDMA/dma-buf/project code")
            for o in ours[:5]:
                for l in o[:16]:
                    print("    " + l)
        results.append((f"kmemleak: no leak in RDMA/dma-buf/project code ({label})",
                        "FAIL" if ours or not has_kmemleak(lines) else "PASS"))
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
    ap.add_argument("--require-kmemleak", action="store_true",
                    help="fail when a guest printed no kmemleak report")
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
