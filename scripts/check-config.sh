#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-config.sh FRAGMENT CONFIG: fails if any option set (or unset) in
# FRAGMENT did not survive into CONFIG, e.g. because a dependency is missing
# and olddefconfig dropped it silently.
set -euo pipefail
frag=$1
config=$2
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		opt=${line%%=*}
		got=$(grep -E "^$opt=|^# $opt is not set" "$config" || true)
		;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }
		opt=${opt%% *}
		got=$(grep -E "^$opt=|^# $opt is not set" "$config" || true)
		[ -z "$got" ] && got=$line	# absent counts as not set
		;;
	*) continue ;;
	esac
	if [ "$got" != "$line" ]; then
		echo "config: '$line' requested, got '${got:-<absent>}'" >&2
		bad=1
	fi
done <"$frag"
[ "$bad" -eq 0 ] || { echo "error: options of $frag were dropped by olddefconfig" >&2; exit 1; }
