# SPDX-License-Identifier: GPL-2.0
# Helpers for the guest jobs. KUnit output is taken from the kernel log that
# module loading produced, between markers the host extracts and feeds to
# tools/testing/kunit/kunit.py parse.

MODDIR=/umem/modules

# ktap_insmod NAME MODULE [PARAM=VALUE...]: loads MODULE and prints the KTAP its
# KUnit suites wrote to the kernel log, between markers.
ktap_insmod() {
	name=$1
	mod=$2
	shift 2
	echo "umem-ktap-start $name" >/dev/kmsg
	# Keep the console quiet while the suites run, so their lines reach the
	# serial port once, from the dump below.
	old=$(cut -f1 /proc/sys/kernel/printk)
	echo 4 >/proc/sys/kernel/printk
	insmod "$MODDIR/$mod" "$@"
	rc=$?
	echo "$old" >/proc/sys/kernel/printk
	echo "@@UMEM-KTAP-BEGIN $name@@"
	dmesg | sed -n "/umem-ktap-start $name\$/,\$p" | sed 1d
	echo "@@UMEM-KTAP-END@@"
	return $rc
}
