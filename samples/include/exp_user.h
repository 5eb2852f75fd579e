/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Requests to the movable exporter (/dev/dmabuf_exporter_rs) that need no
 * RDMA headers: its userspace test and the RDMA test programs
 * (rdma_user.h) share them.
 */
#ifndef EXP_USER_H
#define EXP_USER_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include "dmabuf_exporter_rs.h"

/*
 * Revokes buffer @fd (@restore 0) or restores it (DMABUF_EXP_IOC_REVOKE); *r
 * gets the wait time and the mappings unmapped. 0 or an errno.
 */
static inline int exp_revoke_fd(int expdev, int fd, int restore, struct dmabuf_exp_revoke *r)
{
	memset(r, 0, sizeof(*r));
	r->version = DMABUF_EXP_VERSION;
	r->fd = fd;
	r->flags = restore ? DMABUF_EXP_REVOKE_F_RESTORE : 0;
	return ioctl(expdev, DMABUF_EXP_IOC_REVOKE, r) ? errno : 0;
}

/*
 * Takes buffer @fd's invalidation latency samples (DMABUF_EXP_IOC_LATENCY)
 * into @unmap and @remap, room for @count each; *l says how many. 0 or an
 * errno.
 */
static inline int exp_latency_fd(int expdev, int fd, __u64 *unmap, __u64 *remap, __u32 count,
				 struct dmabuf_exp_latency *l)
{
	memset(l, 0, sizeof(*l));
	l->version = DMABUF_EXP_VERSION;
	l->fd = fd;
	l->count = count;
	l->unmap_ns = (uintptr_t)unmap;
	l->remap_ns = (uintptr_t)remap;
	return ioctl(expdev, DMABUF_EXP_IOC_LATENCY, l) ? errno : 0;
}

#endif /* EXP_USER_H */
