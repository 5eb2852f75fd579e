# SPDX-License-Identifier: GPL-2.0
# Guest side of `make mutants` (scripts/mutants.sh): one boot per mutant,
# with the suites of make check's main boot that can see a mistake in one
# importer, shortened. umem.mutant_importer names the importer under test
# (rust: the module was built from mutated sources; c: the kernel's
# umem_dmabuf.c was); the other one is the reference whose outcomes the
# differential suites (fault injection, the seeded fuzzer) must reproduce.
# Each suite keeps its make check name, so that scripts/mutants.py can say
# which suite saw the mutant.
. /umem/lib.sh

imp=$(cmdline_value umem.mutant_importer || echo rust)
ref=c
[ "$imp" = c ] && ref=rust
SEED=${UMEM_FUZZ_SEED:-20261130}
OPS=$(cmdline_value umem.mutant_fuzz_ops || echo 4000)
STORM=$(cmdline_value umem.mutant_storm_secs || echo 5)
if [ "$imp" = rust ]; then
	expect=module e2e_imp=rust
else
	expect=c e2e_imp=
fi

# kunit_filter GLOB: which KUnit suites run when a module is loaded (of the
# kernel's own only kernel::dma_buf's ran at boot: mutants.sh). Without a newline:
# the parameter keeps what it is given, and the glob would have to match it.
kunit_filter() {
	printf '%s' "$1" >/sys/module/kunit/parameters/filter_glob &&
		[ "$(cat /sys/module/kunit/parameters/filter_glob)" = "$1" ]
}

GIDX=$(rxe_setup)
step rxe_device_with_ipv4_gid test -n "$GIDX"
fuzz="rxe_dmabuf_fuzz rxe0 $GIDX"

# differential IMPORTER --save|--compare: the fault injection, the seeded
# fuzzer and the replay of make fuzz's corpus on IMPORTER, saving or
# comparing outcomes.
differential() {
	step "fault_injection_uverbs_$1" ktap_run "fault_injection_uverbs+$1" \
		$fuzz "$1" faults "$2" /tmp/faults-ref.txt
	step "fuzz_$1" ktap_run "fuzz+$1" $fuzz "$1" fuzz "$SEED" "$OPS" "$2" /tmp/fuzz-ref.txt
	step "fuzz_corpus_$1" ktap_run "replay+$1" \
		$fuzz "$1" replay /umem/corpus/* "$2" /tmp/replay-ref.txt
}

# The reference's outcomes first, with no KUnit suite at the modules' load.
step kunit_suites_off kunit_filter umem_mutants_none
[ "$ref" = c ] || step insmod_reference_rust insmod "$MODDIR/umem_dmabuf_rs.ko"
step insmod_reference_exporter insmod "$MODDIR/dmabuf_exporter_rs.ko"
# One unjudged round first: the first registrations of a boot make
# allocations of their own (udmabuf's, rxe's), which would move the fault
# injection's points in the reference only (make check's reference runs
# after the end-to-end tests).
step warm_up_before_the_reference sh -c "$fuzz $ref faults >/dev/null 2>&1"
differential "$ref" --save
step rmmod_reference_exporter rmmod dmabuf_exporter_rs
[ "$ref" = c ] || step rmmod_reference_rust rmmod umem_dmabuf_rs

# Then the importer under test. The Rust module's KUnit suites test both
# importers (each case runs on C's built-in code and on the module's); it
# stays loaded only when it is the one under test.
step kunit_suites_on kunit_filter '*'
step insmod_umem_dmabuf_rs ktap_insmod importer umem_dmabuf_rs.ko kunit=1
[ "$imp" = rust ] || step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs
step "insmod_exporter_$imp" ktap_insmod "exporter+$imp-importer" dmabuf_exporter_rs.ko \
	expect_importer=$expect require_devmem=1
step "rxe_e2e_$imp" ktap_run "rxe_e2e+$imp-importer" rxe_dmabuf_test rxe0 "$GIDX" $e2e_imp stress
step "uverbs_client_$imp" uverbs-dmabuf rxe0 "$GIDX"
differential "$imp" --compare
step "storm_$imp" ktap_run "storm+$imp" $fuzz "$imp" storm "$STORM"
step "rxe_removal_$imp" ktap_run "rxe_removal+$imp-importer" \
	rxe_dmabuf_test rxe0 "$GIDX" $e2e_imp remove
GIDX=$(rxe_setup)
step rxe_device_added_again test -n "$GIDX"
step rmmod_exporter rmmod dmabuf_exporter_rs
[ "$imp" = c ] || step rmmod_umem_dmabuf_rs_at_the_end rmmod umem_dmabuf_rs
steps_report guest_steps_mutants
