/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * inodes.h: the nodeid <-> backing inode table (inodes.c), used by ops.c.
 */
#ifndef INODES_H
#define INODES_H

#include <stdint.h>
#include <sys/stat.h>

struct srv_inode {
	int fd;			/* O_PATH: names the inode, opens nothing */
	dev_t dev;
	ino_t ino;
	mode_t type;		/* st_mode & S_IFMT; fd keeps the inode, so it stays */
	uint64_t nlookup;	/* replies that named it, minus FORGETs */
	struct srv_inode *next;	/* hash chain */
};

int inodes_init(const char *backing_dir);
void inodes_destroy(void);
struct srv_inode *inode_get(uint64_t nodeid);
uint64_t inode_nodeid(const struct srv_inode *ino);
int inode_remember(int fd, const struct stat *st, struct srv_inode **out);
void inode_forget(uint64_t nodeid, uint64_t n);

#endif /* INODES_H */
