// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_dmabuf_bench DEV GIDX IMPORTER MODE ROUNDS MS [MAXLEN [FIRST]]: make
 * bench's data-path benchmarks on a loopback RC QP pair of rxe device DEV
 * (GID index GIDX), as the KTAP suite MODE_IMPORTER. Each measurement is a
 * block of MS milliseconds; ROUNDS rounds, numbered from FIRST (default 0:
 * make bench runs one round per process, C, Rust, Rust, C, so that the
 * importers interleave too); messages of at most MAXLEN bytes (default 1 MiB;
 * 0 for the default; make check's smoke run uses less: its debug kernel
 * copies slowly).
 *
 *   datapath: RDMA WRITE and READ bandwidth with 4 KiB, 64 KiB and 1 MiB
 *	messages, QUEUE_DEPTH of them outstanding, and the latency of one
 *	8-byte WRITE at a time, into and out of four targets of TARGET bytes:
 *	an ordinary MR (ibv_reg_mr), a dynamic dma-buf MR and a pinned one
 *	(rxe's dmabuf_pinned=1) on buffers of the test exporter in system
 *	memory, a dynamic one on a buffer in its device memory (the PCI BAR,
 *	reached peer-to-peer), and a dynamic one on a buffer of the kernel's
 *	system dma-heap, as perftest's system dma-buf mode registers. The local
 *	side is always an ordinary MR. A round runs the targets in the order
 *	ordinary, dynamic, pinned, devmem, heap, heap, devmem, pinned, dynamic,
 *	ordinary.
 *   migrate: WRITE bandwidth with MAXLEN messages into a dynamic dma-buf MR
 *	while a thread migrates the buffer 0, 1, 10 or 100 times per second
 *	(blocks of at least 2 s for the slow rates); a round runs the rates
 *	0, 1, 10, 100, 100, 10, 1, 0.
 *   revoke: how fast the importer follows an invalidation, on buffers of
 *	two 2 MiB entries (as device memory is laid out). First under
 *	traffic: WRITEs of MAXLEN bytes into a dynamic dma-buf MR, ROUNDS
 *	blocks of MS ms, while a thread migrates the buffer every 10 ms; the
 *	exporter times each invalidation until rxe unmapped the MR ("unmap")
 *	and until its next map, that is the next access served ("remap";
 *	DMABUF_EXP_IOC_LATENCY). Then 20 * ROUNDS revocations of a dynamic MR
 *	on a revocable buffer, as vfio-pci revokes a BAR, each after a WRITE
 *	mapped it: from the invalidation until the exporter saw it unmapped
 *	("revoke", DMABUF_EXP_IOC_REVOKE). Then as many revocations of a
 *	revocable pinned MR (rxe's dmabuf_revocable=1), each registered anew,
 *	written once and revoked ("revoke_pinned"). Prints "REVLAT <what> <importer>
 *	<samples> <p50> <p99> <max>" (ns); the case revocation_latency_max
 *	fails when a maximum reaches $REVLAT_LIMIT_MS (default 1000).
 *
 *   scale ITERS MAXMB 0 ROUND: registration, first access and
 *	deregistration of an MR over a whole buffer of 2 MiB up to MAXMB, on
 *	the exporter (one-page and 2 MiB entries), the system heap and udmabuf
 *	(and udmabuf on huge pages, where some are reserved); see scale().
 *   flat PROBES TOTALMB 0 ROUND: a small MR's registration against the bytes
 *	already registered, up to TOTALMB; see flat().
 *   istorm ITERS KMAX 0 ROUND: invalidation storms of up to KMAX MRs on one
 *	buffer; see istorm(). These three print SCALE, FLAT and ISTORM lines
 *	for round ROUND.
 *
 * Every block prints "DPBENCH <bench> <bytes> <importer> <target> <round>
 * <ns per message>" for scripts/bench_report.py. A work request that does not
 * complete successfully fails the suite and ends the run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "exporters_user.h"
#include "ktap_user.h"
#include "rdma_user.h"

#define TARGET (4UL << 20)
#define QUEUE_DEPTH RDMA_STREAM_BATCH
#define TARGET_IOVA 0x40000000ULL
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PINNED_PARAM "/sys/module/rdma_rxe/parameters/dmabuf_pinned"

enum { ORDINARY, DYNAMIC, PINNED, DEVMEM, HEAP, NKINDS };
static const char *const kind_names[] = { "ordinary", "dynamic", "pinned", "devmem", "heap" };

struct target {
	__u64 raddr;
	__u32 rkey;
	int fd;			/* the dma-buf, or -1 */
	struct ibv_mr *mr;	/* ordinary */
	struct dmr dmr;		/* dma-buf */
	void *mem;		/* ordinary */
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qa, *qb;
static struct ibv_mr *local;
static void *local_mem;
static int expdev = -1;
static const char *importer;
static int broken;
static size_t maxlen = 1 << 20;

static int setup(const char *dev, int gidx)
{
	struct ibv_qp_init_attr qia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2 * QUEUE_DEPTH, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	union ibv_gid gid;

	ctx = open_device_named(dev);
	expdev = open("/dev/dmabuf_exporter_rs", O_RDWR | O_CLOEXEC);
	if (!ctx || expdev < 0)
		return -1;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4 * QUEUE_DEPTH, NULL, NULL, 0);
	local_mem = aligned_alloc(4096, TARGET);
	if (!pd || !cq || !local_mem || ibv_query_gid(ctx, 1, gidx, &gid))
		return -1;
	memset(local_mem, 0x5a, TARGET);
	local = ibv_reg_mr(pd, local_mem, TARGET, IBV_ACCESS_LOCAL_WRITE);
	qia.send_cq = cq;
	qia.recv_cq = cq;
	qa = ibv_create_qp(pd, &qia);
	qb = ibv_create_qp(pd, &qia);
	return local && qa && qb &&
	       !connect_qp_rd(qa, qb->qp_num, &gid, gidx, QUEUE_DEPTH) &&
	       !connect_qp_rd(qb, qa->qp_num, &gid, gidx, QUEUE_DEPTH) ? 0 : -1;
}

static void teardown(void)
{
	if (local)
		ibv_dereg_mr(local);
	verbs_close(qa, qb, cq, pd, ctx);
	free(local_mem);
	if (expdev >= 0)
		close(expdev);
}

/* Registers a target of kind @kind; 0 or -1. */
static int target_open(struct target *t, int kind)
{
	const __u32 access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ;
	int err = 0;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	if (kind == ORDINARY) {
		t->mem = aligned_alloc(4096, TARGET);
		if (!t->mem)
			return -1;
		memset(t->mem, 0, TARGET);
		t->mr = ibv_reg_mr(pd, t->mem, TARGET, access);
		if (!t->mr)
			return -1;
		t->raddr = (uintptr_t)t->mem;
		t->rkey = t->mr->rkey;
		return 0;
	}
	if (kind == HEAP)
		t->fd = heap_alloc(TARGET, &err);
	else
		t->fd = exp_create_chunks(expdev, TARGET,
					  DMABUF_EXP_F_DYNAMIC |
					  (kind == DEVMEM ? DMABUF_EXP_F_DEVMEM : 0),
					  NULL, 0, &err);
	if (t->fd < 0 || write_file(PINNED_PARAM, kind == PINNED ? "1" : "0"))
		return -1;
	err = uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, 0, TARGET, TARGET_IOVA, t->fd, access,
			       &t->dmr);
	if (write_file(PINNED_PARAM, "0") || err) {
		t->dmr.handle = 0;
		return -1;
	}
	t->raddr = TARGET_IOVA;
	t->rkey = t->dmr.rkey;
	return 0;
}

/* Whether a target of kind @kind is a buffer of the test exporter. */
static int exp_owned(int kind)
{
	return kind == DYNAMIC || kind == PINNED || kind == DEVMEM;
}

static void target_close(struct target *t)
{
	if (t->mr)
		ibv_dereg_mr(t->mr);
	free(t->mem);
	if (t->fd >= 0) {
		if (t->rkey)
			uv_dereg_mr(ctx->cmd_fd, &t->dmr);
		close(t->fd);
	}
	memset(t, 0, sizeof(*t));
	t->fd = -1;
}

/* Streams between the local MR and @t: rdma_stream_run() on QP qa. */
static double stream(enum ibv_wr_opcode op, size_t len, int depth, const struct target *t,
		     double ms)
{
	const struct rdma_stream s = {
		.qp = qa, .cq = cq, .laddr = (uintptr_t)local_mem, .lkey = local->lkey,
		.raddr = t->raddr, .rkey = t->rkey, .size = TARGET,
	};

	return rdma_stream_run(&s, op, len, depth, ms);
}

static unsigned int first_round;

static void report(const char *bench, size_t len, const char *target, unsigned int round,
		   double ns)
{
	printf("    # DPBENCH %s %zu %s %s %u %.0f\n", bench, len, importer, target,
	       first_round + round, ns);
}

static void datapath(unsigned int rounds, double ms)
{
	static const struct {
		const char *name;
		enum ibv_wr_opcode op;
		size_t len;
		int depth;
	} benches[] = {
		{ "write_bw", IBV_WR_RDMA_WRITE, 4096, QUEUE_DEPTH },
		{ "write_bw", IBV_WR_RDMA_WRITE, 65536, QUEUE_DEPTH },
		{ "write_bw", IBV_WR_RDMA_WRITE, 1 << 20, QUEUE_DEPTH },
		{ "read_bw", IBV_WR_RDMA_READ, 4096, QUEUE_DEPTH },
		{ "read_bw", IBV_WR_RDMA_READ, 65536, QUEUE_DEPTH },
		{ "read_bw", IBV_WR_RDMA_READ, 1 << 20, QUEUE_DEPTH },
		{ "write_lat", IBV_WR_RDMA_WRITE, 8, 1 },
	};
	static const int order[] = {
		ORDINARY, DYNAMIC, PINNED, DEVMEM, HEAP, HEAP, DEVMEM, PINNED, DYNAMIC, ORDINARY
	};
	unsigned int ok[ARRAY_SIZE(benches)] = { 0 };
	__u64 maps[NKINDS] = { 0 }, remaps = 0;
	struct dmabuf_exp_stats st;
	struct target t[NKINDS];
	/* main() keeps maxlen within 8 bytes and TARGET */
	const int warm_depth = TARGET / maxlen < QUEUE_DEPTH ? TARGET / maxlen : QUEUE_DEPTH;
	unsigned int r, b, o;
	int k, opened = 1;
	double ns;

	for (k = 0; k < NKINDS; k++)
		if (target_open(&t[k], k))
			opened = 0;
	result(opened,
	       "targets_registered (ordinary; dynamic, pinned, devmem, heap dma-buf; %lu bytes)",
	       TARGET);
	/*
	 * Untimed: first touches, the dynamic MR's first mapping, caches. One
	 * pass over each target in each direction is enough; a full queue of
	 * large messages would only add its drain (16 MiB per stream).
	 */
	for (k = 0; opened && !broken && k < NKINDS; k++)
		if (!stream(IBV_WR_RDMA_WRITE, maxlen, warm_depth, &t[k], 1) ||
		    !stream(IBV_WR_RDMA_READ, maxlen, warm_depth, &t[k], 1))
			broken = 1;
	for (k = 0; opened && k < NKINDS; k++)
		if (exp_owned(k))
			maps[k] = exp_stats_fd(expdev, t[k].fd).maps;
	for (r = 0; opened && !broken && r < rounds; r++)
		for (b = 0; !broken && b < ARRAY_SIZE(benches); b++)
			for (o = 0; !broken && benches[b].len <= maxlen && o < ARRAY_SIZE(order);
			     o++) {
				k = order[o];
				ns = stream(benches[b].op, benches[b].len, benches[b].depth, &t[k],
					    ms);
				if (!ns) {
					broken = 1;
					break;
				}
				report(benches[b].name, benches[b].len, kind_names[k], r, ns);
				ok[b]++;
			}
	for (b = 0; b < ARRAY_SIZE(benches); b++)
		if (benches[b].len <= maxlen)
			result(opened && ok[b] == rounds * ARRAY_SIZE(order),
			       "%s_%zu (%u blocks)", benches[b].name, benches[b].len, ok[b]);
	/*
	 * Mapped and never moved, a dma-buf MR is not re-mapped: rxe serves
	 * every timed access from the page list the warm-up made, so neither
	 * importer runs a line of its own per message (the exporter counts
	 * each map). A Rust/C difference of these rows is not the importers'.
	 */
	for (k = 0; opened && k < NKINDS; k++)
		if (exp_owned(k))
			remaps += exp_stats_fd(expdev, t[k].fd).maps - maps[k];
	result(opened && !broken && !remaps,
	       "no_importer_call_per_message (%llu maps of the exporter's targets while timed)",
	       (unsigned long long)remaps);
	/* The devmem numbers are of device memory only if it stayed there. */
	st = exp_stats_fd(expdev, t[DEVMEM].fd);
	result(opened && st.placement == DMABUF_EXP_PLACEMENT_DEVMEM && st.p2p_maps >= 1 &&
	       st.migrations == 0, "devmem_target_stayed_in_device_memory (%llu peer-to-peer maps)",
	       (unsigned long long)st.p2p_maps);
	for (k = 0; k < NKINDS; k++)
		target_close(&t[k]);
}

/* Sorts @v (@n values) and returns its @q quantile (nearest rank). */
static __u64 quantile_ns(__u64 *v, size_t n, double q)
{
	size_t i, j, k;
	__u64 t;

	for (i = 1; i < n; i++)	/* insertion sort: a few thousand values */
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	if (!n)
		return 0;
	k = (size_t)(q * n + 0.999999);
	return v[k ? k - 1 : 0];
}

struct migrator {
	pthread_t thread;
	int fd;
	unsigned int rate;
	int stop;		/* __atomic */
	unsigned long done, failed;
};

/* Migrates m->fd m->rate times per second until told to stop. */
static void *migrate_loop(void *arg)
{
	struct migrator *m = arg;
	double next = now_ns(), gap = 1e9 / m->rate;
	struct timespec ts;

	while (!__atomic_load_n(&m->stop, __ATOMIC_RELAXED)) {
		next += gap;
		if (exp_migrate_fd(expdev, m->fd, 0, 0))
			m->failed++;
		else
			m->done++;
		while (!__atomic_load_n(&m->stop, __ATOMIC_RELAXED) && now_ns() < next) {
			double left = next - now_ns();

			if (left > 10e6)
				left = 10e6;
			ts.tv_sec = 0;
			ts.tv_nsec = left > 0 ? (long)left : 0;
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void migrate(unsigned int rounds, double ms)
{
	static const unsigned int order[] = { 0, 1, 10, 100, 100, 10, 1, 0 };
	const size_t len = maxlen;
	unsigned long migrations = 0, failed = 0, blocks = 0;
	struct dmabuf_exp_stats before, after;
	struct target t;
	unsigned int r, o;
	char name[16];
	double ns;

	if (ms < 2000)
		printf("    # blocks of %.0f ms: the rate 1/s migrates at most once per block\n",
		       ms);
	result(!target_open(&t, DYNAMIC), "dynamic_target_registered (%lu bytes)", TARGET);
	if (t.rkey && !stream(IBV_WR_RDMA_WRITE, len, QUEUE_DEPTH, &t, ms / 4))
		broken = 1;	/* untimed warm-up */
	before = exp_stats_fd(expdev, t.fd);
	for (r = 0; t.rkey && !broken && r < rounds; r++)
		for (o = 0; !broken && o < ARRAY_SIZE(order); o++) {
			struct migrator m = { .fd = t.fd, .rate = order[o] };

			if (m.rate && pthread_create(&m.thread, NULL, migrate_loop, &m)) {
				broken = 1;
				break;
			}
			ns = stream(IBV_WR_RDMA_WRITE, len, QUEUE_DEPTH, &t, ms);
			__atomic_store_n(&m.stop, 1, __ATOMIC_RELAXED);
			if (m.rate)
				pthread_join(m.thread, NULL);
			migrations += m.done;
			failed += m.failed;
			if (!ns) {
				broken = 1;
				break;
			}
			snprintf(name, sizeof(name), "mig%u", m.rate);
			report("migrate_write_bw", len, name, r, ns);
			printf("    # %lu migrations in the block\n", m.done);
			blocks++;
		}
	after = exp_stats_fd(expdev, t.fd);
	result(!broken && blocks == rounds * ARRAY_SIZE(order),
	       "write_stream_while_migrating (%lu blocks)", blocks);
	result(migrations > 0 && !failed &&
	       after.migrations - before.migrations == migrations &&
	       after.move_notifies - before.move_notifies >= migrations &&
	       after.maps - before.maps > 0,
	       "migrated_and_remapped (%lu migrations, %lu failed; exporter: %llu migrations, %llu move_notifies, %llu maps)",
	       migrations, failed, after.migrations - before.migrations,
	       after.move_notifies - before.move_notifies, after.maps - before.maps);
	target_close(&t);
}

/* Latency samples of one kind, in ns. */
struct samples {
	__u64 *v;
	size_t n, cap;
};

static int samples_add(struct samples *s, const __u64 *v, size_t n)
{
	if (s->n + n > s->cap) {
		size_t cap = 2 * (s->n + n);
		__u64 *p = realloc(s->v, cap * sizeof(*p));

		if (!p)
			return -1;
		s->v = p;
		s->cap = cap;
	}
	memcpy(s->v + s->n, v, n * sizeof(*v));
	s->n += n;
	return 0;
}

/* Takes the exporter's latency samples of @fd into @unmap and @remap. */
static int take_latency(int fd, struct samples *unmap, struct samples *remap,
			unsigned long long *dropped)
{
	__u64 u[DMABUF_EXP_LATENCY_SAMPLES], r[DMABUF_EXP_LATENCY_SAMPLES];
	struct dmabuf_exp_latency l;

	if (exp_latency_fd(expdev, fd, u, r, DMABUF_EXP_LATENCY_SAMPLES, &l))
		return -1;
	*dropped += l.dropped;
	return samples_add(unmap, u, l.unmaps) || samples_add(remap, r, l.remaps) ? -1 : 0;
}

/* Prints a REVLAT line; returns the maximum. */
static __u64 revlat_report(const char *what, struct samples *s)
{
	__u64 p50 = quantile_ns(s->v, s->n, 0.5), p99 = quantile_ns(s->v, s->n, 0.99);
	__u64 max = s->n ? s->v[s->n - 1] : 0;

	printf("    # REVLAT %s %s %zu %llu %llu %llu\n", what, importer, s->n,
	       (unsigned long long)p50, (unsigned long long)p99, (unsigned long long)max);
	return max;
}

/* Registers a dma-buf MR of buffer @t->fd for @t; 0 or an errno. */
static int revlat_register(struct target *t)
{
	int err = uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, 0, TARGET, TARGET_IOVA, t->fd,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &t->dmr);

	if (err)
		return err;
	t->raddr = TARGET_IOVA;
	t->rkey = t->dmr.rkey;
	return 0;
}

/*
 * A dynamic dma-buf MR over a buffer of TARGET bytes in two 2 MiB entries,
 * as device memory is laid out (a table of one page per entry would time
 * DMA-API debugging's bookkeeping of 1024 entries more than the importer).
 * 0 or an errno.
 */
static int revlat_target(struct target *t, __u32 flags)
{
	static const __u32 chunks[] = { 512, 512 };
	int err;

	memset(t, 0, sizeof(*t));
	t->fd = exp_create_chunks(expdev, TARGET, flags, chunks, 2, &err);
	if (t->fd < 0)
		return err;
	return revlat_register(t);
}

/*
 * @n revocations of a revocable pinned MR (rxe's dmabuf_revocable=1) on the
 * revocable buffer of @r, whose own MR is deregistered first: each
 * registered, written once, revoked and deregistered, the buffer then
 * restored. Returns whether every step worked; the exporter's waits go to
 * @revoke.
 */
static int revoke_pinned(struct target *r, unsigned int n, struct samples *revoke)
{
	struct dmabuf_exp_revoke rv = { 0 }, restored;
	unsigned int i;
	int ok = 1;

	uv_dereg_mr(ctx->cmd_fd, &r->dmr);
	r->rkey = 0;
	for (i = 0; ok && !broken && i < n; i++) {
		__u64 ns;

		ok = !write_file(RXE_REVOCABLE_PARAM, "1") && !revlat_register(r);
		if (write_file(RXE_REVOCABLE_PARAM, "0"))
			ok = 0;
		if (!ok)
			break;
		if (!stream(IBV_WR_RDMA_WRITE, 4096, 1, r, 0))
			broken = 1;
		ok = !broken && !exp_revoke_fd(expdev, r->fd, 0, &rv) && rv.unmapped >= 1;
		ns = rv.wait_ns;
		uv_dereg_mr(ctx->cmd_fd, &r->dmr);
		r->rkey = 0;
		if (ok && (exp_revoke_fd(expdev, r->fd, 1, &restored) ||
			   samples_add(revoke, &ns, 1)))
			ok = 0;
	}
	return ok && revoke->n == n;
}

static void revoke_bench(unsigned int rounds, double ms)
{
	const char *limit_env = getenv("REVLAT_LIMIT_MS");
	const double limit_ns = (limit_env ? atof(limit_env) : 1000) * 1e6;
	struct samples unmap = { 0 }, remap = { 0 }, revoke = { 0 }, pinned = { 0 };
	unsigned long long dropped = 0, migrations = 0;
	struct dmabuf_exp_revoke rv, restored;
	struct target t, r;
	__u64 max, worst = 0;
	unsigned int i;
	int err, ok = 1;

	/* Under traffic: migrations every 10 ms while WRITEs stream. */
	result(!revlat_target(&t, DMABUF_EXP_F_DYNAMIC), "dynamic_target_registered (%lu bytes)",
	       TARGET);
	if (t.rkey && !stream(IBV_WR_RDMA_WRITE, maxlen, QUEUE_DEPTH, &t, ms / 4))
		broken = 1;	/* untimed warm-up */
	if (t.fd >= 0)
		take_latency(t.fd, &unmap, &remap, &dropped);	/* the warm-up's: dropped */
	unmap.n = 0;
	remap.n = 0;
	dropped = 0;
	for (i = 0; t.rkey && !broken && i < rounds; i++) {
		struct migrator m = { .fd = t.fd, .rate = 100 };

		if (pthread_create(&m.thread, NULL, migrate_loop, &m)) {
			broken = 1;
			break;
		}
		if (!stream(IBV_WR_RDMA_WRITE, maxlen, QUEUE_DEPTH, &t, ms))
			broken = 1;
		__atomic_store_n(&m.stop, 1, __ATOMIC_RELAXED);
		pthread_join(m.thread, NULL);
		migrations += m.done;
		if (m.failed || take_latency(t.fd, &unmap, &remap, &dropped))
			ok = 0;
	}
	result(!broken && ok && unmap.n > 0 && remap.n > 0,
	       "latency_under_write_traffic (%llu migrations: %zu unmaps, %zu re-maps timed, %llu samples dropped)",
	       migrations, unmap.n, remap.n, dropped);
	target_close(&t);

	/* Revocations of a mapped MR, as vfio-pci revokes. */
	err = revlat_target(&r, DMABUF_EXP_F_DYNAMIC | DMABUF_EXP_F_REVOCABLE);
	ok = !err;
	for (i = 0; ok && !broken && i < 20 * rounds; i++) {
		__u64 ns;

		if (!stream(IBV_WR_RDMA_WRITE, 4096, 1, &r, 0)) {
			broken = 1;
			break;
		}
		ok = !exp_revoke_fd(expdev, r.fd, 0, &rv) && rv.unmapped >= 1 &&
		     !exp_revoke_fd(expdev, r.fd, 1, &restored);
		ns = ok ? rv.wait_ns : 0;
		if (ok && samples_add(&revoke, &ns, 1))
			ok = 0;
	}
	result(ok && !broken && revoke.n == 20 * rounds,
	       "revocations_waited_for_the_unmap (%zu revocations, errno %d)", revoke.n, err);
	ok = !err && !broken && revoke_pinned(&r, 20 * rounds, &pinned);
	result(ok, "revocable_pinned_revocations_waited_for_the_unmap (%zu revocations)",
	       pinned.n);
	target_close(&r);

	max = revlat_report("unmap", &unmap);
	worst = max > worst ? max : worst;
	max = revlat_report("remap", &remap);
	worst = max > worst ? max : worst;
	max = revlat_report("revoke", &revoke);
	worst = max > worst ? max : worst;
	max = revlat_report("revoke_pinned", &pinned);
	worst = max > worst ? max : worst;
	result(unmap.n && remap.n && revoke.n && pinned.n && worst < limit_ns,
	       "revocation_latency_max (%.3f ms, limit %.0f ms)", worst / 1e6, limit_ns / 1e6);
	free(unmap.v);
	free(remap.v);
	free(revoke.v);
	free(pinned.v);
}

/* ---- scale: size, bytes already registered, invalidation storms ---- */

#define MiB (1024UL * 1024)
#define SCALE_MAX_MB 1024UL
/* A probe or storm buffer: 16 pages, as small MRs are. */
#define SMALL (16 * 4096UL)
/* Buffers registered in the background of the flat mode. */
#define FLAT_BUFS 64
#define STORM_MAX_MRS 256

/*
 * A dma-buf MR over the first @len bytes of buffer @fd for @t (the fd stays
 * the caller's), pinned (rxe's dmabuf_pinned, 0 at all other times) or
 * dynamic; 0 or -1.
 */
static int scale_reg(struct target *t, int fd, size_t len, int pinned)
{
	int err;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	if (pinned && write_file(PINNED_PARAM, "1"))
		return -1;
	err = uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, 0, len, TARGET_IOVA, fd,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &t->dmr);
	if (pinned && write_file(PINNED_PARAM, "0") && !err) {
		uv_dereg_mr(ctx->cmd_fd, &t->dmr);
		err = -1;
	}
	if (err) {
		printf("    # registration of %zu bytes: %s\n", len,
		       err > 0 ? strerror(err) : "dmabuf_pinned not set");
		return -1;
	}
	t->raddr = TARGET_IOVA;
	t->rkey = t->dmr.rkey;
	return 0;
}

/* One 8-byte WRITE into @t: a dynamic MR's first access maps it. */
static int touch(const struct target *t)
{
	return stream(IBV_WR_RDMA_WRITE, 8, 1, t, 0) > 0 ? 0 : -1;
}

/* A dynamic MR over @len bytes of @fd, registered and mapped; 0 or -1. */
static int reg_mapped(struct target *t, int fd, size_t len)
{
	if (scale_reg(t, fd, len, 0))
		return -1;
	if (!touch(t))
		return 0;
	uv_dereg_mr(ctx->cmd_fd, &t->dmr);
	return -1;
}

/*
 * What a user pays for an MR: registration, the first access, and
 * deregistration of an MR over @len bytes of @fd. ns, or 0 on a failure.
 */
static double reg_touch_dereg(int fd, size_t len, int pinned)
{
	double start = now_ns();
	struct target t;
	int ok;

	if (scale_reg(&t, fd, len, pinned))
		return 0;
	ok = !touch(&t);
	if (uv_dereg_mr(ctx->cmd_fd, &t.dmr) || !ok)
		return 0;
	return now_ns() - start;
}

enum { SRC_EXP_4K, SRC_EXP_2M, SRC_HEAP, SRC_UDMABUF, SRC_UDMABUF_2M, NSRCS };
static const char *const src_names[] = { "exporter_4k", "exporter_2m", "heap", "udmabuf",
					 "udmabuf_2m" };

/* Huge pages reserved for memfds (/proc/sys/vm/nr_hugepages), or 0. */
static long huge_pages(void)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "r");
	long n = 0;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = 0;
		fclose(f);
	}
	return n;
}

/*
 * A buffer of @len bytes (a multiple of 2 MiB) from source @src: the test
 * exporter's in one-page or 2 MiB entries, the system heap's (entries of
 * up to 1 MiB, as it finds them), or a udmabuf over a memfd (one page per
 * entry, or 2 MiB on huge pages). The fd, or -1 with the errno in *err.
 */
static int scale_buffer(int src, size_t len, int *err)
{
	static __u32 chunks[SCALE_MAX_MB / 2];
	unsigned char *map;
	size_t i, n = len / (2 * MiB);
	int fd;

	*err = 0;
	switch (src) {
	case SRC_EXP_4K:
		return exp_create_chunks(expdev, len, DMABUF_EXP_F_DYNAMIC, NULL, 0, err);
	case SRC_EXP_2M:
		for (i = 0; i < n && i < ARRAY_SIZE(chunks); i++)
			chunks[i] = 512;
		return exp_create_chunks(expdev, len, DMABUF_EXP_F_DYNAMIC, chunks, n, err);
	case SRC_HEAP:
		return heap_alloc(len, err);
	default:
		fd = udmabuf_create_flags(len, src == SRC_UDMABUF_2M ? MFD_HUGETLB : 0,
					  &map);
		if (fd < 0)
			*err = errno;
		else
			munmap(map, len);
		return fd;
	}
}

/*
 * Registration cost against buffer size: for each source and each size of
 * 2, 16, 128 and 1024 MiB up to @max_mb, reg_touch_dereg() of an MR over
 * the whole buffer, dynamic and pinned, @iters times at 2 MiB and
 * proportionally fewer above (at least once; after an untimed one where
 * there are several). Prints "SCALE <source>
 * <dynamic|pinned> <bytes> <importer> <round> <ns per MR>". udmabuf on
 * huge pages only where some are reserved (make bench reserves them; the
 * test kernel has no hugetlbfs).
 */
static void scale(unsigned int iters, unsigned long max_mb)
{
	static const char *const modes[] = { "dynamic", "pinned" };
	unsigned int src, mode, i, n, fails = 0, lines = 0;
	unsigned long mb;
	double ns, sum;
	int fd, err;

	if (huge_pages() <= 0)
		printf("    # no huge pages reserved: %s left out\n", src_names[SRC_UDMABUF_2M]);
	for (src = 0; src < NSRCS; src++)
		for (mb = 2; mb <= max_mb && mb <= SCALE_MAX_MB; mb *= 8) {
			if (src == SRC_UDMABUF_2M && huge_pages() <= 0)
				break;
			fd = scale_buffer(src, mb * MiB, &err);
			if (fd < 0) {
				printf("    # %s buffer of %lu MiB: errno %d\n", src_names[src], mb,
				       err);
				fails++;
				continue;
			}
			n = iters * 2 / mb ? iters * 2 / mb : 1;
			for (mode = 0; mode < 2; mode++) {
				/* Untimed where there are several: the first is cold. */
				if (n > 1 && !reg_touch_dereg(fd, mb * MiB, mode)) {
					fails++;
					continue;
				}
				for (i = 0, sum = 0; i < n; i++) {
					ns = reg_touch_dereg(fd, mb * MiB, mode);
					if (!ns)
						break;
					sum += ns;
				}
				if (i < n) {
					printf("    # %s %s MR of %lu MiB failed\n", src_names[src],
					       modes[mode], mb);
					fails++;
					continue;
				}
				printf("    # SCALE %s %s %lu %s %u %.0f\n", src_names[src],
				       modes[mode], mb * MiB, importer, first_round, sum / n);
				lines++;
			}
			close(fd);
		}
	result(!fails && lines, "registration_against_size (%u rows, %u failures)", lines, fails);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of @n probes, reg_touch_dereg() of @fd; 0 on a failure. */
static double probe_median(int fd, unsigned int n, double *v)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		v[i] = reg_touch_dereg(fd, SMALL, 0);
		if (!v[i])
			return 0;
	}
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/*
 * Registration cost against bytes already registered: FLAT_BUFS buffers of
 * the exporter, @total_mb in all in one-page entries, registered (dynamic)
 * and mapped one level of a quarter of them at a time, then deregistered
 * the same way: at each level, up and down, the median of @probes
 * registrations of a 16-page MR (reg_touch_dereg()). Prints "FLAT <bytes
 * registered> <importer> <round> <median ns>" per level, 0, a quarter, ...,
 * all, ..., 0, so that a drift in time cancels between the two ends.
 */
static void flat(unsigned int probes, unsigned long total_mb)
{
	static const unsigned int levels[] = { 0, 16, 32, 48, 64, 48, 32, 16, 0 };
	size_t len = total_mb * MiB / FLAT_BUFS;
	int fds[FLAT_BUFS], probe, err = 0;
	struct target mrs[FLAT_BUFS];
	unsigned int l, live = 0, i, lines = 0;
	double *v = calloc(probes ? probes : 1, sizeof(*v)), ns;

	for (i = 0; i < FLAT_BUFS; i++)
		fds[i] = -1;
	probe = exp_create_chunks(expdev, SMALL, DMABUF_EXP_F_DYNAMIC, NULL, 0, &err);
	for (i = 0; probe >= 0 && len && !(len % 4096) && i < FLAT_BUFS; i++) {
		fds[i] = exp_create_chunks(expdev, len, DMABUF_EXP_F_DYNAMIC, NULL, 0, &err);
		if (fds[i] < 0)
			break;
	}
	result(v && probes && i == FLAT_BUFS, "flat_buffers (%u of %lu bytes, errno %d)", i, len,
	       err);
	for (l = 0; v && probes && i == FLAT_BUFS && l < ARRAY_SIZE(levels); l++) {
		while (live < levels[l]) {
			if (reg_mapped(&mrs[live], fds[live], len))
				goto out;
			live++;
		}
		while (live > levels[l])
			uv_dereg_mr(ctx->cmd_fd, &mrs[--live].dmr);
		ns = probe_median(probe, probes, v);
		if (!ns)
			break;
		printf("    # FLAT %lu %s %u %.0f\n", (unsigned long)live * len, importer,
		       first_round, ns);
		lines++;
	}
out:
	result(lines == ARRAY_SIZE(levels), "registration_against_registered_bytes (%u levels)",
	       lines);
	while (live)
		uv_dereg_mr(ctx->cmd_fd, &mrs[--live].dmr);
	for (i = 0; i < FLAT_BUFS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (probe >= 0)
		close(probe);
	free(v);
}

/*
 * An invalidation storm: K MRs (1, 4, 16, 64, 256, up to @kmax) on one
 * dynamic 16-page buffer, registered and mapped; @iters times the buffer
 * moves (one move_notify reaches every attachment) and each MR is written
 * once, which re-maps it. Prints "ISTORM <K> <importer> <round> <ns until
 * all were re-mapped, median> <p50> <p99>" (the last two: the latency of
 * each MR's re-mapping WRITE). The exporter must have seen every MR
 * invalidated and re-mapped once per move.
 */
static void istorm(unsigned int iters, unsigned int kmax)
{
	__u64 *lat = calloc((size_t)iters * STORM_MAX_MRS, sizeof(*lat));
	double *total = calloc(iters ? iters : 1, sizeof(*total));
	struct target *mrs = calloc(STORM_MAX_MRS, sizeof(*mrs));
	struct dmabuf_exp_stats before, after;
	unsigned int k, i, m, n, live = 0, lines = 0, bad = 0, want = 0;
	int fd, err = 0;
	double t0, ns;

	for (k = 1; k <= kmax && k <= STORM_MAX_MRS; k *= 4)
		want++;
	fd = exp_create_chunks(expdev, SMALL, DMABUF_EXP_F_DYNAMIC, NULL, 0, &err);
	result(fd >= 0 && lat && total && mrs && iters, "storm_buffer (errno %d)", err);
	for (k = 1; fd >= 0 && lat && total && mrs && iters && k <= kmax && k <= STORM_MAX_MRS;
	     k *= 4) {
		for (; live < k; live++)
			if (reg_mapped(&mrs[live], fd, SMALL))
				goto out;
		before = exp_stats_fd(expdev, fd);
		for (i = 0, n = 0; i < iters; i++) {
			t0 = now_ns();
			if (exp_migrate_fd(expdev, fd, 0, 0))
				goto out;
			for (m = 0; m < k; m++) {
				ns = stream(IBV_WR_RDMA_WRITE, 8, 1, &mrs[m], 0);
				if (!ns)
					goto out;
				lat[n++] = (__u64)ns;
			}
			total[i] = now_ns() - t0;
		}
		after = exp_stats_fd(expdev, fd);
		if (after.move_notifies - before.move_notifies != (__u64)k * iters ||
		    after.maps - before.maps != (__u64)k * iters) {
			printf("    # %u MRs, %u moves: %llu move_notifies, %llu maps\n", k, iters,
			       after.move_notifies - before.move_notifies,
			       after.maps - before.maps);
			bad++;
		}
		qsort(total, iters, sizeof(*total), cmp_double);
		printf("    # ISTORM %u %s %u %.0f %llu %llu\n", k, importer, first_round,
		       total[iters / 2], (unsigned long long)quantile_ns(lat, n, 0.5),
		       (unsigned long long)quantile_ns(lat, n, 0.99));
		lines++;
	}
out:
	result(want && lines == want && !bad,
	       "invalidation_storm (%u sizes, %u with missed invalidations)", lines, bad);
	while (live)
		uv_dereg_mr(ctx->cmd_fd, &mrs[--live].dmr);
	if (fd >= 0)
		close(fd);
	free(lat);
	free(total);
	free(mrs);
}

int main(int argc, char **argv)
{
	char suite[64];
	const char *mode;

	if (argc < 7)
		return 2;
	importer = argv[3];
	mode = argv[4];
	snprintf(suite, sizeof(suite), "%s_%s", mode, importer);
	ktap_on_term(suite);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 7)
		maxlen = strtoul(argv[7], NULL, 0);
	if (maxlen < 8 || maxlen > TARGET)
		maxlen = 1 << 20;
	if (argc > 8)
		first_round = strtoul(argv[8], NULL, 0);
	result(!setup(argv[1], atoi(argv[2])), "open_%s_pd_cq_qps", argv[1]);
	if (qa && local) {
		if (!strcmp(mode, "datapath"))
			datapath(atoi(argv[5]), atof(argv[6]));
		else if (!strcmp(mode, "migrate"))
			migrate(atoi(argv[5]), atof(argv[6]));
		else if (!strcmp(mode, "revoke"))
			revoke_bench(atoi(argv[5]), atof(argv[6]));
		else if (!strcmp(mode, "scale"))
			scale(atoi(argv[5]), strtoul(argv[6], NULL, 0));
		else if (!strcmp(mode, "flat"))
			flat(atoi(argv[5]), strtoul(argv[6], NULL, 0));
		else if (!strcmp(mode, "istorm"))
			istorm(atoi(argv[5]), atoi(argv[6]));
		else
			result(0, "known_mode %s", mode);
	}
	teardown();
	return ktap_report(suite);
}
