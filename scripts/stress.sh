#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# stress.sh [RUNS [QP_TIMEOUT [IMPORTER]]]: one boot that runs the rxe
# end-to-end test with its stress variant RUNS times (default 10) with RC QPs
# of retransmit timeout QP_TIMEOUT (default 20, 4.3 s; 14 is 67 ms) on the
# importer IMPORTER (c, the default, or rust), stopping at the first failure
# and printing rxe's counters. Not part of `make check`: it is the
# reproducer of the open problem in Documentation/rxe.rst.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

runs=${1:-10}
qpt=${2:-20}
importer=${3:-c}
"$ROOT/scripts/kernel.sh"
"$ROOT/scripts/module.sh"
log=$LOGDIR/stress-serial.log
UMEM_TIMEOUT=$((600 + runs * 900)) "$ROOT/scripts/qemu.sh" stress "$log" \
	kunit.enable=0 "umem.stress=$runs,$qpt,$importer" || true
grep -E '^(stress run|rxe0 counter|completion:)' "$log" || true
python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
	--log "$log" --quiet --require-ktap
