/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tests/uapi-errors/cases.h: the cases of build/tests/uapi-errors, by
 * file; main.c runs them in the order of its cases[]. Each takes its name
 * (as --list prints it) and reports with pass() or fail() (server.h).
 */
#ifndef UAPI_ERRORS_CASES_H
#define UAPI_ERRORS_CASES_H

/* register.c: the controls, the connection and the REGISTER command */
void case_control(const char *name);
void case_init_offers_has_uring_bufring(const char *name);
void case_unknown_flag(const char *name);
void case_register_before_init(const char *name);
void case_register_without_over_io_uring(const char *name);
void case_register_after_failed_register(const char *name);
void case_register_refused_after_ready(const char *name);
void case_register_retry_after_eperm(const char *name);
void case_register_retry_after_ebusy(const char *name);
void case_register_eperm_without_retry_flag(const char *name);
void case_register_cmd_padding(const char *name);
void case_register_init_padding(const char *name);
void case_register_cmd_padding_iovec(const char *name);
void case_register_qid_beyond_queues(const char *name);
void case_register_without_sqe128(const char *name);
void case_unknown_cmd_op(const char *name);
void case_cross_bufring_then_iovec(const char *name);
void case_cross_iovec_then_bufring(const char *name);
void case_cross_buf_size(const char *name);
void case_cross_queue_depth(const char *name);
void case_same_bufring_then_iovec(const char *name);
void case_same_iovec_then_bufring(const char *name);

/* geometry.c: the buffer ring's geometry and its entry ids */
void case_depth_zero(const char *name);
void case_buf_size_zero(const char *name);
void case_depth_beyond_headers(const char *name);
void case_buf_size_short(const char *name);
void case_payload_null(const char *name);
void case_payload_short(const char *name);
void case_payload_too_many_bufs(const char *name);
void case_payload_u16_max_bufs(const char *name);
void case_entry_id_beyond_depth(const char *name);
void case_payload_not_multiple(const char *name);
void case_headers_misaligned(const char *name);
void case_headers_unmapped(const char *name);
void case_entry_id_in_use(const char *name);
void case_register_from_another_process(const char *name);
void case_register_race_pins_once(const char *name);
void case_commit_from_another_process(const char *name);
void case_register_count_beyond_depth(const char *name);
void case_entry_id_u16_max(const char *name);

/* commit.c: COMMIT_AND_FETCH and replies */
void case_commit_unknown(const char *name);
void case_commit_stale(const char *name);
void case_commit_qid_beyond_queues(const char *name);
void case_commit_queue_not_registered(const char *name);
void case_commit_wrong_qid(const char *name);
void case_reply_payload_sz_beyond_bufring(const char *name);
void case_reply_payload_sz_beyond_iovec(const char *name);
void case_reply_payload_sz_u32_max(const char *name);
void case_reply_unique_mismatch(const char *name);
void case_reply_interrupt_bit(const char *name);
void case_reply_error_positive(const char *name);
void case_commit_cmd_padding(const char *name);
void case_reply_ent_padding(const char *name);
void case_reply_ent_reserved(const char *name);

/* pinned.c: pinned headers and buffers */
void case_pinned_headers_without_bufring(const char *name);
void case_pinned_buffers_without_bufring(const char *name);
void case_pinned_headers_misaligned(const char *name);
void case_pinned_buffers_misaligned(const char *name);
void case_pinned_memlock_exact(const char *name);
void case_pinned_over_memlock(const char *name);
void case_register_retry_after_enomem(const char *name);
void case_pinned_headers_region_larger(const char *name);
void case_pinned_buffers_region_larger(const char *name);
void case_pinned_over_memlock_pins_nothing(const char *name);
void case_control_pinned(const char *name);

/* zero-copy.c: zero-copy */
void case_zero_copy_without_pinned(const char *name);
void case_zero_copy_without_pinned_buffers(const char *name);
void case_zero_copy_without_cap_sys_admin(const char *name);
void case_zero_copy_table_too_small(const char *name);
void case_zero_copy_fixed_directions(const char *name);
void case_zero_copy_async_commit_vs_table_update(const char *name);
void case_zero_copy_kvec_read_copied(const char *name);
void case_zero_copy_abort_revokes_folios(const char *name);
void case_zero_copy_abort_read_fixed_running(const char *name);
void case_zero_copy_commit_read_fixed_running(const char *name);
void case_zero_copy_commit_read_fixed_in_io_wq(const char *name);
void case_zero_copy_commit_from_another_ring(const char *name);

/* waits.c: requests that wait for a payload buffer */
void case_release_passes_write_waiting_for_buffer(const char *name);
void case_cancelled_send_gives_buffer_to_waiting_write(const char *name);
void case_registered_entry_takes_waiting_write(const char *name);
void case_flushed_release_passes_read_waiting_for_buffer(const char *name);

/* fault-inject.c: fault injection (the debug kernel) */
void case_fault_inject_iovec(const char *name);
void case_fault_inject_bufring(const char *name);
void case_fault_inject_pinned(const char *name);

#endif /* UAPI_ERRORS_CASES_H */
