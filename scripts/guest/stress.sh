# SPDX-License-Identifier: GPL-2.0
# Guest side of scripts/stress.sh: the rxe end-to-end test with its stress
# variant (migrations from a second thread while writes stream), run again
# and again in one boot. umem.stress=RUNS,QP_TIMEOUT,IMPORTER (c or rust) on
# the kernel command line. After a failed run, rxe's counters are printed.
. /umem/lib.sh

runs=10
qpt=20
importer=c
if v=$(cmdline_value umem.stress); then
	runs=$(echo "$v" | cut -d, -f1)
	qpt=$(echo "$v" | cut -d, -f2)
	importer=$(echo "$v" | cut -d, -f3)
fi

GIDX=$(rxe_setup)
step rxe_device_with_ipv4_gid test -n "$GIDX"
if [ "$importer" = rust ]; then
	step insmod_umem_dmabuf_rs insmod "$MODDIR/umem_dmabuf_rs.ko"
	step insmod_exporter insmod "$MODDIR/dmabuf_exporter_rs.ko" expect_importer=module
else
	step insmod_exporter insmod "$MODDIR/dmabuf_exporter_rs.ko" expect_importer=c
fi
counters() {
	local f
	for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do
		echo "rxe0 counter $(basename "$f") $(cat "$f")"
	done
}
export RXE_TEST_QP_TIMEOUT=$qpt
for i in $(seq "$runs"); do
	echo "stress run $i of $runs, QP timeout $qpt, $importer importer"
	if ! ktap_run "stress_run_$i" rxe_dmabuf_test rxe0 "$GIDX" stress; then
		echo "stress run $i failed"
		counters
		step "stress_run_$i" false
		break
	fi
	step "stress_run_$i" true
done
steps_report guest_steps_stress
