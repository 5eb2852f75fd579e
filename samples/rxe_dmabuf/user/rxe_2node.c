// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA between two machines into and out of dma-buf MRs.
 *
 *   rxe_2node server DEV GIDX IMPORTER PORT
 *   rxe_2node client DEV GIDX IMPORTER SERVER_IP PORT
 *
 * The server exports a movable buffer (the test exporter's, dynamic), a
 * udmabuf and a second exporter buffer registered pinned (rxe's
 * dmabuf_pinned=1), registers dma-buf MRs on them on whichever importer is
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
 * The server's results form the KTAP suite two_node_IMPORTER, the
 * client's two_node_client_IMPORTER.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
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

#define MAX_BIG (32UL << 20)
#define PINNED_SIZE (4UL << 20)
#define STREAM_SIZE (4UL << 20)
#define PINNED_PARAM "/sys/module/rdma_rxe/parameters/dmabuf_pinned"
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum { MR_MOVABLE, MR_UDMABUF, MR_PINNED, MR_STREAM, NMRS };
static const char *const mr_names[] = { "movable", "udmabuf", "pinned", "stream" };

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
};

struct cmd {
	__u32 op, mr, seed, pad;
	__u64 off, len;
};

struct reply {
	__s32 status;
	__u32 pad;
	__u64 v[3];
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static union ibv_gid gid;
static int gidx, expdev = -1;
static size_t big = MAX_BIG;	/* the largest transfer and the big buffers' size */
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
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	if (!pd || !cq || ibv_query_gid(ctx, 1, gidx, &gid))
		return -1;
	qia.send_cq = cq;
	qia.recv_cq = cq;
	qp = ibv_create_qp(pd, &qia);
	return qp ? 0 : -1;
}

/* Waits up to 60 s for one completion; its status, or -1. */
static int wait_wc(struct ibv_wc *wc)
{
	time_t end = time(NULL) + 60;
	int got;

	while (time(NULL) < end) {
		got = ibv_poll_cq(cq, 1, wc);
		if (got < 0)
			return -1;
		if (got)
			return wc->status;
	}
	return -1;
}

static int full_io(int fd, void *buf, size_t len, int out)
{
	char *p = buf;

	while (len) {
		ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

/* ---- server ---------------------------------------------------------- */

struct smr {
	int fd;			/* -1: none */
	int registered;
	unsigned char *map;
	size_t size;
	struct dmr mr;
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

		s->size = k == MR_PINNED ? PINNED_SIZE : k == MR_STREAM ? STREAM_SIZE : big;
		s->iova = 0x10000000ULL * (k + 1);
		if (k == MR_UDMABUF) {
			s->fd = udmabuf_create(s->size, &s->map);
		} else {
			s->fd = exp_create_chunks(expdev, s->size, DMABUF_EXP_F_DYNAMIC, NULL, 0,
						  &err);
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

static int listen_on(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, c;

	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 1))
		return -1;
	c = accept(s, NULL, NULL);
	close(s);
	if (c >= 0)
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return c;
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
	case CMD_MIGRATE_PINNED:
		r->status = exp_migrate_fd(expdev, smrs[MR_PINNED].fd, 0, 0);
		break;
	default:
		r->status = EINVAL;
	}
}

static void server(int port)
{
	struct hello h = { 0 };
	struct peer p;
	struct cmd c;
	struct reply r;
	unsigned int n = 0;
	int sock, k;

	result(!server_buffers(), "dma_buf_mrs_registered (movable, udmabuf, pinned, stream)");
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
	while (!full_io(sock, &c, sizeof(c), 0) && c.op != CMD_DONE) {
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

static int connect_to(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	time_t end = time(NULL) + 180;
	int s, one = 1;

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		return -1;
	while (time(NULL) < end) {
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			return -1;
		if (!connect(s, (struct sockaddr *)&a, sizeof(a))) {
			setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return s;
		}
		close(s);
		sleep(1);
	}
	return -1;
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

/* A stream of WRITEs into the stream buffer while the server migrates it. */
static void write_while_migrating(size_t chunk, unsigned int rounds)
{
	unsigned long slots = h.len[MR_STREAM] / chunk, i, bad = 0, written = 0;
	struct reply start, stop, r;
	int st = 0;

	if (ask(CMD_MIGRATE_START, MR_STREAM, 0, 0, 0, &start)) {
		result(0, "migrations_started");
		return;
	}
	for (i = 0; i < rounds * slots && !st; i++) {
		fill(local, chunk, 1000 + i);
		st = rdma(IBV_WR_RDMA_WRITE, MR_STREAM, i % slots * chunk, chunk);
		written++;
	}
	ask(CMD_MIGRATE_STOP, MR_STREAM, 0, 0, 0, &stop);
	/* The last round's data must be there, byte for byte. */
	for (i = (rounds - 1) * slots; i < rounds * slots && !st; i++)
		if (ask(CMD_VERIFY, MR_STREAM, i % slots * chunk, chunk, 1000 + i, &r))
			bad++;
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

static void client(const char *ip, int port)
{
	size_t sizes[] = { 4096, 65536, 1 << 20, big };
	struct peer p = { .qpn = qp->qp_num };
	struct reply r;
	unsigned int s, k, seed = 1;
	int ready = -1, err;

	local = aligned_alloc(4096, big);
	lmr = local ? ibv_reg_mr(pd, local, big, IBV_ACCESS_LOCAL_WRITE) : NULL;
	sock = connect_to(ip, port);
	result(lmr && sock >= 0, "connected_to_server %s:%d", ip, port);
	if (!lmr || sock < 0)
		return;
	memcpy(p.gid, gid.raw, 16);
	if (full_io(sock, &h, sizeof(h), 0) || full_io(sock, &p, sizeof(p), 1)) {
		result(0, "exchange_qp_and_keys");
		return;
	}
	memcpy(gid.raw, h.gid, 16);
	result(!connect_qp(qp, h.qpn, &gid, gidx) && !full_io(sock, &ready, sizeof(ready), 0) &&
	       !ready, "qp_connected (peer QP %u)", h.qpn);
	for (k = 0; k < MR_STREAM; k++)
		for (s = 0; s < ARRAY_SIZE(sizes); s++)
			if (sizes[s] <= h.len[k] && (s == 0 || sizes[s] > sizes[s - 1]))
				transfers(k, sizes[s], seed += 3);
	write_while_migrating(512 << 10, 2);
	err = ask(CMD_MIGRATE_PINNED, MR_PINNED, 0, 0, 0, &r);
	result(err == EBUSY, "pinned_buffer_refuses_migration (errno %d)", err);
	transfers(MR_PINNED, 65536, seed += 3);
	ask(CMD_DONE, 0, 0, 0, 0, &r);
	close(sock);
	ibv_dereg_mr(lmr);
	free(local);
}

int main(int argc, char **argv)
{
	char suite[64];
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
	snprintf(suite, sizeof(suite), "two_node_%s%s", is_server ? "" : "client_", importer);
	ktap_on_term(suite);
	setvbuf(stdout, NULL, _IOLBF, 0);
	result(!setup_verbs(argv[2]), "open_%s_pd_cq_qp", argv[2]);
	if (qp && is_server)
		server(atoi(argv[5]));
	else if (qp && argc > 6)
		client(argv[5], atoi(argv[6]));
	if (is_server)
		server_teardown();
	verbs_close(qp, NULL, cq, pd, ctx);
	if (expdev >= 0)
		close(expdev);
	return ktap_report(suite);
}
