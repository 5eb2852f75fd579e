#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# initramfs.sh OUT.cpio: builds the guest's root filesystem: busybox, the
# userspace RDMA stack of the host (libibverbs + the rxe provider, iproute2's
# rdma, ibverbs-utils) with the shared libraries they need, the project's
# modules and test programs, and scripts/guest/ as /umem.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,root,lib64,usr/lib/x86_64-linux-gnu,umem/modules,umem/bin}
cp /usr/bin/busybox "$root/bin/busybox"
for app in $("$root/bin/busybox" --list); do
	[ -e "$root/bin/$app" ] || ln -s busybox "$root/bin/$app"
done

# Copies a host file and, for ELF files, every shared library it needs.
add_file() {
	local f=$1
	[ -e "$root$f" ] && return
	mkdir -p "$root$(dirname "$f")"
	cp -L "$f" "$root$f"
	if [ "$(head -c4 "$f" | tail -c3)" = "ELF" ]; then
		local lib
		for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true); do
			add_file "$lib"
		done
	fi
}

for bin in /usr/bin/rdma /usr/bin/ibv_devinfo /usr/bin/ibv_devices /usr/bin/ibv_rc_pingpong; do
	add_file "$bin"
done
add_file /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
# iproute2's ip (same package as rdma): busybox's cannot create a veth
# pair. The guest scripts call it by path (see guest/lib.sh).
add_file /usr/bin/ip
mv "$root/usr/bin/ip" "$root/umem/bin/ip"
# iproute2's tc for netem on the two-node link (busybox's has no netem).
add_file /usr/sbin/tc
mv "$root/usr/sbin/tc" "$root/umem/bin/tc"
mkdir -p "$root/etc/libibverbs.d"
cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"

# Python 3 with its standard library (no test suite, GUI or packaging
# parts) and the patched rdma-core from scripts/rdma-core.sh: its libibverbs
# and providers replace the host's in the guest, pyverbs and rdma-core's
# tests/ run on them (guest/rdma_core.sh).
if [ -f "$RCSTAGE/usr/lib/x86_64-linux-gnu/libibverbs.so.1" ]; then
	add_file /usr/bin/python3.11
	ln -s python3.11 "$root/usr/bin/python3"
	rsync -a --exclude=__pycache__/'*.opt-*' --exclude=test/ --exclude=tests/ \
		--exclude=idlelib/ --exclude=tkinter/ --exclude=turtledemo/ \
		--exclude=lib2to3/ --exclude=ensurepip/ --exclude=pydoc_data/ \
		--exclude=distutils/ --exclude=dist-packages/ --exclude='config-*/' \
		--exclude=site-packages/ \
		/usr/lib/python3.11/ "$root/usr/lib/python3.11/"
	for so in /usr/lib/python3.11/lib-dynload/*.so; do
		for lib in $(ldd "$so" 2>/dev/null | grep -o '/[^ ]*' || true); do
			add_file "$lib"
		done
	done
	# What pyverbs links besides rdma-core's own libraries (libpython).
	for so in $(find "$RCSTAGE/usr/local/lib/python3.11" -name '*.so'); do
		for lib in $(LD_LIBRARY_PATH=$RCSTAGE/usr/lib/x86_64-linux-gnu ldd "$so" 2>/dev/null |
			     grep -o '=> /[^ ]*' | cut -c4- || true); do
			[ -e "$RCSTAGE/usr/lib/x86_64-linux-gnu/$(basename "$lib")" ] ||
				add_file "$lib"
		done
	done
	for so in "$RCSTAGE"/usr/lib/x86_64-linux-gnu/*.so.* \
		  "$RCSTAGE"/usr/lib/x86_64-linux-gnu/libibverbs/*.so; do
		[ -L "$so" ] && continue
		rel=${so#"$RCSTAGE"}
		mkdir -p "$root$(dirname "$rel")"
		strip --strip-debug -o "$root$rel" "$so"
	done
	# Each soname link the loader looks up, as a link to the stage's file
	# (overwriting the host's copy of libibverbs.so.1 taken for rdma(8)).
	for so in "$RCSTAGE"/usr/lib/x86_64-linux-gnu/*.so.[0-9]; do
		rm -f "$root${so#"$RCSTAGE"}"
		cp -P "$so" "$root${so#"$RCSTAGE"}"
		# ldd names /lib for what it found there; that copy would win.
		old=$root/lib/x86_64-linux-gnu/$(basename "$so")
		[ -e "$old" ] && ln -sf "/usr/lib/x86_64-linux-gnu/$(basename "$so")" "$old"
	done
	cp "$RCSTAGE"/etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
	site=usr/local/lib/python3.11/dist-packages
	mkdir -p "$root/$site"
	cp -r "$RCSTAGE/$site/pyverbs" "$root/$site/"
	find "$root/$site/pyverbs" -name '*.so' -exec strip --strip-debug {} +
	cp -r "$RCSTAGE/usr/share/doc/rdma-core/tests" "$root/umem/rdma-core-tests"
fi

# perf(1) for a profile of the benchmark (make bench with BENCH_PROFILE=1;
# it samples with the cpu-clock software event, TCG has no PMU).
if [ "${UMEM_PERF:-0}" = 1 ]; then
	add_file /usr/bin/perf
fi

# AFL++'s fuzzer and minimizer for make fuzz (scripts/fuzz.sh; Debian's afl++).
if [ "${UMEM_AFL:-0}" = 1 ]; then
	for t in afl-fuzz afl-tmin; do
		add_file /usr/bin/$t
		mv "$root/usr/bin/$t" "$root/umem/bin/"
	done
fi

# The fuzzer's corpus (make fuzz), which make check replays.
cp -r "$ROOT/samples/rxe_dmabuf/corpus" "$root/umem/corpus"

# The functions a boot's coverage probes (UMEM_COVER_PROBES, written by
# scripts/coverage.py for make check's main boot; guest/lib.sh cover_start).
if [ -n "${UMEM_COVER_PROBES:-}" ]; then
	cp "$UMEM_COVER_PROBES" "$root/umem/cover-probes.txt"
fi

# Project artefacts: modules and guest programs built by scripts/module.sh.
# UMEM_EXTRA_KO: more modules, by path (make check-fixes: the reproducer
# module built against the kernel it boots). UMEM_IMPORTER=kernel (make
# check, make demo): the importer as the kernel build made it
# (CONFIG_INFINIBAND_UMEM_DMABUF_RUST=m, patches/linux-7.3/intree/) instead
# of the out-of-tree build's; the exporter sample is out of tree either way.
intree_ko=$KOUT/$INTREE_KO
case "${UMEM_IMPORTER:-tree}" in
tree) intree_ko= ;;
kernel) [ -e "$intree_ko" ] || die "no $intree_ko: is CONFIG_INFINIBAND_UMEM_DMABUF_RUST=m in the kernel's configuration?" ;;
*) die "UMEM_IMPORTER must be 'tree' or 'kernel', not '$UMEM_IMPORTER'" ;;
esac
for ko in "$ROOT"/*.ko "$ROOT"/samples/*/*.ko ${UMEM_EXTRA_KO:-}; do
	[ -z "$intree_ko" ] || [ "$(basename "$ko")" != umem_dmabuf_rs.ko ] || continue
	[ -e "$ko" ] && cp "$ko" "$root/umem/modules/"
done
if [ -n "$intree_ko" ]; then
	cp "$intree_ko" "$root/umem/modules/"
	# Installed as modules_install would, so that modprobe and modinfo find
	# it by name (make smoke's own choice of module, guest/rdma_core.sh).
	krel=$(cat "$KOUT/include/config/kernel.release")
	install -D -m 0644 "$intree_ko" "$root/lib/modules/$krel/kernel/$INTREE_KO"
	depmod -b "$root" "$krel" 2>/dev/null
	[ -s "$root/lib/modules/$krel/modules.dep" ] || die "depmod wrote no modules.dep for $krel"
fi
for b in "$ROOT"/build/guest-bin/*; do
	[ -e "$b" ] && add_file "$b" && mv "$root$b" "$root/umem/bin/"
done
# The files only: a Python byte-code cache directory left by a host run of
# the guest's Python scripts is neither needed nor a file cp copies.
find "$ROOT/scripts/guest" -maxdepth 1 -type f -exec cp {} "$root/umem/" \;
# make smoke's script, run in the guest as a real machine would run it.
cp "$ROOT/scripts/smoke.sh" "$root/umem/"
chmod +x "$root"/umem/*.sh
cp "$ROOT/scripts/guest/init" "$root/init"
chmod +x "$root/init"
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) >"$out"
