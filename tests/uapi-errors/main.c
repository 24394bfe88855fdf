// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/uapi-errors/main.c: build/tests/uapi-errors, every mistake a
 * server can make when it registers a buffer ring (patch 0004), with
 * pinned headers or buffers (0005, 0006) or zero-copy (0008), or when it
 * commits a reply, and the exact errno the kernel answers it with; and
 * what a zero-copied request does when things go wrong. This file runs the
 * cases; each of the others says what its cases prove:
 *   register.c      the controls, the connection, the REGISTER command
 *   geometry.c      the buffer ring's geometry and its entry ids
 *   commit.c        COMMIT_AND_FETCH and the replies the kernel refuses
 *   pinned.c        pinned headers and pinned buffers
 *   zero-copy.c     zero-copy, with requests served by a file system of
 *                   our own
 *   waits.c         requests that wait for a payload buffer (0019), and
 *                   those that must not wait behind them
 *   fault-inject.c  every allocation of a REGISTER failed in turn (the
 *                   debug kernel)
 *   server.c        what they share: the FUSE server, the well-formed
 *                   set-up, reporting
 *
 * It speaks the protocol itself, with liburing and nothing else (no libfuse,
 * no reference server): per case it opens /dev/fuse, mounts a FUSE file
 * system with that fd, answers FUSE_INIT by read(2)/write(2) with
 * FUSE_OVER_IO_URING, and sends FUSE_IO_URING_CMD_REGISTER and
 * COMMIT_AND_FETCH commands on an SQE128 ring.
 *
 * Every case gets a connection of its own, for two reasons read off
 * fs/fuse/dev_uring.c: a queue's first REGISTER fixes its buffer ring for
 * good (fuse_uring_create_queue()), and a failed REGISTER before the ring
 * is ready switches io_uring off for the whole connection
 * (fuse_uring_register_refused() clears fch->io_uring, so every later
 * REGISTER gets -EOPNOTSUPP: register-after-failed-register). So in each
 * case the REGISTER under test is the connection's last.
 *
 * The cases: 84; --list names them, in the order of cases[] below. The
 * last three, fault-inject-register-*, need /proc/thread-self/fail-nth
 * (the debug kernel); elsewhere they print "skip NAME: why".
 *
 * After each case, the kernel log: main() remembers the end of /dev/kmsg
 * before the case (kmsg_mark()) and reads what was logged during it after
 * (kmsg_check()). Every new record is printed as "# kernel: ..." (several
 * cases make the kernel pr_info/pr_warn on purpose); one that looks like a
 * broken kernel (kernel_splats[]: BUG:, WARNING:, KASAN:, a lockdep report,
 * a hung task, ...) fails the case. A record whose text has no final
 * newline becomes readable only when the next record is logged, so it may
 * show up under the next case; the guest script checks the whole log too.
 *
 * Output, one result line per case, in the words of tests/lib.sh (read by
 * tests/guest/22-uapi-errors.sh, through program_result):
 *   # kernel: Entry id 1 in use
 *   ok name
 *   not ok name: expected -EINVAL, got accepted (no CQE: the command is queued)
 *   not ok name: the kernel logged "WARNING: CPU: 1 PID: 93 at ..."
 *   skip name: needs /proc/thread-self/fail-nth (the debug kernel, ...)
 * plus "# ..." lines with details. ok and skip come after the case's
 * kernel lines (only then is it known); a case that failed its own check
 * and the kernel one has two "not ok" lines, the first counts. Exit status
 * 1 if any case failed (a skip is not a failure). --list prints the case
 * names; case names as arguments run only those; --mnt DIR mounts at DIR
 * instead of /tmp/uapi-errors-mnt.
 *
 * Each case names the check in build/linux/fs/fuse/dev_uring.c that decides
 * its errno: the kernel source is the specification, not these files.
 *
 * Build: make tests (static, against the patched uapi in build/headers).
 * Needs root (mount, /dev/kmsg): it runs in the guest.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../kernel-log.h"
#include "cases.h"
#include "server.h"

static int failures, skipped;

struct test_case {
	const char *name;
	void (*run)(const char *name);
};

static const struct test_case cases[] = {
	{ "control-bufring-every-queue-getattr", case_control },
	{ "init-offers-has-uring-bufring", case_init_offers_has_uring_bufring },
	{ "unknown-init-flag", case_unknown_flag },
	{ "register-before-init-eagain", case_register_before_init },
	{ "register-without-over-io-uring", case_register_without_over_io_uring },
	{ "register-after-failed-register", case_register_after_failed_register },
	{ "register-refused-after-ready-ring-stays", case_register_refused_after_ready },
	{ "register-retry-after-eperm", case_register_retry_after_eperm },
	{ "register-retry-after-ebusy", case_register_retry_after_ebusy },
	{ "register-eperm-without-retry-flag-switches-off", case_register_eperm_without_retry_flag },
	{ "register-cmd-padding", case_register_cmd_padding },
	{ "register-cmd-padding-iovec", case_register_cmd_padding_iovec },
	{ "register-init-padding", case_register_init_padding },
	{ "register-qid-beyond-queues", case_register_qid_beyond_queues },
	{ "register-without-sqe128", case_register_without_sqe128 },
	{ "unknown-cmd-op", case_unknown_cmd_op },
	{ "cross-queue-bufring-then-iovec", case_cross_bufring_then_iovec },
	{ "cross-queue-iovec-then-bufring", case_cross_iovec_then_bufring },
	{ "cross-queue-buf-size-differs", case_cross_buf_size },
	{ "cross-queue-queue-depth-differs", case_cross_queue_depth },
	{ "same-queue-bufring-then-iovec", case_same_bufring_then_iovec },
	{ "same-queue-iovec-then-bufring", case_same_iovec_then_bufring },
	{ "queue-depth-zero", case_depth_zero },
	{ "buf-size-zero", case_buf_size_zero },
	{ "queue-depth-beyond-headers-region", case_depth_beyond_headers },
	{ "buf-size-below-max-payload", case_buf_size_short },
	{ "payload-region-null", case_payload_null },
	{ "payload-region-below-one-buffer", case_payload_short },
	{ "payload-region-65536-buffers", case_payload_too_many_bufs },
	{ "payload-region-65535-buffers-accepted", case_payload_u16_max_bufs },
	{ "payload-region-not-multiple-accepted-floor", case_payload_not_multiple },
	{ "headers-misaligned-accepted-and-served", case_headers_misaligned },
	{ "headers-unmapped-accepted-request-efault", case_headers_unmapped },
	{ "entry-id-beyond-queue-depth", case_entry_id_beyond_depth },
	{ "entry-id-u16-max-first-register", case_entry_id_u16_max },
	{ "entry-id-in-use", case_entry_id_in_use },
	{ "register-from-another-process-einval", case_register_from_another_process },
	{ "commit-from-another-process-einval", case_commit_from_another_process },
	{ "register-race-pins-once", case_register_race_pins_once },
	{ "register-count-beyond-queue-depth", case_register_count_beyond_depth },
	{ "commit-unknown-commit-id", case_commit_unknown },
	{ "commit-stale-commit-id", case_commit_stale },
	{ "commit-qid-beyond-queues", case_commit_qid_beyond_queues },
	{ "commit-queue-not-registered", case_commit_queue_not_registered },
	{ "commit-wrong-qid", case_commit_wrong_qid },
	{ "reply-payload-sz-beyond-buffer-bufring", case_reply_payload_sz_beyond_bufring },
	{ "reply-payload-sz-beyond-buffer-iovec", case_reply_payload_sz_beyond_iovec },
	{ "reply-payload-sz-u32-max", case_reply_payload_sz_u32_max },
	{ "reply-unique-mismatch", case_reply_unique_mismatch },
	{ "reply-interrupt-bit-einval", case_reply_interrupt_bit },
	{ "reply-error-positive", case_reply_error_positive },
	{ "commit-cmd-padding", case_commit_cmd_padding },
	{ "reply-ent-padding", case_reply_ent_padding },
	{ "reply-ent-reserved", case_reply_ent_reserved },
	{ "pinned-headers-without-bufring", case_pinned_headers_without_bufring },
	{ "pinned-buffers-without-bufring", case_pinned_buffers_without_bufring },
	{ "pinned-headers-misaligned", case_pinned_headers_misaligned },
	{ "pinned-buffers-misaligned", case_pinned_buffers_misaligned },
	{ "pinned-memlock-exact-accepted", case_pinned_memlock_exact },
	{ "pinned-over-memlock", case_pinned_over_memlock },
	{ "register-retry-after-enomem", case_register_retry_after_enomem },
	{ "pinned-over-memlock-pins-nothing", case_pinned_over_memlock_pins_nothing },
	{ "pinned-headers-region-larger-charged-as-used", case_pinned_headers_region_larger },
	{ "pinned-buffers-region-larger-charged-as-used", case_pinned_buffers_region_larger },
	{ "control-pinned-every-queue-getattr", case_control_pinned },
	{ "zero-copy-without-pinned", case_zero_copy_without_pinned },
	{ "zero-copy-without-pinned-buffers", case_zero_copy_without_pinned_buffers },
	{ "zero-copy-without-cap-sys-admin", case_zero_copy_without_cap_sys_admin },
	{ "zero-copy-table-too-small", case_zero_copy_table_too_small },
	{ "zero-copy-fixed-directions", case_zero_copy_fixed_directions },
	{ "zero-copy-kvec-read-copied", case_zero_copy_kvec_read_copied },
	{ "zero-copy-abort-revokes-folios", case_zero_copy_abort_revokes_folios },
	{ "zero-copy-abort-read-fixed-running", case_zero_copy_abort_read_fixed_running },
	{ "zero-copy-commit-read-fixed-running", case_zero_copy_commit_read_fixed_running },
	{ "zero-copy-commit-read-fixed-in-io-wq", case_zero_copy_commit_read_fixed_in_io_wq },
	{ "zero-copy-commit-from-another-ring-einval", case_zero_copy_commit_from_another_ring },
	{ "zero-copy-async-commit-vs-table-update", case_zero_copy_async_commit_vs_table_update },
	{ "release-passes-write-waiting-for-buffer", case_release_passes_write_waiting_for_buffer },
	{ "cancelled-send-gives-buffer-to-waiting-write", case_cancelled_send_gives_buffer_to_waiting_write },
	{ "registered-entry-takes-waiting-write", case_registered_entry_takes_waiting_write },
	{ "flushed-release-passes-read-waiting-for-buffer", case_flushed_release_passes_read_waiting_for_buffer },
	/*
	 * They run only on a kernel with fault injection (the debug kernel of
	 * make check-debug), and skip elsewhere: listed all the same, so that
	 * they never vanish from a count unseen.
	 */
	{ "fault-inject-register-iovec", case_fault_inject_iovec },
	{ "fault-inject-register-bufring", case_fault_inject_bufring },
	{ "fault-inject-register-pinned", case_fault_inject_pinned },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static bool selected(int argc, char **argv, int first, const char *name)
{
	int i;

	if (first >= argc)
		return true;
	for (i = first; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	char old_enable;
	int first = 1;
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < NCASES; i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "--mnt")) {
		mnt = argv[2];
		first = 3;
	}

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	/* fuse_uring_create(): max(FUSE_MIN_READ_BUFFER, max_write, max_pages pages) */
	max_payload = (uint32_t)(INIT_MAX_PAGES * page_size);
	if (max_payload < 8192)
		max_payload = 8192;
	nr_queues = count_possible_cpus();
	if (mkdir(mnt, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "uapi-errors: mkdir %s: %s (--mnt DIR names another mount point)\n",
			mnt, strerror(errno));
		return 1;
	}

	/* The kernel offers FUSE_OVER_IO_URING in FUSE_INIT only when enabled. */
	old_enable = set_enable_uring('1');
	printf("# %u FUSE queues (possible CPUs), max_payload_sz %u, mount point %s\n",
	       nr_queues, max_payload, mnt);
	for (i = 0; i < NCASES; i++) {
		const struct test_case *t = &cases[i];
		int kmsg;

		if (!selected(argc, argv, first, t->name))
			continue;
		case_passed = case_failed = case_skipped = false;
		kmsg = kmsg_mark();
		if (!old_enable)
			fail(t->name, "set-up: cannot write %s", ENABLE_URING);
		else if (!nr_queues)
			fail(t->name, "set-up: cannot read %s", CPUS_POSSIBLE);
		else
			t->run(t->name);
		kmsg_check(t->name, kmsg);
		if (!case_passed && !case_failed && !case_skipped)
			fail(t->name, "the case reported nothing");
		if (case_failed) {
			failures++;
		} else if (case_skipped) {
			skipped++;
			printf("skip %s: %s\n", t->name, case_skip_why);
		} else {
			printf("ok %s\n", t->name);
		}
	}
	if (old_enable)
		set_enable_uring(old_enable == 'Y' ? '1' : '0');
	printf("# %d failed, %d skipped\n", failures, skipped);
	return failures ? 1 : 0;
}
