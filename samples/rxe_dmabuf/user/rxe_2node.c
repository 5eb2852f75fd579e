// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA between two machines into and out of dma-buf MRs.
 *
 *   rxe_2node server DEV GIDX IMPORTER PORT [MODE]
 *   rxe_2node client DEV GIDX IMPORTER SERVER_IP PORT [lossy|kill|demo|bench]
 *
 * The server exports a movable buffer (the test exporter's, dynamic), a
 * udmabuf, a second exporter buffer registered pinned (rxe's
 * dmabuf_pinned=1) and one in the exporter's device memory (its PCI BAR,
 * which rxe's NIC reaches peer-to-peer: the client's RDMA lands in the
 * server's "VRAM"), registers dma-buf MRs on them on whichever importer is
 * active, and tells the client its QP and the MRs' keys over TCP (as
 * ibv_rc_pingpong does). The client then drives the test through commands
 * on the same connection: it RDMA WRITEs a pattern into each MR and asks the
 * server to check every byte through the buffer's CPU mapping; it asks the
 * server to fill a range and RDMA READs it back; it SENDs into a receive
 * the server posted on a dma-buf MR; it streams WRITEs while the server
 * migrates the movable buffer in a loop (then every byte is checked and the
 * exporter must have notified and re-mapped); and it asks the server to try
 * to migrate the pinned buffer, which the exporter must refuse with EBUSY.
 * Sizes: 4 KiB, 64 KiB, 1 MiB and BIG bytes (RXE_2NODE_BIG, 1 MiB to 32 MiB,
 * default 32 MiB), which is also the size of the movable buffer and the
 * udmabuf (both sides must be given the same).
 * The migrating stream goes to a fourth buffer of 4 MiB: under TCG a debug
 * kernel takes more than a second to move 32 MiB, during which rxe cannot
 * use the buffer.
 *
 * With "lossy" the client runs the same tests with less traffic (transfers
 * up to 256 KiB, one pass of the migrating stream), for a link that loses
 * and reorders packets (suite two_node_lossy_IMPORTER).
 *
 * With "bench" the client measures WRITE bandwidth and latency into the
 * dma-buf MR against an ordinary MR of the server (wire_bench();
 * RXE_2NODE_BENCH=ROUNDS,MS[,MAXLEN], suite two_node_bench_IMPORTER). The server's
 * MODE only names its suite: two_node_MODE_server_IMPORTER.
 *
 * With "kill" the client streams WRITEs and tells the server to kill itself
 * (SIGKILL) mid-stream: its QP must then fail with an error completion
 * rather than hang (suite two_node_kill_IMPORTER).
 *
 * With "demo" (make demo-2node) the client writes a line of text into the
 * movable MR, has the server migrate the buffer, writes another, and prints
 * what the server reads through the buffer's CPU mapping after each
 * (suite two_node_demo_IMPORTER).
 *
 * The server's results form the KTAP suite two_node_IMPORTER, the
 * client's two_node_client_IMPORTER.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "ktap_user.h"
#include "rdma_user.h"
#include "tcp_user.h"

#define MAX_BIG (32UL << 20)
#define PINNED_SIZE (4UL << 20)
#define STREAM_SIZE (4UL << 20)
#define PINNED_PARAM "/sys/module/rdma_rxe/parameters/dmabuf_pinned"
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum { MR_MOVABLE, MR_UDMABUF, MR_PINNED, MR_DEVMEM, MR_STREAM, MR_ORDINARY, NMRS };
static const char *const mr_names[] = {
	"movable", "udmabuf", "pinned", "devmem", "stream", "ordinary"
};

/* What the server tells the client. */
struct hello {
	__u32 qpn;
	__u8 gid[16];
	__u64 addr[NMRS];
	__u64 len[NMRS];
	__u32 rkey[NMRS];
};

/* What the client tells the server first. */
struct peer {
	__u32 qpn;
	__u8 gid[16];
};

enum cmd_op {
	CMD_VERIFY = 1,		/* check [off, off + len) of mr against seed */
	CMD_FILL,		/* write seed's pattern there */
	CMD_POST_RECV,		/* post a receive there */
	CMD_WAIT_RECV,		/* wait for that receive, then verify */
	CMD_MIGRATE_START,	/* migrate the movable buffer in a loop */
	CMD_MIGRATE_STOP,	/* stop; reply: migrations, move_notifies, maps */
	CMD_MIGRATE_PINNED,	/* reply: the errno of migrating the pinned buffer */
	CMD_DONE,
	CMD_DIE,		/* the server kills itself (SIGKILL), no reply */
	CMD_SHOW,		/* reply: the text at [off, off + len) of mr */
	CMD_MIGRATE_ONCE,	/* migrate the movable buffer; reply as CMD_STATS */
	CMD_STATS,		/* reply: counters of mr (see serve_one()) */
};

struct cmd {
	__u32 op, mr, seed, pad;
	__u64 off, len;
};

struct reply {
	__s32 status;
	__u32 pad;
	__u64 v[5];
	char text[64];
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_comp_channel *channel;
static struct ibv_qp *qp;
static union ibv_gid gid;
static int gidx, expdev = -1;
static size_t big = MAX_BIG;	/* the largest transfer and the big buffers' size */
static struct rdma_progress progress;
static const char *importer;

static int setup_verbs(const char *dev)
{
	struct ibv_qp_init_attr qia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	ctx = open_device_named(dev);
	if (!ctx)
		return -1;
	rdma_progress_init(&progress, dev);
	pd = ibv_alloc_pd(ctx);
	channel = ibv_create_comp_channel(ctx);
	cq = channel ? ibv_create_cq(ctx, 256, NULL, channel, 0) : NULL;
	if (!pd || !cq || ibv_query_gid(ctx, 1, gidx, &gid))
		return -1;
	qia.send_cq = cq;
	qia.recv_cq = cq;
	qp = ibv_create_qp(pd, &qia);
	return qp ? 0 : -1;
}

/*
 * Waits for one completion; its status, or -1 when the device made no
 * progress for the stall interval (rdma_user.h: no packet arrived from the
 * peer). Sleeps on the completion channel rather than spinning: a spinning
 * guest takes a host core from the other guest (and from the other boots
 * of make check), which then answers late, and everything slows down.
 */
static int wait_wc(struct ibv_wc *wc)
{
	struct pollfd pfd = { .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int got;

	pfd.fd = channel->fd;
	rdma_progress_restart(&progress);
	for (;;) {
		got = ibv_poll_cq(cq, 1, wc);
		/* Armed, then polled again: a completion in between raises no event. */
		if (!got && !ibv_req_notify_cq(cq, 0))
			got = ibv_poll_cq(cq, 1, wc);
		if (got)
			return got < 0 ? -1 : (int)wc->status;
		if (rdma_progress_stalled(&progress) || poll(&pfd, 1, 250) < 0)
			return -1;
		if ((pfd.revents & POLLIN) && !ibv_get_cq_event(channel, &ev_cq, &ev_ctx))
			ibv_ack_cq_events(ev_cq, 1);
	}
}

/* ---- server ---------------------------------------------------------- */

struct smr {
	int fd;			/* -1: none (also for the ordinary MR) */
	int registered;
	unsigned char *map;	/* the dma-buf's CPU mapping, or malloc'ed */
	size_t size;
	struct dmr mr;
	struct ibv_mr *omr;	/* the ordinary MR */
	__u64 iova;
};

static struct smr smrs[NMRS];
static pthread_t migrator;
static int migrating;		/* __atomic */
static unsigned long migrations, migrate_failures;

static void *migrate_loop(void *arg)
{
	const struct timespec gap = { .tv_nsec = 100 * 1000 * 1000 };

	(void)arg;
	while (__atomic_load_n(&migrating, __ATOMIC_RELAXED)) {
		if (exp_migrate_fd(expdev, smrs[MR_STREAM].fd, 0, 0))
			migrate_failures++;
		else
			migrations++;
		nanosleep(&gap, NULL);
	}
	return NULL;
}

static int server_buffers(void)
{
	const __u32 access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ;
	int k, err = 0;

	for (k = 0; k < NMRS; k++)
		smrs[k].fd = -1;
	expdev = open("/dev/dmabuf_exporter_rs", O_RDWR | O_CLOEXEC);
	if (expdev < 0)
		return -1;
	for (k = 0; k < NMRS; k++) {
		struct smr *s = &smrs[k];

		s->size = k == MR_PINNED ? PINNED_SIZE : k >= MR_STREAM ? STREAM_SIZE : big;
		s->iova = 0x10000000ULL * (k + 1);
		if (k == MR_ORDINARY) {
			/* The baseline of the numbers: ibv_reg_mr() on memory. */
			s->map = aligned_alloc(4096, s->size);
			s->omr = s->map ? ibv_reg_mr(pd, s->map, s->size, access) : NULL;
			if (!s->omr)
				return -1;
			s->iova = (uintptr_t)s->map;
			s->mr.lkey = s->omr->lkey;
			s->mr.rkey = s->omr->rkey;
			continue;
		}
		if (k == MR_UDMABUF) {
			s->fd = udmabuf_create(s->size, &s->map);
		} else {
			s->fd = exp_create_chunks(expdev, s->size, DMABUF_EXP_F_DYNAMIC |
						  (k == MR_DEVMEM ? DMABUF_EXP_F_DEVMEM : 0),
						  NULL, 0, &err);
			s->map = s->fd < 0 ? MAP_FAILED :
				 mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
		}
		if (s->fd < 0 || s->map == MAP_FAILED)
			return -1;
		if (k == MR_PINNED && write_file(PINNED_PARAM, "1"))
			return -1;
		err = uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, 0, s->size, s->iova, s->fd,
				       access, &s->mr);
		if (k == MR_PINNED)
			write_file(PINNED_PARAM, "0");
		if (err) {
			printf("    # registering the %s MR: errno %d\n", mr_names[k], err);
			return -1;
		}
		s->registered = 1;
	}
	return 0;
}

static int in_range(const struct cmd *c)
{
	return c->mr < NMRS && c->off <= smrs[c->mr].size &&
	       c->len <= smrs[c->mr].size - c->off;
}

/* Index of the first byte of [p, p + len) that differs from @seed's pattern. */
static long first_difference(const unsigned char *p, size_t len, unsigned int seed)
{
	unsigned char *want = malloc(len);
	long at = -1;
	size_t i;

	if (!want)
		return 0;
	fill(want, len, seed);
	if (memcmp(p, want, len))
		for (i = 0; i < len; i++)
			if (p[i] != want[i]) {
				at = i;
				break;
			}
	free(want);
	return at;
}

static void serve_one(int sock, const struct cmd *c, struct reply *r)
{
	struct dmabuf_exp_stats st;
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc;
	long at;

	(void)sock;
	memset(r, 0, sizeof(*r));
	switch (c->op) {
	case CMD_VERIFY:
	case CMD_FILL:
		if (!in_range(c)) {
			r->status = EINVAL;
			break;
		}
		if (c->op == CMD_FILL) {
			fill(smrs[c->mr].map + c->off, c->len, c->seed);
			break;
		}
		at = first_difference(smrs[c->mr].map + c->off, c->len, c->seed);
		r->status = at < 0 ? 0 : EIO;
		r->v[0] = at;
		break;
	case CMD_POST_RECV:
		if (!in_range(c)) {
			r->status = EINVAL;
			break;
		}
		sge.addr = smrs[c->mr].iova + c->off;
		sge.length = c->len;
		sge.lkey = smrs[c->mr].mr.lkey;
		r->status = ibv_post_recv(qp, &wr, &bad);
		break;
	case CMD_WAIT_RECV:
		r->status = wait_wc(&wc);
		if (!r->status && (wc.opcode != IBV_WC_RECV || wc.byte_len != c->len))
			r->status = EPROTO;
		if (!r->status && in_range(c)) {
			at = first_difference(smrs[c->mr].map + c->off, c->len, c->seed);
			r->status = at < 0 ? 0 : EIO;
			r->v[0] = at;
		}
		break;
	case CMD_MIGRATE_START:
		migrations = 0;
		migrate_failures = 0;
		st = exp_stats_fd(expdev, smrs[MR_STREAM].fd);
		r->v[1] = st.move_notifies;
		r->v[2] = st.maps;
		__atomic_store_n(&migrating, 1, __ATOMIC_RELAXED);
		r->status = pthread_create(&migrator, NULL, migrate_loop, NULL);
		break;
	case CMD_MIGRATE_STOP:
		__atomic_store_n(&migrating, 0, __ATOMIC_RELAXED);
		pthread_join(migrator, NULL);
		st = exp_stats_fd(expdev, smrs[MR_STREAM].fd);
		r->status = migrate_failures ? EIO : 0;
		r->v[0] = migrations;
		r->v[1] = st.move_notifies;
		r->v[2] = st.maps;
		break;
	case CMD_DIE:
		kill(getpid(), SIGKILL);
		break;
	case CMD_MIGRATE_PINNED:
		r->status = exp_migrate_fd(expdev, smrs[MR_PINNED].fd, 0, 0);
		break;
	case CMD_SHOW:
		if (!in_range(c) || c->len >= sizeof(r->text)) {
			r->status = EINVAL;
			break;
		}
		memcpy(r->text, smrs[c->mr].map + c->off, c->len);
		break;
	case CMD_MIGRATE_ONCE:
	case CMD_STATS:
		if (c->mr >= NMRS || smrs[c->mr].fd < 0) {
			r->status = EINVAL;
			break;
		}
		if (c->op == CMD_MIGRATE_ONCE)
			r->status = exp_migrate_fd(expdev, smrs[c->mr].fd, 0, 0);
		st = exp_stats_fd(expdev, smrs[c->mr].fd);
		r->v[0] = st.migrations;
		r->v[1] = st.move_notifies;
		r->v[2] = st.maps;
		r->v[3] = st.placement;
		r->v[4] = st.p2p_maps;
		break;
	default:
		r->status = EINVAL;
	}
}

/*
 * Waits for the client's next command. The client may stream for minutes
 * without one: while packets keep arriving, that is progress, and the
 * watchdog is told so (ktap_progress()) once a second.
 */
static int wait_command(int sock)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	long long seen = rdma_progress_read(&progress), v;
	int n;

	while (!(n = poll(&pfd, 1, 1000))) {
		v = rdma_progress_read(&progress);
		if (v != seen)
			ktap_progress("server: packets from the client arriving");
		seen = v;
	}
	return n < 0 ? -1 : 0;
}

static void server(int port)
{
	struct hello h = { 0 };
	struct peer p;
	struct cmd c;
	struct reply r;
	unsigned int n = 0;
	int sock, k;

	result(!server_buffers(),
	       "mrs_registered (dma-buf: movable, udmabuf, pinned, stream; ordinary)");
	sock = listen_on(port);
	result(sock >= 0, "client_connected");
	if (sock < 0)
		return;
	h.qpn = qp->qp_num;
	memcpy(h.gid, gid.raw, 16);
	for (k = 0; k < NMRS; k++) {
		h.addr[k] = smrs[k].iova;
		h.len[k] = smrs[k].size;
		h.rkey[k] = smrs[k].mr.rkey;
	}
	if (full_io(sock, &h, sizeof(h), 1) || full_io(sock, &p, sizeof(p), 0)) {
		result(0, "exchange_qp_and_keys");
		close(sock);
		return;
	}
	memcpy(gid.raw, p.gid, 16);
	k = connect_qp(qp, p.qpn, &gid, gidx);
	result(!k, "qp_connected (peer QP %u)", p.qpn);
	/* The client starts once this QP can receive. */
	if (k || full_io(sock, &k, sizeof(k), 1)) {
		close(sock);
		return;
	}
	while (!wait_command(sock) && !full_io(sock, &c, sizeof(c), 0) && c.op != CMD_DONE) {
		serve_one(sock, &c, &r);
		if (full_io(sock, &r, sizeof(r), 1))
			break;
		n++;
	}
	result(c.op == CMD_DONE, "client_finished (%u commands served)", n);
	close(sock);
}

static void server_teardown(void)
{
	int k;

	for (k = 0; k < NMRS; k++) {
		if (k == MR_ORDINARY) {
			if (smrs[k].omr)
				ibv_dereg_mr(smrs[k].omr);
			free(smrs[k].map);
			continue;
		}
		if (smrs[k].registered)
			uv_dereg_mr(ctx->cmd_fd, &smrs[k].mr);
		if (smrs[k].map && smrs[k].map != MAP_FAILED)
			munmap(smrs[k].map, smrs[k].size);
		if (smrs[k].fd >= 0)
			close(smrs[k].fd);
	}
}

/* ---- client ---------------------------------------------------------- */

static int sock = -1;
static unsigned char *local;
static struct ibv_mr *lmr;
static struct hello h;

static int ask(__u32 op, __u32 mr, __u64 off, __u64 len, __u32 seed, struct reply *r)
{
	struct cmd c = { .op = op, .mr = mr, .seed = seed, .off = off, .len = len };

	memset(r, 0, sizeof(*r));
	if (full_io(sock, &c, sizeof(c), 1) || full_io(sock, r, sizeof(*r), 0))
		return -1;
	return r->status;
}

static int rdma(enum ibv_wr_opcode op, int mr, __u64 off, size_t len)
{
	struct ibv_wc wc;

	if (post_rdma(qp, op, (uintptr_t)local, lmr->lkey, len, h.addr[mr] + off, h.rkey[mr]))
		return -1;
	return wait_wc(&wc);
}

static int post_send(size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = len, .lkey = lmr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp, &wr, &bad))
		return -1;
	return wait_wc(&wc);
}

/* WRITE, READ and SEND of @len bytes into and out of MR @mr. */
static void transfers(int mr, size_t len, unsigned int seed)
{
	struct reply r = { 0 };
	int st, bad;

	fill(local, len, seed);
	st = rdma(IBV_WR_RDMA_WRITE, mr, 0, len);
	bad = st ? -1 : ask(CMD_VERIFY, mr, 0, len, seed, &r);
	result(!st && !bad, "write_%s_%zu (completion %d, server: status %d, first bad byte %lld)",
	       mr_names[mr], len, st, r.status, (long long)r.v[0]);

	memset(local, 0, len);
	st = ask(CMD_FILL, mr, 0, len, seed + 1, &r) ? -2 : rdma(IBV_WR_RDMA_READ, mr, 0, len);
	result(!st && first_difference(local, len, seed + 1) < 0,
	       "read_%s_%zu (completion %d)", mr_names[mr], len, st);

	fill(local, len, seed + 2);
	st = ask(CMD_POST_RECV, mr, 0, len, 0, &r) ? -2 : post_send(len);
	bad = st ? -1 : ask(CMD_WAIT_RECV, mr, 0, len, seed + 2, &r);
	result(!st && !bad, "send_recv_%s_%zu (completion %d, server: status %d)", mr_names[mr],
	       len, st, r.status);
}

/*
 * A stream of WRITEs into the first @bytes of the stream buffer (all of it
 * if larger), @rounds passes, while the server migrates it. Each WRITE and
 * each check is progress for the watchdog: on a lossy link under a slow
 * guest a WRITE takes seconds (each migration stalls the responder until
 * the copy is done, and a request it dropped meanwhile waits for the
 * retransmit timer).
 */
static void write_while_migrating(size_t chunk, unsigned int rounds, size_t bytes)
{
	unsigned long slots = (bytes < h.len[MR_STREAM] ? bytes : h.len[MR_STREAM]) / chunk;
	unsigned long i, bad = 0, written = 0;
	struct reply start, stop, r;
	char doing[96];
	int st = 0;

	if (ask(CMD_MIGRATE_START, MR_STREAM, 0, 0, 0, &start)) {
		result(0, "migrations_started");
		return;
	}
	for (i = 0; i < rounds * slots && !st; i++) {
		fill(local, chunk, 1000 + i);
		st = rdma(IBV_WR_RDMA_WRITE, MR_STREAM, i % slots * chunk, chunk);
		written++;
		snprintf(doing, sizeof(doing), "writes_while_migrating: WRITE %lu of %lu", i + 1,
			 rounds * slots);
		ktap_progress(doing);
	}
	ask(CMD_MIGRATE_STOP, MR_STREAM, 0, 0, 0, &stop);
	/* The last round's data must be there, byte for byte. */
	for (i = (rounds - 1) * slots; i < rounds * slots && !st; i++) {
		if (ask(CMD_VERIFY, MR_STREAM, i % slots * chunk, chunk, 1000 + i, &r))
			bad++;
		snprintf(doing, sizeof(doing), "writes_while_migrating: chunk %lu checked", i + 1);
		ktap_progress(doing);
	}
	result(!st && !bad,
	       "writes_while_migrating (%lu WRITEs of %zu bytes, completion %d, %lu chunks differ)",
	       written, chunk, st, bad);
	/* The first WRITE maps; only a re-map after a migration makes a second. */
	result(!stop.status && stop.v[0] > 0 && stop.v[1] - start.v[1] >= stop.v[0] &&
	       stop.v[2] - start.v[2] >= 2,
	       "migrated_notified_remapped (%llu migrations, %llu move_notifies, %llu maps)",
	       (unsigned long long)stop.v[0], (unsigned long long)(stop.v[1] - start.v[1]),
	       (unsigned long long)(stop.v[2] - start.v[2]));
}

static void dpbench(const char *bench, size_t len, int mr, unsigned int round, double ns)
{
	printf("    # DPBENCH %s %zu %s %s %u %.0f\n", bench, len, importer,
	       mr == MR_ORDINARY ? "ordinary" : "dynamic", round, ns);
}

/*
 * Numbers across the wire (RXE_2NODE_BENCH=ROUNDS,MS): WRITE bandwidth with
 * 64 KiB and 1 MiB messages, RDMA_STREAM_BATCH outstanding, and the latency
 * of one 8-byte WRITE at a time, into the server's ordinary MR and into its
 * dynamic dma-buf MR of the same size (the stream buffer, not migrating
 * now); blocks of MS milliseconds in the order ordinary, dynamic, dynamic,
 * ordinary per round. DPBENCH lines for scripts/bench_report.py.
 */
static void wire_bench(unsigned int rounds, double ms, size_t maxlen)
{
	static const struct {
		const char *name;
		size_t len;
		int depth;
	} benches[] = {
		{ "wire_write_bw", 65536, RDMA_STREAM_BATCH },
		{ "wire_write_bw", 1 << 20, RDMA_STREAM_BATCH },
		{ "wire_write_lat", 8, 1 },
	};
	static const int order[] = { MR_ORDINARY, MR_STREAM, MR_STREAM, MR_ORDINARY };
	struct rdma_stream st = {
		.qp = qp, .cq = cq, .laddr = (uintptr_t)local, .lkey = lmr->lkey,
		.size = big < STREAM_SIZE ? big : STREAM_SIZE,
	};
	unsigned int r, b, o, blocks = 0, want = 0;
	double ns = 1;

	for (r = 0; r < rounds && ns; r++)
		for (b = 0; b < ARRAY_SIZE(benches) && ns; b++)
			for (o = 0; o < ARRAY_SIZE(order) && ns && benches[b].len <= maxlen; o++) {
				st.raddr = h.addr[order[o]];
				st.rkey = h.rkey[order[o]];
				ns = rdma_stream_run(&st, IBV_WR_RDMA_WRITE, benches[b].len,
						     benches[b].depth, ms);
				if (ns)
					dpbench(benches[b].name, benches[b].len, order[o], r, ns);
				blocks += ns > 0;
			}
	for (b = 0; b < ARRAY_SIZE(benches); b++)
		want += benches[b].len <= maxlen ? rounds * ARRAY_SIZE(order) : 0;
	result(blocks == want,
	       "wire_numbers (%u blocks of %.0f ms, ordinary and dynamic dma-buf MR)", blocks,
	       ms);
}

/*
 * The client's bench mode: RXE_2NODE_BENCH=ROUNDS,MS[,MAXLEN] (default
 * 1,100; MAXLEN, the largest message, default 1 MiB).
 */
static void client_bench(void)
{
	const char *arg = getenv("RXE_2NODE_BENCH");
	unsigned int rounds = 1;
	size_t maxlen = 1 << 20;
	double ms = 100;
	struct reply r;

	if (arg && (sscanf(arg, "%u,%lf,%zu", &rounds, &ms, &maxlen) < 2 || !rounds || ms <= 0))
		result(0, "RXE_2NODE_BENCH=%s is not ROUNDS,MS[,MAXLEN]", arg);
	else
		wire_bench(rounds, ms, maxlen);
	ask(CMD_DONE, 0, 0, 0, 0, &r);
}

/* Connects to the server and its QP; 0 or -1. */
static int client_connect(const char *ip, int port)
{
	struct peer p = { .qpn = qp->qp_num };
	int ready = -1, ok;

	local = aligned_alloc(4096, big);
	lmr = local ? ibv_reg_mr(pd, local, big, IBV_ACCESS_LOCAL_WRITE) : NULL;
	sock = connect_to(ip, port);
	result(lmr && sock >= 0, "connected_to_server %s:%d", ip, port);
	if (!lmr || sock < 0)
		return -1;
	memcpy(p.gid, gid.raw, 16);
	if (full_io(sock, &h, sizeof(h), 0) || full_io(sock, &p, sizeof(p), 1)) {
		result(0, "exchange_qp_and_keys");
		return -1;
	}
	memcpy(gid.raw, h.gid, 16);
	ok = !connect_qp(qp, h.qpn, &gid, gidx) && !full_io(sock, &ready, sizeof(ready), 0) &&
	     !ready;
	result(ok, "qp_connected (peer QP %u)", h.qpn);
	return ok ? 0 : -1;
}

static void client_close(void)
{
	if (sock >= 0)
		close(sock);
	if (lmr)
		ibv_dereg_mr(lmr);
	free(local);
}

/*
 * WRITEs stream into the movable MR, 8 outstanding, while the server is
 * killed: the QP must end in an error completion (rxe gives up
 * retransmitting), not go quiet without one.
 */
static void client_kill(void)
{
	const size_t len = 64 << 10;
	unsigned long posted = 0, done = 0, slots = h.len[MR_MOVABLE] / len;
	struct cmd c = { .op = CMD_DIE };
	int status = IBV_WC_SUCCESS;
	struct ibv_wc wc;

	for (; posted < 8; posted++)
		if (post_rdma(qp, IBV_WR_RDMA_WRITE, (uintptr_t)local, lmr->lkey, len,
			      h.addr[MR_MOVABLE] + posted % slots * len, h.rkey[MR_MOVABLE]))
			break;
	result(posted == 8 && !full_io(sock, &c, sizeof(c), 1),
	       "stream_started_server_told_to_die");
	/* Until a completion fails, or the device makes no progress (-1). */
	while (status == IBV_WC_SUCCESS) {
		status = wait_wc(&wc);
		done++;
		if (status == IBV_WC_SUCCESS &&
		    post_rdma(qp, IBV_WR_RDMA_WRITE, (uintptr_t)local, lmr->lkey, len,
			      h.addr[MR_MOVABLE] + posted % slots * len, h.rkey[MR_MOVABLE]) == 0)
			posted++;
	}
	/* An error completion, not wait_wc()'s -1: no progress at all. */
	result(status > IBV_WC_SUCCESS,
	       "qp_errors_out_after_the_server_died (status %d: %s, after %lu completions)",
	       status, status < 0 ? "no progress" : ibv_wc_status_str(status), done);
}

/*
 * make demo-2node: two WRITEs of a line of text into the server's movable
 * dma-buf MR, the buffer migrated in between; after each, what the server
 * reads through the exporter's CPU mapping and the exporter's counters.
 */
/* One line of the demo's transcript, as a KTAP diagnostic. */
static void say(const char *fmt, ...)
{
	va_list ap;

	printf("    # ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void client_demo(void)
{
	static const char *const lines[] = {
		"hello from the client machine",
		"written again after the buffer moved",
	};
	struct reply r;
	unsigned int i;
	size_t len;
	int st;

	say("client: the server's MR is a dma-buf MR of %llu bytes (rkey %#x) on its",
	    (unsigned long long)h.len[MR_MOVABLE], h.rkey[MR_MOVABLE]);
	say("        exporter's movable buffer, registered through the %s importer",
	    strcmp(importer, "rust") ? "C" : "Rust");
	for (i = 0; i < ARRAY_SIZE(lines); i++) {
		if (i) {
			st = ask(CMD_MIGRATE_ONCE, MR_MOVABLE, 0, 0, 0, &r);
			say("server: migrated the buffer to new pages (status %d): the exporter",
			    st);
			say("        told rxe (move_notify), which dropped the MR's mapping");
		}
		len = strlen(lines[i]) + 1;
		memcpy(local, lines[i], len);
		st = rdma(IBV_WR_RDMA_WRITE, MR_MOVABLE, 0, len);
		say("client: RDMA WRITE \"%s\" -> server: %s", lines[i],
		    st ? ibv_wc_status_str(st) : "completed");
		st = st ? st : ask(CMD_SHOW, MR_MOVABLE, 0, len, 0, &r);
		say("server: its CPU mapping of the buffer reads \"%s\"", st ? "?" : r.text);
		result(!st && !strcmp(r.text, lines[i]), "write_%u_seen_on_the_server", i + 1);
		st = ask(CMD_STATS, MR_MOVABLE, 0, 0, 0, &r);
		say("server: exporter counters: migrations %llu, move_notify %llu, maps %llu",
		    (unsigned long long)r.v[0], (unsigned long long)r.v[1],
		    (unsigned long long)r.v[2]);
		result(!st && r.v[0] == i && r.v[1] >= i && r.v[2] == i + 1,
		       "counters_after_write_%u", i + 1);
	}
	ask(CMD_DONE, 0, 0, 0, 0, &r);
}

/*
 * The client's tests. @lossy (on a link that loses and reorders packets):
 * transfers up to 256 KiB and four 256 KiB WRITEs over the first MiB of
 * the migrating stream (with a pass of sixteen over all of it, the lossy
 * run took 270 s of make check's wall time, four minutes of it in that
 * pass); otherwise up to BIG bytes and two passes over all of it.
 */
static void client(int lossy)
{
	size_t sizes[] = { 4096, 65536, 1 << 20, big };
	struct reply r;
	unsigned int s, k, seed = 1;
	int err;

	if (lossy) {
		sizes[2] = 256 << 10;
		sizes[3] = 256 << 10;
	}
	for (k = 0; k < MR_STREAM; k++)
		for (s = 0; s < ARRAY_SIZE(sizes); s++)
			if (sizes[s] <= h.len[k] && (s == 0 || sizes[s] > sizes[s - 1]))
				transfers(k, sizes[s], seed += 3);
	err = ask(CMD_STATS, MR_DEVMEM, 0, 0, 0, &r);
	result(!err && r.v[3] == DMABUF_EXP_PLACEMENT_DEVMEM && r.v[4] >= 1,
	       "devmem_buffer_reached_peer_to_peer (in %s memory, %llu peer-to-peer maps)",
	       r.v[3] == DMABUF_EXP_PLACEMENT_DEVMEM ? "device" : "system",
	       (unsigned long long)r.v[4]);
	write_while_migrating(lossy ? 256 << 10 : 512 << 10, lossy ? 1 : 2,
			      lossy ? 1 << 20 : STREAM_SIZE);
	err = ask(CMD_MIGRATE_PINNED, MR_PINNED, 0, 0, 0, &r);
	result(err == EBUSY, "pinned_buffer_refuses_migration (errno %d)", err);
	transfers(MR_PINNED, 65536, seed += 3);
	ask(CMD_DONE, 0, 0, 0, 0, &r);
}

int main(int argc, char **argv)
{
	char suite[64];
	const char *mode;
	int is_server;

	if (argc < 6)
		return 2;
	is_server = !strcmp(argv[1], "server");
	if (getenv("RXE_2NODE_BIG"))
		big = strtoul(getenv("RXE_2NODE_BIG"), NULL, 0) & ~4095UL;
	if (big < (1UL << 20) || big > MAX_BIG)
		big = MAX_BIG;
	gidx = atoi(argv[3]);
	importer = argv[4];
	/* The server's mode only names its suite (two_node_bench_server_c). */
	mode = argc > (is_server ? 6 : 7) ? argv[is_server ? 6 : 7] : "";
	if (!is_server && *mode)
		snprintf(suite, sizeof(suite), "two_node_%s_%s", mode, importer);
	else if (is_server && *mode)
		snprintf(suite, sizeof(suite), "two_node_%s_server_%s", mode, importer);
	else
		snprintf(suite, sizeof(suite), "two_node_%s%s", is_server ? "" : "client_",
			 importer);
	ktap_on_term(suite);
	setvbuf(stdout, NULL, _IOLBF, 0);
	result(!setup_verbs(argv[2]), "open_%s_pd_cq_qp", argv[2]);
	if (qp && is_server) {
		server(atoi(argv[5]));
	} else if (qp && argc > 6 && !client_connect(argv[5], atoi(argv[6]))) {
		if (!*mode || !strcmp(mode, "lossy"))
			client(*mode != 0);
		else if (!strcmp(mode, "kill"))
			client_kill();
		else if (!strcmp(mode, "demo"))
			client_demo();
		else if (!strcmp(mode, "bench"))
			client_bench();
		else
			result(0, "mode %s is one of lossy, kill, demo, bench", mode);
	}
	if (is_server)
		server_teardown();
	else
		client_close();
	verbs_close(qp, NULL, cq, pd, NULL);
	if (channel)
		ibv_destroy_comp_channel(channel);
	if (ctx)
		ibv_close_device(ctx);
	if (expdev >= 0)
		close(expdev);
	return ktap_report(suite);
}
