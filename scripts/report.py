#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns guest serial logs (and host check results) into the test verdict.

Every KTAP document a guest printed is judged: the blocks between
@@UMEM-KTAP-BEGIN/END markers (module suites, userspace tests, the guest's
steps) and the kernel's own boot-time suites (everything before the guest
job's @@UMEM-GUEST-START line), each fed on its own to the kernel's
tools/testing/kunit/kunit.py parse, whose JSON gives the per-case results.
A line anywhere else that looks like a test result ("ok N", "not ok N"),
or one inside a block that kunit.py did not read (past the document's
plan), fails the run: nothing that reads as a result is left unread.

The whole log is also scanned for kernel WARNINGs, BUGs, Oopses, lockdep,
KASAN, UBSAN, debugobjects and list corruption reports, for an unknown
module parameter and for a sanitizer switching itself off; each fails the
run. A WARNING between the kernel log lines "umem-expect-warnings-begin
NAME SITE" and "umem-expect-warnings-end NAME", raised at SITE, is one a
test provoked on purpose and does not count. The guest's kmemleak report (@@UMEM-KMEMLEAK-BEGIN/END@@)
fails the run when a leaked object's allocation backtrace touches RDMA,
dma-buf or the project's modules; @@UMEM-SANITIZERS ...@@ says whether
lockdep, kmemleak and DMA-API debugging were still on at the end; the
job's @@UMEM-GUEST-EXIT rc=N@@ must say 0.

With --manifest (scripts/expected.txt) the verdict also knows what must
have run: every result named there must be reported with its expected
status (pass, check, skip with its reason, xfail), and every reported
result must be named there. "check" results (the harness's own sanity
checks, benchmark smoke runs, sanitizer states) must pass but are counted
apart from the tests. --write-manifest writes the manifest of a run.

Prints the plain closing line "N passed, N failed" and exits non-zero on
any failure.
"""

import argparse
import collections
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
    # A misspelled parameter is ignored by the kernel, and what it should
    # have switched on (a gate, a test mode) silently does not run.
    r"[Uu]nknown parameter",
    # Sanitizers that switch themselves off: what follows is unchecked.
    r"turning off the locking correctness validator",
    r"kmemleak: .*[Dd]isabl",
    r"DMA-API: debugging out of memory",
    r"DMA-API: debugging disabled",
    r"dma-debug disabled",
]
BAD_RE = re.compile("|".join(BAD))
# What a test may provoke on purpose between expect-warnings markers.
EXPECTABLE_RE = re.compile(r"WARNING:")
# "umem-expect-warnings-begin NAME SITE" ... "umem-expect-warnings-end NAME":
# NAME is the case, SITE the source file (or function) of the one warning
# the case provokes; a WARNING from anywhere else inside the window fails.
EXPECT_RE = re.compile(r"umem-expect-warnings-(begin|end) (\S+)(?: (\S+))?")
# A leak in the code under test: its allocation backtrace names one of these.
LEAK_RE = re.compile(
    r"\b(ib_\w+|rxe_\w+|rdma_\w+|uverbs\w*|\w*dma_buf\w*|\w*dmabuf\w*|umem\w*|"
    r"dma_resv\w*|dma_fence\w*)|\[(umem_dmabuf_rs|dmabuf_exporter_rs)\]|"
    # The series' Rust in the kernel crate, by its mangled (v0) path:
    # kernel::dma_buf, kernel::dma, kernel::scatterlist, and the C helpers
    # the series adds for them.
    r"[_C]6kernel(7dma_buf|3dma|11scatterlist)|"
    r"\bkernel::(dma_buf|dma|scatterlist)\b|\brust_helper_(sg|dma|iosys_map)_\w+|"
    # A frame kmemleak could not name: in module space, so in one of the
    # project's modules (the only ones the guest loads), unloaded by then.
    r"^\s*0xffffffffa[0-9a-f]{7}\b"
)
# Reports the kernel's own code makes that are not this project's to fix.
# Each entry: the report's first line, a frame its trace must hold, the
# WARNING line the report itself prints (None if it prints none), and why
# it is forgiven, with the upstream reference. Such a report is counted
# apart, printed, and does not fail the run; it is forgiven by identity:
# its first line and its own WARNING line, nothing else. Any other report
# printed inside its lines (another CPU's, say) still fails, as does the
# same message from anywhere else. A data race (KCSAN, make check-kcsan) is
# forgiven the same way. No report is forgiven whose lines name the
# project's code (OURS_RE), whatever its entry says.
KNOWN_UPSTREAM = [
    (re.compile(r"ODEBUG: object \S+ is on stack \S+, but NOT annotated"),
     re.compile(r"\brust_doctest_kernel_time_hrtimer_rs_\d+\+"),
     re.compile(r"WARNING: .*\blib/debugobjects\.c:\d+ (at )?debug_object_is_on_stack\+"),
     "7.3's kernel::time::hrtimer examples put timers on the stack without "
     "the debug-objects annotation (CONFIG_DEBUG_OBJECTS_TIMERS)"),
]
# The end of a report: a WARNING's trace, or KCSAN's closing rule.
END_TRACE_RE = re.compile(r"---\[ end trace|^(\s*\[\s*[0-9.]+\])?\s*={40,}\s*$")
# The project's code: its modules, the importers and rxe's dma-buf MRs,
# and the series' Rust (mangled kernel-crate symbols of dma_buf).
OURS_RE = re.compile(r"\[(umem_dmabuf_rs|dmabuf_exporter_rs)\]|\bib_umem_dmabuf\w*|"
                     r"\brxe_dmabuf\w*|\bumem_dmabuf\w*|7dma_buf")
# A kernel log record's own timestamp, as the console prints it.
KLOG_STAMP_RE = re.compile(r"^\[\s*\d+\.\d{6}\] ")
# The kernel log's timestamp prefix, as kunit.py strips it.
PREFIX_RE = re.compile(r"^\s*\[\s*[0-9.]+\]\s?")
# A line that reads as a test result.
RESULT_RE = re.compile(r"^\s*(not ok|ok) [0-9]+\b")
SANITIZERS_RE = re.compile(r"@@UMEM-SANITIZERS ([^@]*)@@")
SANITIZER_NAMES = {"lockdep": "lockdep (debug_locks)", "kmemleak": "kmemleak",
                   "dma_api": "DMA-API debugging"}
STATUSES = ("pass", "check", "skip", "xfail")
# The kernel crate's doctests of upstream's own files (the boot-time suite
# rust_doctests_kernel runs them with the series' kernel::dma_buf ones):
# counted apart from the project's on the line before the closing one.
UPSTREAM_DOCTEST_RE = re.compile(r"\brust_doctests_kernel\.rust_doctest_kernel_(?!dma_buf)")
# What --write-manifest marks "check" when the old manifest does not say:
# the harness's own checks and the benchmarks' smoke runs.
CHECK_RE = re.compile(
    r"^(guest run completed|guest job exited 0|no test result outside a KTAP document|"
    r".* still on at the end|bench_[a-z_]+\+[a-z]+: .*|guest_steps[a-z_]*: guest_steps[a-z_]*\."
    r"(stalled_case_fails_alone|four_level_paging|swiotlb_forced)|"
    r"[a-z_+-]+: umem_dmabuf_rs_bench\..*|runner self-test.*|planted failures.*)$")


class Result:
    """One judged result: LOG (a serial log's name, or "host"), NAME,
    STATUS (PASS, FAIL, SKIP, ...) and, for a skip, its REASON."""

    def __init__(self, log, name, status, reason=""):
        self.log, self.name, self.status, self.reason = log, name, status, reason
        self.kind = "test"
        self.note = ""

    def label(self):
        return self.name if self.log == "host" else f"{self.name} ({self.log})"


def known_upstream(lines):
    """Indexes of the lines that are reports listed in KNOWN_UPSTREAM (each
    report's first line and its own WARNING line), and the reasons of the
    reports found (one entry per report)."""
    skip, found = set(), []
    for i, line in enumerate(lines):
        for msg, frame, warning, why in KNOWN_UPSTREAM:
            if not msg.search(line):
                continue
            end = next((j for j in range(i + 1, min(i + 120, len(lines)))
                        if END_TRACE_RE.search(lines[j])), None)
            if end is None or any(OURS_RE.search(l) for l in lines[i:end]):
                continue
            if not any(frame.search(l) for l in lines[i:end]):
                continue
            own = {i}
            if warning is not None:
                first = next((j for j in range(i + 1, end) if warning.search(lines[j])), None)
                if first is None:
                    continue
                own.add(first)
            skip.update(own)
            found.append(why)
    return skip, found


def warning_from(line, site):
    """Whether the WARNING line was raised at SITE: a source file
    ("WARNING: rust/kernel/dma_buf/mod.rs:781 at ...", or "at FILE:LINE" in the
    older form) or a function ("at func+0x1/0x2")."""
    return re.search(r"(^|[\s/])" + re.escape(site) + r"(:\d|\+0x)", PREFIX_RE.sub("", line)) \
        is not None


def scan_problems(lines):
    """Kernel log lines that report a problem, and the expected WARNINGs.

    Returns (bad, expected): the distinct problem lines outside expect
    windows and known upstream reports, and the number of WARNING lines
    inside expect windows raised at the site their window names.
    """
    bad, expected, window, site = [], 0, None, None
    skip, _ = known_upstream(lines)
    for i, line in enumerate(lines):
        if i in skip:
            continue
        m = EXPECT_RE.search(line)
        if m:
            kind, name = m.group(1), m.group(2)
            if kind == "begin":
                if window:
                    bad.append(f"expect-warnings window '{window}' not closed before "
                               f"'{name}' began")
                window, site = name, m.group(3)
                if not site:
                    bad.append(f"expect-warnings window '{name}' names no site of the "
                               f"warning it expects")
            else:
                if window != name:
                    bad.append(f"expect-warnings window '{name}' ended, but "
                               f"'{window}' was open")
                window, site = None, None
            continue
        if not BAD_RE.search(line):
            continue
        if window and site and EXPECTABLE_RE.search(line) and not re.search(
                r"BUG:|Oops|panic|lock|KASAN|UBSAN", line):
            if warning_from(line, site):
                expected += 1
                continue
            bad.append(f"expect-warnings window '{window}' expects a warning from {site}, "
                       f"not: {PREFIX_RE.sub('', line)}")
            continue
        bad.append(line)
    if window:
        # A window whose end never came would forgive every WARNING to the
        # end of the log.
        bad.append(f"expect-warnings window '{window}' never closed")
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


def skip_reasons(block):
    """{(suite, case): reason} of the "# SKIP" directives in a KTAP block
    (kunit.py's JSON has the status, not the reason). The suite is the
    innermost "# Subtest:" at the case line's indentation."""
    reasons, header = {}, {}
    for raw in block:
        line = PREFIX_RE.sub("", raw)
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        m = re.match(r"# Subtest: (\S+)", body)
        if m:
            header[indent] = m.group(1)
            continue
        m = re.match(r"(?:not ok|ok) [0-9]+ (.*?)\s+#\s*SKIP\b\s*(.*)$", body)
        if m:
            name = re.sub(r" \(.*$", "", m.group(1).strip())
            reasons[(header.get(indent, ""), name)] = " ".join(m.group(2).split())
    return reasons


KMSG_RE = re.compile(r"\[\s*\d+\.\d+\] ")


def mend_markers(lines):
    """The console is shared: a kernel message can land in the middle of a
    marker line the guest is writing ("@@UMEM-KTAP-BEGI[ 3.0] msg", more
    kernel lines, then "N name@@"). Puts such a marker back together,
    keeping the kernel lines before it."""
    out, cut = [], None
    for line in lines:
        if cut is not None:
            if KMSG_RE.match(line):
                out.append(line)
                continue
            out.append(cut + line)
            cut = None
            continue
        i = line.find("@@UMEM-")
        m = KMSG_RE.search(line, i + 1) if i >= 0 else None
        if m and "@@" not in line[i + 2:m.start()]:
            cut = line[:m.start()]
            out.append(line[m.start():])
            continue
        out.append(line)
    if cut is not None:
        out.append(cut)
    return out


def sections(lines):
    """Splits a serial log into (boot, blocks, rest): the lines before the
    guest job started (the kernel's boot-time KTAP), the marked KTAP
    blocks [(name, lines)], and the other lines of the job, outside the
    kernel log dump at its end (which repeats what the console showed)."""
    lines = mend_markers(lines)
    boot, blocks, rest = [], [], []
    started = not any("@@UMEM-GUEST-START" in l for l in lines)
    name, block, in_dmesg = None, [], False
    for line in lines:
        if not started:
            if "@@UMEM-GUEST-START" in line:
                started = True
            else:
                boot.append(line)
            continue
        if "@@UMEM-DMESG-BEGIN@@" in line:
            in_dmesg = True
        if "@@UMEM-DMESG-END@@" in line:
            in_dmesg = False
            continue
        if in_dmesg:
            continue
        m = re.search(r"@@UMEM-KTAP-BEGIN (\S+)@@", line)
        if m:
            name, block = m.group(1), []
            continue
        if name and "@@UMEM-KTAP-END@@" in line:
            blocks.append((name, block))
            name = None
            continue
        if name:
            block.append(line)
        else:
            rest.append(line)
    if name:  # a block the guest never closed: judged as far as it got
        blocks.append((name, block))
    return boot, blocks, rest


def ktap_blocks(lines):
    """The marked KTAP blocks of a log, (name, lines)."""
    return sections(lines)[1]


def judged_lines(node):
    """How many result lines kunit.py read into NODE (its JSON): one per
    case, one per group (a suite, a parameterised case), the root aside."""
    return sum(1 + judged_lines(sub) for sub in node.get("sub_groups", [])) + \
        len(node.get("test_cases", []))


def unread_results(block, read):
    """The result lines of a block that kunit.py, having read READ of them,
    left unread. It reads one document, from its first "KTAP version" line
    to the top-level plan's last result: the lines after that, and those
    before its start, unless they are kernel log records the block holds
    again, timestamp and all (the console echoing the tail of a suite late,
    ahead of the kernel log dump that holds the whole document)."""
    start = next((i for i, l in enumerate(block)
                  if re.match(r"\s*K?TAP version", PREFIX_RE.sub("", l))), 0)
    is_result = [bool(RESULT_RE.match(PREFIX_RE.sub("", l))) for l in block]
    body = [l for i, l in enumerate(block[start:], start) if is_result[i]]
    later = {l for l in block[start:] if KLOG_STAMP_RE.match(l)}
    before = [l for i, l in enumerate(block[:start]) if is_result[i] and
              not (KLOG_STAMP_RE.match(l) and l in later)]
    # After the document, likewise: an echo of a record the block holds
    # more than once.
    seen = collections.Counter(l for l in block if KLOG_STAMP_RE.match(l))
    after = [l for l in body[read:] if not (KLOG_STAMP_RE.match(l) and seen[l] > 1)]
    return before + after


def parse_block(kunit_py, log, name, block, verbose):
    """Runs kunit.py parse on one block; returns ([Result], unread): unread
    are the block's result lines kunit.py did not read, those past the end
    of its KTAP document (after the top-level plan's last result, or a
    second document)."""
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
            # Each line says which log and block it is from: the suites of
            # both importers have the same names.
            tag = f"[{log}: {name}] "
            sys.stdout.write("".join(re.sub(r"^\[\d\d:\d\d:\d\d\] ", tag, l)
                                     for l in proc.stdout.splitlines(keepends=True)))
        cases, read = [], 0
        if os.path.exists(out):
            with open(out) as f:
                tree = json.load(f)
            count_cases(tree, cases)
            read = judged_lines(tree)
    unread = unread_results(block, read)
    reasons = skip_reasons(block)
    results = []
    for case, status in cases:
        # Userspace tests follow a case's name with what they measured,
        # "no_dma_bufs_left (0 of the exporter, 0 udmabufs)": the name is
        # what identifies the case from run to run.
        case = re.sub(r" \(.*$", "", case)
        parts = case.split(".")
        reason = ""
        if status == "SKIP":
            for k in range(len(parts) - 1, 0, -1):
                reason = reasons.get((parts[k - 1], ".".join(parts[k:])), "")
                if reason:
                    break
        results.append(Result(log, f"{name}: {case}", status, reason))
    if not results:
        # A module whose suites were all filtered out prints no tests.
        results.append(Result(log, f"{name}: no tests in its KTAP output", "SKIP",
                              "no KTAP output"))
    return results, unread


def stray_results(rest, blocks=()):
    """Lines outside every judged KTAP document that read as test results
    or failed assertions. A kernel log line that a judged block also holds,
    timestamp and all, is the same record, echoed late by the console (its
    printing thread can fall behind a quiet period and print the rest after
    the console level is restored): not stray."""
    judged = {line for _, block in blocks for line in block if KLOG_STAMP_RE.match(line)}
    stray = []
    for line in rest:
        text = PREFIX_RE.sub("", line)
        if RESULT_RE.match(text) or "ASSERTION FAILED" in text or "EXPECTATION FAILED" in text:
            if not (KLOG_STAMP_RE.match(line) and line in judged):
                stray.append(line)
    return stray


def sanitizer_results(log, lines):
    """Results of the guest's @@UMEM-SANITIZERS line: one per sanitizer the
    kernel has, PASS if it was still on when the job ended."""
    results = []
    for line in lines:
        m = SANITIZERS_RE.search(line)
        if not m:
            continue
        for item in m.group(1).split():
            key, _, value = item.partition("=")
            if key not in SANITIZER_NAMES or value == "none":
                continue
            results.append(Result(log, f"{SANITIZER_NAMES[key]} still on at the end",
                                  "PASS" if value == "1" else "FAIL"))
    return results


# A gate case's own statement of its result, e.g. "# umem_bench_gate:
# Rust/C per ...: median 0.913 of 15 rounds (limit 1.100)".
GATE_RE = re.compile(r"# (\w+): Rust/C .*: median ([0-9.]+) of (\d+) rounds? "
                     r"\(limit ([0-9.]+)\)")
# Fewer rounds than this make no median worth gating on.
GATE_MIN_ROUNDS = 3


def gate_results(log, lines):
    """A failure for each gate line whose stated median is above its stated
    limit or rests on too few rounds, whatever the case's own status says:
    the gate's verdict is not taken on the guest's word alone."""
    results = []
    for line in lines:
        m = GATE_RE.search(line)
        if not m:
            continue
        name, median, rounds, limit = m.group(1), float(m.group(2)), int(m.group(3)), \
            float(m.group(4))
        why = []
        if median > limit:
            why.append(f"median {median:.3f} above its limit {limit:.3f}")
        if rounds < GATE_MIN_ROUNDS:
            why.append(f"{rounds} round(s), fewer than {GATE_MIN_ROUNDS}")
        if why:
            print(f"{log}: gate {name} states " + " and ".join(why))
            results.append(Result(log, f"gate {name}: stated median within its limit", "FAIL"))
    return results


# The console's note that the record it was printing was cut off and is
# printed again whole on the next line (printk's console replay).
REPLAY_RE = re.compile(r"^\*\* replaying previous printk message \*\*$")


def unreplayed(lines):
    """LINES without the records the console cut off and printed again:
    the partial line before each replay note, and the note itself. A cut
    marker or result would otherwise count twice, once truncated."""
    out = []
    for line in lines:
        if REPLAY_RE.match(line.strip()):
            if out:
                out.pop()
            continue
        out.append(line)
    return out


def log_results(args, path):
    """Results of one boot: its KTAP documents and the scans of its log."""
    label = os.path.basename(path)
    results = []
    try:
        with open(path, errors="replace") as f:
            lines = unreplayed(f.read().splitlines())
    except OSError:
        lines = []
    results.append(Result(label, "guest run completed",
                          "PASS" if any("@@UMEM-DMESG-END@@" in l for l in lines) else "FAIL"))
    exits = [re.search(r"@@UMEM-GUEST-EXIT rc=(\d+)@@", l) for l in lines]
    exits = [int(m.group(1)) for m in exits if m]
    if any("@@UMEM-GUEST-START" in l for l in lines):
        if not exits:
            print(f"{label}: the guest job printed no exit line")
        elif exits[-1]:
            print(f"{label}: the guest job exited {exits[-1]}")
        results.append(Result(label, "guest job exited 0",
                              "PASS" if exits and exits[-1] == 0 else "FAIL"))
    boot, blocks, rest = sections(lines)
    ran, stray = 0, []
    if any(re.search(r"KTAP version|TAP version", l) for l in boot):
        got, unread = parse_block(args.kunit_py, label, "boot", boot, not args.quiet)
        results.extend(got)
        stray += unread
    for name, block in blocks:
        got, unread = parse_block(args.kunit_py, label, name, block, not args.quiet)
        ran += sum(1 for r in got if r.status != "SKIP")
        results.extend(got)
        stray += unread
    if args.require_ktap and not ran:
        results.append(Result(label, "guest printed KTAP results", "FAIL"))
    stray += stray_results(rest, blocks)
    if stray:
        print(f"{label}: test results outside every KTAP document:")
        for l in stray[:10]:
            print("    " + l)
    results.append(Result(label, "no test result outside a KTAP document",
                          "FAIL" if stray else "PASS"))
    bad, expected = scan_problems(lines)
    if bad:
        print(f"kernel log of {label} reports problems:")
        for l in bad[:20]:
            print("    " + l)
    if expected:
        print(f"{label}: {expected} WARNING line(s) provoked on purpose between expect markers")
    for why, n in sorted(collections.Counter(known_upstream(lines)[1]).items()):
        print(f"{label}: {n} known upstream report(s), not counted: {why}")
    results.append(Result(label, "kernel log free of WARNING/BUG/Oops/lockdep/KASAN/UBSAN",
                          "FAIL" if bad else "PASS"))
    dma_errors = [int(m.group(1)) for m in
                  (re.search(r"@@UMEM-DMA-API-ERRORS (\d+)@@", l) for l in lines) if m]
    if dma_errors:
        if dma_errors[-1]:
            print(f"{label}: DMA-API debugging counted {dma_errors[-1]} error(s)")
        results.append(Result(label, "DMA-API debug error count is 0",
                              "FAIL" if dma_errors[-1] else "PASS"))
    results.extend(sanitizer_results(label, lines))
    results.extend(gate_results(label, lines))
    if args.require_kmemleak or has_kmemleak(lines):
        objects, ours = kmemleak_leaks(lines)
        if objects:
            print(f"{label}: kmemleak reports {len(objects)} unreferenced object(s), "
                  f"{len(ours)} in RDMA/dma-buf/project code")
            for o in ours[:5]:
                for l in o[:16]:
                    print("    " + l)
        results.append(Result(label, "kmemleak: no leak in RDMA/dma-buf/project code",
                              "FAIL" if ours or not has_kmemleak(lines) else "PASS"))
    return results


# The manifest (scripts/expected.txt): sections "[LOG]" or "[LANE LOG]"
# (LOG a serial log's name, or "host"; a section with a lane replaces the
# plain one of the same LOG in that lane), and in each, lines
#   STATUS NAME [-- REASON]
# STATUS: pass (a test), check (a harness or smoke check: must pass,
# counted apart), skip (must skip, for REASON), xfail (a known failure:
# must fail; REASON says why).

def read_manifest(path, lane):
    """{log: {name: (status, reason)}} of LANE, and the order of the logs."""
    plain, laned, order = {}, {}, []
    cur = None
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = re.match(r"^\[(?:(\S+) )?(\S+)\]$", line)
            if m:
                sec_lane, log = m.group(1), m.group(2)
                if sec_lane is None:
                    cur = plain.setdefault(log, {})
                elif sec_lane == lane:
                    cur = laned.setdefault(log, {})
                else:
                    cur = {}  # another lane's: read, not used
                if log not in order:
                    order.append(log)
                continue
            if cur is None:
                raise SystemExit(f"{path}:{n}: an entry before the first [section]")
            status, _, rest = line.partition(" ")
            if status not in STATUSES:
                raise SystemExit(f"{path}:{n}: unknown status '{status}'")
            name, _, reason = rest.partition(" -- ")
            cur[name.strip()] = (status, reason.strip())
    merged = {log: laned.get(log, plain.get(log, {})) for log in order}
    return merged, order


def apply_manifest(results, manifest, logs):
    """Judges RESULTS against MANIFEST (only the LOGS this run has, plus
    "host"); returns the results with kinds set and the failures the
    manifest adds."""
    extra = []
    have = {}
    for r in results:
        have.setdefault((r.log, r.name), []).append(r)
    for log in logs:
        want = manifest.get(log)
        if want is None:
            extra.append(Result(log, f"the manifest has a section for {log}", "FAIL"))
            continue
        for name, (status, reason) in want.items():
            got = have.pop((log, name), [])
            if not got:
                extra.append(Result(log, f"{name}: missing (the manifest expects {status})",
                                    "FAIL"))
                continue
            for r in got:
                judge(r, status, reason)
    for (log, name), got in have.items():
        for r in got:
            if r.status == "PASS" or r.status == "SKIP":
                r.note = "not in the manifest (scripts/expected.txt): add it"
                r.status = "FAIL"
    return extra


def judge(r, status, reason):
    """Sets R's kind and turns a result that differs from the manifest's
    expectation into a failure naming both."""
    if status == "check":
        r.kind = "check"
    if status in ("pass", "check"):
        if r.status == "SKIP":
            r.note = f"skipped ({r.reason or 'no reason given'}), the manifest expects it to pass"
            r.status = "FAIL"
        return
    if status == "skip":
        if r.status != "SKIP":
            r.note = (f"the manifest expects a skip ({reason}), it "
                      f"{'passed' if r.status == 'PASS' else 'failed'}: update the manifest")
            r.status = "FAIL"
        elif r.reason != reason:
            r.note = f"skipped for '{r.reason}', the manifest says '{reason}'"
            r.status = "FAIL"
        return
    if status == "xfail":
        if r.status == "PASS":
            r.note = f"a known failure ({reason}) now passes: update the manifest"
            r.status = "FAIL"
        elif r.status == "SKIP":
            r.note = f"a known failure ({reason}) skipped: {r.reason}"
            r.status = "FAIL"
        else:
            r.status = "XFAIL"


def write_manifest(path, results, logs, old, lane):
    """Writes the results of this run as a manifest, keeping the kinds
    ("check") and reasons of entries the old manifest had."""
    out = []
    for log in logs:
        out.append(f"[{lane + ' ' if lane else ''}{log}]")
        for r in results:
            if r.log != log:
                continue
            prev = old.get(log, {}).get(r.name, ("", ""))
            if r.status == "SKIP":
                out.append(f"skip {r.name} -- {r.reason}")
            elif r.status in ("FAIL", "XFAIL") and prev[0] == "xfail":
                out.append(f"xfail {r.name} -- {prev[1]}")
            elif r.status == "PASS":
                check = prev[0] == "check" or (not prev[0] and CHECK_RE.match(r.name))
                out.append(f"{'check' if check else 'pass'} {r.name}")
            else:
                print(f"not written to the manifest: {r.label()} {r.status}")
        out.append("")
    with open(path, "w") as f:
        f.write("\n".join(out))


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
    ap.add_argument("--manifest", help="what must have run (scripts/expected.txt)")
    ap.add_argument("--lane", default="check", help="the manifest's lane (check, full)")
    ap.add_argument("--write-manifest", metavar="FILE",
                    help="write the manifest of this run to FILE")
    args = ap.parse_args()

    results = []
    logs = []
    if args.host and os.path.exists(args.host):
        logs.append("host")
        with open(args.host) as f:
            for line in f:
                line = line.strip()
                if line.startswith("not ok "):
                    results.append(Result("host", line[7:], "FAIL"))
                elif line.startswith("ok "):
                    results.append(Result("host", line[3:], "PASS"))

    for log in args.log or []:
        logs.append(os.path.basename(log))
        results.extend(log_results(args, log))

    if args.write_manifest:
        old = {}
        if args.manifest and os.path.exists(args.manifest):
            old, _ = read_manifest(args.manifest, args.lane)
        write_manifest(args.write_manifest, results, logs, old,
                       args.lane if args.lane != "check" else "")
    if args.manifest:
        manifest, _ = read_manifest(args.manifest, args.lane)
        results.extend(apply_manifest(results, manifest, logs))

    tests = [r for r in results if r.kind == "test"]
    checks = [r for r in results if r.kind == "check"]
    passed = sum(1 for r in tests if r.status == "PASS")
    skipped = sum(1 for r in tests if r.status == "SKIP")
    xfailed = sum(1 for r in results if r.status == "XFAIL")
    failed = [r for r in results if r.status not in ("PASS", "SKIP", "XFAIL")]
    for r in failed:
        print(f"FAILED: {r.label()}{': ' + r.note if r.note else ''}")
    if checks:
        cpass = sum(1 for r in checks if r.status == "PASS")
        print(f"harness and smoke checks: {cpass} passed, "
              f"{sum(1 for r in checks if r.status == 'FAIL')} failed")
    if xfailed:
        print(f"known failures that failed as expected: {xfailed}")
    upstream = sum(1 for r in tests if r.status == "PASS" and UPSTREAM_DOCTEST_RE.search(r.name))
    if upstream:
        print(f"of the {passed} passed: {passed - upstream} the project's, {upstream} "
              f"7.3's own kernel-crate doctests (files other than kernel::dma_buf's)")
    line = f"{passed} passed, {len(failed)} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
