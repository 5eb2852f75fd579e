#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The host's view of the guest's device memory, after the boot.

Usage: devmem_check.py BAR_FILE SERIAL_LOG TAG...

The guest's witness run (rxe_dmabuf_test ... witness) writes buffers in the
device memory of the exporter's PCI BAR over RDMA and prints, for each, a
line "devmem-witness TAG OP offset=OFFSET len=LEN seed=SEED". The BAR is a
QEMU memory-backend-file (scripts/qemu.sh), so the host reads the same bytes
from BAR_FILE: each range must hold the test pattern SEED (rdma_user.h's
fill()), and every TAG given must have its write, send and read buffers.
Exits 0 when all of that holds.
"""
import re
import sys

LINE = re.compile(r"devmem-witness (\S+) (\S+) offset=(0x[0-9a-f]+|0) len=(\d+) seed=(\d+)")
OPS = ("write", "send", "read")


def pattern(length, seed):
    """rdma_user.h's fill(): byte i is i * 7 + seed * 13 + (i >> 10)."""
    return bytes((i * 7 + seed * 13 + (i >> 10)) & 0xFF for i in range(length))


def main():
    if len(sys.argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    bar_file, log, tags = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(log, errors="replace") as f:
        found = [m.groups() for m in map(LINE.search, f) if m]
    with open(bar_file, "rb") as f:
        bar = f.read()
    ok = True
    seen = set()
    for tag, op, offset, length, seed in found:
        offset, length, seed = int(offset, 16), int(length), int(seed)
        got = bar[offset:offset + length]
        good = got == pattern(length, seed)
        seen.add((tag, op))
        where = f"{tag} {op}: {length} bytes at BAR offset {offset:#x}"
        if good:
            print(f"    {where}: as written")
        else:
            bad = next((i for i, (a, b) in enumerate(zip(got, pattern(length, seed)))
                        if a != b), len(got))
            print(f"    {where}: DIFFERS from byte {bad}", file=sys.stderr)
            ok = False
    for tag in tags:
        for op in OPS:
            if (tag, op) not in seen:
                print(f"    {tag} {op}: no witness line in {log}", file=sys.stderr)
                ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
