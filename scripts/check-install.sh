#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-install.sh: make check-install (Documentation/install.rst, section
# 11). The install path of a user's machine, its commands taken from the
# page's ".. doctest:" blocks (lib.sh, doc_block) and run as written:
#   1. Debian's linux-source-7.3 and linux-config-7.3 of the pinned version,
#      fetched by version and sha256 (the configuration installed with
#      dpkg -i, as apt-get would), the source unpacked, the series block;
#   2. the configuration blocks, localmodconfig with
#      scripts/install/modules.lsmod, the build block (make bindeb-pkg) with
#      GCC and rustc 1.85, as Debian builds its 7.3;
#   3. a minimal Debian 12 root (debootstrap), the install block (dpkg -i,
#      whose scripts run depmod and update-initramfs) run in it; the
#      patched rdma-core (rxe's provider, scripts/rdma-core.sh), make
#      smoke's program and script, the load and rollback blocks added;
#   4. that kernel and initramfs booted from the root in QEMU with
#      lockdown=integrity, running scripts/install/guest-check.sh (one TAP
#      line per check).
# The packages are built again only when the series, the blocks, the module
# list or the compilers change (key in the cache); the Debian root only when
# its package list does. Ends with "N passed, N failed"; exit status 0 only
# when every check passed. Phases and verdict in build/install-results/
# (scripts/runtimes.py --run install).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

I=$UMEM_CACHE/install
CFG_PKG=linux-config-7.3
CFG_SHA256=1161d8946bd74094857fc1950da809a14e1b3aafe4f3defbec83150520e3e82c
GUEST_SUITE=bookworm
GUEST_PKGS=kmod,initramfs-tools,iproute2,libnl-3-200,libnl-route-3-200,procps
KREL=$UMEM_KVER.4-umem
LOG=$LOGDIR/check-install
RESULTS=$ROOT/build/install-results
rm -rf "$RESULTS"
mkdir -p "$I" "$LOG" "$RESULTS"
export UMEM_PHASES=$RESULTS/phases.txt
record_commit >"$RESULTS/commit.txt"
record_machine >"$RESULTS/machine.txt"
start=$SECONDS
phase_mark begin "make check-install"
phase_mark begin "set-up"

# GCC and rustc 1.85 (setup.sh installs both), and what the packaging and
# the guest's root need besides.
"$ROOT/scripts/setup.sh" debootstrap debhelper dpkg-dev libdw-dev e2fsprogs patch
export RUSTUP_TOOLCHAIN=$GCC_RUSTC
phase_mark end "set-up"

DOC=$ROOT/Documentation/install.rst
block() {	# block NAME: install.rst's block NAME, failing if it is not there
	local b
	b=$(doc_block "$1" <"$DOC")
	[ -n "$b" ] || die "$DOC: no '.. doctest: $1' block"
	printf '%s\n' "$b"
}
BUILD_BLOCKS=(series debian-config localmodconfig debian-options debian-build)

# 1. The two Debian packages.
phase_mark begin "fetch"
fetch_kernel_deb
if ! dpkg-query -W -f='${Version}' "$CFG_PKG" 2>/dev/null | grep -qx "$KPKG_VERSION"; then
	d=$UMEM_CACHE/deb
	opts=(-o "Dir::Etc::sourcelist=$d/sources.list" -o Dir::Etc::sourceparts=-
	      -o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache"
	      -o APT::Get::List-Cleanup=0 -o APT::Sandbox::User=root)
	say "fetching $CFG_PKG $KPKG_VERSION from Debian's $KPKG_SUITE"
	(cd "$d" && rm -f ./"${CFG_PKG}"_*.deb && apt-get -qq "${opts[@]}" download "$CFG_PKG=$KPKG_VERSION") ||
		die "downloading $CFG_PKG=$KPKG_VERSION failed"
	deb=$(echo "$d/${CFG_PKG}"_*.deb)
	echo "$CFG_SHA256  $deb" | sha256sum -c --quiet - ||
		die "$deb: sha256 differs from the pinned $CFG_SHA256"
	dpkg -i "$deb" >/dev/null || die "dpkg -i $deb failed"
	rm -f "$deb"
fi
phase_mark end "fetch"

# 2. The packages.
install_key() {
	local b
	{
		echo "recipe 1"
		echo "$KPKG_VERSION $CFG_SHA256"
		rustc --version
		bindgen --version
		gcc --version | head -n 1
		for b in "${BUILD_BLOCKS[@]}"; do block "$b"; done
		cat "$ROOT/scripts/install/modules.lsmod"
		series_patches | xargs -r cat
	} | sha256sum | cut -c1-16
}
key=$(install_key)
debs=$I/debs
if [ "$(cat "$debs/key" 2>/dev/null)" = "$key" ]; then
	say "kernel packages $KREL: cached (key $key)"
else
	say "Debian's $UMEM_KVER configuration with the series, built as packages (install.rst, sections 1-4)"
	rm -rf "$I/build" "$debs"
	mkdir -p "$I/build"
	src=$I/build/$KPKG
	tar xf "$KTARBALL" -C "$I/build"
	# Section 1's commands before the series block; a scratch identity for
	# git where the machine has none.
	git config user.name >/dev/null || export GIT_AUTHOR_NAME=check-install \
		GIT_COMMITTER_NAME=check-install GIT_AUTHOR_EMAIL=check-install@localhost \
		GIT_COMMITTER_EMAIL=check-install@localhost
	(cd "$src" && git init -q && git add -f -A && git commit -q -m pristine) ||
		die "git init of $src failed"
	script=$I/build/commands.sh
	{
		echo "set -e"
		for b in "${BUILD_BLOCKS[@]}"; do
			echo "echo '>>> install.rst block $b'"
			block "$b"
		done
	} | sed -e "s|/path/to/umem_dmabuf_rs|$ROOT|g" \
		-e "s|/path/to/lsmod.txt|$ROOT/scripts/install/modules.lsmod|g" >"$script"
	PROGRESS_COUNT_FILE=$UMEM_CACHE/objcount-install \
		run_with_progress "bindeb-pkg" "$LOG/build.log" "$src" \
		bash -c 'cd "$1" && bash "$2" </dev/null' _ "$src" "$script" ||
		die "the packages did not build ($LOG/build.log)"
	find "$src" -name '*.o' | wc -l >"$UMEM_CACHE/objcount-install"
	mkdir -p "$debs"
	mv "$I/build"/linux-image-"$KREL"_*.deb "$debs/"
	# An unsigned copy of the module, for the refusal under lockdown: the
	# build tree's (the package's copy is signed when it is installed into
	# the package).
	ko=$src/$INTREE_KO
	[ -f "$ko" ] || die "no $INTREE_KO in $src"
	! tail -c 28 "$ko" | grep -qF '~Module signature appended~' ||
		die "$ko is signed: no unsigned copy for the refusal"
	cp "$ko" "$debs/umem_dmabuf_rs.unsigned.ko"
	echo "$key" >"$debs/key"
	rm -rf "$I/build"
fi
image_deb=$(echo "$debs"/linux-image-"$KREL"_*.deb)
[ -f "$image_deb" ] || die "no linux-image-$KREL package in $debs"

# 3. The guest's root: Debian 12 minbase (cached by its package list), the
# kernel package installed with dpkg -i, the patched rdma-core, make
# smoke's program and script.
"$ROOT/scripts/rdma-core.sh"
phase_mark begin "guest root"
base=$I/guest-$GUEST_SUITE.tar
if [ "$(cat "$base.pkgs" 2>/dev/null)" != "$GUEST_SUITE $GUEST_PKGS" ]; then
	say "debootstrap $GUEST_SUITE (minbase + $GUEST_PKGS)"
	rm -rf "$I/guest-root"
	debootstrap --variant=minbase --include="$GUEST_PKGS" "$GUEST_SUITE" "$I/guest-root" \
		http://deb.debian.org/debian >"$LOG/debootstrap.log" 2>&1 ||
		die "debootstrap failed ($LOG/debootstrap.log)"
	tar -C "$I/guest-root" -cf "$base.tmp" .
	mv "$base.tmp" "$base"
	echo "$GUEST_SUITE $GUEST_PKGS" >"$base.pkgs"
	rm -rf "$I/guest-root"
fi
R=$I/root
rm -rf "$R"
mkdir -p "$R"
tar -C "$R" -xf "$base"
# The install block, in a directory below the one that holds the package.
mkdir -p "$R/tmp/src"
cp "$image_deb" "$R/tmp/"
say "install.rst's install block in the guest's root: $(block debian-install)"
chroot "$R" sh -c "cd /tmp/src && $(block debian-install)" >"$LOG/dpkg.log" 2>&1 ||
	die "the install block failed ($LOG/dpkg.log)"
rm -r "$R/tmp/$(basename "$image_deb")" "$R/tmp/src"
[ -f "$R/boot/initrd.img-$KREL" ] || die "dpkg -i made no initramfs ($LOG/dpkg.log)"
# systemd's directory for modules to load at boot (the load block writes
# there); the root boots no systemd, so debootstrap did not make it.
mkdir -p "$R/etc/modules-load.d"
cp -a "$RCSTAGE"/. "$R/"
echo "/usr/lib/x86_64-linux-gnu" >"$R/etc/ld.so.conf.d/rdma-core.conf"
chroot "$R" ldconfig
mkdir -p "$R/root/umem"
gcc -O2 -Wall -Wextra -Werror -I"$RCSTAGE/usr/include" -L"$RCSTAGE/usr/lib/x86_64-linux-gnu" \
	-o "$R/root/umem/rdma_dmabuf_smoke" "$ROOT/samples/rdma_dmabuf_smoke/rdma_dmabuf_smoke.c" -libverbs
cp "$ROOT/scripts/smoke.sh" "$ROOT/scripts/install/guest-check.sh" "$debs/umem_dmabuf_rs.unsigned.ko" \
	"$R/root/umem/"
block load >"$R/root/umem/load.sh"
block rollback >"$R/root/umem/rollback.sh"
img=$I/root.img
rm -f "$img"
mkfs.ext4 -q -F -L umem-root -d "$R" "$img" 3G || die "mkfs.ext4 -d $R failed"

phase_mark end "guest root"

# 4. Boot it. The timeout is a guard against a hung guest only: the boot
# takes minutes.
phase_mark begin "boot"
say "booting $KREL from the image with lockdown=integrity (QEMU)"
out=$LOG/serial.log
timeout 10800 qemu-system-x86_64 -accel tcg -smp 2 -m 2G -nographic -no-reboot \
	-kernel "$R/boot/vmlinuz-$KREL" -initrd "$R/boot/initrd.img-$KREL" \
	-append "root=/dev/vda rw console=ttyS0 lockdown=integrity panic=-1 init=/root/umem/guest-check.sh" \
	-drive "file=$img,if=virtio,format=raw" \
	-netdev user,id=n0 -device virtio-net-pci,netdev=n0 >"$out" 2>&1 || true
phase_mark end "boot"
grep -a -E '^(not )?ok [0-9]+ |^# |smoke: ' "$out" | sed 's/\r$//' >&2 || true
pass=$(grep -a -c -E '^ok [0-9]+ ' "$out" || true)
fail=$(grep -a -c -E '^not ok [0-9]+ ' "$out" || true)
grep -a -q '^# guest-check: done' "$out" || { echo "the guest did not finish ($out)" >&2; fail=$((fail + 1)); }
[ "$fail" -ne 0 ] || rm -rf "$R"
phase_mark end "make check-install"
say "check-install took $(((SECONDS - start) / 60))m$(((SECONDS - start) % 60))s; serial log $out"
echo "$pass passed, $fail failed" | tee "$RESULTS/verdict.txt"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
