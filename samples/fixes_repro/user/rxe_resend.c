// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_resend DEV GIDX TIMEOUT SECS STALL_MS PAIRS: the reproducer of
 * "RDMA/rxe: do not resend a request that was acknowledged in full" without
 * dma-buf MRs, so that it runs on pristine 7.3.4 too. PAIRS processes each
 * stream 4 KiB RDMA WRITEs (MTU 1024: four packets each), 64 outstanding,
 * over a loopback RC QP pair of DEV from one ordinary MR into another for
 * SECS seconds, with the retransmit timeout exponent TIMEOUT (4.096 us <<
 * TIMEOUT, at least one jiffy). Meanwhile one real-time thread per CPU
 * spins for STALL_MS at a time, 2 to 10 ms apart (0: none): rxe's tasks,
 * which run in a workqueue, stall longer than the timeout while the timer
 * still fires, so a requester retries while the responder's
 * acknowledgments of the first sending are on their way, the race the fix
 * closes. Each stream prints its outcome; exits 0 when every WRITE of every
 * stream completed, 3 when one completed in error (unfixed:
 * IBV_WC_REM_INV_REQ_ERR, status 9), 1 on a set-up failure. For make
 * check-fixes (scripts/guest/fixes.sh).
 */
#include "rdma_user.h"
#include <infiniband/verbs.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define LEN 4096
#define DEPTH 64
#define SLOTS 256
#define MAX_PAIRS 64

static atomic_int stop;
static double stall_ms;

/* One CPU's staller: SCHED_FIFO, spins stall_ms, sleeps 2 to 10 ms. */
static void *staller(void *arg)
{
	struct sched_param prio = { .sched_priority = 1 };
	unsigned int seed = (uintptr_t)arg;
	cpu_set_t cpus;
	double until;

	CPU_ZERO(&cpus);
	CPU_SET((uintptr_t)arg, &cpus);
	if (pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus) ||
	    pthread_setschedparam(pthread_self(), SCHED_FIFO, &prio))
		return NULL;
	while (!atomic_load(&stop)) {
		until = now_ns() + stall_ms * 1e6;
		while (now_ns() < until)
			;
		usleep(2000 + rand_r(&seed) % 8000);
	}
	return NULL;
}

/* One stream of WRITEs over a loopback QP pair; the exit status of main. */
static int stream_writes(const char *dev, int gidx, double secs)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_mr *src_mr = NULL, *dst_mr = NULL;
	struct ibv_qp *qp_a = NULL, *qp_b = NULL;
	struct ibv_context *ctx;
	struct rdma_stream stream;
	unsigned char *src, *dst;
	struct ibv_cq *cq = NULL;
	struct ibv_pd *pd = NULL;
	union ibv_gid gid;
	double ns;

	if (!verbs_open(dev, 2 * DEPTH, &ctx, &pd, &cq)) {
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qp_a = ibv_create_qp(pd, &qa);
		qp_b = ibv_create_qp(pd, &qa);
	}
	src = aligned_alloc(4096, SLOTS * LEN);
	dst = aligned_alloc(4096, SLOTS * LEN);
	if (pd && src && dst) {
		memset(src, 0x5a, SLOTS * LEN);
		src_mr = ibv_reg_mr(pd, src, SLOTS * LEN, IBV_ACCESS_LOCAL_WRITE);
		dst_mr = ibv_reg_mr(pd, dst, SLOTS * LEN,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	}
	if (!qp_a || !qp_b || !src_mr || !dst_mr || ibv_query_gid(ctx, 1, gidx, &gid) ||
	    connect_qp(qp_a, qp_b->qp_num, &gid, gidx) ||
	    connect_qp(qp_b, qp_a->qp_num, &gid, gidx)) {
		fprintf(stderr, "rxe_resend: setting up a loopback QP pair on %s failed\n", dev);
		return 1;
	}
	stream = (struct rdma_stream) {
		.qp = qp_a, .cq = cq,
		.laddr = (uintptr_t)src, .lkey = src_mr->lkey,
		.raddr = (uintptr_t)dst, .rkey = dst_mr->rkey,
		.size = SLOTS * LEN,
	};
	ns = rdma_stream_run(&stream, IBV_WR_RDMA_WRITE, LEN, DEPTH, secs * 1e3);
	if (!ns) {
		printf("rxe_resend: QP %u: a WRITE of the stream failed (above)\n", qp_a->qp_num);
		return 3;
	}
	printf("rxe_resend: QP %u: every WRITE completed, %.0f us each\n", qp_a->qp_num, ns / 1e3);
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(dst_mr);
	verbs_close(qp_a, qp_b, cq, pd, ctx);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t stallers[CPU_SETSIZE];
	long ncpu = 0, i, pairs;
	int status, rc = 0;
	pid_t pid;

	if (argc != 7) {
		fprintf(stderr, "usage: %s DEV GIDX TIMEOUT SECS STALL_MS PAIRS\n", argv[0]);
		return 1;
	}
	pairs = atol(argv[6]);
	if (pairs < 1 || pairs > MAX_PAIRS) {
		fprintf(stderr, "rxe_resend: PAIRS must be 1 to %d\n", MAX_PAIRS);
		return 1;
	}
	setenv("RXE_TEST_QP_TIMEOUT", argv[3], 1);
	for (i = 0; i < pairs; i++) {
		pid = fork();
		if (pid < 0)
			return 1;
		if (!pid) {
			rc = stream_writes(argv[1], atoi(argv[2]), atof(argv[4]));
			fflush(stdout);
			_exit(rc);
		}
	}
	stall_ms = atof(argv[5]);
	if (stall_ms > 0)
		for (; ncpu < sysconf(_SC_NPROCESSORS_ONLN) && ncpu < CPU_SETSIZE; ncpu++)
			if (pthread_create(&stallers[ncpu], NULL, staller, (void *)ncpu))
				break;
	while ((pid = wait(&status)) > 0) {
		status = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
		if (status > rc)
			rc = status;
	}
	atomic_store(&stop, 1);
	for (i = 0; i < ncpu; i++)
		pthread_join(stallers[i], NULL);
	return rc;
}
