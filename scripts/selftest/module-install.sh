#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# module-install.sh PRODUCTION_KO: make module-install and make
# module-uninstall (scripts/install.sh) into a scratch root, against the
# cached test kernel: the production module PRODUCTION_KO is installed
# signed with a key made here (the kernel's sign-file, built from the
# cached source), registered with depmod and set to load at boot; the
# uninstall leaves none of it. Refused: the test build, a module built for
# another kernel, a key without its certificate. Run by scripts/doctest.sh
# with the module install.rst's module block built.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
prod=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
fail() { echo "    FAIL $*" >&2; bad=1; }
ok() { echo "    ok   $*"; }
inst() { "$ROOT/scripts/install.sh" "$@" >"$tmp/out" 2>&1; }

gcc -o "$tmp/sign-file" "$KSRC/scripts/sign-file.c" -I"$KSRC/include/uapi" \
	-I"$KSRC/scripts/include" -I"$KSRC/tools/include" -lcrypto >"$tmp/out" 2>&1 ||
	{ cat "$tmp/out" >&2; die "building the kernel's sign-file failed"; }
openssl req -new -nodes -utf8 -sha256 -days 1 -batch -x509 -subj "/CN=umem install test/" \
	-outform DER -out "$tmp/key.der" -keyout "$tmp/key.pem" >"$tmp/out" 2>&1 ||
	{ cat "$tmp/out" >&2; die "openssl could not make a signing key"; }
root=$tmp/root
kver=$(cat "$KOUT/include/config/kernel.release")
dest=$root/lib/modules/$kver/updates/umem_dmabuf_rs.ko
boot=$root/etc/modules-load.d/umem_dmabuf_rs.conf
export KDIR=$KOUT INSTALL_MOD_PATH=$root

# refused WANT [VAR=VALUE...]: install with the variables must fail saying WANT.
refused() {
	local want=$1
	shift
	if env "$@" "$ROOT/scripts/install.sh" install >"$tmp/out" 2>&1; then
		fail "install did not refuse ($want)"
	elif grep -qF -- "$want" "$tmp/out"; then
		ok "install refused: \"$want\""
	else
		fail "install refused, but without \"$want\": $(cat "$tmp/out")"
	fi
	[ ! -e "$dest" ] || fail "a refused install left $dest"
}
if grep -q '\.kunit' <<<"$(readelf -SW "$ROOT/umem_dmabuf_rs.ko" 2>/dev/null)"; then
	refused "is the test build" UMEM_MODULE="$ROOT/umem_dmabuf_rs.ko"
fi
mkdir -p "$tmp/other/include/config"
echo 6.1.0-other >"$tmp/other/include/config/kernel.release"
refused "was built for $kver, not for 6.1.0-other" KDIR="$tmp/other" UMEM_MODULE="$prod"
refused "SIGN_KEY needs SIGN_CERT" UMEM_MODULE="$prod" SIGN_KEY="$tmp/key.pem"

if UMEM_MODULE=$prod SIGN_KEY=$tmp/key.pem SIGN_CERT=$tmp/key.der SIGN_FILE=$tmp/sign-file \
	UMEM_AT_BOOT=1 inst install; then
	[ "$(modinfo -F signer "$dest" 2>/dev/null)" = "umem install test" ] &&
		ok "installed, signed by the given key" || fail "installed module not signed by the key"
	grep -q '^updates/umem_dmabuf_rs.ko:' "$root/lib/modules/$kver/modules.dep" &&
		ok "depmod lists it" || fail "depmod's modules.dep does not list it"
	[ "$(cat "$boot" 2>/dev/null)" = umem_dmabuf_rs ] &&
		ok "loaded at boot ($boot)" || fail "no $boot"
else
	fail "install failed: $(cat "$tmp/out")"
fi
if inst uninstall; then
	[ ! -e "$dest" ] && [ ! -e "$boot" ] &&
		! grep -q umem_dmabuf_rs "$root/lib/modules/$kver/modules.dep" &&
		ok "uninstalled: module, boot entry and depmod entry gone" ||
		fail "uninstall left something behind"
else
	fail "uninstall failed: $(cat "$tmp/out")"
fi
exit $bad
