#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# qemu.sh JOB LOG [CMDLINE...]: boots the cached kernel with the project's
# initramfs under QEMU TCG, runs the guest job JOB (scripts/guest/JOB.sh),
# writes the serial console to LOG.
#
# A guest is judged by progress, not by a deadline: it is stopped when its
# serial console has been silent for UMEM_STALL seconds (default 900:
# longer than the guest's own watchdog, ktap_watch, at 600 s, so that a
# stuck test is normally named and stopped from inside), or when it runs
# longer than UMEM_TIMEOUT seconds in all (default 3600; the callers pass
# about ten times the boot's usual duration). Either way the failure says
# which test was running and for how long the guest had been silent.
# A guest that finished its job (@@UMEM-DMESG-END@@) and is still running
# UMEM_POWEROFF seconds later (default 120; powering off takes about 20)
# is stopped too: its power-off is blocked, as when a device's shutdown
# waits for memory an importer never gave back (a leaked pin), while the
# device's messages keep the console from falling silent.
# UMEM_QEMU_CPUS=LIST pins QEMU to those host CPUs (taskset), the slow lane
# of make check-slow.
#
# UMEM_KVM=1 opts in to KVM (it cannot boot on nested hosts whose KVM
# asserts on MSR 0x10a). acpi=noirq: evaluating the
# ACPI PCI interrupt links took 13 to 16 s of every test-kernel boot under
# TCG (KASAN, lockdep); the devices use MSI-X anyway. slab_nomerge: fault
# injection flags slab caches one by one (guest/init), which merged caches
# refuse. no5lvl: QEMU's "-cpu max" offers 5-level paging; with it, an
# interrupt that arrives while identify_cpu() has cleared the boot CPU's
# feature bits (LA57 among them) makes KASAN compute its shadow range for
# 4-level paging and report the 5-level direct map as a wild access
# (seen once in about 40 boots, 2 s into boot, before any module). Real
# hosts mostly have 4-level paging, and so do the guests now. log_buf_len: the KTAP of a module's suites is read back from the
# kernel log after insmod; the default 128 KiB held a passing run's output
# but not a failing one's (the start marker was overwritten and the
# importer's failures vanished). UMEM_QEMU_ARGS adds QEMU arguments
# (scripts/two_node.sh: a second NIC on a link to another guest). UMEM_SMP
# sets the guest's vCPUs (default 2), UMEM_MEM its memory (default 2G). UMEM_BZIMAGE boots that kernel image
# instead of the cached build's (scripts/mutants.sh: a mutated kernel).
#
# Device memory: the guest is a q35 machine whose NIC sits behind a PCIe
# switch together with an ivshmem-plain device; its BAR 2 (UMEM_DEVMEM_MB,
# default 64) is the RAM of a file the host can read after the guest ends
# (build/devmem-LOGNAME.bin), which the exporter sample exports as device
# memory. Both endpoints hang below the switch's upstream port, so the
# kernel's peer-to-peer distance check passes without crossing the root
# complex (no host-bridge allow-list involved), and there is no virtual
# IOMMU, so no ACS redirection either (Documentation/devmem.rst).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

job=$1
log=$2
shift 2
timeout=${UMEM_TIMEOUT:-3600}
stall=${UMEM_STALL:-900}
# One initramfs per boot (named after its log): make check boots several
# guests at the same time.
initrd=$ROOT/build/initramfs-$(basename "$log" .log).cpio
devmem=$ROOT/build/devmem-$(basename "$log" .log).bin

mkdir -p "$(dirname "$log")"
"$ROOT/scripts/initramfs.sh" "$initrd"

accel=(-accel tcg -cpu max)
if [ "${UMEM_KVM:-0}" = 1 ]; then
	accel=(-accel kvm -cpu host)
fi

pin=()
[ -z "${UMEM_QEMU_CPUS:-}" ] || pin=(taskset -c "$UMEM_QEMU_CPUS")

# The PCIe topology (see above): root port -> switch -> {ivshmem, NIC, a
# free port for a second NIC (scripts/two_node.sh: bus=sw0p2), which so
# comes after the first (eth1)}.
rm -f "$devmem"
truncate -s "${UMEM_DEVMEM_MB:-64}M" "$devmem"
machine=(-M q35
	-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1
	-device x3130-upstream,id=sw0,bus=rp0
	-device xio3130-downstream,id=sw0p0,bus=sw0,chassis=2,slot=0
	-device xio3130-downstream,id=sw0p1,bus=sw0,chassis=3,slot=0
	-device xio3130-downstream,id=sw0p2,bus=sw0,chassis=4,slot=0
	-object memory-backend-file,id=devmem0,share=on,mem-path="$devmem",size="${UMEM_DEVMEM_MB:-64}M"
	-device ivshmem-plain,memdev=devmem0,bus=sw0p0
	-netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0,bus=sw0p1)

cmdline="$*"
# boot: runs the guest, its serial console to $log; sets rc and why.
boot() {
	rc=0
	"${pin[@]}" qemu-system-x86_64 "${accel[@]}" -smp "${UMEM_SMP:-2}" -m "${UMEM_MEM:-2G}" \
		-nographic -no-reboot -nodefaults -serial stdio "${machine[@]}" ${UMEM_QEMU_ARGS:-} \
		-kernel "${UMEM_BZIMAGE:-$KOUT/arch/x86/boot/bzImage}" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 oops=panic softlockup_panic=1 sysctl.kernel.panic_on_rcu_stall=1 acpi=noirq slab_nomerge log_buf_len=16M no5lvl umem.job=$job $cmdline" \
		</dev/null >"$log" 2>&1 &
	qpid=$!
	# Watch the serial log grow; stop the guest on a stall or past the limit.
	why=
	size=-1
	quiet_since=$SECONDS
	ended=
	while kill -0 $qpid 2>/dev/null; do
		sleep 5 &
		wait $! || true
		now=$(stat -c %s "$log" 2>/dev/null || echo 0)
		if [ "$now" != "$size" ]; then
			size=$now
			quiet_since=$SECONDS
			[ -n "$ended" ] || ! grep -q '@@UMEM-DMESG-END@@' "$log" || ended=$SECONDS
		fi
		if [ -n "$ended" ] && [ $((SECONDS - ended)) -ge "${UMEM_POWEROFF:-120}" ]; then
			why="not powered off $((SECONDS - ended)) s after its job ended (a device's shutdown blocked?)"
		elif [ $((SECONDS - quiet_since)) -ge "$stall" ]; then
			why="no serial output for $((SECONDS - quiet_since)) s"
		elif [ $((SECONDS - start)) -ge "$timeout" ]; then
			why="still running after ${timeout} s in all (silent for $((SECONDS - quiet_since)) s)"
		fi
		if [ -n "$why" ]; then
			kill -TERM $qpid 2>/dev/null || true
			sleep 5
			kill -KILL $qpid 2>/dev/null || true
			break
		fi
	done
	wait $qpid || rc=$?
	tr -d '\r' <"$log" >"$log.tmp" && mv "$log.tmp" "$log"
}
say "booting $(kernel_pkg_version) under QEMU (${accel[1]}${pin:+, on host CPU $UMEM_QEMU_CPUS}), job '$job' (serial log: $log)"
start=$SECONDS
phase_mark begin "boot $(basename "$log" -serial.log)"
child_cpu_seconds
cpu_before=$CHILD_CPU
boot
if [ -z "$why" ] && boot_crash_before_job "$log"; then
	mv "$log" "$log.boot-crash"
	say "the kernel died of an int3 trap while booting, before the job began" \
		"($log.boot-crash): QEMU TCG ran a breakpoint of a jump label's patching" \
		"that the kernel had removed; nothing under test had run: booting once more"
	rm -f "$devmem"
	truncate -s "${UMEM_DEVMEM_MB:-64}M" "$devmem"
	boot
fi
if [ -n "$why" ]; then
	echo "error: guest stopped, $why, $((SECONDS - start)) s after boot;" \
		"$(running_case "$log"); last lines of $log:" >&2
	tail -n 40 "$log" >&2
	exit 1
fi
if ! grep -q '@@UMEM-DMESG-END@@' "$log"; then
	echo "error: guest stopped before its job finished (qemu exit $rc);" \
		"$(running_case "$log"); last lines of $log:" >&2
	tail -n 40 "$log" >&2
	exit 1
fi
child_cpu_seconds
phase_mark end "boot $(basename "$log" -serial.log)"
say "guest finished in $((SECONDS - start))s (host CPU $((CHILD_CPU - cpu_before)) s)"
