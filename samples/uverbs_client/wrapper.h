/* SPDX-License-Identifier: GPL-2.0 */
/* What build.rs generates Rust bindings for. */
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "dmabuf_exporter_rs.h"
#include "shim.h"
