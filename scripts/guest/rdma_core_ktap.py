#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Runs rdma-core's own tests (tests/, unmodified) and prints KTAP.

usage: rdma_core_ktap.py SUITE TESTS_DIR SELECT[,SELECT...] [TEST ARGS...]

SELECT picks tests by the start of their unittest id without the leading
"tests.", e.g. "test_mr.DmaBuf" or "test_qp"; "-test_x.Class" drops what an
earlier SELECT picked. TEST ARGS go to rdma-core's own argument parser
(--dev, --gid, ...), exactly as for its run_tests.py.

The tests are loaded the way run_tests.py loads them, so their setUp and skip
logic are rdma-core's. One KTAP case per test, named by its method
(Class.method where two selected classes share a method name); a skipped
test is "ok N name # SKIP reason", and every skip reason is also printed as a
summary at the end. Exits non-zero when a test failed or none ran.

The file named by $RDMA_CORE_KNOWN lists tests that fail for reasons outside
this project, one "ID REASON" a line (ID as for SELECT, in full): they run
as expected failures. One that fails is reported "not ok" after a comment
"known failure: REASON" and does not make the exit status non-zero (the
host's manifest expects it to fail: xfail); one that passes or skips is a
failure ("known failure now passes" / "... skipped"), so a change in it is
seen.

$RDMA_CORE_MUST_RUN (SELECT syntax) names tests that must not skip: a skip
of one of them is a failure, its reason printed (e.g. the DmaBuf tests, which
skip when the allocator or the driver's reg_dmabuf_mr is missing).
"""

import os
import sys
import time
import traceback
import unittest
from importlib.machinery import SourceFileLoader


def flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


def short_id(test):
    tid = test.id()
    return tid[len("tests."):] if tid.startswith("tests.") else tid


def selected(tests, selects):
    keep = []
    for t in tests:
        sid = short_id(t)
        on = False
        for s in selects:
            neg = s.startswith("-")
            pat = s[1:] if neg else s
            if sid == pat or sid.startswith(pat + ".") or sid.startswith(pat):
                on = not neg
        if on:
            keep.append(t)
    return keep


def case_names(tests):
    methods = {}
    for t in tests:
        methods.setdefault(t._testMethodName, set()).add(type(t).__name__)
    names = []
    for t in tests:
        m = t._testMethodName
        names.append(m if len(methods[m]) == 1 else f"{type(t).__name__}.{m}")
    return names


class Result(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.outcome = None

    def addSuccess(self, test):
        self.outcome = ("ok", None)

    def addFailure(self, test, err):
        self.outcome = ("fail", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        self.outcome = ("fail", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        self.outcome = ("skip", reason)

    def addExpectedFailure(self, test, err):
        self.outcome = ("ok", None)

    def addUnexpectedSuccess(self, test):
        self.outcome = ("fail", "unexpected success")


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    suite_name, tests_dir, selects = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    # rdma-core's parser reads sys.argv, as in run_tests.py.
    sys.argv = [os.path.join(tests_dir, "run_tests.py")] + sys.argv[4:]
    sys.path.insert(0, tests_dir)
    from args_parser import parser  # noqa: E402 (rdma-core's tests/)

    parser.parse_args()
    tests_mod = SourceFileLoader("tests", os.path.join(tests_dir, "__init__.py")).load_module()
    loader = unittest.TestLoader()
    tests = selected(list(flatten(loader.loadTestsFromModule(tests_mod))), selects)
    names = case_names(tests)
    must_run = [x for x in os.environ.get("RDMA_CORE_MUST_RUN", "").split(",") if x]
    known = {}
    if os.environ.get("RDMA_CORE_KNOWN"):
        with open(os.environ["RDMA_CORE_KNOWN"]) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    tid, _, reason = line.strip().partition(" ")
                    known[tid] = reason.strip()

    print("KTAP version 1", flush=True)
    print("1..1")
    print("    KTAP version 1")
    print(f"    # Subtest: {suite_name}")
    print(f"    1..{len(tests)}", flush=True)
    counts = {"ok": 0, "fail": 0, "skip": 0, "xfail": 0}
    skips = []
    start = time.monotonic()
    for i, (test, name) in enumerate(zip(tests, names), 1):
        result = Result()
        t0 = time.monotonic()
        test.run(result)
        outcome, detail = result.outcome or ("fail", "test reported no outcome")
        if outcome == "skip" and must_run and selected([test], must_run):
            outcome, detail = "fail", f"must run, but skipped: {detail}"
        reason = known.get(short_id(test))
        if reason is not None:
            if outcome == "fail":
                outcome = "xfail"
            else:
                outcome, detail = "fail", f"known failure ({reason}) {outcome}: {detail or 'passed'}"
        counts[outcome] += 1
        took = f"{time.monotonic() - t0:.1f}s"
        if outcome == "xfail":
            print(f"    # known failure: {reason}")
            for line in (detail or "").rstrip().splitlines()[-3:]:
                print(f"    # {line}")
            print(f"    not ok {i} {name}", flush=True)
        elif outcome == "fail":
            for line in (detail or "").rstrip().splitlines():
                print(f"    # {line}")
            print(f"    not ok {i} {name}", flush=True)
        elif outcome == "skip":
            reason = " ".join(str(detail).split())
            skips.append((name, reason))
            print(f"    ok {i} {name} # SKIP {reason}", flush=True)
        else:
            print(f"    # {short_id(test)}: {took}")
            print(f"    ok {i} {name}", flush=True)
    ok = counts["fail"] == 0 and counts["ok"] > 0
    print(f"{'ok' if ok else 'not ok'} 1 {suite_name}")
    print(f"# {suite_name}: {counts['ok']} passed, {counts['fail']} failed, "
          f"{counts['skip']} skipped, {counts['xfail']} known failures "
          f"in {time.monotonic() - start:.0f}s")
    for name, reason in skips:
        print(f"# {suite_name}: skipped {name}: {reason}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
