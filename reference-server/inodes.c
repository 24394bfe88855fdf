// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * inodes.c: the table that turns the kernel's nodeids into backing inodes.
 *
 * Each inode the kernel knows (every LOOKUP/CREATE/MKDIR reply) holds an
 * O_PATH fd on the backing inode and a count of those replies (nlookup);
 * FORGET subtracts and the last one closes the fd. Keyed by (st_dev, st_ino)
 * so two names of one file are one inode. Queue threads and the /dev/fuse
 * thread all use it, hence one mutex around every access.
 */
#include "fuse-uring.h"
#include "inodes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define NR_BUCKETS 4096

static struct {
	pthread_mutex_t lock;	/* protects the buckets and every nlookup */
	struct srv_inode root;
	struct srv_inode *buckets[NR_BUCKETS];
} table = { .lock = PTHREAD_MUTEX_INITIALIZER };

static unsigned int bucket_of(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ULL ^ (uint64_t)dev;

	return (unsigned int)(h >> 32) % NR_BUCKETS;
}

int inodes_init(const char *backing_dir)
{
	struct stat st;
	int fd;

	fd = open(backing_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	table.root = (struct srv_inode){ .fd = fd, .dev = st.st_dev,
					 .ino = st.st_ino, .type = st.st_mode & S_IFMT,
					 .nlookup = 1 };
	/* in the table too, so LOOKUP("..") of a child finds nodeid 1 */
	table.buckets[bucket_of(st.st_dev, st.st_ino)] = &table.root;
	return 0;
}

/* The kernel's nodeid is our pointer, except the fixed FUSE_ROOT_ID. */
struct srv_inode *inode_get(uint64_t nodeid)
{
	if (nodeid == FUSE_ROOT_ID)
		return &table.root;
	return (struct srv_inode *)(uintptr_t)nodeid;
}

uint64_t inode_nodeid(const struct srv_inode *ino)
{
	return ino == &table.root ? FUSE_ROOT_ID : (uint64_t)(uintptr_t)ino;
}

/*
 * One more reference for the kernel to the inode that fd names. Takes fd:
 * keeps it for a new inode, closes it when the inode is already known.
 */
int inode_remember(int fd, const struct stat *st, struct srv_inode **out)
{
	unsigned int b = bucket_of(st->st_dev, st->st_ino);
	struct srv_inode *ino;

	pthread_mutex_lock(&table.lock);
	for (ino = table.buckets[b]; ino; ino = ino->next)
		if (ino->dev == st->st_dev && ino->ino == st->st_ino)
			break;
	if (ino) {
		close(fd);
	} else {
		ino = calloc(1, sizeof(*ino));
		if (!ino) {
			pthread_mutex_unlock(&table.lock);
			close(fd);
			return -ENOMEM;
		}
		*ino = (struct srv_inode){ .fd = fd, .dev = st->st_dev,
					   .ino = st->st_ino,
					   .type = st->st_mode & S_IFMT,
					   .next = table.buckets[b] };
		table.buckets[b] = ino;
	}
	ino->nlookup++;
	*out = ino;
	pthread_mutex_unlock(&table.lock);
	return 0;
}

/* FORGET: the kernel dropped n references; at zero nothing names it. */
void inode_forget(uint64_t nodeid, uint64_t n)
{
	struct srv_inode *ino = inode_get(nodeid), **pp;

	if (ino == &table.root)
		return;		/* lives as long as the mount */
	pthread_mutex_lock(&table.lock);
	ino->nlookup = n < ino->nlookup ? ino->nlookup - n : 0;
	if (ino->nlookup == 0) {
		pp = &table.buckets[bucket_of(ino->dev, ino->ino)];
		while (*pp != ino)
			pp = &(*pp)->next;
		*pp = ino->next;
		close(ino->fd);
		free(ino);
	}
	pthread_mutex_unlock(&table.lock);
}

/* At exit: whatever the kernel never forgot (it does not on unmount). */
void inodes_destroy(void)
{
	pthread_mutex_lock(&table.lock);
	for (unsigned int b = 0; b < NR_BUCKETS; b++) {
		struct srv_inode *ino = table.buckets[b], *next;

		for (; ino; ino = next) {
			next = ino->next;
			close(ino->fd);
			if (ino != &table.root)
				free(ino);
		}
		table.buckets[b] = NULL;
	}
	pthread_mutex_unlock(&table.lock);
}
