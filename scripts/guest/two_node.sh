# SPDX-License-Identifier: GPL-2.0
# Guest side of the two-machine run (scripts/two_node.sh). Two guests boot
# the same kernel, joined by a second virtual NIC (eth1); umem.node=server
# or client on the command line says which one this is. Each puts rxe on
# eth1; the server loads the test exporter and serves rxe_2node first on
# the C importer, then with the Rust module loaded; the client runs the
# same program against it twice (its own MRs are ordinary ones).
. /umem/lib.sh

role=$(cmdline_value umem.node)
# The largest transfer (default 32 MiB; make check uses less).
if big=$(cmdline_value umem.two_node_big); then
	export RXE_2NODE_BIG=$big
fi
if [ "$role" = server ]; then
	GIDX=$(rxe_setup rxe0 eth1 192.0.2.1/24 ffff:c000:0201)
else
	GIDX=$(rxe_setup rxe0 eth1 192.0.2.2/24 ffff:c000:0202)
fi
step "rxe_on_the_wire_$role" test -n "$GIDX"

phase() {	# phase IMPORTER PORT
	if [ "$role" = server ]; then
		KTAP_TIMEOUT=600 step "two_node_server_$1" ktap_run "two_node+$1" \
			rxe_2node server rxe0 "$GIDX" "$1" "$2"
	else
		KTAP_TIMEOUT=600 step "two_node_client_$1" ktap_run "two_node_client+$1" \
			rxe_2node client rxe0 "$GIDX" "$1" 192.0.2.1 "$2"
	fi
}

if [ "$role" = server ]; then
	step insmod_exporter insmod "$MODDIR/dmabuf_exporter_rs.ko"
	phase c 18515
	step insmod_umem_dmabuf_rs insmod "$MODDIR/umem_dmabuf_rs.ko"
	phase rust 18516
	step rust_importer_created_the_umems \
		awk '$1 == "get" { n = $2 } END { exit !(n > 0) }' /sys/kernel/debug/umem_dmabuf_rs/calls
	step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs
	step no_dma_bufs_left sh -c '! grep -q dmabuf_exporter_rs /sys/kernel/debug/dma_buf/bufinfo'
	step rmmod_exporter rmmod dmabuf_exporter_rs
else
	phase c 18515
	phase rust 18516
fi
steps_report guest_steps
