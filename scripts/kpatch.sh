#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Round trip for developing the kernel patches in the cached source tree.
#   kpatch.sh checkout   reset the cached tree to pristine + patches/ (commits)
#   kpatch.sh export     write the commits above "pristine" back to patches/
#   kpatch.sh check      checkpatch --strict every patch in patches/
set -euo pipefail
. "$(dirname "$0")/lib.sh"
PDIR=$ROOT/patches/linux-6.12

case "${1:-}" in
checkout)
	"$ROOT/scripts/kernel.sh" --prepare-only
	say "cached tree $KSRC is at pristine + $(ls "$PDIR" | wc -l) patches; commit there, then: $0 export"
	;;
export)
	rm -f "$PDIR"/*.patch
	git -C "$KSRC" format-patch -q --no-signature --zero-commit -N -o "$PDIR" pristine..HEAD
	ls "$PDIR"
	;;
check)
	[ -x "$KSRC/scripts/checkpatch.pl" ] || "$ROOT/scripts/kernel.sh" --prepare-only
	rc=0
	for p in "$PDIR"/*.patch; do
		"$KSRC/scripts/checkpatch.pl" --strict -q --no-tree \
			--ignore FILE_PATH_CHANGES "$p" || rc=1
	done
	exit $rc
	;;
*)
	sed -n '3,6p' "$0"
	exit 2
	;;
esac
