// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Description: host unit tests of the server's pure parts: opcode names,
 * request parsing, which requests get a buffer in bufring mode (and with
 * zero-copy), reply building, dirent packing, FUSE_INIT negotiation, option
 * parsing (every mode, --nbufs, --fallback, --ring-setup), each mode's
 * REGISTER flags, each --ring-setup's ring on the host's kernel,
 * the pinned-memory arithmetic against RLIMIT_MEMLOCK, CPU-list counting,
 * and the handlers called directly on a temporary directory (no
 * /dev/fuse, no mount).
 * Prints "ok NAME" or "not ok NAME: why" per case; exits 1 on any failure.
 * Build and run: make -C reference-server test (ASan/UBSan).
 */
#include "fuse-uring.h"
#include "unit.h"

/*
 * The two files whose static helpers are tested here (the pinned-memory
 * arithmetic, the zero-copy decision, the CPU-list parser) are included,
 * not linked, so the helpers stay static where they live
 * (UNIT_INCLUDED in the Makefile).
 */
#include "preflight.c"
#include "ring.c"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---- opcode names and the dispatch table ------------------------------ */

static void test_opcode_names(void)
{
	EXPECT_STR("opcode_name_lookup", "LOOKUP", fuse_opcode_name(FUSE_LOOKUP));
	EXPECT_STR("opcode_name_batch_forget", "BATCH_FORGET",
		   fuse_opcode_name(FUSE_BATCH_FORGET));
	EXPECT_STR("opcode_name_last_known", "COPY_FILE_RANGE_64",
		   fuse_opcode_name(FUSE_COPY_FILE_RANGE_64));
	EXPECT_STR("opcode_name_hole_is_unknown", "UNKNOWN",
		   fuse_opcode_name(7));
	EXPECT_STR("opcode_name_huge_is_unknown", "UNKNOWN",
		   fuse_opcode_name(CUSE_INIT));
}

/*
 * proto.c's table has a row for every opcode of the uapi, and what it says
 * matches the request structs. Which opcodes the file system handles needs
 * no test: a handler left out of ops.c's table is an unused static function,
 * which -Werror refuses to build.
 */
static void test_opcode_table(void)
{
	struct fuse_in_header in = { .opcode = FUSE_GETLK };	/* no handler */
	struct srv_req r = { .in = &in };
	uint32_t opc, missing = 0;

	for (opc = FUSE_LOOKUP; opc <= FUSE_COPY_FILE_RANGE_64; opc++)
		/* 7 and 19 were never used */
		if (opc != 7 && opc != 19 && !fuse_op_info(opc))
			missing = opc;
	result("opcode_table_has_every_uapi_opcode", !missing,
	       "opcode %u has no row", missing);
	EXPECT_INT("opcode_table_write_arg_size",
		   (long long)sizeof(struct fuse_write_in),
		   fuse_op_info(FUSE_WRITE)->arg_size);
	EXPECT_INT("opcode_table_setxattr_compat_size", 8,
		   fuse_op_info(FUSE_SETXATTR)->arg_size);
	EXPECT_INT("opcode_table_lookup_names_only", 0,
		   fuse_op_info(FUSE_LOOKUP)->arg_size);
	EXPECT_INT("dispatch_unknown_op_enosys", -ENOSYS, srv_dispatch(&r));
	in.opcode = 9999;
	EXPECT_INT("dispatch_out_of_range_op_enosys", -ENOSYS,
		   srv_dispatch(&r));
	result("forget_is_no_reply", fuse_op_info(FUSE_FORGET)->no_reply &&
	       fuse_op_info(FUSE_BATCH_FORGET)->no_reply &&
	       fuse_op_info(FUSE_INTERRUPT)->no_reply &&
	       !fuse_op_info(FUSE_LOOKUP)->no_reply, "no_reply flags wrong");
}

/* ---- request parsing -------------------------------------------------- */

/* A /dev/fuse-style buffer: in header, arg, data. Returns its length. */
static size_t make_dev_req(void *buf, uint32_t opcode, const void *arg,
			   size_t arg_len, const void *data, size_t data_len)
{
	struct fuse_in_header *in = buf;
	char *p = buf;

	memset(in, 0, sizeof(*in));
	in->opcode = opcode;
	in->unique = 42;
	in->nodeid = FUSE_ROOT_ID;
	in->len = (uint32_t)(sizeof(*in) + arg_len + data_len);
	if (arg_len)
		memcpy(p + sizeof(*in), arg, arg_len);
	if (data_len)
		memcpy(p + sizeof(*in) + arg_len, data, data_len);
	return in->len;
}

static void test_parse_dev(void)
{
	static char buf[4096] __attribute__((aligned(8)));
	struct fuse_write_in w = { .size = 5 };
	struct srv_req r;
	size_t n;
	int err;

	n = make_dev_req(buf, FUSE_WRITE, &w, sizeof(w), "hello", 5);
	err = parse_dev_request(buf, n, &r);
	result("parse_dev_write_splits_arg_and_data",
	       !err && r.arg == buf + sizeof(struct fuse_in_header) &&
	       r.arg_len == sizeof(w) && r.data_len == 5 &&
	       memcmp(r.data, "hello", 5) == 0,
	       "err=%d arg_len=%zu data_len=%zu", err, r.arg_len, r.data_len);

	EXPECT_INT("parse_dev_short_buffer_einval", -EINVAL,
		   parse_dev_request(buf, sizeof(struct fuse_in_header) - 1, &r));
	EXPECT_INT("parse_dev_len_mismatch_einval", -EINVAL,
		   parse_dev_request(buf, n - 1, &r));
	n = make_dev_req(buf, FUSE_WRITE, &w, 8, NULL, 0);
	EXPECT_INT("parse_dev_short_op_header_einval", -EINVAL,
		   parse_dev_request(buf, n, &r));

	/* an opcode 7.2 does not have: no header size known, all data */
	n = make_dev_req(buf, FUSE_COPY_FILE_RANGE_64 + 1, "abcdefgh", 8,
			 NULL, 0);
	err = parse_dev_request(buf, n, &r);
	result("parse_dev_unknown_op_all_data", !err && r.arg_len == 0 &&
	       r.data_len == 8, "err=%d arg_len=%zu data_len=%zu", err,
	       r.arg_len, r.data_len);
}

static void test_parse_ring(void)
{
	static struct fuse_uring_req_header h;
	static char payload[8192];
	struct fuse_in_header *in = (void *)h.in_out;
	struct srv_req r;
	int err;

	memset(&h, 0, sizeof(h));
	in->opcode = FUSE_LOOKUP;
	in->unique = 7;
	in->len = sizeof(*in) + 5;
	memcpy(payload, "name", 5);
	h.ring_ent_in_out.payload_sz = 5;
	err = parse_ring_request(&h, payload, sizeof(payload), &r);
	result("parse_ring_lookup_name_in_payload",
	       !err && r.arg_len == 0 && r.data == payload &&
	       r.data_len == 5 && r.out == payload &&
	       r.out_size == sizeof(payload),
	       "err=%d arg_len=%zu data_len=%zu", err, r.arg_len, r.data_len);

	in->opcode = FUSE_WRITE;
	in->len = sizeof(*in) + sizeof(struct fuse_write_in) + 4096;
	h.ring_ent_in_out.payload_sz = 4096;
	err = parse_ring_request(&h, payload, sizeof(payload), &r);
	result("parse_ring_write_arg_in_op_in",
	       !err && r.arg == h.op_in &&
	       r.arg_len == sizeof(struct fuse_write_in) && r.data_len == 4096,
	       "err=%d arg_len=%zu", err, r.arg_len);

	h.ring_ent_in_out.payload_sz = sizeof(payload) + 1;
	in->len = sizeof(*in) + sizeof(struct fuse_write_in) +
		  h.ring_ent_in_out.payload_sz;
	EXPECT_INT("parse_ring_payload_over_capacity_einval", -EINVAL,
		   parse_ring_request(&h, payload, sizeof(payload), &r));

	h.ring_ent_in_out.payload_sz = 4096;
	in->len = sizeof(*in) + 8 + 4096;	/* op header shorter than write_in */
	EXPECT_INT("parse_ring_short_op_header_einval", -EINVAL,
		   parse_ring_request(&h, payload, sizeof(payload), &r));

	in->len = sizeof(*in) + 129 + 4096;	/* more than op_in holds */
	EXPECT_INT("parse_ring_op_header_over_128_einval", -EINVAL,
		   parse_ring_request(&h, payload, sizeof(payload), &r));

	in->len = sizeof(*in) + 100;		/* less than the payload */
	EXPECT_INT("parse_ring_len_below_payload_einval", -EINVAL,
		   parse_ring_request(&h, payload, sizeof(payload), &r));
}

/* ---- bufring: which requests the kernel lends a payload buffer ------- */

static void test_bufring_has_buf(void)
{
	/*
	 * A second reading of Linux 7.2's fs/fuse (args.out_numargs), kept
	 * apart from proto.c's table so that the two check each other.
	 * Replies with data: the server must be sure of a buffer.
	 */
	static const uint32_t data_replies[] = {
		FUSE_LOOKUP, FUSE_GETATTR, FUSE_SETATTR, FUSE_READLINK,
		FUSE_SYMLINK, FUSE_MKNOD, FUSE_MKDIR, FUSE_LINK, FUSE_OPEN,
		FUSE_READ, FUSE_WRITE, FUSE_STATFS, FUSE_GETXATTR,
		FUSE_LISTXATTR, FUSE_INIT, FUSE_OPENDIR, FUSE_READDIR,
		FUSE_GETLK, FUSE_CREATE, FUSE_BMAP, FUSE_IOCTL, FUSE_POLL,
		FUSE_READDIRPLUS, FUSE_LSEEK, FUSE_COPY_FILE_RANGE,
		FUSE_TMPFILE, FUSE_STATX, FUSE_COPY_FILE_RANGE_64,
	};
	/* Linux 7.2 sends these with no out arguments */
	static const uint32_t header_only[] = {
		FUSE_FORGET, FUSE_BATCH_FORGET, FUSE_FLUSH, FUSE_FSYNC,
		FUSE_RELEASE, FUSE_RELEASEDIR, FUSE_RMDIR, FUSE_UNLINK,
		FUSE_RENAME, FUSE_RENAME2, FUSE_DESTROY, FUSE_INTERRUPT,
		FUSE_ACCESS, FUSE_FSYNCDIR, FUSE_FALLOCATE, FUSE_SYNCFS,
		FUSE_SETXATTR, FUSE_REMOVEXATTR, FUSE_SETLK, FUSE_SETLKW,
		FUSE_NOTIFY_REPLY, FUSE_SETUPMAPPING, FUSE_REMOVEMAPPING,
	};
	static struct fuse_uring_req_header h;
	struct fuse_in_header *in = (void *)h.in_out;
	const char *bad = NULL;
	uint32_t opc;

	for (size_t i = 0; i < sizeof(data_replies) / sizeof(data_replies[0]); i++)
		if (!fuse_op_info(data_replies[i])->out_args)
			bad = fuse_opcode_name(data_replies[i]);
	result("out_args_for_every_data_reply", !bad, "%s missing", bad);
	bad = NULL;
	for (size_t i = 0; i < sizeof(header_only) / sizeof(header_only[0]); i++)
		if (fuse_op_info(header_only[i])->out_args)
			bad = fuse_opcode_name(header_only[i]);
	result("no_out_args_for_header_only_replies", !bad, "%s listed", bad);
	/* a row added to the table later must be sorted into one of the lists */
	bad = NULL;
	for (opc = 0; opc <= FUSE_COPY_FILE_RANGE_64; opc++) {
		bool known = false;

		if (!fuse_op_info(opc))
			continue;
		for (size_t i = 0; i < sizeof(data_replies) / sizeof(data_replies[0]); i++)
			known |= data_replies[i] == opc;
		for (size_t i = 0; i < sizeof(header_only) / sizeof(header_only[0]); i++)
			known |= header_only[i] == opc;
		if (!known)
			bad = fuse_opcode_name(opc);
	}
	result("every_opcode_sorted_for_bufring", !bad,
	       "%s: does its reply carry data?", bad);

	memset(&h, 0, sizeof(h));
	in->opcode = FUSE_GETATTR;
	result("bufring_getattr_has_buf_for_its_reply", bufring_req_has_buf(&h),
	       "no buffer");
	in->opcode = FUSE_FLUSH;
	result("bufring_flush_has_no_buf_though_buf_id_0",
	       !bufring_req_has_buf(&h), "buffer");
	in->opcode = FUSE_RELEASE;
	h.ring_ent_in_out.buf_id = 3;	/* meaningless without payload */
	result("bufring_release_has_no_buf", !bufring_req_has_buf(&h), "buffer");
	in->opcode = FUSE_UNLINK;
	h.ring_ent_in_out.payload_sz = 5;	/* the name */
	result("bufring_unlink_name_comes_in_a_buf", bufring_req_has_buf(&h),
	       "no buffer");
	in->opcode = 9999;
	h.ring_ent_in_out.payload_sz = 0;
	result("bufring_unknown_op_without_payload_no_buf",
	       !bufring_req_has_buf(&h), "buffer");

	/* zero-copy: the data stays in the folios, only a WRITE's reply needs a buffer */
	in->opcode = FUSE_READ;
	result("zc_not_marked_read_has_buf", !req_zero_copied(&h) &&
	       bufring_req_has_buf(&h), "wrong");
	h.ring_ent_in_out.flags = FUSE_URING_ENT_ZERO_COPY;
	result("zc_read_is_zero_copied_and_has_no_buf", req_zero_copied(&h) &&
	       !bufring_req_has_buf(&h), "wrong");
	in->opcode = FUSE_WRITE;
	h.ring_ent_in_out.payload_sz = 4096;	/* counts the data in the folios */
	result("zc_write_has_buf_for_write_out", bufring_req_has_buf(&h),
	       "no buffer");
	h.ring_ent_in_out.flags = 0;
}

static void test_parse_ring_no_buf(void)
{
	static struct fuse_uring_req_header h;
	struct fuse_in_header *in = (void *)h.in_out;
	struct srv_req r;
	int err;

	memset(&h, 0, sizeof(h));
	in->opcode = FUSE_FLUSH;
	in->unique = 9;
	in->len = sizeof(*in) + sizeof(struct fuse_flush_in);
	err = parse_ring_request(&h, NULL, 0, &r);
	result("parse_ring_without_buffer",
	       !err && r.arg_len == sizeof(struct fuse_flush_in) &&
	       !r.data && !r.data_len && !r.out && !r.out_size,
	       "err=%d arg_len=%zu", err, r.arg_len);
	h.ring_ent_in_out.payload_sz = 1;
	in->len++;
	EXPECT_INT("parse_ring_payload_without_buffer_einval", -EINVAL,
		   parse_ring_request(&h, NULL, 0, &r));
}

static void test_req_name(void)
{
	struct srv_req r = { .data = "old\0new\0", .data_len = 8 };
	const char *a = NULL, *b = NULL;
	size_t n1 = 0, n2 = 0;
	int e1, e2;

	e1 = req_name(&r, 0, &a, &n1);
	e2 = e1 ? e1 : req_name(&r, n1, &b, &n2);
	result("req_name_two_names", !e1 && !e2 && !strcmp(a, "old") &&
	       !strcmp(b, "new") && n1 == 4 && n2 == 4, "e1=%d e2=%d", e1, e2);
	r.data_len = 7;		/* "new" loses its NUL */
	EXPECT_INT("req_name_unterminated_einval", -EINVAL,
		   req_name(&r, 4, &b, &n2));
	EXPECT_INT("req_name_past_end_einval", -EINVAL,
		   req_name(&r, 7, &b, &n2));
	r.data = "\0x";
	r.data_len = 2;
	EXPECT_INT("req_name_empty_einval", -EINVAL, req_name(&r, 0, &a, &n1));
}

/* FUSE_CREATE_SUPP_GROUP's extension: found, absent, or malformed. */
static void test_req_supp_group(void)
{
	struct {
		char name[8];
		struct fuse_ext_header xh;
		uint32_t nr_groups, group;
	} d = { "n", { 16, FUSE_EXT_GROUPS }, 1, 4242 };
	struct fuse_in_header in = { .total_extlen = 2 };
	struct srv_req r = { .in = &in, .data = (char *)&d, .data_len = sizeof(d) };
	uint32_t gid = 0;
	int err;

	err = req_supp_group(&r, &gid);
	result("supp_group_found", err == 1 && gid == 4242, "err=%d gid=%u", err, gid);
	in.total_extlen = 0;
	EXPECT_INT("supp_group_none_without_extensions", 0, req_supp_group(&r, &gid));
	in.total_extlen = 4;	/* 32 bytes, more than came */
	EXPECT_INT("supp_group_extlen_past_the_data_einval", -EINVAL,
		   req_supp_group(&r, &gid));
	in.total_extlen = 2;
	d.xh.size = 12;		/* not a multiple of 8 */
	EXPECT_INT("supp_group_unaligned_size_einval", -EINVAL,
		   req_supp_group(&r, &gid));
	d.xh.size = 0;		/* would never move on */
	EXPECT_INT("supp_group_size_0_einval", -EINVAL, req_supp_group(&r, &gid));
	d.xh.size = 24;		/* past the end */
	EXPECT_INT("supp_group_size_past_the_end_einval", -EINVAL,
		   req_supp_group(&r, &gid));
	d.xh.size = 16;
	d.xh.type = 7;		/* a security context: not ours, skipped */
	EXPECT_INT("supp_group_other_extension_skipped", 0, req_supp_group(&r, &gid));
}

/* ---- replies ---------------------------------------------------------- */

static void test_replies(void)
{
	static struct fuse_uring_req_header h;
	struct fuse_out_header *oh = (void *)h.in_out;
	struct fuse_out_header doh;

	memset(&h, 0xff, sizeof(h));
	build_ring_reply(&h, 99, 0, sizeof(struct fuse_entry_out));
	result("ring_reply_ok_sets_payload_sz",
	       oh->unique == 99 && oh->error == 0 &&
	       oh->len == sizeof(*oh) + sizeof(struct fuse_entry_out) &&
	       h.ring_ent_in_out.payload_sz == sizeof(struct fuse_entry_out),
	       "unique=%llu error=%d len=%u payload_sz=%u",
	       (unsigned long long)oh->unique, oh->error, oh->len,
	       h.ring_ent_in_out.payload_sz);

	build_ring_reply(&h, 100, -ENOENT, 4096);
	result("ring_reply_error_has_no_payload",
	       oh->error == -ENOENT && oh->len == sizeof(*oh) &&
	       h.ring_ent_in_out.payload_sz == 0,
	       "error=%d len=%u payload_sz=%u", oh->error, oh->len,
	       h.ring_ent_in_out.payload_sz);

	build_dev_reply(&doh, 5, 0, 8);
	result("dev_reply_len_counts_header", doh.len == sizeof(doh) + 8 &&
	       doh.unique == 5 && doh.error == 0, "len=%u", doh.len);
}

static void test_dirent_pack(void)
{
	static char buf[64] __attribute__((aligned(8)));
	struct fuse_dirent *d = (void *)buf;
	size_t n;

	memset(buf, 0xaa, sizeof(buf));
	n = dirent_pack(buf, sizeof(buf), "abc", 12, 3, DT_REG);
	result("dirent_pack_aligns_to_8",
	       n == 32 && d->ino == 12 && d->off == 3 && d->namelen == 3 &&
	       d->type == DT_REG && !memcmp(d->name, "abc", 3) &&
	       buf[FUSE_NAME_OFFSET + 3] == 0 && buf[31] == 0,
	       "size=%zu namelen=%u", n, d->namelen);
	EXPECT_INT("dirent_pack_too_small_returns_0", 0,
		   dirent_pack(buf, 31, "abc", 12, 3, DT_REG));
	EXPECT_INT("dirent_pack_exact_fit", 32,
		   dirent_pack(buf, 32, "abcdefgh", 1, 1, DT_DIR));
}

static void test_stat_to_attr(void)
{
	struct stat st = {
		.st_ino = 77, .st_size = 12345, .st_blocks = 24,
		.st_mode = S_IFREG | 0640, .st_nlink = 2, .st_uid = 1000,
		.st_gid = 100, .st_blksize = 4096,
		.st_mtim = { .tv_sec = 1700000000, .tv_nsec = 123 },
	};
	struct fuse_attr a;

	stat_to_fuse_attr(&st, &a);
	result("stat_to_fuse_attr_copies_fields",
	       a.ino == 77 && a.size == 12345 && a.blocks == 24 &&
	       a.mode == (S_IFREG | 0640) && a.nlink == 2 && a.uid == 1000 &&
	       a.gid == 100 && a.blksize == 4096 && a.mtime == 1700000000 &&
	       a.mtimensec == 123, "ino=%llu mode=%o",
	       (unsigned long long)a.ino, a.mode);
}

/* ---- FUSE_INIT -------------------------------------------------------- */

static void test_init(void)
{
	struct srv_opts o = { .queue_depth = 8, .payload_size = 1 << 20 };
	uint64_t offered = FUSE_ASYNC_READ | FUSE_BIG_WRITES |
			   FUSE_WRITEBACK_CACHE | FUSE_MAX_PAGES |
			   FUSE_INIT_EXT | FUSE_OVER_IO_URING |
			   FUSE_HAS_URING_BUFRING | FUSE_HANDLE_KILLPRIV_V2;
	struct fuse_init_in in = {
		.major = 7, .minor = 45, .max_readahead = 131072,
		.flags = (uint32_t)offered, .flags2 = (uint32_t)(offered >> 32),
	};
	struct fuse_init_out out;
	uint64_t got;
	int err;

	err = init_reply_build(&in, &o, 2, 4096, &out);
	got = out.flags | ((uint64_t)out.flags2 << 32);
	result("init_reply_accepts_io_uring",
	       !err && (got & FUSE_OVER_IO_URING) && (got & FUSE_INIT_EXT) &&
	       (got & FUSE_MAX_PAGES) && !(got & FUSE_WRITEBACK_CACHE),
	       "err=%d flags=%#llx", err, (unsigned long long)got);
	/* so that the kernel stops asking for security.capability per WRITE */
	result("init_reply_takes_handle_killpriv_v2",
	       !err && (got & FUSE_HANDLE_KILLPRIV_V2), "flags=%#llx",
	       (unsigned long long)got);
	result("init_reply_sizes_from_payload",
	       out.max_write == 1 << 20 && out.max_pages == 256 &&
	       out.max_background == 16 && out.max_readahead == 131072 &&
	       out.major == 7 && out.minor == 45 && out.time_gran == 1,
	       "max_write=%u max_pages=%u max_background=%u", out.max_write,
	       out.max_pages, out.max_background);

	in.minor = 40;
	init_reply_build(&in, &o, 2, 4096, &out);
	EXPECT_INT("init_reply_minor_is_min_of_both", 40, out.minor);
	in.minor = 45;

	in.flags2 = 0;
	EXPECT_INT("init_without_io_uring_offer_eopnotsupp", -EOPNOTSUPP,
		   init_reply_build(&in, &o, 2, 4096, &out));
	in.flags2 = (uint32_t)(offered >> 32);

	/* a kernel without the series: iovec still runs, buffer rings must not */
	in.flags2 = (uint32_t)((offered & ~FUSE_HAS_URING_BUFRING) >> 32);
	EXPECT_INT("init_without_bufring_offer_iovec_runs", 0,
		   init_reply_build(&in, &o, 2, 4096, &out));
	for (enum srv_mode m = SRV_MODE_BUFRING; m <= SRV_MODE_ZERO_COPY; m++) {
		char name[96];

		o.mode = m;
		snprintf(name, sizeof(name),
			 "init_without_bufring_offer_refuses_%s", mode_name(m));
		EXPECT_INT(name, -ENOPROTOOPT,
			   init_reply_build(&in, &o, 2, 4096, &out));
	}
	in.flags2 = (uint32_t)(offered >> 32);
	for (enum srv_mode m = SRV_MODE_BUFRING; m <= SRV_MODE_ZERO_COPY; m++) {
		char name[96];

		o.mode = m;
		snprintf(name, sizeof(name),
			 "init_with_bufring_offer_accepts_%s", mode_name(m));
		EXPECT_INT(name, 0, init_reply_build(&in, &o, 2, 4096, &out));
	}
	/* --fallback echoes the series' flag: it tries again (0020) */
	o.mode = SRV_MODE_PINNED_BUFFERS;
	init_reply_build(&in, &o, 2, 4096, &out);
	result("init_reply_without_fallback_leaves_bufring_flag_out",
	       !(((uint64_t)out.flags2 << 32) & FUSE_HAS_URING_BUFRING),
	       "flags2 %#x", out.flags2);
	o.fallback = true;
	init_reply_build(&in, &o, 2, 4096, &out);
	result("init_reply_with_fallback_echoes_bufring_flag",
	       ((uint64_t)out.flags2 << 32) & FUSE_HAS_URING_BUFRING,
	       "flags2 %#x", out.flags2);
	o.fallback = false;
	o.mode = SRV_MODE_IOVEC;
	in.major = 8;
	EXPECT_INT("init_major_8_eproto", -EPROTO,
		   init_reply_build(&in, &o, 2, 4096, &out));
	in.major = 7;
	in.flags &= ~FUSE_INIT_EXT;
	EXPECT_INT("init_without_init_ext_eproto", -EPROTO,
		   init_reply_build(&in, &o, 2, 4096, &out));
}

/* what a WRITE by a caller without CAP_FSETID leaves of a mode (the VFS's rule) */
static void test_kill_suidgid(void)
{
	EXPECT_INT("kill_suidgid_clears_suid", 0755,
		   (int)mode_after_kill_suidgid(04755));
	EXPECT_INT("kill_suidgid_clears_sgid_with_group_exec", 0755,
		   (int)mode_after_kill_suidgid(02755));
	EXPECT_INT("kill_suidgid_keeps_sgid_without_group_exec", 02745,
		   (int)mode_after_kill_suidgid(02745));
	EXPECT_INT("kill_suidgid_keeps_sticky_and_the_rest", 01644,
		   (int)mode_after_kill_suidgid(05644));
}

/* ---- options ---------------------------------------------------------- */

static int parse(struct srv_opts *o, char *err, ...)
{
	char *argv[16] = { "fuse-uring-server" };
	int argc = 1;
	va_list ap;

	va_start(ap, err);
	while (argc < 15 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	return parse_options(argc, argv, o, err, 256);
}

static void test_options(void)
{
	struct srv_opts o;
	char err[256];
	int ret;

	ret = parse(&o, err, "/b", "/m", NULL);
	result("options_defaults",
	       !ret && o.queue_depth == SRV_DEFAULT_QUEUE_DEPTH &&
	       o.payload_size == SRV_DEFAULT_PAYLOAD_SIZE &&
	       o.mode == SRV_MODE_AUTO && !o.foreground && !o.trace &&
	       !strcmp(o.backing_dir, "/b") && !strcmp(o.mountpoint, "/m"),
	       "ret=%d err=%s", ret, err);

	ret = parse(&o, err, "--queue-depth=16", "--payload-size", "128K",
		    "--mode=iovec", "--foreground", "--trace", "/b", "/m", NULL);
	result("options_all_set",
	       !ret && o.queue_depth == 16 && o.payload_size == 131072 &&
	       o.foreground && o.trace, "ret=%d err=%s", ret, err);

	ret = parse(&o, err, "--payload-size=2M", "/b", "/m", NULL);
	EXPECT_INT("options_payload_m_suffix", 2 << 20, ret ? -1 : (long long)o.payload_size);

	ret = parse(&o, err, "--queue-depth=0", "/b", "/m", NULL);
	result("options_queue_depth_0_rejected",
	       ret == -EINVAL && strstr(err, "--queue-depth"), "ret=%d", ret);
	ret = parse(&o, err, "--queue-depth=1025", "/b", "/m", NULL);
	EXPECT_INT("options_queue_depth_too_big_rejected", -EINVAL, ret);
	ret = parse(&o, err, "--queue-depth=8x", "/b", "/m", NULL);
	EXPECT_INT("options_queue_depth_garbage_rejected", -EINVAL, ret);
	ret = parse(&o, err, "--payload-size=4096", "/b", "/m", NULL);
	EXPECT_INT("options_payload_below_8k_rejected", -EINVAL, ret);
	ret = parse(&o, err, "--payload-size=12289", "/b", "/m", NULL);
	EXPECT_INT("options_payload_not_page_multiple_rejected", -EINVAL, ret);
	ret = parse(&o, err, "--payload-size=32M", "/b", "/m", NULL);
	EXPECT_INT("options_payload_above_16m_rejected", -EINVAL, ret);

	/* bufring and --nbufs */
	ret = parse(&o, err, "--mode=bufring", "/b", "/m", NULL);
	result("options_bufring_nbufs_default_queue_depth",
	       !ret && o.mode == SRV_MODE_BUFRING &&
	       o.nbufs == SRV_DEFAULT_QUEUE_DEPTH, "ret=%d err=%s nbufs=%u",
	       ret, err, o.nbufs);
	ret = parse(&o, err, "--mode=bufring", "--queue-depth=16", "/b", "/m",
		    NULL);
	EXPECT_INT("options_bufring_nbufs_follows_depth", 16,
		   ret ? -1 : (long long)o.nbufs);
	ret = parse(&o, err, "--nbufs=2", "--queue-depth=8", "--mode=bufring",
		    "/b", "/m", NULL);
	result("options_nbufs_below_depth_any_order",
	       !ret && o.nbufs == 2 && o.queue_depth == 8,
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--mode=bufring", "--nbufs=65535", "/b", "/m",
		    NULL);
	EXPECT_INT("options_nbufs_65535_ok", 65535,
		   ret ? -1 : (long long)o.nbufs);
	ret = parse(&o, err, "--mode=bufring", "--nbufs=0", "/b", "/m", NULL);
	result("options_nbufs_0_rejected",
	       ret == -EINVAL && strstr(err, "--nbufs must be 1..65535"),
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--mode=bufring", "--nbufs=65536", "/b", "/m",
		    NULL);
	EXPECT_INT("options_nbufs_65536_rejected", -EINVAL, ret);
	ret = parse(&o, err, "--mode=bufring", "--nbufs=two", "/b", "/m", NULL);
	EXPECT_INT("options_nbufs_garbage_rejected", -EINVAL, ret);
	/* --mode=auto keeps --nbufs for the mode FUSE_INIT picks */
	ret = parse(&o, err, "--nbufs=4", "/b", "/m", NULL);
	result("options_nbufs_kept_for_auto", !ret && o.nbufs == 4,
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--mode=iovec", "--nbufs=4", "/b", "/m", NULL);
	result("options_nbufs_with_iovec_rejected",
	       ret == -EINVAL && strstr(err, "--nbufs needs --mode=bufring, "
					 "--mode=pool"),
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "/b", "/m", NULL);
	EXPECT_INT("options_auto_nbufs_unset", 0, o.nbufs);

	/* the payload memory a queue allocates, per mode */
	ret = parse(&o, err, "--queue-depth=8", "--payload-size=128K", "/b",
		    "/m", NULL);
	result("payload_bytes_iovec_one_buffer_per_entry",
	       !ret && opts_payload_bufs(&o) == 8 &&
	       opts_queue_payload_bytes(&o) == 8 * 131072,
	       "bufs=%u bytes=%zu", opts_payload_bufs(&o),
	       opts_queue_payload_bytes(&o));
	ret = parse(&o, err, "--mode=bufring", "--queue-depth=8", "--nbufs=2",
		    "--payload-size=128K", "/b", "/m", NULL);
	result("payload_bytes_bufring_nbufs",
	       !ret && opts_payload_bufs(&o) == 2 &&
	       opts_queue_payload_bytes(&o) == 2 * 131072,
	       "bufs=%u bytes=%zu", opts_payload_bufs(&o),
	       opts_queue_payload_bytes(&o));
	ret = parse(&o, err, "--mode=bufring", "--nbufs=65535",
		    "--payload-size=16M", "/b", "/m", NULL);
	result("payload_bytes_no_overflow",
	       !ret && opts_queue_payload_bytes(&o) == (size_t)65535 << 24,
	       "bytes=%zu", opts_queue_payload_bytes(&o));
	result("mode_uses_bufring", mode_uses_bufring(SRV_MODE_BUFRING) &&
	       !mode_uses_bufring(SRV_MODE_IOVEC), "wrong");

	ret = parse(&o, err, "--mode=turbo", "/b", "/m", NULL);
	result("options_mode_unknown_rejected",
	       ret == -EINVAL && strstr(err, "unknown --mode 'turbo'") &&
	       strstr(err, "supported: auto, iovec, bufring, pinned-headers, "
		      "pinned-buffers, zero-copy, pool, pool-fixed, "
		      "pool-zero-copy"),
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--frobnicate", "/b", "/m", NULL);
	result("options_unknown_option_named",
	       ret == -EINVAL && strstr(err, "'--frobnicate'"),
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "/b", NULL);
	result("options_one_positional_rejected",
	       ret == -EINVAL && strstr(err, "got 1 argument"),
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "/b", "/m", "/x", NULL);
	EXPECT_INT("options_three_positionals_rejected", -EINVAL, ret);
	ret = parse(&o, err, "--help", NULL);
	result("options_help_needs_no_dirs", !ret && o.help, "ret=%d", ret);
	EXPECT_STR("mode_name_iovec", "iovec", mode_name(SRV_MODE_IOVEC));
	EXPECT_STR("mode_name_bufring", "bufring", mode_name(SRV_MODE_BUFRING));
}

/* ---- the mode ladder, pinned memory, capabilities ----------------------- */

/*
 * Linux 7.3's pool (pool.c) and --mode=auto. The INIT bits are written out
 * here, not taken from a header: each design's header names only its own
 * (FUSE_HAS_URING_BUFRING is bit 63 in the v2 series' uapi,
 * FUSE_HAS_IO_URING_BUFPOOL bit 43 in 7.3's).
 */
#define V2_BUFRING_BIT (1ULL << 63)
#define POOL_BIT (1ULL << 43)

static void test_pool_and_auto(void)
{
	static const struct {
		const char *what;
		uint64_t offered;
		enum srv_mode mode;
	} picks[] = {
		{ "stock_7_2", FUSE_OVER_IO_URING, SRV_MODE_IOVEC },
		{ "v2_series", FUSE_OVER_IO_URING | V2_BUFRING_BIT,
		  SRV_MODE_BUFRING },
		{ "linux_7_3", FUSE_OVER_IO_URING | POOL_BIT, SRV_MODE_POOL },
		{ "both", FUSE_OVER_IO_URING | POOL_BIT | V2_BUFRING_BIT,
		  SRV_MODE_POOL },
	};
	struct srv_opts o;
	char err[256], name[64];
	int ret;

	for (size_t i = 0; i < sizeof(picks) / sizeof(picks[0]); i++) {
		ret = parse(&o, err, "--queue-depth=4", "/b", "/m", NULL);
		ret = ret ? ret : mode_pick(&o, picks[i].offered);
		snprintf(name, sizeof(name), "auto_picks_%s_on_%s",
			 mode_name(picks[i].mode), picks[i].what);
		result(name, !ret && o.mode == picks[i].mode &&
		       o.nbufs == (picks[i].mode == SRV_MODE_IOVEC ? 0 : 4),
		       "ret=%d mode=%s nbufs=%u", ret, mode_name(o.mode),
		       o.nbufs);
	}
	ret = parse(&o, err, "--nbufs=2", "/b", "/m", NULL);
	ret = ret ? ret : mode_pick(&o, FUSE_OVER_IO_URING | POOL_BIT);
	result("auto_keeps_nbufs", !ret && o.mode == SRV_MODE_POOL &&
	       o.nbufs == 2 && opts_queue_payload_bytes(&o) ==
	       2 * SRV_DEFAULT_PAYLOAD_SIZE, "ret=%d nbufs=%u", ret, o.nbufs);
	result("offered_kernel_names_7_3",
	       strstr(mode_offered_kernel(FUSE_OVER_IO_URING | POOL_BIT),
		      "FUSE_HAS_IO_URING_BUFPOOL (Linux 7.3") != NULL,
	       "%s", mode_offered_kernel(FUSE_OVER_IO_URING | POOL_BIT));
	result("offered_kernel_names_v2",
	       strstr(mode_offered_kernel(FUSE_OVER_IO_URING | V2_BUFRING_BIT),
		      "FUSE_HAS_URING_BUFRING (Linux 7.2 with the v2") != NULL,
	       "%s", mode_offered_kernel(FUSE_OVER_IO_URING | V2_BUFRING_BIT));
	result("pool_needs_the_pool_bit",
	       mode_ops(SRV_MODE_POOL)->init_needs == POOL_BIT &&
	       mode_ops(SRV_MODE_POOL_FIXED)->init_needs == POOL_BIT &&
	       mode_ops(SRV_MODE_BUFRING)->init_needs == V2_BUFRING_BIT,
	       "pool %#llx, bufring %#llx",
	       (unsigned long long)mode_ops(SRV_MODE_POOL)->init_needs,
	       (unsigned long long)mode_ops(SRV_MODE_BUFRING)->init_needs);

	/* the 7.3 ladder */
	ret = parse(&o, err, "--mode=pool", "--nbufs=3", "/b", "/m", NULL);
	result("mode_pool_parses", !ret && o.mode == SRV_MODE_POOL &&
	       mode_uses_pool(o.mode) && !mode_uses_bufring(o.mode) &&
	       opts_payload_bufs(&o) == 3 && !mode_pins_buffers(o.mode) &&
	       mode_register_flags(o.mode) == 0, "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--mode=pool-fixed", "/b", "/m", NULL);
	result("mode_pool_fixed_pins_its_pool",
	       !ret && mode_pins_buffers(o.mode) && !mode_pins_headers(o.mode) &&
	       !mode_zero_copy(o.mode) && o.nbufs == SRV_DEFAULT_QUEUE_DEPTH,
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--mode=pool-zero-copy", "--unlinked", "/b", "/m",
		    NULL);
	result("mode_pool_zero_copy_parses",
	       !ret && mode_zero_copy(o.mode) && mode_uses_pool(o.mode) &&
	       o.unlinked, "ret=%d err=%s", ret, err);
	result("init_offered_ignores_flags2_before_7_36",
	       init_offered(&(struct fuse_init_in){
		       .major = 7, .minor = 35, .flags = FUSE_INIT_EXT,
		       .flags2 = (uint32_t)(POOL_BIT >> 32) }) == FUSE_INIT_EXT &&
	       init_offered(&(struct fuse_init_in){
		       .major = 7, .minor = 46, .flags = FUSE_INIT_EXT,
		       .flags2 = (uint32_t)(POOL_BIT >> 32) }) ==
	       (FUSE_INIT_EXT | POOL_BIT), "wrong");
}

/*
 * pool.c's find_payload: the payload at pool + ent_in_out.offset. This
 * file sees the header through the v2 uapi, whose bytes 20-23 of
 * ent_in_out are buf_id and padding; 7.3's offset is the same four bytes.
 */
static void set_pool_offset(struct fuse_uring_req_header *h, uint32_t off)
{
	memcpy((char *)&h->ring_ent_in_out + 20, &off, sizeof(off));
}

static void test_pool_payload(void)
{
	static struct fuse_uring_req_header h;
	static char pool[4 * 8192];
	struct fuse_in_header *in = (void *)h.in_out;
	struct srv_opts o = { .mode = SRV_MODE_POOL, .queue_depth = 2,
			      .payload_size = 8192, .nbufs = 4 };
	struct srv_session s = { .opts = &o };
	struct srv_queue q = { .s = &s, .payload_mem = pool,
			       .payload_mem_size = sizeof(pool) };
	struct srv_ent ent = { .queue = &q, .header = &h };
	int ret;

	in->opcode = FUSE_READ;		/* its reply has data: a buffer */
	set_pool_offset(&h, 2 * 8192);
	ret = pool_ops.find_payload(&ent);
	result("pool_payload_at_offset", !ret && ent.req.payload == pool + 16384 &&
	       ent.req.buf == 2, "ret=%d buf=%d", ret, ent.req.buf);
	set_pool_offset(&h, 8192 + 4096);
	ret = pool_ops.find_payload(&ent);
	result("pool_offset_inside_a_buffer_refused", ret == -EPROTO &&
	       !ent.req.payload, "ret=%d", ret);
	set_pool_offset(&h, 4 * 8192);
	ret = pool_ops.find_payload(&ent);
	EXPECT_INT("pool_offset_past_the_pool_refused", -EPROTO, ret);
	in->opcode = FUSE_FLUSH;	/* nothing to copy: no buffer, offset 0 */
	set_pool_offset(&h, 0);
	ret = pool_ops.find_payload(&ent);
	result("pool_no_buffer_without_payload", !ret && !ent.req.payload &&
	       ent.req.buf == -1, "ret=%d", ret);
	in->opcode = FUSE_READ;
	h.ring_ent_in_out.flags = FUSE_URING_ENT_ZERO_COPY;
	ret = pool_ops.find_payload(&ent);
	result("pool_zero_copied_read_has_no_buffer", !ret && !ent.req.payload,
	       "ret=%d", ret);
	in->opcode = FUSE_WRITE;
	set_pool_offset(&h, 8192);
	ret = pool_ops.find_payload(&ent);
	result("pool_zero_copied_write_has_its_reply_buffer",
	       !ret && ent.req.payload == pool + 8192, "ret=%d", ret);
}

/*
 * pool-zero-copy opts in per file: FOPEN_IO_URING_ZERO_COPY (7.3's 1 << 8,
 * which the v2 header this file sees does not name) in the OPEN and
 * CREATE replies, and in no other. Its fixed operations use the slot
 * its REGISTER reserved, 1 + id; v2's use the id.
 */
#define POOL_FOPEN_ZERO_COPY (1U << 8)

static void test_pool_zero_copy_open(void)
{
	char err[256];
	int ret;
	static struct fuse_in_header in;
	static char out[256];
	struct srv_req r = { .in = &in, .out = out, .out_size = sizeof(out) };
	struct fuse_open_out *oo = (void *)out;
	struct fuse_open_out *co = (void *)(out + sizeof(struct fuse_entry_out));

	struct srv_opts o = { .mode = SRV_MODE_POOL_ZERO_COPY };
	struct srv_session s = { .opts = &o };
	struct srv_queue q = { .s = &s };
	struct srv_ent ent = { .queue = &q };
	char tmpl[] = "/tmp/unit-zc-XXXXXX";
	int fd = mkstemp(tmpl);

	in.opcode = FUSE_OPEN;
	r.out_len = sizeof(*oo);
	oo->open_flags = FOPEN_KEEP_CACHE;
	pool_zero_copy_ops.reply_ready(&ent, &r);
	result("pool_zero_copy_open_reply_opts_in",
	       oo->open_flags == (FOPEN_KEEP_CACHE | POOL_FOPEN_ZERO_COPY),
	       "open_flags %#x", oo->open_flags);
	memset(out, 0, sizeof(out));
	in.opcode = FUSE_CREATE;
	r.out_len = sizeof(struct fuse_entry_out) + sizeof(*co);
	pool_zero_copy_ops.reply_ready(&ent, &r);
	result("pool_zero_copy_create_reply_opts_in",
	       co->open_flags == POOL_FOPEN_ZERO_COPY &&
	       ((struct fuse_entry_out *)out)->nodeid == 0,
	       "open_flags %#x", co->open_flags);
	memset(out, 0, sizeof(out));
	in.opcode = FUSE_GETATTR;
	r.out_len = sizeof(struct fuse_attr_out);
	pool_zero_copy_ops.reply_ready(&ent, &r);
	result("pool_zero_copy_leaves_other_replies", out[0] == 0 &&
	       oo->open_flags == 0, "changed");
	in.opcode = FUSE_OPEN;
	r.out_len = 4;	/* shorter than fuse_open_out: not touched */
	pool_zero_copy_ops.reply_ready(&ent, &r);
	result("pool_zero_copy_leaves_a_short_reply", oo->open_flags == 0,
	       "changed");

	/* --zero-copy-min: by the backing file's size (fh is its fd) at open */
	o.zero_copy_min = 8192;
	r.out_len = sizeof(*oo);
	memset(out, 0, sizeof(out));
	oo->fh = (uint64_t)fd;
	pool_zero_copy_ops.reply_ready(&ent, &r);
	result("pool_zero_copy_min_skips_a_small_file",
	       fd >= 0 && oo->open_flags == 0, "fd %d open_flags %#x", fd,
	       oo->open_flags);
	if (fd >= 0 && ftruncate(fd, 8192) == 0)
		pool_zero_copy_ops.reply_ready(&ent, &r);
	result("pool_zero_copy_min_takes_a_big_enough_file",
	       oo->open_flags == POOL_FOPEN_ZERO_COPY, "open_flags %#x",
	       oo->open_flags);
	if (fd >= 0) {
		close(fd);
		unlink(tmpl);
	}
	ret = parse(&o, err, "--mode=pool", "--zero-copy-min=1M", "/b", "/m",
		    NULL);
	result("options_zero_copy_min_needs_pool_zero_copy", ret == -EINVAL &&
	       strstr(err, "--zero-copy-min needs --mode=pool-zero-copy"),
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--mode=pool-zero-copy", "--zero-copy-min=1M",
		    "/b", "/m", NULL);
	result("options_zero_copy_min_parses", !ret &&
	       o.zero_copy_min == 1 << 20, "ret=%d err=%s", ret, err);

	/* TMPFILE's reply is CREATE's: fuse_entry_out, then fuse_open_out */
	o = (struct srv_opts){ .mode = SRV_MODE_POOL_ZERO_COPY };
	memset(out, 0, sizeof(out));
	in.opcode = FUSE_TMPFILE;
	r.out_len = sizeof(struct fuse_entry_out) + sizeof(*co);
	pool_zero_copy_ops.reply_ready(&ent, &r);
	result("pool_zero_copy_tmpfile_reply_opts_in",
	       co->open_flags == POOL_FOPEN_ZERO_COPY, "open_flags %#x",
	       co->open_flags);

	/* ADD_BUFPOOL's len is 32 bits: refused before any memory is taken */
	ret = parse(&o, err, "--mode=pool", "--nbufs=4096", "/b", "/m", NULL);
	ret = ret ? ret : preflight(&o, 2, 4096);
	EXPECT_INT("preflight_refuses_a_4_gib_pool", -E2BIG, ret);
	ret = parse(&o, err, "--mode=pool", "--nbufs=4095", "/b", "/m", NULL);
	ret = ret ? ret : preflight(&o, 2, 4096);
	EXPECT_INT("preflight_takes_a_pool_below_4_gib", 0, ret);
	result("zero_copy_slots_v2_at_id_7_3_after_the_pool",
	       zero_copy_ops.zero_copy_slot0 == 0 &&
	       pool_zero_copy_ops.zero_copy_slot0 == 1, "v2 %u, 7.3 %u",
	       zero_copy_ops.zero_copy_slot0, pool_zero_copy_ops.zero_copy_slot0);
}

static void test_modes(void)
{
	static const struct {
		const char *arg;
		enum srv_mode mode;
		uint64_t flags;
	} ladder[] = {
		{ "--mode=iovec", SRV_MODE_IOVEC, 0 },
		{ "--mode=bufring", SRV_MODE_BUFRING, FUSE_URING_BUFRING },
		{ "--mode=pinned-headers", SRV_MODE_PINNED_HEADERS,
		  FUSE_URING_BUFRING | FUSE_URING_PINNED_HEADERS },
		{ "--mode=pinned-buffers", SRV_MODE_PINNED_BUFFERS,
		  FUSE_URING_BUFRING | FUSE_URING_PINNED_HEADERS |
		  FUSE_URING_PINNED_BUFFERS },
		{ "--mode=zero-copy", SRV_MODE_ZERO_COPY,
		  FUSE_URING_BUFRING | FUSE_URING_PINNED_HEADERS |
		  FUSE_URING_PINNED_BUFFERS | FUSE_URING_ZERO_COPY },
	};
	struct srv_opts o;
	char err[256], name[64];
	int ret;

	for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]); i++) {
		ret = parse(&o, err, ladder[i].arg, "/b", "/m", NULL);
		snprintf(name, sizeof(name), "mode_%s_parses_and_flags",
			 ladder[i].arg + 7);
		result(name, !ret && o.mode == ladder[i].mode &&
		       mode_register_flags(o.mode) == ladder[i].flags &&
		       !strcmp(mode_name(o.mode), ladder[i].arg + 7),
		       "ret=%d err=%s flags=%#llx", ret, err,
		       (unsigned long long)mode_register_flags(o.mode));
	}
	result("modes_above_bufring_use_bufring",
	       mode_uses_bufring(SRV_MODE_PINNED_HEADERS) &&
	       mode_uses_bufring(SRV_MODE_ZERO_COPY), "wrong");
	result("pinned_headers_pins_no_buffers",
	       mode_pins_headers(SRV_MODE_PINNED_HEADERS) &&
	       !mode_pins_buffers(SRV_MODE_PINNED_HEADERS) &&
	       !mode_pins_headers(SRV_MODE_BUFRING), "wrong");
	ret = parse(&o, err, "--mode=pinned-buffers", "--nbufs=2", "/b", "/m",
		    NULL);
	result("options_nbufs_with_pinned_buffers", !ret && o.nbufs == 2,
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--mode=zero-copy", "/b", "/m", NULL);
	result("options_zero_copy_nbufs_default_depth",
	       !ret && o.nbufs == SRV_DEFAULT_QUEUE_DEPTH && !o.fallback,
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "/b", "/m", NULL);
	result("options_allow_other_is_off_by_default", !ret && !o.allow_other,
	       "ret=%d", ret);
	ret = parse(&o, err, "--allow-other", "/b", "/m", NULL);
	result("options_allow_other", !ret && o.allow_other, "ret=%d err=%s",
	       ret, err);
	ret = parse(&o, err, "--fallback", "--mode=zero-copy", "/b", "/m",
		    NULL);
	result("options_fallback_with_zero_copy", !ret && o.fallback,
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--mode=pinned-buffers", "--fallback", "/b",
		    "/m", NULL);
	result("options_fallback_with_pinned_buffers", !ret && o.fallback,
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--mode=bufring", "--fallback", "/b", "/m", NULL);
	result("options_fallback_needs_a_pinned_or_zero_copy_mode",
	       ret == -EINVAL && strstr(err, "--fallback needs --mode=pinned-headers"),
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--mode=pool-fixed", "--fallback", "/b", "/m",
		    NULL);
	EXPECT_INT("options_fallback_not_with_pool_fixed", -EINVAL, ret);

	ret = parse(&o, err, "--mode=zero-copy", "/b", "/m", NULL);
	result("options_zero_copy_links_by_default", !ret && !o.unlinked,
	       "ret=%d unlinked=%d", ret, o.unlinked);
	ret = parse(&o, err, "--mode=zero-copy", "--unlinked", "/b", "/m",
		    NULL);
	result("options_unlinked_with_zero_copy", !ret && o.unlinked,
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--unlinked", "--mode=pinned-buffers", "/b", "/m",
		    NULL);
	result("options_unlinked_needs_zero_copy",
	       ret == -EINVAL && strstr(err, "--unlinked needs --mode=zero-copy"),
	       "ret=%d err=%s", ret, err);

	/* zero-copy without CAP_SYS_ADMIN: refuse, or step down with --fallback */
	parse(&o, err, "--mode=zero-copy", "/b", "/m", NULL);
	result("zero_copy_with_cap_sys_admin_stays",
	       zero_copy_decide(&o, true) == 0 && o.mode == SRV_MODE_ZERO_COPY,
	       "mode %s", mode_name(o.mode));
	EXPECT_INT("zero_copy_without_cap_eperm", -EPERM,
		   zero_copy_decide(&o, false));
	o.fallback = true;
	result("zero_copy_without_cap_falls_back_to_pinned_buffers",
	       zero_copy_decide(&o, false) == 0 &&
	       o.mode == SRV_MODE_PINNED_BUFFERS, "mode %s", mode_name(o.mode));
	parse(&o, err, "--mode=pinned-buffers", "/b", "/m", NULL);
	EXPECT_INT("pinned_buffers_needs_no_cap", 0, zero_copy_decide(&o, false));

	/* the rung after a refused REGISTER on the live connection */
	EXPECT_INT("register_fallback_zero_copy_eperm_pinned_buffers",
		   SRV_MODE_PINNED_BUFFERS,
		   register_fallback(SRV_MODE_ZERO_COPY, -EPERM));
	EXPECT_INT("register_fallback_pinned_enomem_bufring", SRV_MODE_BUFRING,
		   register_fallback(SRV_MODE_PINNED_BUFFERS, -ENOMEM));
	EXPECT_INT("register_fallback_zero_copy_enomem_bufring", SRV_MODE_BUFRING,
		   register_fallback(SRV_MODE_ZERO_COPY, -ENOMEM));
	EXPECT_INT("register_fallback_none_after_einval", SRV_MODE_AUTO,
		   register_fallback(SRV_MODE_PINNED_BUFFERS, -EINVAL));
	EXPECT_INT("register_fallback_none_for_bufring", SRV_MODE_AUTO,
		   register_fallback(SRV_MODE_BUFRING, -ENOMEM));
	EXPECT_INT("register_fallback_none_on_7_3", SRV_MODE_AUTO,
		   register_fallback(SRV_MODE_POOL_ZERO_COPY, -EPERM));
}

static void test_pinned_bytes(void)
{
	struct srv_opts o;
	char err[256], msg[512];
	uint64_t need;

	EXPECT_INT("page_round_up_exact", 8192, page_round_up(8192, 4096));
	EXPECT_INT("page_round_up_partial", 8192, page_round_up(4097, 4096));
	EXPECT_INT("page_round_up_zero", 0, page_round_up(0, 4096));

	/* 8 entries x 288 B = 2304 B: one page; 8 buffers of 1 MiB */
	parse(&o, err, "--mode=pinned-buffers", "/b", "/m", NULL);
	result("pinned_buffers_queue_bytes",
	       pinned_queue_headers_bytes(&o, 4096) == 4096 &&
	       pinned_queue_payload_bytes(&o, 4096) == 8 << 20,
	       "headers %zu payload %zu", pinned_queue_headers_bytes(&o, 4096),
	       pinned_queue_payload_bytes(&o, 4096));
	EXPECT_INT("pinned_buffers_total_two_queues", 2 * (4096 + (8 << 20)),
		   pinned_total_bytes(&o, 2, 4096));
	parse(&o, err, "--mode=zero-copy", "--nbufs=2", "--payload-size=128K",
	      "/b", "/m", NULL);
	EXPECT_INT("zero_copy_pins_like_pinned_buffers", 3 * (4096 + 262144),
		   pinned_total_bytes(&o, 3, 4096));
	parse(&o, err, "--mode=pinned-headers", "--queue-depth=15", "/b", "/m",
	      NULL);
	/* 15 x 288 = 4320 B: two pages, and no payload */
	EXPECT_INT("pinned_headers_two_pages_no_payload", 2 * 8192,
		   pinned_total_bytes(&o, 2, 4096));
	parse(&o, err, "--mode=bufring", "/b", "/m", NULL);
	EXPECT_INT("bufring_pins_nothing", 0, pinned_total_bytes(&o, 2, 4096));
	parse(&o, err, "--mode=pinned-buffers", "--queue-depth=1024",
	      "--nbufs=65535", "--payload-size=16M", "/b", "/m", NULL);
	EXPECT_INT("pinned_bytes_no_overflow",
		   64ULL * (294912 + ((uint64_t)65535 << 24)),
		   pinned_total_bytes(&o, 64, 4096));

	/* the kernel compares pages: limit >> PAGE_SHIFT */
	result("memlock_exact_limit_allows", memlock_allows(8192, 8192, 4096),
	       "refused");
	result("memlock_one_byte_short_refuses",
	       !memlock_allows(8192, 8191, 4096), "allowed");
	result("memlock_limit_rounds_down_to_pages",
	       memlock_allows(8192, 12287, 4096) &&
	       !memlock_allows(12288, 12287, 4096), "wrong");
	result("memlock_infinity_allows",
	       memlock_allows(1ULL << 40, (uint64_t)RLIM_INFINITY, 4096),
	       "refused");
	result("memlock_nothing_needed_allows", memlock_allows(0, 0, 4096),
	       "refused");

	parse(&o, err, "--mode=pinned-buffers", "/b", "/m", NULL);
	need = pinned_total_bytes(&o, 2, 4096);
	memlock_message(msg, sizeof(msg), &o, 2, 4096, 65536);
	result("memlock_message_says_how_much_and_how",
	       strstr(msg, "--mode=pinned-buffers pins 16785408 B") &&
	       strstr(msg, "2 queues x (headers 4096 B + payload 8388608 B)") &&
	       strstr(msg, "RLIMIT_MEMLOCK is 65536 B") &&
	       strstr(msg, "'ulimit -l 16392'") &&
	       strstr(msg, "CAP_IPC_LOCK") && need == 16785408,
	       "%s", msg);
}

static void test_cpu_list(void)
{
	EXPECT_INT("cpu_list_range", 2, cpu_list_count("0-1\n"));
	EXPECT_INT("cpu_list_single", 1, cpu_list_count("0\n"));
	EXPECT_INT("cpu_list_mixed", 7, cpu_list_count("0-3,8,10-11"));
	EXPECT_INT("cpu_list_empty_einval", -EINVAL, cpu_list_count("\n"));
	EXPECT_INT("cpu_list_backwards_einval", -EINVAL, cpu_list_count("3-1"));
	EXPECT_INT("cpu_list_garbage_einval", -EINVAL, cpu_list_count("x"));
}

/* ---- the handlers, on a temporary backing directory ------------------- */

static char reqbuf[1 << 16] __attribute__((aligned(8)));
static char outbuf[1 << 16] __attribute__((aligned(8)));

/* The reply buffer a handler gets: all of outbuf, unless a case says less. */
static size_t out_cap = sizeof(outbuf);

/* Who the requests come from (fuse_in_header's uid and gid), and how many
 * 8-byte units at the end of the data are extensions (total_extlen). */
static uint32_t caller_uid, caller_gid;
static uint16_t caller_extlen;

/* Build a /dev/fuse-style request, parse it, dispatch it. */
static int call(uint32_t opcode, uint64_t nodeid, const void *arg,
		size_t arg_len, const void *data, size_t data_len,
		struct srv_req *r)
{
	size_t n;
	int err;

	n = make_dev_req(reqbuf, opcode, arg, arg_len, data, data_len);
	((struct fuse_in_header *)reqbuf)->nodeid = nodeid;
	((struct fuse_in_header *)reqbuf)->uid = caller_uid;
	((struct fuse_in_header *)reqbuf)->gid = caller_gid;
	((struct fuse_in_header *)reqbuf)->total_extlen = caller_extlen;
	err = parse_dev_request(reqbuf, n, r);
	if (err)
		return err;
	r->out = outbuf;
	r->out_size = out_cap;
	return srv_dispatch(r);
}

static void test_handlers(void)
{
	char dir[] = "/tmp/fuse-uring-unit-XXXXXX";
	struct fuse_create_in ci = { .flags = O_RDWR, .mode = S_IFREG | 0644 };
	struct fuse_entry_out e;
	struct fuse_open_out oo;
	struct fuse_write_in wi = { .size = 11 };
	struct fuse_read_in ri = { .size = 100 };
	struct fuse_mkdir_in mi = { .mode = 0755 };
	struct fuse_rename_in rn = { .newdir = FUSE_ROOT_ID };
	struct fuse_release_in rel = { 0 };
	struct fuse_forget_in fi = { .nlookup = 1 };
	struct srv_req r;
	char names[64], path[128];
	uint64_t file_node;
	int err;

	if (!mkdtemp(dir) || ops_init(dir)) {
		result("handlers_setup", false, "mkdtemp/ops_init failed");
		return;
	}

	err = call(FUSE_CREATE, FUSE_ROOT_ID, &ci, sizeof(ci), "f\0", 2, &r);
	memcpy(&e, outbuf, sizeof(e));
	memcpy(&oo, outbuf + sizeof(e), sizeof(oo));
	result("create_replies_entry_and_open",
	       !err && r.out_len == sizeof(e) + sizeof(oo) && e.nodeid > 1 &&
	       S_ISREG(e.attr.mode) && (e.attr.mode & 0777) == 0644,
	       "err=%d out_len=%zu mode=%o", err, r.out_len, e.attr.mode);
	file_node = e.nodeid;

	wi.fh = oo.fh;
	err = call(FUSE_WRITE, file_node, &wi, sizeof(wi), "hello world", 11, &r);
	result("write_returns_size", !err &&
	       ((struct fuse_write_out *)outbuf)->size == 11,
	       "err=%d", err);

	ri.fh = oo.fh;
	err = call(FUSE_READ, file_node, &ri, sizeof(ri), NULL, 0, &r);
	result("read_returns_written_bytes", !err && r.out_len == 11 &&
	       !memcmp(outbuf, "hello world", 11), "err=%d out_len=%zu",
	       err, r.out_len);

	rel.fh = oo.fh;
	err = call(FUSE_RELEASE, file_node, &rel, sizeof(rel), NULL, 0, &r);
	EXPECT_INT("release_ok", 0, err);

	err = call(FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "f\0", 2, &r);
	result("lookup_same_file_same_nodeid",
	       !err && ((struct fuse_entry_out *)outbuf)->nodeid == file_node &&
	       ((struct fuse_entry_out *)outbuf)->attr.size == 11,
	       "err=%d", err);
	/* libfuse's default: a missing name is not cached */
	EXPECT_INT("lookup_missing_enoent", -ENOENT,
		   call(FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "nope\0", 5, &r));
	/* with --timeout, it is: a negative entry, nodeid 0 */
	ops_set_timeouts(60, 60);
	err = call(FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "nope\0", 5, &r);
	result("lookup_missing_with_timeout_negative_entry",
	       !err && ((struct fuse_entry_out *)outbuf)->nodeid == 0 &&
	       ((struct fuse_entry_out *)outbuf)->entry_valid == 60,
	       "err=%d", err);
	ops_set_timeouts(SRV_DEFAULT_TIMEOUT, 0);

	EXPECT_INT("mkdir_ok", 0,
		   call(FUSE_MKDIR, FUSE_ROOT_ID, &mi, sizeof(mi), "d\0", 2, &r));
	EXPECT_INT("mkdir_existing_eexist", -EEXIST,
		   call(FUSE_MKDIR, FUSE_ROOT_ID, &mi, sizeof(mi), "d\0", 2, &r));

	/* the namespace: symlink, readlink, link, mknod */
	err = call(FUSE_SYMLINK, FUSE_ROOT_ID, NULL, 0, "s\0f\0", 4, &r);
	result("symlink_replies_a_link_entry",
	       !err && S_ISLNK(((struct fuse_entry_out *)outbuf)->attr.mode),
	       "err=%d", err);
	err = call(FUSE_READLINK, ((struct fuse_entry_out *)outbuf)->nodeid,
		   NULL, 0, NULL, 0, &r);
	result("readlink_returns_target_without_nul",
	       !err && r.out_len == 1 && outbuf[0] == 'f', "err=%d out_len=%zu",
	       err, r.out_len);
	EXPECT_INT("symlink_existing_eexist", -EEXIST,
		   call(FUSE_SYMLINK, FUSE_ROOT_ID, NULL, 0, "s\0x\0", 4, &r));
	{
		struct fuse_link_in li = { .oldnodeid = file_node };
		struct stat st;

		err = call(FUSE_LINK, FUSE_ROOT_ID, &li, sizeof(li), "h\0", 2, &r);
		snprintf(path, sizeof(path), "%s/h", dir);
		result("link_makes_a_second_name",
		       !err && ((struct fuse_entry_out *)outbuf)->nodeid == file_node &&
		       ((struct fuse_entry_out *)outbuf)->attr.nlink == 2 &&
		       stat(path, &st) == 0 && st.st_nlink == 2,
		       "err=%d", err);
	}
	{
		struct fuse_mknod_in mn = { .mode = S_IFIFO | 0600 };
		struct stat st;

		err = call(FUSE_MKNOD, FUSE_ROOT_ID, &mn, sizeof(mn), "p\0", 2, &r);
		snprintf(path, sizeof(path), "%s/p", dir);
		result("mknod_makes_a_fifo",
		       !err && S_ISFIFO(((struct fuse_entry_out *)outbuf)->attr.mode) &&
		       lstat(path, &st) == 0 && S_ISFIFO(st.st_mode),
		       "err=%d", err);
		EXPECT_INT("mknod_existing_eexist", -EEXIST,
			   call(FUSE_MKNOD, FUSE_ROOT_ID, &mn, sizeof(mn), "p\0", 2, &r));
	}
	/* extended attributes, where the backing file system has user.* */
	snprintf(path, sizeof(path), "%s/f", dir);
	if (setxattr(path, "user.probe", "1", 1, 0) < 0) {
		skip("xattr_handlers", "the backing file system has no user.* xattrs");
	} else {
		struct fuse_setxattr_in si = { .size = 5 };
		struct fuse_getxattr_in gi = { .size = 0 };
		char val[32];

		removexattr(path, "user.probe");
		memcpy(names, "user.k\0hello", 12);
		EXPECT_INT("setxattr_ok", 0, call(FUSE_SETXATTR, file_node, &si,
			   FUSE_COMPAT_SETXATTR_IN_SIZE, names, 12, &r));
		result("setxattr_reached_the_backing_file",
		       getxattr(path, "user.k", val, sizeof(val)) == 5 &&
		       !memcmp(val, "hello", 5), "backing value wrong");
		err = call(FUSE_GETXATTR, file_node, &gi, sizeof(gi), "user.k\0", 7, &r);
		result("getxattr_size_0_asks_the_size", !err &&
		       ((struct fuse_getxattr_out *)outbuf)->size == 5,
		       "err=%d", err);
		gi.size = 32;
		err = call(FUSE_GETXATTR, file_node, &gi, sizeof(gi), "user.k\0", 7, &r);
		result("getxattr_returns_the_value", !err && r.out_len == 5 &&
		       !memcmp(outbuf, "hello", 5), "err=%d out_len=%zu", err,
		       r.out_len);
		gi.size = 2;
		EXPECT_INT("getxattr_too_small_erange", -ERANGE,
			   call(FUSE_GETXATTR, file_node, &gi, sizeof(gi), "user.k\0", 7, &r));
		gi.size = 32;
		out_cap = 2;	/* a reply buffer smaller than the value */
		EXPECT_INT("getxattr_fits_size_not_the_buffer_e2big", -E2BIG,
			   call(FUSE_GETXATTR, file_node, &gi, sizeof(gi), "user.k\0", 7, &r));
		out_cap = sizeof(outbuf);
		gi.size = 64;
		err = call(FUSE_LISTXATTR, file_node, &gi, sizeof(gi), NULL, 0, &r);
		result("listxattr_lists_it", !err && r.out_len == 7 &&
		       !memcmp(outbuf, "user.k", 7), "err=%d out_len=%zu", err,
		       r.out_len);
		EXPECT_INT("removexattr_ok", 0,
			   call(FUSE_REMOVEXATTR, file_node, NULL, 0, "user.k\0", 7, &r));
		gi.size = 32;
		EXPECT_INT("getxattr_removed_enodata", -ENODATA,
			   call(FUSE_GETXATTR, file_node, &gi, sizeof(gi), "user.k\0", 7, &r));
		si.size = 100;	/* more than came */
		EXPECT_INT("setxattr_value_past_the_data_einval", -EINVAL,
			   call(FUSE_SETXATTR, file_node, &si,
				FUSE_COMPAT_SETXATTR_IN_SIZE, names, 12, &r));
	}

	EXPECT_INT("unlink_symlink_ok", 0,
		   call(FUSE_UNLINK, FUSE_ROOT_ID, NULL, 0, "s\0", 2, &r));
	EXPECT_INT("unlink_second_name_ok", 0,
		   call(FUSE_UNLINK, FUSE_ROOT_ID, NULL, 0, "h\0", 2, &r));
	EXPECT_INT("unlink_fifo_ok", 0,
		   call(FUSE_UNLINK, FUSE_ROOT_ID, NULL, 0, "p\0", 2, &r));

	memcpy(names, "f\0g\0", 4);
	EXPECT_INT("rename_ok", 0,
		   call(FUSE_RENAME, FUSE_ROOT_ID, &rn, sizeof(rn), names, 4, &r));
	snprintf(path, sizeof(path), "%s/g", dir);
	result("rename_moved_backing_file", access(path, F_OK) == 0,
	       "%s missing", path);

	EXPECT_INT("rmdir_ok", 0,
		   call(FUSE_RMDIR, FUSE_ROOT_ID, NULL, 0, "d\0", 2, &r));
	EXPECT_INT("rmdir_missing_enoent", -ENOENT,
		   call(FUSE_RMDIR, FUSE_ROOT_ID, NULL, 0, "d\0", 2, &r));
	EXPECT_INT("unlink_ok", 0,
		   call(FUSE_UNLINK, FUSE_ROOT_ID, NULL, 0, "g\0", 2, &r));

	/* two lookups (CREATE, LOOKUP) to forget */
	fi.nlookup = 2;
	err = call(FUSE_FORGET, file_node, &fi, sizeof(fi), NULL, 0, &r);
	EXPECT_INT("forget_ok", 0, err);

	err = call(FUSE_STATFS, FUSE_ROOT_ID, NULL, 0, NULL, 0, &r);
	result("statfs_replies", !err && r.out_len ==
	       sizeof(struct fuse_statfs_out) &&
	       ((struct fuse_statfs_out *)outbuf)->st.bsize > 0,
	       "err=%d", err);

	ops_destroy();
	rmdir(dir);
}

/* CREATE a file named name in the root; its nodeid, and its fh in *fh. */
static uint64_t create_file(const char *name, uint64_t *fh)
{
	struct fuse_create_in ci = { .flags = O_RDWR, .mode = S_IFREG | 0644 };
	struct srv_req r;

	if (call(FUSE_CREATE, FUSE_ROOT_ID, &ci, sizeof(ci), name,
		 strlen(name) + 1, &r))
		return 0;
	*fh = ((struct fuse_open_out *)(outbuf + sizeof(struct fuse_entry_out)))->fh;
	return ((struct fuse_entry_out *)outbuf)->nodeid;
}

/* FALLOCATE, LSEEK, COPY_FILE_RANGE(_64), STATX, RENAME2's flags, TMPFILE. */
static void test_file_ops(void)
{
	char dir[] = "/tmp/fuse-uring-unit-XXXXXX";
	char path[128], buf[8192];
	uint64_t a, b, fha, fhb;
	struct srv_req r;
	struct stat st;
	int err;

	if (!mkdtemp(dir) || ops_init(dir)) {
		result("file_ops_setup", false, "mkdtemp/ops_init failed");
		return;
	}
	a = create_file("a", &fha);
	b = create_file("b", &fhb);
	snprintf(path, sizeof(path), "%s/a", dir);

	{
		struct fuse_write_in wi = { .fh = fha, .size = 5 };

		EXPECT_INT("write_before_the_file_ops_ok", 0,
			   call(FUSE_WRITE, a, &wi, sizeof(wi), "abcde", 5, &r));
	}
	{
		struct fuse_fallocate_in fa = { .fh = fha, .length = 8192 };

		EXPECT_INT("fallocate_ok", 0,
			   call(FUSE_FALLOCATE, a, &fa, sizeof(fa), NULL, 0, &r));
		result("fallocate_grew_the_backing_file",
		       stat(path, &st) == 0 && st.st_size == 8192,
		       "size %lld", (long long)st.st_size);
		fa.mode = 1u << 30;	/* no FALLOC_FL_ has this bit */
		EXPECT_INT("fallocate_unknown_mode_eopnotsupp", -EOPNOTSUPP,
			   call(FUSE_FALLOCATE, a, &fa, sizeof(fa), NULL, 0, &r));
	}
	{
		/* data at 0 (5 bytes written); the rest, allocated but never
		 * written, is data or hole as the backing file system decides;
		 * past the end is -ENXIO */
		struct fuse_lseek_in ls = { .fh = fha, .offset = 1, .whence = SEEK_DATA };
		uint64_t off;

		memset(outbuf, 0xff, 8);	/* a reply must overwrite it */
		err = call(FUSE_LSEEK, a, &ls, sizeof(ls), NULL, 0, &r);
		off = ((struct fuse_lseek_out *)outbuf)->offset;
		result("lseek_data_finds_the_written_bytes", !err &&
		       r.out_len == sizeof(struct fuse_lseek_out) && off == 1,
		       "err=%d offset=%llu", err, (unsigned long long)off);
		ls.whence = SEEK_HOLE;
		memset(outbuf, 0xff, 8);
		err = call(FUSE_LSEEK, a, &ls, sizeof(ls), NULL, 0, &r);
		off = ((struct fuse_lseek_out *)outbuf)->offset;
		result("lseek_hole_after_the_written_bytes", !err &&
		       r.out_len == sizeof(struct fuse_lseek_out) &&
		       off >= 5 && off <= 8192,
		       "err=%d offset=%llu", err, (unsigned long long)off);
		ls.offset = 9000;
		EXPECT_INT("lseek_data_past_the_end_enxio", -ENXIO,
			   call(FUSE_LSEEK, a, &ls, sizeof(ls), NULL, 0, &r));
	}
	{
		struct fuse_copy_file_range_in cp = {
			.fh_in = fha, .off_in = 0, .nodeid_out = b, .fh_out = fhb,
			.off_out = 100, .len = 5,
		};
		int fd;

		err = call(FUSE_COPY_FILE_RANGE_64, a, &cp, sizeof(cp), NULL, 0, &r);
		result("copy_file_range_64_counts_64_bits", !err &&
		       r.out_len == sizeof(struct fuse_copy_file_range_out) &&
		       ((struct fuse_copy_file_range_out *)outbuf)->bytes_copied == 5,
		       "err=%d out_len=%zu", err, r.out_len);
		cp.off_out = 200;
		err = call(FUSE_COPY_FILE_RANGE, a, &cp, sizeof(cp), NULL, 0, &r);
		result("copy_file_range_counts_in_fuse_write_out", !err &&
		       r.out_len == sizeof(struct fuse_write_out) &&
		       ((struct fuse_write_out *)outbuf)->size == 5,
		       "err=%d out_len=%zu", err, r.out_len);
		snprintf(path, sizeof(path), "%s/b", dir);
		fd = open(path, O_RDONLY);
		result("copy_file_range_copied_the_bytes", fd >= 0 &&
		       pread(fd, buf, 5, 100) == 5 && !memcmp(buf, "abcde", 5) &&
		       pread(fd, buf, 5, 200) == 5 && !memcmp(buf, "abcde", 5),
		       "b does not hold abcde at 100 and 200");
		if (fd >= 0)
			close(fd);
		cp.len = (uint64_t)UINT32_MAX + 1;
		EXPECT_INT("copy_file_range_len_over_32_bits_einval", -EINVAL,
			   call(FUSE_COPY_FILE_RANGE, a, &cp, sizeof(cp), NULL, 0, &r));
	}
	{
		struct fuse_statx_in sx = { .sx_mask = STATX_BASIC_STATS | STATX_BTIME };
		struct fuse_statx *f = &((struct fuse_statx_out *)outbuf)->stat;

		err = call(FUSE_STATX, a, &sx, sizeof(sx), NULL, 0, &r);
		snprintf(path, sizeof(path), "%s/a", dir);
		stat(path, &st);
		result("statx_replies_the_backing_stats", !err &&
		       r.out_len == sizeof(struct fuse_statx_out) &&
		       (f->mask & STATX_BASIC_STATS) == STATX_BASIC_STATS &&
		       f->ino == st.st_ino && f->size == (uint64_t)st.st_size &&
		       f->mode == st.st_mode && f->nlink == 1,
		       "err=%d mask=%#x", err, f->mask);
	}
	{
		/* the names b and c, one each way */
		struct fuse_rename2_in rn = { .newdir = FUSE_ROOT_ID,
					      .flags = RENAME_NOREPLACE };
		uint64_t c, fhc;

		EXPECT_INT("rename2_noreplace_existing_eexist", -EEXIST,
			   call(FUSE_RENAME2, FUSE_ROOT_ID, &rn, sizeof(rn), "a\0b\0", 4, &r));
		c = create_file("c", &fhc);
		rn.flags = RENAME_EXCHANGE;
		EXPECT_INT("rename2_exchange_ok", 0,
			   call(FUSE_RENAME2, FUSE_ROOT_ID, &rn, sizeof(rn), "a\0c\0", 4, &r));
		err = call(FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "c\0", 2, &r);
		result("rename2_exchange_swapped_the_names", !err && c &&
		       ((struct fuse_entry_out *)outbuf)->nodeid == a,
		       "err=%d", err);
		close((int)fhc);
	}
	{
		/* O_TMPFILE: a nameless file, then LINK gives it one */
		struct fuse_create_in ci = { .flags = O_RDWR, .mode = S_IFREG | 0600 };
		struct fuse_open_out *o = (void *)(outbuf + sizeof(struct fuse_entry_out));
		uint64_t t, fht;
		struct fuse_link_in li;
		char back[8] = "";
		int fd;

		err = call(FUSE_TMPFILE, FUSE_ROOT_ID, &ci, sizeof(ci), "/\0", 2, &r);
		t = ((struct fuse_entry_out *)outbuf)->nodeid;
		fht = o->fh;
		result("tmpfile_replies_entry_and_open", !err &&
		       r.out_len == sizeof(struct fuse_entry_out) + sizeof(*o) &&
		       t > 1 && ((struct fuse_entry_out *)outbuf)->attr.nlink == 0,
		       "err=%d out_len=%zu", err, r.out_len);
		if (!err) {
			if (pwrite((int)fht, "tmp", 3, 0) != 3)
				result("tmpfile_write", false, "pwrite failed");
			li.oldnodeid = t;
			EXPECT_INT("tmpfile_linked_in_ok", 0,
				   call(FUSE_LINK, FUSE_ROOT_ID, &li, sizeof(li), "t\0", 2, &r));
			snprintf(path, sizeof(path), "%s/t", dir);
			fd = open(path, O_RDONLY);
			result("tmpfile_has_its_name_and_data", fd >= 0 &&
			       read(fd, back, sizeof(back)) == 3 && !memcmp(back, "tmp", 3),
			       "%s: %s", path, back);
			if (fd >= 0)
				close(fd);
			close((int)fht);
		}
	}
	close((int)fha);
	close((int)fhb);
	ops_destroy();
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	err = system(path);
	(void)err;
}

static int unit_groups;	/* the test process's own supplementary groups */

/*
 * A root server makes new names as the caller, and the caller's lack of
 * rights comes back by value, with nothing left behind.
 */
static void test_caller_identity(void)
{
	char dir[] = "/tmp/fuse-uring-unit-XXXXXX";
	struct fuse_mkdir_in mi = { .mode = 0755 };
	struct fuse_mknod_in mn = { .mode = S_IFCHR | 0600, .rdev = 0x0103 };
	char path[128], name[300];
	struct srv_req r;
	struct stat st = { 0 };
	uint64_t fh = 0;

	if (geteuid() != 0) {
		skip("caller_identity", "needs root (a root server acts as the caller)");
		return;
	}
	unit_groups = getgroups(0, NULL);
	if (!mkdtemp(dir) || chmod(dir, 0777) || ops_init(dir)) {
		result("caller_identity_setup", false, "mkdtemp/ops_init failed");
		return;
	}
	caller_uid = 65534;
	caller_gid = 65533;
	create_file("f", &fh);
	snprintf(path, sizeof(path), "%s/f", dir);
	result("create_as_the_caller", stat(path, &st) == 0 &&
	       st.st_uid == 65534 && st.st_gid == 65533,
	       "owner %u:%u", st.st_uid, st.st_gid);
	close((int)fh);
	EXPECT_INT("mkdir_as_the_caller_ok", 0,
		   call(FUSE_MKDIR, FUSE_ROOT_ID, &mi, sizeof(mi), "d\0", 2, &r));
	snprintf(path, sizeof(path), "%s/d", dir);
	result("mkdir_as_the_caller", stat(path, &st) == 0 &&
	       st.st_uid == 65534 && st.st_gid == 65533,
	       "owner %u:%u", st.st_uid, st.st_gid);
	EXPECT_INT("symlink_as_the_caller_ok", 0,
		   call(FUSE_SYMLINK, FUSE_ROOT_ID, NULL, 0, "s\0missing\0", 10, &r));
	snprintf(path, sizeof(path), "%s/s", dir);
	result("symlink_as_the_caller_dangling_is_fine",
	       lstat(path, &st) == 0 && st.st_uid == 65534,
	       "owner %u", st.st_uid);
	EXPECT_INT("mknod_device_without_the_privilege_eperm", -EPERM,
		   call(FUSE_MKNOD, FUSE_ROOT_ID, &mn, sizeof(mn), "c\0", 2, &r));
	snprintf(path, sizeof(path), "%s/c", dir);
	result("mknod_refused_left_nothing", lstat(path, &st) < 0 && errno == ENOENT,
	       "%s exists", path);
	result("the_server_is_root_again", setfsuid((uid_t)-1) == 0 &&
	       setfsgid((gid_t)-1) == 0, "fsuid %d", setfsuid((uid_t)-1));
	caller_uid = caller_gid = 0;

	/*
	 * A group-writable directory of group 4242, which the caller has only
	 * as a supplementary group: the kernel says so with a FUSE_EXT_GROUPS
	 * extension after the name (FUSE_CREATE_SUPP_GROUP). Without it the
	 * backing file system refuses, with it the file is made.
	 */
	{
		struct fuse_mkdir_in shared = { .mode = 0770 };
		struct {
			char name[8];
			struct fuse_ext_header xh;
			struct fuse_supp_groups sg;
			uint32_t group;
		} in = { "f", { 16, FUSE_EXT_GROUPS }, { 1 }, 4242 };
		uint64_t grp;

		caller_uid = caller_gid = 0;
		call(FUSE_MKDIR, FUSE_ROOT_ID, &shared, sizeof(shared), "g\0", 2, &r);
		grp = ((struct fuse_entry_out *)outbuf)->nodeid;
		snprintf(path, sizeof(path), "%s/g", dir);
		if (chown(path, 0, 4242) || chmod(path, 0770))
			result("supp_group_setup", false, "chown %s", path);
		caller_uid = 65534;
		caller_gid = 65533;
		EXPECT_INT("create_in_a_group_dir_without_the_group_eacces", -EACCES,
			   call(FUSE_MKDIR, grp, &mi, sizeof(mi), "x\0", 2, &r));
		caller_extlen = 2;	/* the 16 bytes after the name */
		EXPECT_INT("create_with_the_dir_group_ok", 0,
			   call(FUSE_MKDIR, grp, &mi, sizeof(mi), &in, sizeof(in), &r));
		snprintf(path, sizeof(path), "%s/g/f", dir);
		memset(&st, 0, sizeof(st));
		result("create_with_the_dir_group_as_the_caller", stat(path, &st) == 0 &&
		       st.st_uid == 65534, "owner %u:%u", st.st_uid, st.st_gid);
		in.sg.nr_groups = 2;
		EXPECT_INT("create_with_a_bad_extension_einval", -EINVAL,
			   call(FUSE_MKDIR, grp, &mi, sizeof(mi), &in, sizeof(in), &r));
		caller_extlen = 0;
		result("the_server_has_its_own_groups_again",
		       getgroups(0, NULL) == unit_groups, "%d groups, was %d",
		       getgroups(0, NULL), unit_groups);
	}
	caller_uid = caller_gid = 0;

	/*
	 * Root without CAP_SETUID (a container's root, say): the switch does
	 * not take, and setfsuid() does not say so. The create must fail, not
	 * make a file that belongs to root. In a child, which can drop the
	 * capability without taking it from the rest of the tests.
	 */
	{
		pid_t pid = fork();
		int status = 0;

		if (pid == 0) {
			struct __user_cap_header_struct h = {
				_LINUX_CAPABILITY_VERSION_3, 0 };
			struct __user_cap_data_struct c[2];
			int err;

			if (syscall(SYS_capget, &h, c))
				_exit(2);
			c[0].effective &= ~((1u << CAP_SETUID) | (1u << CAP_SETGID));
			if (syscall(SYS_capset, &h, c))
				_exit(2);
			caller_uid = 65534;
			caller_gid = 65533;
			err = call(FUSE_MKNOD, FUSE_ROOT_ID, &(struct fuse_mknod_in){
				.mode = S_IFIFO | 0600 }, sizeof(struct fuse_mknod_in),
				"q\0", 2, &r);
			snprintf(path, sizeof(path), "%s/q", dir);
			_exit(err == -EPERM && lstat(path, &st) < 0 ? 0 : 1);
		}
		waitpid(pid, &status, 0);
		result("create_refused_when_the_switch_does_not_take",
		       WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "child status %#x (1: made the node, or not -EPERM)", status);
	}

	memset(name, 'n', 256);
	name[256] = '\0';
	EXPECT_INT("mkdir_name_too_long_enametoolong", -ENAMETOOLONG,
		   call(FUSE_MKDIR, FUSE_ROOT_ID, &mi, sizeof(mi), name, 257, &r));
	ops_destroy();
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path))
		result("caller_identity_cleanup", false, "rm -rf %s failed", dir);
}

/* READDIR lists what is there, and resumes at the offset it returned. */
static void test_readdir(void)
{
	char dir[] = "/tmp/fuse-uring-unit-XXXXXX";
	struct fuse_open_in oi = { .flags = O_RDONLY };
	struct fuse_read_in ri = { .size = 4096 };
	struct fuse_release_in rel = { 0 };
	struct srv_req r;
	char path[128];
	int seen = 0, calls = 0, err;
	size_t pos;

	if (!mkdtemp(dir) || ops_init(dir)) {
		result("readdir_setup", false, "mkdtemp/ops_init failed");
		return;
	}
	for (int i = 0; i < 20; i++) {
		snprintf(path, sizeof(path), "%s/entry-%02d", dir, i);
		close(open(path, O_CREAT | O_WRONLY, 0644));
	}
	err = call(FUSE_OPENDIR, FUSE_ROOT_ID, &oi, sizeof(oi), NULL, 0, &r);
	ri.fh = ((struct fuse_open_out *)outbuf)->fh;
	/* 100 bytes per call: a few entries each, so resuming is exercised */
	ri.size = 100;
	ri.offset = 0;
	while (!err && calls < 100) {
		err = call(FUSE_READDIR, FUSE_ROOT_ID, &ri, sizeof(ri), NULL, 0,
			   &r);
		calls++;
		if (err || r.out_len == 0)
			break;
		for (pos = 0; pos < r.out_len;) {
			struct fuse_dirent *d = (void *)(outbuf + pos);

			seen++;
			ri.offset = d->off;
			pos += FUSE_DIRENT_SIZE(d);
		}
	}
	/* 20 files, ".", ".." */
	result("readdir_all_entries_in_small_chunks", !err && seen == 22 &&
	       calls > 2, "err=%d seen=%d calls=%d", err, seen, calls);
	rel.fh = ri.fh;
	EXPECT_INT("releasedir_ok", 0,
		   call(FUSE_RELEASEDIR, FUSE_ROOT_ID, &rel, sizeof(rel), NULL,
			0, &r));
	ops_destroy();
	for (int i = 0; i < 20; i++) {
		snprintf(path, sizeof(path), "%s/entry-%02d", dir, i);
		unlink(path);
	}
	rmdir(dir);
}

/* --timeout: how long the kernel may cache; 0 is allowed, a bad value is not */
static void test_timeout_option(void)
{
	char err[256];
	struct srv_opts o;
	int ret;

	ret = parse(&o, err, "/b", "/m", NULL);
	EXPECT_INT("options_timeout_default_is_libfuses", SRV_DEFAULT_TIMEOUT,
		   ret ? -1 : (int)o.timeout);
	EXPECT_INT("options_no_negative_cache_by_default", 0,
		   ret ? -1 : (int)o.negative_timeout);
	ret = parse(&o, err, "--timeout=86400", "/b", "/m", NULL);
	EXPECT_INT("options_timeout_a_day", 86400, ret ? -1 : (int)o.timeout);
	EXPECT_INT("options_timeout_caches_missing_names_too", 86400,
		   ret ? -1 : (int)o.negative_timeout);
	ret = parse(&o, err, "--timeout=0", "/b", "/m", NULL);
	EXPECT_INT("options_timeout_zero_caches_nothing", 0,
		   ret ? -1 : (int)o.timeout);
	ret = parse(&o, err, "--timeout=86401", "/b", "/m", NULL);
	result("options_timeout_over_a_day_refused", ret == -EINVAL &&
	       strstr(err, "--timeout must be 0..86400 seconds, got '86401'"),
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--timeout=-1", "/b", "/m", NULL);
	result("options_timeout_negative_refused", ret == -EINVAL,
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--timeout=1s", "/b", "/m", NULL);
	result("options_timeout_with_a_unit_refused", ret == -EINVAL,
	       "ret=%d err=%s", ret, err);
}

/* ---- --ring-setup (ring-setup.c) ----------------------------------------- */

static void test_ring_setup_option(void)
{
	static const struct {
		const char *arg;
		enum srv_ring_setup rs;
		unsigned int flags;
	} setups[] = {
		{ "--ring-setup=plain", SRV_RING_PLAIN, IORING_SETUP_SQE128 },
		{ "--ring-setup=coop", SRV_RING_COOP, IORING_SETUP_SQE128 |
		  IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG },
		{ "--ring-setup=defer", SRV_RING_DEFER, IORING_SETUP_SQE128 |
		  IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN },
		{ "--ring-setup=sqpoll", SRV_RING_SQPOLL, IORING_SETUP_SQE128 |
		  IORING_SETUP_SQPOLL },
	};
	static const char *const modes[] = {
		"--mode=auto", "--mode=iovec", "--mode=bufring",
		"--mode=pinned-headers", "--mode=pinned-buffers",
		"--mode=zero-copy", "--mode=pool", "--mode=pool-fixed",
		"--mode=pool-zero-copy",
	};
	struct srv_opts o;
	char err[256], name[64];
	unsigned int refused = 0;
	int ret;

	ret = parse(&o, err, "/b", "/m", NULL);
	result("options_ring_setup_default_plain",
	       !ret && o.ring_setup == SRV_RING_PLAIN &&
	       ring_setup_flags(o.ring_setup) == IORING_SETUP_SQE128,
	       "ret=%d err=%s ring_setup=%d", ret, err, (int)o.ring_setup);
	for (size_t i = 0; i < sizeof(setups) / sizeof(setups[0]); i++) {
		ret = parse(&o, err, setups[i].arg, "/b", "/m", NULL);
		snprintf(name, sizeof(name), "options_ring_setup_%s",
			 ring_setup_name(setups[i].rs));
		result(name, !ret && o.ring_setup == setups[i].rs &&
		       ring_setup_flags(o.ring_setup) == setups[i].flags,
		       "ret=%d err=%s ring_setup=%d flags=%#x", ret, err,
		       (int)o.ring_setup, ring_setup_flags(o.ring_setup));
		/* every mode takes every setup, in either order */
		for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
			if (parse(&o, err, modes[m], setups[i].arg, "/b", "/m",
				  NULL) || o.ring_setup != setups[i].rs ||
			    parse(&o, err, setups[i].arg, modes[m], "/b", "/m",
				  NULL) || o.ring_setup != setups[i].rs)
				refused++;
		}
	}
	EXPECT_INT("options_ring_setup_in_every_mode", 0, refused);
	ret = parse(&o, err, "--ring-setup=bogus", "/b", "/m", NULL);
	result("options_ring_setup_unknown_names_the_valid_ones",
	       ret == -EINVAL &&
	       !strcmp(err, "unknown --ring-setup 'bogus' "
			    "(supported: plain, coop, defer, sqpoll)"),
	       "ret=%d err=%s", ret, err);
	ret = parse(&o, err, "--ring-setup=", "/b", "/m", NULL);
	EXPECT_INT("options_ring_setup_empty_rejected", -EINVAL, ret);
	ret = parse(&o, err, "--ring-setup=SQPOLL", "/b", "/m", NULL);
	EXPECT_INT("options_ring_setup_is_case_sensitive", -EINVAL, ret);
	result("ring_setup_name_past_the_last_is_null",
	       ring_setup_name(SRV_NR_RING_SETUPS) == NULL, "not NULL");
}

/*
 * Each setup on this host's kernel: the ring has the flags asked for, and
 * ring_setup_submit() returns only once the kernel issued what was queued
 * (with SQPOLL, its thread): a NOP's CQE is there without a wait, as a
 * refused REGISTER's must be for queue_register().
 */
static void test_ring_setup_rings(void)
{
	struct srv_opts o = { .queue_depth = 8 };
	struct srv_session s = { .opts = &o };
	struct srv_queue q = { .s = &s };
	static const char refused[] =
		"--ring-setup=defer: io_uring_queue_init_params(";
	const char *what;
	char name[64];
	bool usable = false;	/* io_uring is on here */
	int err, ret;

	for (unsigned int rs = 0; rs < SRV_NR_RING_SETUPS; rs++) {
		struct io_uring_cqe *cqe;
		unsigned int ready;

		o.ring_setup = rs;
		snprintf(name, sizeof(name), "ring_setup_%s_on_this_kernel",
			 ring_setup_name(rs));
		err = ring_setup_init(&q, 17, &what);
		if (err == -ENOSYS || err == -EPERM) {
			/* io_uring off (kernel.io_uring_disabled, seccomp) */
			skip(name, strerror(-err));
			continue;
		}
		if (err) {
			result(name, false, "%s: %s", what, strerror(-err));
			continue;
		}
		usable = true;
		io_uring_prep_nop(io_uring_get_sqe(&q.ring));
		ret = ring_setup_submit(&q);
		ready = io_uring_cq_ready(&q.ring);
		cqe = NULL;
		if (ready)
			io_uring_peek_cqe(&q.ring, &cqe);
		result(name, q.ring.flags == ring_setup_flags(rs) && ret == 1 &&
		       ready == 1 && cqe && cqe->res == 0,
		       "flags %#x (want %#x), submit %d, %u CQEs ready at once",
		       q.ring.flags, ring_setup_flags(rs), ret, ready);
		io_uring_queue_exit(&q.ring);
	}
	/*
	 * A refusal names the option (here a ring of 0 entries, which every
	 * kernel refuses with -EINVAL, as an older one refuses a flag)
	 */
	if (!usable) {
		skip("ring_setup_refused_names_the_option", "no io_uring here");
		return;
	}
	o.ring_setup = SRV_RING_DEFER;
	err = ring_setup_init(&q, 0, &what);
	result("ring_setup_refused_names_the_option",
	       err == -EINVAL && !strncmp(what, refused, strlen(refused)),
	       "%d, what: %s", err, what);
}

int main(void)
{
	test_opcode_names();
	test_opcode_table();
	test_parse_dev();
	test_parse_ring();
	test_kill_suidgid();
	test_timeout_option();
	test_ring_setup_option();
	test_ring_setup_rings();
	test_parse_ring_no_buf();
	test_bufring_has_buf();
	test_req_name();
	test_req_supp_group();
	test_replies();
	test_dirent_pack();
	test_stat_to_attr();
	test_init();
	test_options();
	test_modes();
	test_pool_and_auto();
	test_pool_payload();
	test_pool_zero_copy_open();
	test_pinned_bytes();
	test_cpu_list();
	test_handlers();
	test_file_ops();
	test_caller_identity();
	test_readdir();
	return unit_exit_status();
}
