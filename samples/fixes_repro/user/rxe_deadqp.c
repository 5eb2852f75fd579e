// SPDX-License-Identifier: GPL-2.0
/*
 * The reproducer of "RDMA/rxe: drop a dead QP's request packets outside its
 * state lock", two machines (make check-fixes' two-node stage):
 *
 *   rxe_deadqp server DEV GIDX PORT SECS   serves an ordinary MR over an RC
 *       QP; SECS seconds after the client connected it moves its QP to
 *       the error state while the client's WRITEs keep arriving, waits
 *       3 s and destroys it
 *   rxe_deadqp client DEV GIDX IP PORT SECS   streams 64 KiB RDMA WRITEs,
 *       16 outstanding, into the server's MR for up to SECS seconds; the
 *       stream ends in an error once the server's QP is gone (expected)
 *
 * Unfixed, the server's rxe frees the packets the NIC received for the dead
 * QP with interrupts disabled; with lockdep the kernel warns
 * (page_pool_put_unrefed_netmem, __local_bh_enable_ip, "inconsistent lock
 * state"). The program itself only reports what it did; the host reads
 * the server's kernel log. Exits 1 on a set-up failure.
 */
#include "rdma_user.h"
#include "tcp_user.h"
#include <infiniband/verbs.h>

#define SIZE (4UL << 20)
#define LEN 65536
#define DEPTH 16

struct peer {
	__u32 qpn, rkey;
	__u64 addr;
	union ibv_gid gid;
};

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	int server, gidx, sock = -1;
	struct peer me, them;
	struct ibv_context *ctx;
	struct ibv_cq *cq = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_qp *qp = NULL;
	struct rdma_stream s;
	unsigned char *buf;
	long long before;
	char counter[128];
	double ns;

	server = argc == 6 && !strcmp(argv[1], "server");
	if (!server && (argc != 7 || strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: %s server DEV GIDX PORT SECS\n"
			"       %s client DEV GIDX IP PORT SECS\n", argv[0], argv[0]);
		return 1;
	}
	gidx = atoi(argv[3]);
	if (!verbs_open(argv[2], 2 * DEPTH, &ctx, &pd, &cq)) {
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qp = ibv_create_qp(pd, &qa);
	}
	buf = aligned_alloc(4096, SIZE);
	if (qp && buf) {
		memset(buf, 0xa5, SIZE);
		mr = ibv_reg_mr(pd, buf, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	}
	if (mr && !ibv_query_gid(ctx, 1, gidx, &me.gid))
		sock = server ? listen_on(atoi(argv[4])) : connect_to(argv[4], atoi(argv[5]));
	me.qpn = qp ? qp->qp_num : 0;
	me.rkey = mr ? mr->rkey : 0;
	me.addr = (uintptr_t)buf;
	if (sock < 0 || full_io(sock, &me, sizeof(me), 1) ||
	    full_io(sock, &them, sizeof(them), 0) ||
	    connect_qp(qp, them.qpn, &them.gid, gidx)) {
		fprintf(stderr, "rxe_deadqp: setting up the %s side on %s failed\n",
			argv[1], argv[2]);
		return 1;
	}
	/* Both QPs are ready to send before either side goes on. */
	if (full_io(sock, &me.qpn, 1, 1) || full_io(sock, &them.qpn, 1, 0))
		return 1;
	if (server) {
		snprintf(counter, sizeof(counter),
			 "/sys/class/infiniband/%s/ports/1/hw_counters/rcvd_pkts", argv[2]);
		sleep(atoi(argv[5]));
		before = read_counter(counter);
		if (ibv_modify_qp(qp, &err, IBV_QP_STATE))
			return 1;
		printf("rxe_deadqp: server QP %u moved to the error state under the stream\n",
		       qp->qp_num);
		sleep(3);
		/* The line the guest checks: packets did reach the dead QP's device. */
		printf("rxe_deadqp: %lld packets received while the QP was in the error state\n",
		       read_counter(counter) - before);
		fflush(stdout);
		ibv_destroy_qp(qp);
		printf("rxe_deadqp: server QP destroyed\n");
		return 0;
	}
	s = (struct rdma_stream) {
		.qp = qp, .cq = cq,
		.laddr = (uintptr_t)buf, .lkey = mr->lkey,
		.raddr = them.addr, .rkey = them.rkey,
		.size = SIZE,
	};
	ns = rdma_stream_run(&s, IBV_WR_RDMA_WRITE, LEN, DEPTH, atof(argv[6]) * 1e3);
	printf("rxe_deadqp: client stream %s\n", ns ? "completed" : "ended in an error (expected)");
	return 0;
}
