// SPDX-License-Identifier: GPL-2.0
/*
 * C shim of umem_dmabuf_rs.ko: what C has to own. The module init itself is
 * Rust's (module! in rust/umem_rs.rs); it calls umem_shim_init() first.
 */
#include <linux/bug.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#include "umem_dmabuf_rs.h"

static bool provoke_warning;
module_param(provoke_warning, bool, 0444);
MODULE_PARM_DESC(provoke_warning,
		 "Debug: emit a kernel WARNING at load, to prove the test runner catches it");

int umem_shim_init(void)
{
	WARN(provoke_warning, "umem_dmabuf_rs: WARNING provoked on purpose (provoke_warning=1)\n");
	return 0;
}

void umem_shim_exit(void)
{
}
